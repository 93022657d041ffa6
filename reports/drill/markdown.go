package drill

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
	case "replacement-unschedulable", "replacement-scheduled":
		return "none: the scheduler tries at once (and again with backoff)"
	case "healed":
		return "the drill's window"
	case "ready-true":
		return "kubelet start-up (and, after a power off, the host's boot), then its first status update; updates come every " + timerText(r, "kubelet.nodeStatusUpdateFrequency", "nodeStatusUpdateFrequency")
	case "terminating-gone":
		return "kubelet's pod sync after start: containers still running are stopped first, each within the pod's terminationGracePeriodSeconds (10s), before the kubelet confirms the deletion"
	case "orphan-gone", "orphan-recreated":
		return "none: a bare pod has no controller to replace it"
	}
	return ""
}

func offsetCell(m Moment) string {
	if !m.Seen {
		return "not seen"
	}
	return fmt.Sprintf("+%s (%s after the %s)", secs(m.Offset), secs(m.Since), m.Anchor)
}

// WritePairMarkdown writes the pair drill's report: the two timelines side
// by side, the divergence point, the timers, the runtime's view and the
// detection latency check. plot names the plot file beside it ("" if none).
func WritePairMarkdown(w io.Writer, c, e PairArm, plot string) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Drill 6.C1 against 6.C2: power off against a stopped kubelet\n\n")
	p("Lab %s (%s), timer profile **%s**, worker `%s`.\n\n", c.Run.Lab.Name, c.Run.Lab.Kind, c.Run.Lab.TimerProfile, c.Worker)
	p("- 6.C2 (control, kubelet stopped): run `%s`, fault at %s (inject took %s), healed at %s.\n", c.Run.RunID, stamp(c.FaultAt), secs(c.InjectTook), stamp(c.HealAt))
	p("- 6.C1 (experiment, power off): run `%s`, fault at %s (inject took %s), healed at %s.\n\n", e.Run.RunID, stamp(e.FaultAt), secs(e.InjectTook), stamp(e.HealAt))
	p("Times are seconds after the fault (the start of its inject), as the timeline recorder saw each change on the API server it watches; "+
		"in brackets, seconds after the moment the arms are compared from: the node lease's last renewal before the fault (all the control plane knows; "+
		"the fault itself falls anywhere within a renew interval) or, after heal, the heal. Two arms diverge at the first moment one shows and the other does not, "+
		"or shows more than %s apart.\n\n", Tolerance)
	div, diverged := Diverge(c, e)
	p("| moment | 6.C2 kubelet stopped | 6.C1 power off | timer behind the interval (configured value) |\n|---|---|---|---|\n")
	for _, mc := range c.Moments {
		me := e.Moment(mc.Key)
		mark := ""
		if diverged && div.Key == mc.Key {
			mark = " **◀ divergence**"
		}
		p("| %s%s | %s | %s | %s |\n", mc.Label, mark, offsetCell(mc), offsetCell(me), intervalTimer(c, mc.Key))
	}
	p("\n")
	if diverged {
		p("**Divergence point (API view)**: %s — %s.\n\n", div.Label, div.Reason)
	} else {
		p("**Divergence point (API view)**: none — every moment lies within %s in both arms.\n\n", Tolerance)
	}
	for _, arm := range []struct {
		name string
		a    PairArm
	}{{"6.C2 kubelet stopped", c}, {"6.C1 power off", e}} {
		created, why := arm.a.Moment("replacement-created"), arm.a.Moment("replacement-unschedulable")
		switch {
		case !created.Seen:
			p("- %s: no replacement pod was created while the worker was away.\n", arm.name)
		case why.Seen && !arm.a.Moment("replacement-scheduled").Seen:
			p("- %s: the replacements were created at +%s and never scheduled while the worker was away; the scheduler said (%s, %s): %q\n", arm.name, secs(created.Offset), why.Source, stamp(why.At), why.Detail)
		case arm.a.Moment("replacement-scheduled").Seen:
			s := arm.a.Moment("replacement-scheduled")
			p("- %s: a replacement was scheduled at +%s: %s\n", arm.name, secs(s.Offset), s.Detail)
		default:
			p("- %s: replacements were created at +%s; no scheduling outcome was recorded\n", arm.name, secs(created.Offset))
		}
	}
	p("\nSetup: the Deployment's pods are pinned to the worker by nodeSelector and the only other node is the control plane, whose NoSchedule taint they do not tolerate; the unreachable worker has its own NoSchedule taint.\n\n")
	p("## What the worker's container runtime said (crictl over SSH)\n\n")
	for _, arm := range []struct {
		name string
		a    PairArm
	}{{"6.C2 kubelet stopped", c}, {"6.C1 power off", e}} {
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
			p(" After heal and settle: %d containers running, %d of them from before the fault.", rv.FinalRunning, rv.FinalOldRunning)
		}
		p(" So the containers %s.\n", keptRunning(rv))
	}
	p("\n## Detection latency from the node lease\n\n")
	for _, arm := range []struct {
		name string
		a    PairArm
	}{{"6.C2 kubelet stopped", c}, {"6.C1 power off", e}} {
		l := arm.a.Lease
		if l.Why != "" && l.LastRenew.IsZero() {
			p("- %s: cannot be checked: %s.\n", arm.name, l.Why)
			continue
		}
		p("- %s: the kubelet renews its node lease every %s; the last renewal the API showed was at %s (+%s, read from %s). "+
			"The node lifecycle controller calls the node Unknown on its first pass (every %s) after no renewal for node-monitor-grace-period = %s: "+
			"predicted between +%s and +%s after the fault; measured **+%s**. ",
			arm.name, l.RenewInterval, stamp(l.LastRenew), secs(l.LastRenew.Sub(arm.a.FaultAt)), l.LastRenewFrom,
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
