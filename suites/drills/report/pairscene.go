package report

import (
	"fmt"
	"math"
	"time"

	"github.com/faultline/faultline/reports/timeline"
)

// Geometry of the side-by-side timelines, in points.
const (
	pairWidth   = 1180.0 // grown to fit labels that run past the right
	pairLeft    = 210.0  // lane names to the left of it
	pairRight   = 1160.0
	labelSize   = 9.0
	labelRow    = 11.0
	laneHeight  = 14.0
	bracketRow  = 17.0
	pairPadding = 6.0
)

// Colours: the page's phase colours behind the lanes, one per lane state.
var (
	armColours   = []string{"#1e5ac8", "#c8321e"}
	stateColours = map[string]string{
		RuntimeOldRunning: "#59a14f",
		RuntimeNewOnly:    "#4e79a7",
		RuntimeNone:       "#d4d4d4",
		PodsKept:          "#8cd17d",
		PodsTerminating:   "#f28e2b",
		PodsReplaced:      "#a0cbe8",
		PodsListed:        "#bab0ac",
	}
	stateNames = []struct{ state, name string }{
		{RuntimeOldRunning, "runtime: pre-fault containers running"},
		{RuntimeNewOnly, "runtime: only containers started after the fault"},
		{RuntimeNone, "runtime: none running"},
		{PodsKept, "API: pre-fault pods listed"},
		{PodsTerminating, "API: pre-fault pods marked for deletion"},
		{PodsReplaced, "API: no pre-fault pod listed"},
		{Unreadable, "unreadable (hatched)"},
	}
)

const (
	windowFill  = "#fde8c8"
	healFill    = "#e6e0f8"
	settleFill  = "#dcefe0"
	faultStroke = "#cc0000"
	healStroke  = "#008800"
	divergeRed  = "#e00000"
)

// pairArmNames names the arms in the drill's words, control first.
var pairArmNames = []string{"6.C2 kubelet stopped", "6.C1 power off"}

// timeScale maps seconds after the fault to x.
type timeScale struct{ lo, hi float64 }

func (ts timeScale) x(d time.Duration) float64 {
	s := math.Max(ts.lo, math.Min(ts.hi, d.Seconds()))
	return pairLeft + (s-ts.lo)/(ts.hi-ts.lo)*(pairRight-pairLeft)
}

func pairScale(arms []PairArm) timeScale {
	lo, hi := -2.0, 10.0
	for _, a := range arms {
		if !a.Lease.LastRenew.IsZero() {
			lo = math.Min(lo, a.Lease.LastRenew.Sub(a.FaultAt).Seconds()-1)
		}
		hi = math.Max(hi, a.EvidenceEnd.Sub(a.FaultAt).Seconds()+1)
		for _, m := range append(append([]Moment{}, a.Moments...), a.Return...) {
			if m.Seen {
				lo, hi = math.Min(lo, m.Offset.Seconds()-1), math.Max(hi, m.Offset.Seconds()+1)
			}
		}
	}
	return timeScale{lo, hi}
}

