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

// runTimeline is a run's evidence laid out for drawing: one lane per
// source and question that was asked at least once, the phase spans, the
// marks and the VIOLATED verdicts' moments. Its scene is what the run page
// shows (reports/timeline draws it); the page's stylesheet gives the
// classes their look.
type runTimeline struct {
	Width, Height float64
	PlotX, PlotW  float64
	LaneTop       float64
	Ticks         []tick
	Spans         []span
	Marks         []mark
	Events        []eventMark
	Lanes         []lane
	Violations    []violation
	// Verdicts are the run's verdicts in rows under the lanes, each
	// marked at its moment or over the part of the run it names.
	Verdicts []verdictRow
	// Origin is the moment offsets are counted from: the fault's
	// injection, else the first thing recorded.
	Origin     time.Time
	OriginName string
	// SVG is the drawing, rendered.
	SVG template.HTML
}

type tick struct {
	X     float64
	Label string
}

// span is a stretch of the run: pre-fault, window, heal or settle.
type span struct {
	Name     string
	X, W     float64
	From, To string
}

// mark is a vertical line at one moment (the injection, the heal).
type mark struct {
	Kind  string
	X     float64
	Title string
}

type eventMark struct {
	X     float64
	Title string
	// Replayed marks an event a relisting delivered: drawn where it was
	// seen, which can be long after the change.
	Replayed bool
}

type lane struct {
	Source, Question string
	Y                float64
	Segments         []segment
	Changes          []float64
	Unreadable       int
}

// segment is one stretch of a lane over which the source said the same:
// a value (coloured by value), unreadable (shaded) or not asked (empty).
type segment struct {
	State string // "value", "unreadable" or "not-asked"
	X, W  float64
	Fill  string
	Title string
}

// violation is a VIOLATED verdict's moment: a line at Judgement.At, or,
// where the verdict names only the part of the run (During), that span.
type violation struct {
	Invariant string
	X, W      float64
	Line      bool
	Title     string
}

// verdictRow is one invariant's verdict drawn under the lanes.
type verdictRow struct {
	Invariant string
	Verdict   verdict.Verdict
	Y         float64
	// X is the verdict's moment (At), if it has one; SpanX and SpanW
	// the part of the run it names (During), if any.
	X, SpanX, SpanW float64
	HasAt, HasSpan  bool
	Title           string
}

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

