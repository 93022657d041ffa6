package html

import (
	"fmt"
	"html/template"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/reports/timeline"
)

// Geometry of a run's timeline drawing, in SVG user units.
const (
	labelWidth  = 330.0
	plotWidth   = 900.0
	rightMargin = 20.0
	laneHeight  = 14.0
	laneGap     = 2.0
	headHeight  = 64.0 // axis, spans and events above the first lane
	footHeight  = 24.0
	verdictGap  = 12.0 // between the lanes and the verdicts under them
	maxTitle    = 240  // characters of a value shown in a tooltip
)

// palette colours the distinct values of one lane, in order of first
// appearance; a lane with more values than colours reuses them.
var palette = []string{"#4e79a7", "#59a14f", "#edc948", "#b07aa1", "#76b7b2", "#ff9da7", "#9c755f", "#f28e2b"}

// runTimeline is a run's evidence drawn for its page: one lane per
// source and question that was asked at least once, the phase spans, the
// marks and the VIOLATED verdicts' moments, and each verdict in a row
// under the lanes, as a scene of reports/timeline whose classes the
// page's stylesheet gives their look.
type runTimeline struct {
	// Origin is the moment offsets are counted from: the fault's
	// injection, else the first thing recorded.
	Origin     time.Time
	OriginName string
	// SVG is the drawing, rendered.
	SVG template.HTML
}

// timelineID is the drawing's id, which the stylesheet's rules are
// scoped to.
const timelineID = "timeline-svg"

// snapshotAt is one snapshot with the part of the run it was taken in.
type snapshotAt struct {
	part string
	snap evidence.Snapshot
}

// Parts of a run, as evidence.Record orders them.
const (
	partBaseline = "baseline"
	partPreFault = "pre-fault"
	partWindow   = "window"
	partHeal     = "heal"
	partSettle   = "settle"
	partFinal    = "final"
)

func orderedSnapshots(rec evidence.Record) []snapshotAt {
	var out []snapshotAt
	if rec.Baseline != nil {
		out = append(out, snapshotAt{partBaseline, *rec.Baseline})
	}
	for _, p := range []struct {
		name  string
		snaps []evidence.Snapshot
	}{{partPreFault, rec.PreFault}, {partWindow, rec.Window}, {partHeal, rec.Heal}, {partSettle, rec.Settle}} {
		for _, s := range p.snaps {
			out = append(out, snapshotAt{p.name, s})
		}
	}
	if rec.Final != nil {
		out = append(out, snapshotAt{partFinal, *rec.Final})
	}
	return out
}

// laneKey is one source asked one question.
type laneKey struct {
	src evidence.Source
	q   evidence.Question
}