// pairScene draws both arms on one time axis (seconds after each arm's
// fault): per arm, the drill's moments as the API showed them with their
// labels stacked where moments coincide, the timer behind each of the
// main intervals, the API server's listing of the drill's pods and what
// the worker's runtime showed, the window, heal and return behind them;
// the divergence marked across both.
func pairScene(c, e PairArm) *timeline.Scene {
	arms := []PairArm{c, e}
	ts := pairScale(arms)
	s := &timeline.Scene{W: pairWidth}
	grid := s.Add(&timeline.Group{Class: "grid"})
	s.Add(&timeline.Group{Class: "title", Texts: []timeline.Text{timeline.BoldAt(4, 16, fmt.Sprintf("Power off (6.C1) against kubelet stopped (6.C2), timer profile %s, worker %s", c.Run.Lab.TimerProfile, c.Worker), 12)}})

	div, diverged := Diverge(c, e)
	y := 26.0
	if diverged {
		y += 14
	}
	top := y
	var runtimeLanes []timeline.Rect
	for i, a := range arms {
		y = drawArm(s, ts, a, i, y, div, diverged, &runtimeLanes)
		y += 8
	}
	bottom := y - 8

	if diverged {
		x := ts.x(div.At)
		g := s.Add(&timeline.Group{Class: "divergence", Data: []timeline.Data{{Name: "key", Value: div.Key}}, Title: "divergence: " + div.Label + " — " + div.Reason})
		g.Lines = append(g.Lines, timeline.Line{X1: x, Y1: top - 12, X2: x, Y2: bottom, Stroke: divergeRed, Width: 1.5, Dash: true, Class: "divergence-line"})
		label := fmt.Sprintf("divergence: %s (from +%s)", div.Label, secs(div.At))
		t := timeline.TextAt(x+timeline.LeaderPad, top-4, label, 10, "start")
		t.Fill, t.Bold, t.Class = divergeRed, true, "divergence-label"
		t.Width = timeline.TextWidth(label, 10, true)
		if x+timeline.LeaderPad+t.Width > pairRight {
			t.X, t.Anchor = x-timeline.LeaderPad, "end"
		}
		g.Texts = append(g.Texts, t)
		for _, r := range runtimeLanes {
			g.Rects = append(g.Rects, r)
		}
	}

	// The axis, and its grid behind the arms.
	ay := bottom + 6
	axis := s.Add(&timeline.Group{Class: "axis"})
	axis.Lines = append(axis.Lines, timeline.Line{X1: pairLeft, Y1: ay, X2: pairRight, Y2: ay, Stroke: "#444", Width: 1})
	step := timeline.AxisStep(ts.hi-ts.lo, 16)
	for v := math.Ceil(ts.lo/step) * step; v <= ts.hi; v += step {
		x := ts.x(time.Duration(v * float64(time.Second)))
		axis.Lines = append(axis.Lines, timeline.Line{X1: x, Y1: ay, X2: x, Y2: ay + 4, Stroke: "#444", Width: 1})
		axis.Texts = append(axis.Texts, timeline.TextAt(x, ay+14, tickLabel(v), 9, "middle"))
		grid.Lines = append(grid.Lines, timeline.Line{X1: x, Y1: top, X2: x, Y2: bottom, Stroke: "#e4e4e4", Width: 0.6})
	}
	axis.Texts = append(axis.Texts, timeline.TextAt((pairLeft+pairRight)/2, ay+27, "seconds after the fault (each arm from its own)", 10, "middle"))

	// The legend, wrapped to the width.
	ly := ay + 44
	legend := s.Add(&timeline.Group{Class: "legend"})
	lx := 4.0
	item := func(draw func(x, y float64), label string, w float64) {
		tw := timeline.TextWidth(label, 9, false)
		if lx+w+4+tw > pairRight {
			lx, ly = 4, ly+14
		}
		draw(lx, ly)
		legend.Texts = append(legend.Texts, timeline.TextAt(lx+w+4, ly+8, label, 9, "start"))
		lx += w + 4 + tw + 14
	}
	for i, name := range pairArmNames {
		col := armColours[i]
		item(func(x, y float64) {
			legend.Circles = append(legend.Circles, timeline.Circle{X: x + 4, Y: y + 5, R: 3.5, Fill: col})
		}, name+": moment in the window", 8)
	}
	item(func(x, y float64) {
		legend.Circles = append(legend.Circles, timeline.Circle{X: x + 4, Y: y + 5, R: 3.5, Fill: "#fff", Stroke: "#444"})
	}, "moment of the return (after the heal starts)", 8)
	for _, sn := range stateNames {
		st := sn.state
		item(func(x, y float64) {
			legend.Rects = append(legend.Rects, timeline.Rect{X: x, Y: y, W: 14, H: 10, Fill: stateColours[st], Hatch: st == Unreadable, Stroke: "#888"})
		}, sn.name, 14)
	}
	for _, band := range []struct{ fill, name string }{{windowFill, "window"}, {healFill, "heal"}, {settleFill, "return"}} {
		f := band.fill
		item(func(x, y float64) {
			legend.Rects = append(legend.Rects, timeline.Rect{X: x, Y: y, W: 14, H: 10, Fill: f, Stroke: "#888"})
		}, band.name, 14)
	}
	item(func(x, y float64) {
		legend.Lines = append(legend.Lines, timeline.Line{X1: x, Y1: y + 5, X2: x + 16, Y2: y + 5, Stroke: divergeRed, Width: 1.5, Dash: true})
	}, "divergence", 16)
	s.H = ly + 18
	s.Fit()
	return s
}