// buildTimeline lays out a run's evidence. It returns nil for a record
// with neither snapshots nor events.
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

	tl := &runTimeline{PlotX: labelWidth, PlotW: plotWidth, LaneTop: headHeight}
	tl.Origin, tl.OriginName = first, "the first thing recorded"
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

	// Axis ticks: a round step cutting the run into fewer than 16.
	step := time.Duration(timeline.AxisStep(total.Seconds(), 16) * float64(time.Second))
	for t := tl.Origin.Truncate(0); !t.Before(first); t = t.Add(-step) {
		tl.Ticks = append(tl.Ticks, tick{X: x(t), Label: off(t)})
	}
	for t := tl.Origin.Add(step); !t.After(last); t = t.Add(step) {
		tl.Ticks = append(tl.Ticks, tick{X: x(t), Label: off(t)})
	}
	sort.Slice(tl.Ticks, func(i, j int) bool { return tl.Ticks[i].X < tl.Ticks[j].X })

	// Spans: from the snapshots of each part, bounded by the engine's own
	// events where it noted them.
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
	for _, name := range []string{partPreFault, partWindow, partHeal, partSettle} {
		b, ok := bounds[name]
		if !ok || b[0].IsZero() {
			continue
		}
		x0, x1 := x(b[0]), x(b[1])
		tl.Spans = append(tl.Spans, span{Name: name, X: x0, W: max(x1-x0, 1), From: off(b[0]), To: off(b[1])})
	}

	// Marks.
	for _, m := range []struct {
		kind string
		at   time.Time
		what string
	}{{"inject", inject, "fault injected"}, {"heal", healStarted, "heal started"}, {"healed", healed, "fault healed"}} {
		if m.at.IsZero() {
			continue
		}
		tl.Marks = append(tl.Marks, mark{Kind: m.kind, X: x(m.at), Title: fmt.Sprintf("%s at %s", m.what, off(m.at))})
	}
	for _, e := range events {
		title := fmt.Sprintf("%s %s %s (%s)", off(e.At), e.Kind, e.Subject, e.Source)
		if e.Detail != "" {
			title += ": " + clip(e.Detail)
		}
		if c := clusterText(e); c != "" {
			title += "; the cluster recorded it " + c
		}
		if e.Replayed {
			title += "; replayed by a relisting, drawn where it was seen"
		}
		tl.Events = append(tl.Events, eventMark{X: x(e.At), Title: title, Replayed: e.Replayed})
	}

	// Lanes: every source and question asked at least once.
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
	for i, k := range keys {
		ln := lane{Source: string(k.src), Question: string(k.q), Y: headHeight + float64(i)*(laneHeight+laneGap)}
		colours := map[string]string{}
		var prev *segment
		prevValue := ""
		for si, s := range snaps {
			end := s.snap.Taken.Add(tail)
			if si+1 < len(snaps) {
				end = snaps[si+1].snap.Taken
			}
			a := s.snap.Get(k.src, k.q)
			seg := segment{State: string(a.State), X: x(s.snap.Taken)}
			seg.W = max(x(end)-seg.X, 0.5)
			value := ""
			switch a.State {
			case evidence.Answered:
				value = string(a.Value)
				c, ok := colours[value]
				if !ok {
					c = palette[len(colours)%len(palette)]
					colours[value] = c
				}
				seg.Fill = c
				seg.Title = "value " + clip(value)
			case evidence.Unreadable:
				ln.Unreadable++
				seg.Title = "unreadable: " + clip(a.Reason)
				value = "\x00unreadable\x00" + a.Reason
			default:
				seg.Title = "not asked"
				value = "\x00not-asked"
			}
			if prev != nil && value == prevValue {
				prev.W = seg.X + seg.W - prev.X
				continue
			}
			if prev != nil && a.State == evidence.Answered && prev.State == string(evidence.Answered) {
				ln.Changes = append(ln.Changes, seg.X)
			}
			ln.Segments = append(ln.Segments, seg)
			prev = &ln.Segments[len(ln.Segments)-1]
			prevValue = value
		}
		// Each segment's tooltip says when it held.
		for si := range ln.Segments {
			sg := &ln.Segments[si]
			sg.Title = fmt.Sprintf("%s %s, %s to %s: %s", k.src, k.q, offX(sg.X, first, total, tl.Origin), offX(sg.X+sg.W, first, total, tl.Origin), sg.Title)
		}
		tl.Lanes = append(tl.Lanes, ln)
	}
	lanesBottom := headHeight + float64(len(keys))*(laneHeight+laneGap)

	// VIOLATED verdicts' moments.
	for _, j := range run.Judgements {
		if j.Verdict != verdict.Violated {
			continue
		}
		v := violation{Invariant: j.Invariant}
		switch {
		case !j.At.IsZero():
			v.Line, v.X = true, x(j.At)
			v.Title = fmt.Sprintf("%s VIOLATED at %s: %s", j.Invariant, off(j.At), clip(j.Reason))
		case j.During != "":
			b, ok := bounds[j.During]
			if !ok {
				continue
			}
			v.X = x(b[0])
			v.W = max(x(b[1])-v.X, 1)
			v.Title = fmt.Sprintf("%s VIOLATED during the %s: %s", j.Invariant, j.During, clip(j.Reason))
		default:
			continue
		}
		tl.Violations = append(tl.Violations, v)
	}
	// The verdicts, under the lanes.
	y := lanesBottom + verdictGap
	for _, j := range run.Judgements {
		row := verdictRow{Invariant: j.Invariant, Verdict: j.Verdict, Y: y, Title: fmt.Sprintf("%s %s: %s", j.Invariant, j.Verdict, clip(j.Reason))}
		if !j.At.IsZero() {
			row.HasAt, row.X = true, x(j.At)
			row.Title = fmt.Sprintf("%s %s at %s: %s", j.Invariant, j.Verdict, off(j.At), clip(j.Reason))
		}
		if b, ok := bounds[j.During]; ok && j.During != "" {
			row.HasSpan, row.SpanX = true, x(b[0])
			row.SpanW = max(x(b[1])-row.SpanX, 1)
		}
		tl.Verdicts = append(tl.Verdicts, row)
		y += laneHeight + laneGap
	}
	tl.Width = labelWidth + plotWidth + rightMargin
	tl.Height = y + footHeight
	svg, err := tl.scene().SVG(timelineID)
	if err != nil {
		return nil, fmt.Errorf("drawing the timeline: %w", err)
	}
	tl.SVG = svg
	return tl, nil
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

// timelineID is the run page's drawing's id, which its stylesheet's
// rules are scoped to.
const timelineID = "timeline-svg"