// buildTimeline draws a run's evidence. It returns nil for a record with
// neither snapshots nor events.
func buildTimeline(run verdict.Run, rec evidence.Record) (*runTimeline, error) {
	snaps := orderedSnapshots(rec)
	events := rec.Timeline.Sorted()
	if len(snaps) == 0 && len(events) == 0 {
		return nil, nil
	}
	var first, last time.Time
	see := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if last.IsZero() || t.After(last) {
			last = t
		}
	}
	for _, s := range snaps {
		see(s.snap.Taken)
	}
	for _, e := range events {
		see(e.At)
	}
	for _, j := range run.Judgements {
		if j.Verdict == verdict.Violated {
			see(j.At)
		}
	}
	// The last snapshot is drawn as long as the gap before it (or one
	// second), so that it is visible.
	tail := time.Second
	if n := len(snaps); n >= 2 {
		if g := snaps[n-1].snap.Taken.Sub(snaps[n-2].snap.Taken); g > 0 {
			tail = g
		}
	}
	if n := len(snaps); n > 0 {
		see(snaps[n-1].snap.Taken.Add(tail))
	}
	if !last.After(first) {
		last = first.Add(time.Second)
	}

	tl := &runTimeline{Origin: first, OriginName: "the first thing recorded"}
	inject, healStarted, healed := firstEvent(events, invariant.FaultInjectedEvent), firstEvent(events, invariant.HealStartedEvent), firstEvent(events, invariant.FaultHealedEvent)
	if !inject.IsZero() {
		tl.Origin, tl.OriginName = inject, "the fault's injection"
	}
	total := last.Sub(first)
	x := func(t time.Time) float64 {
		if t.Before(first) {
			t = first
		}
		if t.After(last) {
			t = last
		}
		return labelWidth + plotWidth*float64(t.Sub(first))/float64(total)
	}
	off := func(t time.Time) string { return offset(t, tl.Origin) }

	// Every source and question asked at least once has a lane; every
	// verdict a row under them. They set the drawing's height.
	keys := askedLanes(snaps)
	lanesBottom := headHeight + float64(len(keys))*(laneHeight+laneGap)
	h := lanesBottom + verdictGap + float64(len(run.Judgements))*(laneHeight+laneGap) + footHeight
	sc := &timeline.Scene{W: labelWidth + plotWidth + rightMargin, H: h}
	label := func(x, y float64, text, class string) timeline.Text {
		return timeline.Text{X: x, Y: y, Text: text, Size: 10, Anchor: "start", Class: class}
	}

	// Spans: from the snapshots of each part, bounded by the engine's own
	// events where it noted them. Each in a group of its own, so that a
	// later span is drawn over an earlier one's label.
	bounds := partBounds(snaps, tail, inject, healStarted, healed)
	spans := sc.Add(&timeline.Group{Class: "spans"})
	for _, name := range []string{partPreFault, partWindow, partHeal, partSettle} {
		b, ok := bounds[name]
		if !ok || b[0].IsZero() {
			continue
		}
		x0, x1 := x(b[0]), x(b[1])
		spans.Add(&timeline.Group{
			Rects: []timeline.Rect{{X: x0, Y: 14, W: max(x1-x0, 1), H: h - 38, Class: "span span-" + name, Data: []timeline.Data{{Name: "span", Value: name}}, Title: fmt.Sprintf("%s %s to %s", name, off(b[0]), off(b[1]))}},
			Texts: []timeline.Text{label(x0+2, 24, name, "span-label")},
		})
	}

	// Axis ticks, a round step cutting the run into fewer than 16, each
	// with its grid line.
	step := time.Duration(timeline.AxisStep(total.Seconds(), 16) * float64(time.Second))
	var ticks []time.Time
	for t := tl.Origin.Truncate(0); !t.Before(first); t = t.Add(-step) {
		ticks = append(ticks, t)
	}
	for t := tl.Origin.Add(step); !t.After(last); t = t.Add(step) {
		ticks = append(ticks, t)
	}
	sort.SliceStable(ticks, func(i, j int) bool { return x(ticks[i]) < x(ticks[j]) })
	axis := sc.Add(&timeline.Group{Class: "axis"})
	for _, t := range ticks {
		tx := x(t)
		axis.Lines = append(axis.Lines,
			timeline.Line{X1: tx, Y1: h - 24, X2: tx, Y2: h - 20, Stroke: "#444", Width: 1},
			timeline.Line{X1: tx, Y1: 30, X2: tx, Y2: h - 24, Stroke: "#ddd", Width: 0.5})
		lbl := label(tx, h-8, off(t), "")
		lbl.Anchor = "middle"
		axis.Texts = append(axis.Texts, lbl)
	}

	// The events, a diamond each, hollow where a relisting replayed it.
	evs := sc.Add(&timeline.Group{Class: "events", Texts: []timeline.Text{label(4, 48, "timeline events", "lane-label")}})
	for _, e := range events {
		title := fmt.Sprintf("%s %s %s (%s)", off(e.At), e.Kind, e.Subject, e.Source)
		if e.Detail != "" {
			title += ": " + clip(e.Detail)
		}
		if c := clusterText(e); c != "" {
			title += "; the cluster recorded it " + c
		}
		ex := x(e.At)
		d := timeline.Path{Points: [][2]float64{{ex, 38}, {ex + 4, 44}, {ex, 50}, {ex - 4, 44}}, Fill: "#333", Class: "event", Title: title}
		if e.Replayed {
			d.Title += "; replayed by a relisting, drawn where it was seen"
			d.Class, d.Fill, d.Stroke, d.Width = "event replayed", "#fff", "#333", 1.5
		}
		evs.Paths = append(evs.Paths, d)
	}

	lanes := sc.Add(&timeline.Group{Class: "lanes"})
	for i, k := range keys {
		lanes.Add(laneGroup(k, snaps, tail, headHeight+float64(i)*(laneHeight+laneGap), x, func(px float64) string { return offX(px, first, total, tl.Origin) }))
	}

	// The verdicts, under the lanes.
	verdicts := sc.Add(&timeline.Group{Class: "verdicts"})
	y := lanesBottom + verdictGap
	for _, j := range run.Judgements {
		vc := "v-" + strings.ToLower(string(j.Verdict))
		title := fmt.Sprintf("%s %s: %s", j.Invariant, j.Verdict, clip(j.Reason))
		if !j.At.IsZero() {
			title = fmt.Sprintf("%s %s at %s: %s", j.Invariant, j.Verdict, off(j.At), clip(j.Reason))
		}
		g := verdicts.Add(&timeline.Group{Class: "verdict-row", Data: []timeline.Data{{Name: "invariant", Value: j.Invariant}, {Name: "verdict", Value: string(j.Verdict)}}, Title: title,
			Texts: []timeline.Text{label(4, y+10, fmt.Sprintf("%s: %s", j.Invariant, j.Verdict), "lane-label")},
			Rects: []timeline.Rect{{X: labelWidth, Y: y + 3, W: plotWidth, H: 8, Class: "vrow " + vc}}})
		if b, ok := bounds[j.During]; ok && j.During != "" {
			x0 := x(b[0])
			g.Rects = append(g.Rects, timeline.Rect{X: x0, Y: y, W: max(x(b[1])-x0, 1), H: laneHeight, Class: "vspan"})
		}
		if !j.At.IsZero() {
			fill := "#fff"
			if j.Verdict == verdict.Violated {
				fill = "#e00"
			}
			g.Circles = append(g.Circles, timeline.Circle{X: x(j.At), Y: y + 7, R: 4, Fill: fill, Stroke: "#000", Class: "vat " + vc})
		}
		y += laneHeight + laneGap
	}

	// The fault's injection and its heal, over the lanes.
	marks := sc.Add(&timeline.Group{Class: "marks"})
	for _, m := range []struct {
		kind, stroke string
		at           time.Time
		what         string
	}{{"inject", "#c00", inject, "fault injected"}, {"heal", "#080", healStarted, "heal started"}, {"healed", "#080", healed, "fault healed"}} {
		if m.at.IsZero() {
			continue
		}
		mx := x(m.at)
		marks.Lines = append(marks.Lines, timeline.Line{X1: mx, Y1: 30, X2: mx, Y2: h - 24, Stroke: m.stroke, Width: 1.5, Class: "mark-" + m.kind, Data: []timeline.Data{{Name: "mark", Value: m.kind}},
			Title: fmt.Sprintf("%s at %s", m.what, off(m.at))})
	}

	// VIOLATED verdicts' moments: a line at Judgement.At, or, where the
	// verdict names only the part of the run (During), that span. Each in
	// a group of its own, so that they are drawn in the verdicts' order.
	violations := sc.Add(&timeline.Group{Class: "violations"})
	for _, j := range run.Judgements {
		if j.Verdict != verdict.Violated {
			continue
		}
		data := []timeline.Data{{Name: "invariant", Value: j.Invariant}}
		switch {
		case !j.At.IsZero():
			vx := x(j.At)
			violations.Add(&timeline.Group{Lines: []timeline.Line{{X1: vx, Y1: 30, X2: vx, Y2: h - 24, Stroke: "#e00", Width: 2.5, Class: "violated", Data: data,
				Title: fmt.Sprintf("%s VIOLATED at %s: %s", j.Invariant, off(j.At), clip(j.Reason))}}})
		case j.During != "":
			b, ok := bounds[j.During]
			if !ok {
				continue
			}
			x0 := x(b[0])
			violations.Add(&timeline.Group{Rects: []timeline.Rect{{X: x0, Y: 30, W: max(x(b[1])-x0, 1), H: h - 54, Class: "violated", Data: data,
				Title: fmt.Sprintf("%s VIOLATED during the %s: %s", j.Invariant, j.During, clip(j.Reason))}}})
		}
	}

	svg, err := sc.SVG(timelineID)
	if err != nil {
		return nil, fmt.Errorf("drawing the timeline: %w", err)
	}
	tl.SVG = svg
	return tl, nil
}