// drawArm draws one arm from y down and returns where it ends.
func drawArm(s *timeline.Scene, ts timeScale, a PairArm, i int, y float64, div Divergence, diverged bool, runtimeLanes *[]timeline.Rect) float64 {
	armID := a.Run.Scenario
	data := []timeline.Data{{Name: "arm", Value: armID}, {Name: "run", Value: a.Run.RunID}}
	bg := s.Add(&timeline.Group{Class: "arm-phases", Data: data})
	head := s.Add(&timeline.Group{Class: "arm", Data: data})
	head.Texts = append(head.Texts, timeline.BoldAt(4, y+11, pairArmNames[i], 11))
	armTop := y
	y += 16

	// The moments and their labels, stacked.
	var ms []Moment
	for _, m := range append(append([]Moment{}, a.Moments...), a.Return...) {
		if m.Seen {
			ms = append(ms, m)
		}
	}
	items := make([]timeline.StackItem, len(ms))
	labels := make([]string, len(ms))
	for j, m := range ms {
		labels[j] = fmt.Sprintf("%s +%s", m.Label, secs(m.Offset))
		items[j] = timeline.StackItem{X: ts.x(m.Offset), Width: timeline.TextWidth(labels[j], labelSize, false)}
	}
	rows := timeline.Stack(items, 3)
	nRows := 0
	for _, r := range rows {
		nRows = max(nRows, r+1)
	}
	labelsBottom := y + float64(nRows)*labelRow
	laneY := labelsBottom + 5
	cy := laneY + laneHeight/2
	moments := s.Add(&timeline.Group{Class: "lane", Data: timeline.WithData(data, timeline.Data{Name: "view", Value: "moments"})})
	moments.Texts = append(moments.Texts, timeline.TextAt(4, cy+3, "API: the drill's moments", 10, "start"))
	moments.Lines = append(moments.Lines, timeline.Line{X1: ts.x(0), Y1: cy, X2: ts.x(a.EvidenceEnd.Sub(a.FaultAt)), Y2: cy, Stroke: armColours[i], Width: 1, Class: "lane-line"})
	labelGroup := s.Add(&timeline.Group{Class: "moment-labels", Data: data})
	for j, m := range ms {
		x := items[j].X
		base := labelsBottom - float64(rows[j])*labelRow - 2
		title := momentTitle(a, m)
		labelGroup.Lines = append(labelGroup.Lines, timeline.Line{X1: x, Y1: cy - 4, X2: x, Y2: base - 3, Stroke: "#999", Width: 0.6, Class: "leader"})
		t := timeline.TextAt(x+timeline.LeaderPad, base, labels[j], labelSize, "start")
		t.Class, t.Title, t.Data = "moment-label", title, []timeline.Data{{Name: "key", Value: m.Key}, {Name: "row", Value: fmt.Sprint(rows[j])}}
		labelGroup.Texts = append(labelGroup.Texts, t)
		dot := timeline.Circle{X: x, Y: cy, R: 3.5, Fill: armColours[i], Class: "moment", Title: title, Data: []timeline.Data{{Name: "key", Value: m.Key}}}
		if m.Return {
			dot.Fill, dot.Stroke = "#fff", armColours[i]
		}
		moments.Circles = append(moments.Circles, dot)
		if diverged && div.Key == m.Key {
			moments.Circles = append(moments.Circles, timeline.Circle{X: x, Y: cy, R: 7, Fill: "none", Stroke: divergeRed, Class: "diverged"})
		}
	}
	y = laneY + laneHeight + 4

	// The timers behind the intervals.
	brackets := timerBrackets(a)
	var x0s, x1s []float64
	type placed struct {
		b      bracket
		x0, x1 float64
	}
	var ps []placed
	for _, b := range brackets {
		x0, x1 := ts.x(b.from), ts.x(b.to)
		w := timeline.TextWidth(b.label, labelSize, false)
		ps = append(ps, placed{b, x0, x1})
		x0s, x1s = append(x0s, x0), append(x1s, math.Max(x1, x0+4+w))
	}
	brows := timeline.IntervalRows(x0s, x1s, 6)
	nb := 0
	for _, r := range brows {
		nb = max(nb, r+1)
	}
	timers := s.Add(&timeline.Group{Class: "lane", Data: timeline.WithData(data, timeline.Data{Name: "view", Value: "timers"})})
	if nb > 0 {
		timers.Texts = append(timers.Texts, timeline.TextAt(4, y+12, "timers behind the intervals", 10, "start"))
	}
	for j, p := range ps {
		rt := y + float64(brows[j])*bracketRow
		timers.Lines = append(timers.Lines,
			timeline.Line{X1: p.x0, Y1: rt + 4, X2: p.x1, Y2: rt + 4, Stroke: "#555", Width: 1, Class: "bracket", Title: p.b.title},
			timeline.Line{X1: p.x0, Y1: rt, X2: p.x0, Y2: rt + 7, Stroke: "#555", Width: 1},
			timeline.Line{X1: p.x1, Y1: rt, X2: p.x1, Y2: rt + 7, Stroke: "#555", Width: 1})
		t := timeline.TextAt(p.x0+4, rt+15, p.b.label, labelSize, "start")
		t.Class, t.Title, t.Data = "timer-label", p.b.title, []timeline.Data{{Name: "key", Value: p.b.key}}
		timers.Texts = append(timers.Texts, t)
	}
	y += float64(nb)*bracketRow + 4

	// The API's listing of the drill's pods, and the worker's runtime.
	for _, lane := range []struct {
		view, name string
		reads      []LaneRead
	}{
		{"api-pods", "API: drill pods (" + orUnnamed(a.PodSource) + ")", a.PodReads},
		{"runtime", "runtime: " + a.Runtime.Source + " over SSH", a.RuntimeReads},
	} {
		g := s.Add(&timeline.Group{Class: "lane", Data: timeline.WithData(data, timeline.Data{Name: "view", Value: lane.view})})
		g.Texts = append(g.Texts, timeline.TextAt(4, y+10, lane.name, 10, "start"))
		g.Rects = append(g.Rects, readSegments(ts, a, lane.reads, y)...)
		if lane.view == "runtime" && diverged && div.Key == DivergenceRuntime {
			x0, x1 := ts.x(0), ts.x(a.HealStart.Sub(a.FaultAt))
			*runtimeLanes = append(*runtimeLanes, timeline.Rect{X: x0, Y: y - 2, W: x1 - x0, H: laneHeight + 4, Stroke: divergeRed, Class: "diverged", Title: "the divergence: " + runtimeSummary(a.Runtime, a.FaultAt)})
		}
		y += laneHeight + 4
	}
	armBottom := y

	// Behind the lanes: the window, the heal and the return; over them
	// the fault and the heal's start.
	phase := func(from, to time.Time, fill, name string) {
		if from.IsZero() || to.IsZero() || !to.After(from) {
			return
		}
		x0, x1 := ts.x(from.Sub(a.FaultAt)), ts.x(to.Sub(a.FaultAt))
		bg.Rects = append(bg.Rects, timeline.Rect{X: x0, Y: armTop + 14, W: x1 - x0, H: armBottom - armTop - 14, Fill: fill, Class: "phase-" + name,
			Title: fmt.Sprintf("%s +%s to +%s", name, secs(from.Sub(a.FaultAt)), secs(to.Sub(a.FaultAt)))})
	}
	phase(a.FaultAt, a.HealStart, windowFill, "window")
	phase(a.HealStart, a.Healed, healFill, "heal")
	phase(maxTime(a.Healed, a.HealStart), a.EvidenceEnd, settleFill, "return")
	marks := s.Add(&timeline.Group{Class: "marks", Data: data})
	marks.Lines = append(marks.Lines, timeline.Line{X1: ts.x(0), Y1: armTop + 14, X2: ts.x(0), Y2: armBottom, Stroke: faultStroke, Width: 1.5, Class: "mark-fault",
		Title: fmt.Sprintf("fault at %s (inject took %s)", stamp(a.FaultAt), secs(a.InjectTook))})
	if !a.HealStart.IsZero() {
		x := ts.x(a.HealStart.Sub(a.FaultAt))
		marks.Lines = append(marks.Lines, timeline.Line{X1: x, Y1: armTop + 14, X2: x, Y2: armBottom, Stroke: healStroke, Width: 1.5, Class: "mark-heal",
			Title: fmt.Sprintf("%s at +%s", a.returnAnchor(), secs(a.HealStart.Sub(a.FaultAt)))})
	}
	return armBottom + pairPadding
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func orUnnamed(s string) string {
	if s == "" {
		return "no server listed them"
	}
	return s
}

// readSegments draws a lane's reads: each holds from its read to the
// next, the last for a second; reads in a row that say the same are one
// stretch.
func readSegments(ts timeScale, a PairArm, reads []LaneRead, y float64) []timeline.Rect {
	type stretch struct {
		state, text string
		from, to    time.Duration
	}
	var ss []stretch
	for j, r := range reads {
		from := r.At.Sub(a.FaultAt)
		to := from + time.Second
		if j+1 < len(reads) {
			to = reads[j+1].At.Sub(a.FaultAt)
		}
		if n := len(ss); n > 0 && ss[n-1].state == r.State && ss[n-1].text == r.Text {
			ss[n-1].to = to
			continue
		}
		ss = append(ss, stretch{r.State, r.Text, from, to})
	}
	out := make([]timeline.Rect, 0, len(ss))
	for _, st := range ss {
		x0, x1 := ts.x(st.from), ts.x(st.to)
		out = append(out, timeline.Rect{X: x0, Y: y, W: math.Max(x1-x0, 0.5), H: laneHeight, Fill: stateColours[st.state], Hatch: st.state == Unreadable,
			Class: st.state, Title: fmt.Sprintf("+%s to +%s: %s", secs(st.from), secs(st.to), st.text), Data: []timeline.Data{{Name: "state", Value: st.state}}})
	}
	return out
}

// bracket is one interval of the drill and the timer behind it.
type bracket struct {
	key      string
	from, to time.Duration
	label    string
	title    string
}

// timerBrackets are the intervals a Kubernetes timer decides, where both
// ends were seen: from the last lease renewal to Ready=Unknown (the grace
// period), from Unknown to the NoExecute taint (the next monitor pass),
// from the taint to the deletions (the toleration), and after the heal,
// from Ready=True to the taint's removal (the next monitor pass).
func timerBrackets(a PairArm) []bracket {
	r := a.Run
	var out []bracket
	add := func(key string, from time.Duration, fromSeen bool, toKey, label string) {
		to := a.Moment(toKey)
		if !fromSeen || !to.Seen || to.Offset <= from {
			return
		}
		out = append(out, bracket{key: key, from: from, to: to.Offset, label: label + fmt.Sprintf(" (%s)", secs(to.Offset-from)), title: intervalTimer(a, toKey)})
	}
	if !a.Lease.LastRenew.IsZero() {
		add("grace", a.Lease.LastRenew.Sub(a.FaultAt), true, "ready-unknown", "last renewal → Unknown: "+timerText(r, "kube-controller-manager.node-monitor-grace-period", "node-monitor-grace-period"))
	}
	if u := a.Moment("ready-unknown"); u.Seen {
		add("monitor", u.Offset, true, "unreachable-noexecute", "→ taint: "+timerText(r, "kube-controller-manager.node-monitor-period", "node-monitor-period"))
	}
	if t := a.Moment("unreachable-noexecute"); t.Seen {
		add("toleration", t.Offset, true, "web-deletion", "taint → deletion: "+timerText(r, "kube-apiserver.default-unreachable-toleration-seconds", "toleration"))
	}
	if rt := a.Moment("ready-true"); rt.Seen {
		add("monitor-return", rt.Offset, true, "unreachable-removed", "Ready → taint removed: "+timerText(r, "kube-controller-manager.node-monitor-period", "node-monitor-period"))
	}
	return out
}

// momentTitle is a moment's tooltip: when, from where, what, and the
// timer behind the interval before it.
func momentTitle(a PairArm, m Moment) string {
	t := fmt.Sprintf("%s: +%s after the fault (%s after the %s), seen by %s", m.Label, secs(m.Offset), secs(m.Since), m.Anchor, m.Source)
	if m.Detail != "" {
		t += "; " + m.Detail
	}
	if timer := intervalTimer(a, m.Key); timer != "" {
		t += "; timer: " + timer
	}
	return t
}

// tickLabel is a tick's offset from the fault: "+10s", "-5s", "0s".
func tickLabel(v float64) string {
	if math.Abs(v) < 1e-9 {
		return "0s"
	}
	return fmt.Sprintf("%+.0fs", v)
}
