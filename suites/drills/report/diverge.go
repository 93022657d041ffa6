package report

import (
	"fmt"
	"sort"
	"time"
)

// DivergenceRuntime is the key of the divergence in the worker runtime's
// view: the drill's containers running through the window in one arm,
// gone in the other.
const DivergenceRuntime = "runtime-containers"

// Divergence is where the two arms' windows first differ.
type Divergence struct {
	Key    string
	Label  string
	Reason string
	// At is where it begins, after the fault (for the plot).
	At time.Duration
}

// Tolerance is how far apart the same moment may lie in the two arms and
// still count as the same: the 2 s the drill allows.
const Tolerance = 2 * time.Second

// Diverge finds where the arms' windows part. The drill expects the API
// to see the same in both arms and the difference to lie in what happens
// to the pods, so when the runtime's reads show the pre-fault containers
// running through the window in one arm and gone in the other, that is
// the divergence (RuntimeDiverge); otherwise it is the first API-side
// window moment that differs (APIDiverge). Moments after the heal starts
// never enter: they are caused by the node's return, and their spacing is
// the return's (a kubelet start against a boot), not the divergence.
func Diverge(c, e PairArm) (Divergence, bool) {
	if d, ok := RuntimeDiverge(c, e); ok {
		return d, true
	}
	return APIDiverge(c, e)
}

// keptThroughWindow: every readable window read saw the pre-fault
// containers running.
func keptThroughWindow(rv RuntimeView) bool {
	return rv.OldBefore > 0 && rv.WindowReadable > 0 && rv.WindowStillRunning == rv.WindowReadable
}

// goneInWindow: no readable window read saw a pre-fault container running,
// or none answered and after the host came back none of them ran. A window
// of unreadable reads alone says nothing (a read that failed is unknown).
func goneInWindow(rv RuntimeView) bool {
	if rv.OldBefore == 0 {
		return false
	}
	if rv.WindowReadable > 0 {
		return rv.WindowStillRunning == 0
	}
	return rv.WindowReads > 0 && rv.FinalReadable && rv.FinalOldRunning == 0
}

// RuntimeDiverge finds the divergence in the runtime's view, with the read
// counts behind it; false when the reads do not show one.
func RuntimeDiverge(c, e PairArm) (Divergence, bool) {
	switch {
	case keptThroughWindow(c.Runtime) && goneInWindow(e.Runtime):
	case keptThroughWindow(e.Runtime) && goneInWindow(c.Runtime):
	default:
		return Divergence{}, false
	}
	start := max(c.firstWindowRead(), e.firstWindowRead())
	return Divergence{
		Key:   DivergenceRuntime,
		Label: "the drill's containers on the worker (runtime view, read over SSH)",
		Reason: fmt.Sprintf("with the kubelet stopped %s; with the power off %s",
			runtimeSummary(c.Runtime, c.FaultAt), runtimeSummary(e.Runtime, e.FaultAt)),
		At: start,
	}, true
}

func (a PairArm) firstWindowRead() time.Duration {
	if a.Runtime.FirstReadAt.IsZero() {
		return 0
	}
	return a.Runtime.FirstReadAt.Sub(a.FaultAt)
}

// runtimeSummary states one arm's runtime reads of the window.
func runtimeSummary(rv RuntimeView, faultAt time.Time) string {
	switch {
	case keptThroughWindow(rv):
		return fmt.Sprintf("%d of %d window reads of %s answered and every one of them saw pre-fault containers running (%d ran before the fault; the answered reads span +%s to +%s)",
			rv.WindowReadable, rv.WindowReads, rv.Source, rv.OldBefore, secs(rv.FirstReadableAt.Sub(faultAt)), secs(rv.OldRunningLastAt.Sub(faultAt)))
	case rv.WindowReadable > 0:
		return fmt.Sprintf("%d of %d window reads of %s answered and %d of them saw a pre-fault container running", rv.WindowReadable, rv.WindowReads, rv.Source, rv.WindowStillRunning)
	case rv.FinalReadable:
		return fmt.Sprintf("%d of %d window reads of %s answered (first unreadable: %s), and after the host came back %d of the %d pre-fault containers ran (read at +%s)",
			rv.WindowReadable, rv.WindowReads, rv.Source, rv.FirstUnreadable, rv.FinalOldRunning, rv.OldBefore, secs(rv.FinalAt.Sub(faultAt)))
	}
	return fmt.Sprintf("%d of %d window reads of %s answered (first unreadable: %s), and no read after the heal answered either", rv.WindowReadable, rv.WindowReads, rv.Source, rv.FirstUnreadable)
}

func (m Moment) notSeenText() string {
	if m.Read == "" {
		return m.NotSeen
	}
	return m.NotSeen + " (read: " + m.Read + ")"
}

// APIDiverge finds the first window moment, in time order, that one arm
// shows and the other does not, or shows more than Tolerance apart from
// its anchor (the last lease renewal before the fault, or the fault when
// one arm's lease was not read).
func APIDiverge(c, e PairArm) (Divergence, bool) {
	type pair struct {
		mc, me Moment
		at     time.Duration
	}
	var ps []pair
	for _, mc := range c.Moments {
		me := e.Moment(mc.Key)
		if !mc.Seen && !me.Seen {
			continue
		}
		at := mc.Offset
		if !mc.Seen || (me.Seen && me.Offset < at) {
			at = me.Offset
		}
		ps = append(ps, pair{mc, me, at})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].at < ps[j].at })
	for _, p := range ps {
		switch {
		case p.mc.Seen && !p.me.Seen:
			return Divergence{p.mc.Key, p.mc.Label, fmt.Sprintf("seen at +%s with the kubelet stopped; with the power off %s", secs(p.mc.Offset), p.me.notSeenText()), p.at}, true
		case !p.mc.Seen && p.me.Seen:
			return Divergence{p.me.Key, p.me.Label, fmt.Sprintf("seen at +%s with the power off; with the kubelet stopped %s", secs(p.me.Offset), p.mc.notSeenText()), p.at}, true
		}
		dc, de, anchor := p.mc.Since, p.me.Since, "the "+p.mc.Anchor
		if p.mc.Anchor != p.me.Anchor {
			dc, de, anchor = p.mc.Offset, p.me.Offset, "the fault (one arm lacks the other's anchor)"
		}
		d := de - dc
		if d < 0 {
			d = -d
		}
		if d > Tolerance {
			return Divergence{p.mc.Key, p.mc.Label, fmt.Sprintf("%s after %s with the kubelet stopped against %s with the power off (%s apart, more than %s)",
				secs(dc), anchor, secs(de), secs(d), Tolerance), p.at}, true
		}
	}
	return Divergence{}, false
}
