package report

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// intervalTimer names the Kubernetes timer that explains how long after
// the previous moment a moment comes, with its configured value.
func intervalTimer(a PairArm, key string) string {
	r := a.Run
	switch key {
	case "lease-stopped":
		return "kubelet node lease renew interval: " + timerText(r, "kubelet.node-lease-renew-interval", "nodeLeaseDurationSeconds × 0.25") +
			" (" + timerText(r, "kubelet.nodeLeaseDurationSeconds", "nodeLeaseDurationSeconds") + ")"
	case "ready-unknown":
		return timerText(r, "kube-controller-manager.node-monitor-grace-period", "node-monitor-grace-period") + " after the last lease renewal, checked every " +
			timerText(r, "kube-controller-manager.node-monitor-period", "node-monitor-period")
	case "ready-false", "not-ready-taint":
		return "set only when a kubelet reports the node not ready; a silent node goes Unknown instead"
	case "unreachable-noschedule", "unreachable-noexecute":
		return "the node lifecycle controller's next pass after Unknown: " + timerText(r, "kube-controller-manager.node-monitor-period", "node-monitor-period")
	case "web-deletion", "orphan-deletion":
		return "NoExecute toleration the DefaultTolerationSeconds admission gave every pod: " +
			timerText(r, "kube-apiserver.default-unreachable-toleration-seconds", "default-unreachable-toleration-seconds") + " after the unreachable taint"
	case "replacement-created":
		return "none: the ReplicaSet controller replaces a pod as soon as it has a deletionTimestamp"
	case "replacement-unschedulable", "replacement-scheduled", "return-replacement-scheduled":
		return "none: the scheduler tries at once (and again with backoff); after the return it waits for the node's taints to go"
	case "orphan-recreated":
		return "none: a bare pod has no controller to recreate it"
	case "heal-started":
		if w, ok := r.Timings["window"]; ok {
			return "the drill's window, sampled for " + secs(time.Duration(w*float64(time.Second)))
		}
		return "the drill's window (its duration not recorded)"
	case "healed":
		return "the heal's own duration: starting the kubelet service, against powering the host on (its boot and kubelet start come after)"
	case "lease-resumed":
		return "kubelet start-up (after a power off, the host's boot first), then its first lease renewal"
	case "ready-true":
		return "the kubelet's first status update after start; updates come every " + timerText(r, "kubelet.nodeStatusUpdateFrequency", "nodeStatusUpdateFrequency")
	case "unreachable-removed":
		return "the node lifecycle controller's next pass after Ready=True: " + timerText(r, "kube-controller-manager.node-monitor-period", "node-monitor-period")
	case "replacement-running":
		return "image pull (cached) and container start on the returned worker"
	case "deleted-terminal":
		return "the kubelet's pod sync after start: it stops what still runs (each within the pod's terminationGracePeriodSeconds) and reports the phase its containers' ends give"
	case "terminating-gone":
		return "the kubelet confirms the deletion once the pod is terminal and its containers are gone"
	case "orphan-gone":
		return "as for the other Terminating pods; a bare pod has no controller to replace it"
	}
	return ""
}

// readNotes numbers what the evidence read for the moments a table shows
// as not seen, so that each such cell says how far the evidence went and
// points to the reads behind the absence, listed under the table.
type readNotes struct {
	prefix string
	texts  []string
}

func (n *readNotes) ref(text string) string {
	if text == "" {
		return ""
	}
	for i, t := range n.texts {
		if t == text {
			return fmt.Sprintf(" [%s%d]", n.prefix, i+1)
		}
	}
	n.texts = append(n.texts, text)
	return fmt.Sprintf(" [%s%d]", n.prefix, len(n.texts))
}

func (n *readNotes) write(b *strings.Builder) {
	if len(n.texts) == 0 {
		return
	}
	b.WriteString("\nWhat the evidence read where a moment is not seen:\n\n")
	for i, t := range n.texts {
		fmt.Fprintf(b, "- [%s%d] %s\n", n.prefix, i+1, t)
	}
}

func momentCell(m Moment, notes *readNotes) string {
	if !m.Seen {
		return m.NotSeen + notes.ref(m.Read)
	}
	return fmt.Sprintf("+%s (%s after the %s)", secs(m.Offset), secs(m.Since), m.Anchor)
}

func returnCell(m Moment, notes *readNotes) string {
	if !m.Seen {
		return m.NotSeen + notes.ref(m.Read)
	}
	return fmt.Sprintf("%s after the %s (+%s after the fault)", secs(m.Since), m.Anchor, secs(m.Offset))
}

func runtimeCell(rv RuntimeView, faultAt time.Time) string {
	return runtimeSummary(rv, faultAt) + "; so the containers " + keptRunning(rv)
}

type namedArm struct {
	name string
	a    PairArm
}