// partBounds are the moments each part of the run began and ended: from
// the snapshots taken in it, bounded by the engine's own events where it
// noted them (the injection opens the window, the heal's start closes
// it, the heal's end opens the settle, which runs to the final snapshot).
func partBounds(snaps []snapshotAt, tail time.Duration, inject, healStarted, healed time.Time) map[string][2]time.Time {
	bounds := map[string][2]time.Time{}
	for i, s := range snaps {
		end := s.snap.Taken.Add(tail)
		if i+1 < len(snaps) {
			end = snaps[i+1].snap.Taken
		}
		b, ok := bounds[s.part]
		if !ok {
			b[0] = s.snap.Taken
		}
		b[1] = end
		bounds[s.part] = b
	}
	if !inject.IsZero() {
		w := bounds[partWindow]
		w[0] = inject
		if !healStarted.IsZero() {
			w[1] = healStarted
		} else if w[1].IsZero() {
			w[1] = inject
		}
		bounds[partWindow] = w
	}
	if !healed.IsZero() {
		if st, ok := bounds[partSettle]; ok {
			st[0] = healed
			bounds[partSettle] = st
		} else if f, ok := bounds[partFinal]; ok {
			bounds[partSettle] = [2]time.Time{healed, f[1]}
		}
		if !healStarted.IsZero() {
			bounds[partHeal] = [2]time.Time{healStarted, healed}
		}
	}
	if st, ok := bounds[partSettle]; ok {
		if f, ok := bounds[partFinal]; ok {
			st[1] = f[1]
			bounds[partSettle] = st
		}
	}
	return bounds
}