// scene draws the laid-out timeline: the spans, the axis and its grid,
// the events, the lanes, the verdicts under them, the marks and the
// VIOLATED moments over everything, in that order. Its classes are the
// page's stylesheet's; the colours given here are the ones it gives them.
func (tl *runTimeline) scene() *timeline.Scene {
	h := tl.Height
	s := &timeline.Scene{W: tl.Width, H: h}
	label := func(x, y float64, text, class string) timeline.Text {
		return timeline.Text{X: x, Y: y, Text: text, Size: 10, Anchor: "start", Class: class}
	}

	spans := s.Add(&timeline.Group{Class: "spans"})
	for _, sp := range tl.Spans {
		spans.Add(&timeline.Group{
			Rects: []timeline.Rect{{X: sp.X, Y: 14, W: sp.W, H: h - 38, Class: "span span-" + sp.Name, Data: []timeline.Data{{Name: "span", Value: sp.Name}}, Title: fmt.Sprintf("%s %s to %s", sp.Name, sp.From, sp.To)}},
			Texts: []timeline.Text{label(sp.X+2, 24, sp.Name, "span-label")},
		})
	}

	axis := s.Add(&timeline.Group{Class: "axis"})
	for _, t := range tl.Ticks {
		axis.Lines = append(axis.Lines,
			timeline.Line{X1: t.X, Y1: h - 24, X2: t.X, Y2: h - 20, Stroke: "#444", Width: 1},
			timeline.Line{X1: t.X, Y1: 30, X2: t.X, Y2: h - 24, Stroke: "#ddd", Width: 0.5})
		tx := label(t.X, h-8, t.Label, "")
		tx.Anchor = "middle"
		axis.Texts = append(axis.Texts, tx)
	}

	events := s.Add(&timeline.Group{Class: "events", Texts: []timeline.Text{label(4, 48, "timeline events", "lane-label")}})
	for _, e := range tl.Events {
		p := timeline.Path{Points: [][2]float64{{e.X, 38}, {e.X + 4, 44}, {e.X, 50}, {e.X - 4, 44}}, Fill: "#333", Class: "event", Title: e.Title}
		if e.Replayed {
			p.Class, p.Fill, p.Stroke, p.Width = "event replayed", "#fff", "#333", 1.5
		}
		events.Paths = append(events.Paths, p)
	}

	lanes := s.Add(&timeline.Group{Class: "lanes"})
	for _, ln := range tl.Lanes {
		g := lanes.Add(&timeline.Group{Class: "lane", Data: []timeline.Data{{Name: "source", Value: ln.Source}, {Name: "question", Value: ln.Question}, {Name: "unreadable", Value: strconv.Itoa(ln.Unreadable)}},
			Texts: []timeline.Text{label(4, ln.Y+10, ln.Source+" · "+ln.Question, "lane-label")}})
		for _, sg := range ln.Segments {
			g.Rects = append(g.Rects, timeline.Rect{X: sg.X, Y: ln.Y, W: sg.W, H: laneHeight, Fill: sg.Fill, Hatch: sg.State == string(evidence.Unreadable), Class: sg.State, Title: sg.Title})
		}
		for _, c := range ln.Changes {
			g.Lines = append(g.Lines, timeline.Line{X1: c, Y1: ln.Y, X2: c, Y2: ln.Y + laneHeight, Stroke: "#fff", Width: 1, Class: "change"})
		}
	}

	verdicts := s.Add(&timeline.Group{Class: "verdicts"})
	for _, r := range tl.Verdicts {
		vc := "v-" + strings.ToLower(string(r.Verdict))
		g := verdicts.Add(&timeline.Group{Class: "verdict-row", Data: []timeline.Data{{Name: "invariant", Value: r.Invariant}, {Name: "verdict", Value: string(r.Verdict)}}, Title: r.Title,
			Texts: []timeline.Text{label(4, r.Y+10, fmt.Sprintf("%s: %s", r.Invariant, r.Verdict), "lane-label")},
			Rects: []timeline.Rect{{X: tl.PlotX, Y: r.Y + 3, W: tl.PlotW, H: 8, Class: "vrow " + vc}}})
		if r.HasSpan {
			g.Rects = append(g.Rects, timeline.Rect{X: r.SpanX, Y: r.Y, W: r.SpanW, H: laneHeight, Class: "vspan"})
		}
		if r.HasAt {
			fill := "#fff"
			if r.Verdict == verdict.Violated {
				fill = "#e00"
			}
			g.Circles = append(g.Circles, timeline.Circle{X: r.X, Y: r.Y + 7, R: 4, Fill: fill, Stroke: "#000", Class: "vat " + vc})
		}
	}

	marks := s.Add(&timeline.Group{Class: "marks"})
	for _, m := range tl.Marks {
		stroke := "#080"
		if m.Kind == "inject" {
			stroke = "#c00"
		}
		marks.Lines = append(marks.Lines, timeline.Line{X1: m.X, Y1: 30, X2: m.X, Y2: h - 24, Stroke: stroke, Width: 1.5, Class: "mark-" + m.Kind, Data: []timeline.Data{{Name: "mark", Value: m.Kind}}, Title: m.Title})
	}

	// Each VIOLATED moment in a group of its own, so that they are drawn
	// in the verdicts' order.
	violations := s.Add(&timeline.Group{Class: "violations"})
	for _, v := range tl.Violations {
		data := []timeline.Data{{Name: "invariant", Value: v.Invariant}}
		if v.Line {
			violations.Add(&timeline.Group{Lines: []timeline.Line{{X1: v.X, Y1: 30, X2: v.X, Y2: h - 24, Stroke: "#e00", Width: 2.5, Class: "violated", Data: data, Title: v.Title}}})
			continue
		}
		violations.Add(&timeline.Group{Rects: []timeline.Rect{{X: v.X, Y: 30, W: v.W, H: h - 54, Class: "violated", Data: data, Title: v.Title}}})
	}
	return s
}
