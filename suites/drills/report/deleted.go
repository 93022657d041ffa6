package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/suites/drills"
)

// deletedPods finds the pods marked for deletion in the window (by the
// timeline's pod-deletion-set or a window read listing a deletionTimestamp)
// and, for each, the terminal phase it reached after the heal started and
// when it was gone. A phase comes from the drill sampler's pod-phase watch
// or from a drill/pods read, whichever saw it first.
func (x pairEvidence) deletedPods() []DeletedPod {
	a := x.arm
	if a.HealStart.IsZero() {
		return nil
	}
	names := map[string]string{}
	for _, e := range x.tl {
		if e.Kind == "pod-deletion-set" && strings.HasPrefix(e.Subject, "pod/"+drills.Namespace+"/") && within(e.At, a.FaultAt, a.HealStart) {
			names[uidOf(e.Detail)] = strings.TrimPrefix(e.Subject, "pod/"+drills.Namespace+"/")
		}
	}
	for _, r := range apiReads(x.snaps, drills.QuestionPods, a.FaultAt, a.HealStart) {
		pods, _ := decodePods(r.a)
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				names[p.UID] = p.Name
			}
		}
	}
	delete(names, "")
	returnReads := apiReads(x.snaps, drills.QuestionPods, a.HealStart, time.Time{})
	var out []DeletedPod
	for uid, name := range names {
		d := DeletedPod{Name: name, UID: uid}
		for _, e := range x.tl {
			if e.Kind == drills.KindPodPhase && !e.At.Before(a.HealStart) && uidOf(e.Detail) == uid {
				if ph := phaseOf(e.Detail); terminal(ph) {
					d.Phase, d.PhaseAt, d.PhaseFrom, d.Detail = ph, e.At, fmt.Sprintf("the drill sampler's pod-phase watch of %s", e.Source), e.Detail
					break
				}
			}
		}
		for _, e := range x.tl {
			if e.Kind == "pod-deleted" && !e.At.Before(a.HealStart) && uidOf(e.Detail) == uid {
				d.GoneAt = e.At
				break
			}
		}
		var lastListed *drills.PodState
		var lastListedRead read
		for _, r := range returnReads {
			pods, ok := decodePods(r.a)
			if !ok {
				continue
			}
			var listed *drills.PodState
			for i := range pods {
				if pods[i].UID == uid {
					listed = &pods[i]
				}
			}
			switch {
			case listed == nil:
				if d.GoneAt.IsZero() || r.a.ReadAt.Before(d.GoneAt) {
					d.GoneAt = r.a.ReadAt
				}
			case terminal(listed.Phase) && (d.Phase == "" || r.a.ReadAt.Before(d.PhaseAt)):
				d.Phase, d.PhaseAt, d.PhaseFrom = listed.Phase, r.a.ReadAt, fmt.Sprintf("%s (%s read)", r.src, drills.QuestionPods)
				d.Detail = strings.Join(listed.Terminated, "; ")
			case !terminal(listed.Phase):
				lastListed, lastListedRead = listed, r
			}
			if listed == nil {
				break
			}
		}
		if d.Phase == "" {
			d.NotSeen = x.noTerminalPhase(d, lastListed, lastListedRead, returnReads)
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// phaseOf reads the phase a pod-phase event says the pod moved to
// ("uid X, Running → Failed; …").
func phaseOf(detail string) string {
	_, after, ok := strings.Cut(detail, "→ ")
	if !ok {
		return ""
	}
	f := strings.FieldsFunc(after, func(r rune) bool { return r == ' ' || r == ';' || r == ',' })
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func (x pairEvidence) noTerminalPhase(d DeletedPod, last *drills.PodState, lastRead read, reads []read) string {
	a := x.arm
	var parts []string
	if last != nil {
		parts = append(parts, fmt.Sprintf("the last read listing it after the %s (+%s, %s) had it %s", a.returnAnchor(), secs(lastRead.a.ReadAt.Sub(a.FaultAt)), lastRead.src, last.Phase))
	} else {
		parts = append(parts, fmt.Sprintf("no drill/pods read after the %s listed it", a.returnAnchor()))
	}
	if d.GoneAt.IsZero() {
		parts = append(parts, fmt.Sprintf("it was never seen gone; the evidence ends at +%s", secs(a.EvidenceEnd.Sub(a.FaultAt))))
	} else {
		parts = append(parts, fmt.Sprintf("it was gone at +%s", secs(d.GoneAt.Sub(a.FaultAt))))
	}
	if a.PhaseWatched {
		parts = append(parts, "the drill sampler's pod-phase watch stamped no terminal phase for it")
	} else {
		parts = append(parts, "this record has no pod-phase watch (recorded before the drill sampler watched pod phases), so a phase held only between two reads is missed")
	}
	parts = append(parts, coverage(reads, drills.QuestionPods, a.FaultAt))
	return "no terminal phase seen: " + strings.Join(parts, "; ")
}

// terminalMoment is the first pod marked for deletion seen in a terminal
// phase after the heal started.
func (x pairEvidence) terminalMoment() Moment {
	m := Moment{Key: "deleted-terminal", Label: "a pod marked for deletion reaches a terminal phase", Return: true}
	var first *DeletedPod
	for i := range x.arm.Deleted {
		d := &x.arm.Deleted[i]
		if d.Phase != "" && (first == nil || d.PhaseAt.Before(first.PhaseAt)) {
			first = d
		}
	}
	switch {
	case first != nil:
		m.Seen, m.At, m.Offset, m.Source = true, first.PhaseAt, first.PhaseAt.Sub(x.arm.FaultAt), first.PhaseFrom
		m.Detail = fmt.Sprintf("%s %s", first.Name, first.Phase)
	case len(x.arm.Deleted) == 0:
		m.NotSeen = "no pod was marked for deletion in the window"
	default:
		m.NotSeen, m.Read = x.notSeen(true, drills.QuestionPods, apiReads(x.snaps, drills.QuestionPods, x.arm.HealStart, time.Time{}))
	}
	return m
}

// terminatingGone is when the last pod marked for deletion in the window
// was gone; not seen while any of them was never seen gone.
func (x pairEvidence) terminatingGone() Moment {
	m := Moment{Key: "terminating-gone", Label: "last Terminating pod removed", Return: true}
	var last *DeletedPod
	var left []string
	for i := range x.arm.Deleted {
		d := &x.arm.Deleted[i]
		if d.GoneAt.IsZero() {
			left = append(left, d.Name)
			continue
		}
		if last == nil || d.GoneAt.After(last.GoneAt) {
			last = d
		}
	}
	switch {
	case len(x.arm.Deleted) == 0:
		m.NotSeen = "no pod was marked for deletion in the window"
	case len(left) > 0:
		m.NotSeen, m.Read = x.notSeen(true, drills.QuestionPods, apiReads(x.snaps, drills.QuestionPods, x.arm.HealStart, time.Time{}))
		m.NotSeen += "; never seen gone: " + strings.Join(left, ", ")
	default:
		m.Seen, m.At, m.Offset, m.Detail = true, last.GoneAt, last.GoneAt.Sub(x.arm.FaultAt), last.Name+" (uid "+last.UID+")"
		m.Source = "the timeline's pod-deleted or the first drill/pods read no longer listing it"
	}
	return m
}

// PhaseSummary says how the pods marked for deletion in the window ended.
func (a PairArm) PhaseSummary() string {
	if len(a.Deleted) == 0 {
		return "no pod was marked for deletion in the window"
	}
	count := map[string]int{}
	for _, d := range a.Deleted {
		count[d.Phase]++
	}
	if len(count) == 1 && a.Deleted[0].Phase != "" {
		return fmt.Sprintf("%d of %d pods marked for deletion in the window ended %s", len(a.Deleted), len(a.Deleted), a.Deleted[0].Phase)
	}
	var parts []string
	for _, ph := range []string{"Succeeded", "Failed"} {
		if count[ph] > 0 {
			parts = append(parts, fmt.Sprintf("%d ended %s", count[ph], ph))
		}
	}
	if count[""] > 0 {
		parts = append(parts, fmt.Sprintf("%d not seen in a terminal phase", count[""]))
	}
	return fmt.Sprintf("of %d pods marked for deletion in the window, %s", len(a.Deleted), strings.Join(parts, ", "))
}

// uniformPhase is the one terminal phase every pod marked for deletion
// ended in, or "" when they differ or one was not seen.
func (a PairArm) uniformPhase() string {
	if len(a.Deleted) == 0 {
		return ""
	}
	ph := a.Deleted[0].Phase
	for _, d := range a.Deleted {
		if d.Phase != ph {
			return ""
		}
	}
	return ph
}

// ReturnDifference states the API-visible difference at the node's
// return: how the pods marked for deletion ended in each arm.
func ReturnDifference(c, e PairArm) string {
	pc, pe := c.uniformPhase(), e.uniformPhase()
	switch {
	case pc == "" || pe == "":
		return "cannot be said from this evidence: in at least one arm the pods marked for deletion did not all end in one terminal phase that was seen (below)"
	case pc == pe:
		return fmt.Sprintf("none in the pods' end: they ended %s in both arms", pc)
	}
	return fmt.Sprintf("the pods marked for deletion ended **%s** with the kubelet stopped and **%s** with the power off", pc, pe)
}