// askedLanes are the sources and questions asked at least once, by source
// then question.
func askedLanes(snaps []snapshotAt) []laneKey {
	asked := map[laneKey]bool{}
	for _, s := range snaps {
		for src, qs := range s.snap.Answers {
			for q, a := range qs {
				if a.State != evidence.NotAsked {
					asked[laneKey{src, q}] = true
				}
			}
		}
	}
	keys := make([]laneKey, 0, len(asked))
	for k := range asked {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].src != keys[j].src {
			return keys[i].src < keys[j].src
		}
		return keys[i].q < keys[j].q
	})
	return keys
}

// laneGroup draws one source's answers to one question at y: a stretch
// per run of snapshots in which it said the same (a value coloured by
// value, unreadable hatched, not asked empty), a white tick where one
// value gave way to another; offAt says the offset of a plot coordinate.
func laneGroup(k laneKey, snaps []snapshotAt, tail time.Duration, y float64, x func(time.Time) float64, offAt func(float64) string) *timeline.Group {
	type stretch struct {
		rect  timeline.Rect
		value string
		title string
	}
	colours := map[string]string{}
	var ss []stretch
	var changes []float64
	unreadable := 0
	for si, s := range snaps {
		end := s.snap.Taken.Add(tail)
		if si+1 < len(snaps) {
			end = snaps[si+1].snap.Taken
		}
		a := s.snap.Get(k.src, k.q)
		r := timeline.Rect{X: x(s.snap.Taken), Y: y, H: laneHeight, Class: string(a.State)}
		r.W = max(x(end)-r.X, 0.5)
		var value, title string
		switch a.State {
		case evidence.Answered:
			value = string(a.Value)
			c, ok := colours[value]
			if !ok {
				c = palette[len(colours)%len(palette)]
				colours[value] = c
			}
			r.Fill = c
			title = "value " + clip(value)
		case evidence.Unreadable:
			unreadable++
			r.Hatch = true
			title = "unreadable: " + clip(a.Reason)
			value = "\x00unreadable\x00" + a.Reason
		default:
			title = "not asked"
			value = "\x00not-asked"
		}
		if n := len(ss); n > 0 && value == ss[n-1].value {
			ss[n-1].rect.W = r.X + r.W - ss[n-1].rect.X
			continue
		}
		if n := len(ss); n > 0 && a.State == evidence.Answered && ss[n-1].rect.Class == string(evidence.Answered) {
			changes = append(changes, r.X)
		}
		ss = append(ss, stretch{r, value, title})
	}
	g := &timeline.Group{Class: "lane", Data: []timeline.Data{{Name: "source", Value: string(k.src)}, {Name: "question", Value: string(k.q)}, {Name: "unreadable", Value: strconv.Itoa(unreadable)}},
		Texts: []timeline.Text{{X: 4, Y: y + 10, Text: string(k.src) + " · " + string(k.q), Size: 10, Anchor: "start", Class: "lane-label"}}}
	// Each stretch's tooltip says when it held.
	for _, st := range ss {
		st.rect.Title = fmt.Sprintf("%s %s, %s to %s: %s", k.src, k.q, offAt(st.rect.X), offAt(st.rect.X+st.rect.W), st.title)
		g.Rects = append(g.Rects, st.rect)
	}
	for _, c := range changes {
		g.Lines = append(g.Lines, timeline.Line{X1: c, Y1: y, X2: c, Y2: y + laneHeight, Stroke: "#fff", Width: 1, Class: "change"})
	}
	return g
}