// WritePairMarkdown writes the pair drill's report: the two windows side
// by side with the divergence point and the timers, the two returns side
// by side measured from the heal's start, how the pods marked for deletion
// ended, the runtime's view and the detection latency check. plot names
// the plot file beside it ("" if none).
func WritePairMarkdown(w io.Writer, c, e PairArm, plot string) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	arms := []namedArm{{"6.C2 kubelet stopped", c}, {"6.C1 power off", e}}
	p("# Drill 6.C1 against 6.C2: power off against a stopped kubelet\n\n")
	p("Lab %s (%s), timer profile **%s**, worker `%s`.\n\n", c.Run.Lab.Name, c.Run.Lab.Kind, c.Run.Lab.TimerProfile, c.Worker)
	for _, arm := range []struct {
		what string
		a    PairArm
	}{{"6.C2 (control, kubelet stopped)", c}, {"6.C1 (experiment, power off)", e}} {
		a := arm.a
		p("- %s: run `%s`, fault at %s (inject took %s), heal started at %s (+%s), heal call returned at %s (+%s), evidence to +%s.\n",
			arm.what, a.Run.RunID, stamp(a.FaultAt), secs(a.InjectTook), stamp(a.HealStart), secs(sinceFault(a, a.HealStart)), stamp(a.Healed), secs(sinceFault(a, a.Healed)), secs(sinceFault(a, a.EvidenceEnd)))
	}
	p("\n")
	for _, arm := range arms {
		if arm.a.HealStartMissing {
			p("**%s**: this record has no heal-started event (written before the engine stamped it): its window is taken to end, and its return measured from, the heal's end (fault-healed), so whatever the heal itself caused before it returned counts in the window.\n\n", arm.name)
		}
	}
	p("## The window: from the fault to the heal's start\n\n")
	p("Times are seconds after the fault (the start of its inject), as the timeline recorder saw each change on the API server it watches, or as the first snapshot read that showed it "+
		"(then between that read and the one before); in brackets, seconds after the moment the arms are compared from: the node lease's last renewal before the fault (all the control plane knows; "+
		"the fault itself falls anywhere within a renew interval). The arms diverge at the first moment one shows and the other does not, or shows more than %s apart. "+
		"Only the window is compared: whatever comes after the heal starts is caused by the node's return and is in the return timeline below.\n\n", Tolerance)
	div, diverged := Diverge(c, e)
	api, apiDiverged := APIDiverge(c, e)
	p("| moment | 6.C2 kubelet stopped | 6.C1 power off | timer behind the interval (configured value) |\n|---|---|---|---|\n")
	windowNotes := &readNotes{prefix: "W"}
	for _, mc := range c.Moments {
		me := e.Moment(mc.Key)
		p("| %s%s | %s | %s | %s |\n", mc.Label, divergenceMark(diverged && div.Key == mc.Key), momentCell(mc, windowNotes), momentCell(me, windowNotes), intervalTimer(c, mc.Key))
	}
	p("| pre-fault containers on the worker (runtime view)%s | %s | %s | the runtime answers over SSH while the host runs; the kubelet is not needed to keep containers running |\n",
		divergenceMark(diverged && div.Key == DivergenceRuntime), runtimeCell(c.Runtime, c.FaultAt), runtimeCell(e.Runtime, e.FaultAt))
	windowNotes.write(&b)
	p("\n")
	if diverged {
		p("**Divergence point**: %s — %s.\n\n", div.Label, div.Reason)
	} else {
		p("**Divergence point**: none in the window — neither the runtime's reads nor any API-side moment tell the arms apart.\n\n")
	}
	switch {
	case apiDiverged && div.Key != api.Key:
		p("The API view of the window differs too: %s — %s.\n\n", api.Label, api.Reason)
	case !apiDiverged:
		p("The API view of the window: every moment either arm shows lies within %s in both — the control plane cannot tell a dead machine from a dead process.\n\n", Tolerance)
	}
	for _, arm := range arms {
		created, why, sched := arm.a.Moment("replacement-created"), arm.a.Moment("replacement-unschedulable"), arm.a.Moment("replacement-scheduled")
		switch {
		case !created.Seen:
			p("- %s: no replacement pod was created while the worker was away (%s).\n", arm.name, created.notSeenText())
		case sched.Seen:
			p("- %s: a replacement was scheduled at +%s, before the heal started: %s\n", arm.name, secs(sched.Offset), sched.Detail)
		case why.Seen:
			p("- %s: the replacements were created at +%s and never scheduled while the worker was away; the scheduler said (%s, %s): %q\n", arm.name, secs(created.Offset), why.Source, stamp(why.At), why.Detail)
		default:
			p("- %s: replacements were created at +%s; no scheduling outcome was recorded before the heal started\n", arm.name, secs(created.Offset))
		}
	}
	p("\nSetup: the Deployment's pods are pinned to the worker by nodeSelector and the only other node is the control plane, whose NoSchedule taint they do not tolerate; the unreachable worker has its own NoSchedule taint.\n\n")

	p("## The return: from the heal's start\n\n")
	p("Seconds after the heal started (in brackets, after the fault). The heal's own duration (a kubelet service start against a power-on and the boot after it) lies in these figures: it belongs to the return, not to the divergence.\n\n")
	p("| moment | 6.C2 kubelet stopped | 6.C1 power off | timer behind the interval (configured value) |\n|---|---|---|---|\n")
	returnNotes := &readNotes{prefix: "R"}
	for _, mc := range c.Return {
		me := e.Moment(mc.Key)
		p("| %s | %s | %s | %s |\n", mc.Label, returnCell(mc, returnNotes), returnCell(me, returnNotes), intervalTimer(c, mc.Key))
	}
	returnNotes.write(&b)
	p("\n### How the pods marked for deletion ended at the node's return (API view)\n\n")
	p("**API-visible difference at the return**: %s.\n\n", ReturnDifference(c, e))
	for _, arm := range arms {
		p("- %s: %s.\n", arm.name, arm.a.PhaseSummary())
		for _, d := range arm.a.Deleted {
			if d.Phase == "" {
				p("  - %s (uid %s): %s.\n", d.Name, d.UID, d.NotSeen)
				continue
			}
			p("  - %s (uid %s): %s %s after the %s (+%s), per %s", d.Name, d.UID, d.Phase, secs(d.PhaseAt.Sub(arm.a.HealStart)), arm.a.returnAnchor(), secs(sinceFault(arm.a, d.PhaseAt)), d.PhaseFrom)
			if d.Detail != "" {
				p(" (%s)", d.Detail)
			}
			if !d.GoneAt.IsZero() {
				p("; gone at +%s", secs(sinceFault(arm.a, d.GoneAt)))
			}
			p(".\n")
		}
	}

	p("\n## What the worker's container runtime said (read over SSH)\n\n")
	for _, arm := range arms {
		rv := arm.a.Runtime
		p("- %s: %d containers of the drill ran before the fault. During the window %d of %d reads answered", arm.name, rv.OldBefore, rv.WindowReadable, rv.WindowReads)
		if rv.FirstUnreadable != "" {
			p(" (first unreadable: %s)", rv.FirstUnreadable)
		}
		p("; %d of them saw pre-fault containers still running", rv.WindowStillRunning)
		if !rv.OldRunningLastAt.IsZero() {
			p(", the last readable one (%s, +%s) saw %d", stamp(rv.OldRunningLastAt), secs(rv.OldRunningLastAt.Sub(arm.a.FaultAt)), rv.OldRunningLast)
		}
		p(".")
		if rv.FinalReadable {
			p(" After heal and settle (+%s): %d containers running, %d of them from before the fault.", secs(sinceFault(arm.a, rv.FinalAt)), rv.FinalRunning, rv.FinalOldRunning)
		}
		p(" So the containers %s.\n", keptRunning(rv))
	}
	p("\n## Detection latency from the node lease\n\n")
	for _, arm := range arms {
		l := arm.a.Lease
		if l.Why != "" && l.LastRenew.IsZero() {
			p("- %s: cannot be checked: %s.\n", arm.name, l.Why)
			continue
		}
		p("- %s: the kubelet renews its node lease every %s; the last renewal the API showed was at %s (%s, read from %s). "+
			"The node lifecycle controller calls the node Unknown on its first pass (every %s) after no renewal for node-monitor-grace-period = %s: "+
			"predicted between +%s and +%s after the fault; measured **+%s**. ",
			arm.name, l.RenewInterval, stamp(l.LastRenew), signed(l.LastRenew.Sub(arm.a.FaultAt)), l.LastRenewFrom,
			l.MonitorPeriod, l.Grace, secs(l.PredictedMin), secs(l.PredictedMax), secs(l.Measured))
		if l.OK {
			p("Within 2 s of the prediction (%s outside the range).\n", secs(l.Off))
		} else {
			p("NOT within 2 s: %s.\n", l.Why)
		}
	}
	p("\nThe control plane cannot tell a dead machine from a dead process: in both arms all it has is a lease that stopped being renewed.\n")
	if plot != "" {
		p("\n![both timelines](%s)\n", plot)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func divergenceMark(on bool) string {
	if on {
		return " **◀ divergence**"
	}
	return ""
}

func sinceFault(a PairArm, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return t.Sub(a.FaultAt)
}

func keptRunning(rv RuntimeView) string {
	switch {
	case rv.WindowReadable > 0 && rv.WindowStillRunning == rv.WindowReadable && rv.OldBefore > 0:
		return "kept running through the window (every readable read saw them)"
	case rv.WindowReadable == 0 && rv.FinalReadable && rv.FinalOldRunning == 0:
		return "did not keep running: the runtime was unreachable throughout the window, and after the host came back none of the pre-fault containers ran"
	case rv.WindowReadable > 0 && rv.WindowStillRunning == 0:
		return "did not keep running (no readable read saw a pre-fault container running)"
	}
	return "cannot be said from this evidence"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("15:04:05.000")
}