func firstEvent(events evidence.Timeline, kind string) time.Time {
	for _, e := range events {
		if e.Kind == kind && e.Source == "faultline" {
			return e.At
		}
	}
	for _, e := range events {
		if e.Kind == kind {
			return e.At
		}
	}
	return time.Time{}
}

// offset is t relative to origin, "+12.3s" or "-4.0s".
func offset(t, origin time.Time) string {
	d := t.Sub(origin).Seconds()
	if d >= 0 {
		return fmt.Sprintf("+%.1fs", d)
	}
	return fmt.Sprintf("%.1fs", d)
}

// offX is the offset of the moment at plot coordinate px.
func offX(px float64, first time.Time, span time.Duration, origin time.Time) string {
	t := first.Add(time.Duration((px - labelWidth) / plotWidth * float64(span)))
	return offset(t, origin)
}

// clip shortens text for a tooltip.
func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	r := []rune(s)
	if len(r) <= maxTitle {
		return s
	}
	return string(r[:maxTitle]) + "…"
}

// clusterText says when the cluster recorded an event, to the field's
// precision, from which field, and how far from the time it was seen;
// empty when the event has no cluster time.
func clusterText(e evidence.Event) string {
	if e.ClusterAt.IsZero() {
		return ""
	}
	d := e.ClusterAt.Sub(e.At).Round(time.Millisecond)
	rel := fmt.Sprintf("%s after it was seen", d)
	if d < 0 {
		rel = fmt.Sprintf("%s before it was seen", -d)
	}
	return fmt.Sprintf("at %s UTC (%s, %s)", e.ClusterClock(), e.ClusterField, rel)
}
