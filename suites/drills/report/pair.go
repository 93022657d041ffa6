// Package report turns the evidence of the drills' runs (suites/drills) into
// what the drill asks a person to write down: the two pair timelines side
// by side with the divergence point and the timer behind each interval, the
// return timeline of each arm measured from the heal's start, the
// detection latency explained from the node lease, a plot of both
// timelines, and the racks drill's answers, each with its evidence.
// Everything printed is computed from the recorded timeline and snapshots.
//
// It reads run folders through framework/record and finds the drills' runs,
// questions, names and values by the suite's own constants and types, so a
// rename in the suite is a rename here.
package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/suites/drills"
)

// Moment is one of the drill's moments in one run.
type Moment struct {
	// Key identifies the moment across arms.
	Key   string
	Label string
	// Return marks a moment of the node's return: whatever comes after the
	// heal starts is caused by the return, so it is measured from the heal
	// start and listed in the return timeline, never in the window's.
	Return bool
	// Seen is false when the run's evidence holds no such moment; NotSeen
	// then says how far that evidence went and Read what it read (the
	// timeline, and each source's reads with their unreadable stretches),
	// since an absence is only as good as the reads behind it.
	Seen    bool
	NotSeen string
	Read    string
	At      time.Time
	Offset  time.Duration
	Source  string
	Detail  string
	// Since is the offset from the moment's anchor (Anchor names it): for
	// the window, the last node lease renewal before the fault (the control
	// plane knows only when the lease was last renewed, and the fault falls
	// anywhere in a renew interval, so two arms compare from there, not
	// from the fault); for the return, the heal's start.
	Since  time.Duration
	Anchor string
}

// PairArm is one arm of the pair drill, read from one run.
type PairArm struct {
	Run     verdict.Run
	Worker  string
	FaultAt time.Time
	// InjectTook is how long the inject call ran: the fault happened
	// somewhere within it.
	InjectTook time.Duration
	// HealStart ends the window and anchors the return: the heal-started
	// event. A record written before the engine stamped that event has only
	// the heal's end (fault-healed); HealStartMissing then says the window
	// and the return are split there instead, so whatever the heal itself
	// caused falls in the window.
	HealStart        time.Time
	HealStartMissing bool
	// Healed is when the heal call returned: the kubelet service started,
	// or the host powered on (its boot comes after).
	Healed time.Time
	// EvidenceEnd is the last moment the evidence holds: its last event or
	// its last read, whichever is later.
	EvidenceEnd time.Time
	// Watching is what the timeline recorder watched, as its
	// timeline-started event says.
	Watching string
	// Moments are the window's (fault to heal start), Return the return's
	// (from heal start), each in the drill's order.
	Moments []Moment
	Return  []Moment
	// Deleted are the pods marked for deletion in the window and how each
	// ended at the node's return.
	Deleted []DeletedPod
	// PhaseWatched says the drill sampler watched the pods' phases (the
	// record has its pod-phase-watch-started event); without it a terminal
	// phase is only seen when a read happens to fall on it.
	PhaseWatched bool
	// Runtime says what the worker's container runtime showed of the
	// drill's containers during the window and after it.
	Runtime RuntimeView
	// Lease is the detection latency explained from the node lease.
	Lease LeaseCheck
	// RuntimeReads are every read of the worker's runtime, and PodReads
	// one API server's (PodSource) listings of the drill's pods, baseline
	// to final: the two views the side-by-side timelines draw.
	RuntimeReads []LaneRead
	PodReads     []LaneRead
	PodSource    string
}

// DeletedPod is one pod marked for deletion while the worker was away, and
// its end at the node's return.
type DeletedPod struct {
	Name string
	UID  string
	// Phase is the terminal phase (Succeeded or Failed) it was first seen
	// in after the heal started, with when and from where; "" when none
	// was seen, and NotSeen says what the evidence showed instead.
	Phase     string
	PhaseAt   time.Time
	PhaseFrom string
	Detail    string
	NotSeen   string
	// GoneAt is when it was first seen gone after the heal started.
	GoneAt time.Time
}

// RuntimeView is what the worker's runtime said of the containers that ran
// before the fault.
type RuntimeView struct {
	Source string
	// Window reads are those made between the fault and the heal start.
	WindowReads        int
	WindowReadable     int
	WindowStillRunning int
	// FirstUnreadable is the reason of the first unreadable read.
	FirstUnreadable string
	FirstReadAt     time.Time
	// FirstReadableAt and the OldRunningLast pair are the first and the
	// last readable window reads; the last saw OldRunningLast pre-fault
	// containers running.
	FirstReadableAt  time.Time
	OldRunningLast   int
	OldRunningLastAt time.Time
	OldBefore        int
	// Final: pre-fault containers running in the final snapshot.
	FinalReadable   bool
	FinalAt         time.Time
	FinalOldRunning int
	FinalRunning    int
}

// LeaseCheck compares the measured detection latency with what the node
// lease mechanism predicts.
type LeaseCheck struct {
	LastRenew     time.Time
	LastRenewFrom string
	Grace         time.Duration
	MonitorPeriod time.Duration
	RenewInterval time.Duration
	// Predicted is the earliest moment the controller can call the node
	// Unknown (last renewal + grace), relative to the fault; the latest is
	// one monitor period later.
	PredictedMin, PredictedMax time.Duration
	Measured                   time.Duration
	// Off is how far the measured figure lies outside [min, max] (zero
	// when inside).
	Off time.Duration
	OK  bool
	Why string
}

// timers reads a duration from the run record's timer profile.
func timer(r verdict.Run, key string) (time.Duration, bool) {
	v, ok := r.Lab.Timers[key]
	if !ok {
		return 0, false
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d, true
	}
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err == nil {
		return time.Duration(n) * time.Second, true
	}
	return 0, false
}

func timerText(r verdict.Run, key, name string) string {
	v, ok := r.Lab.Timers[key]
	if !ok {
		return name + " (value not recorded)"
	}
	if !strings.ContainsAny(v, "smh") {
		v += "s"
	}
	return fmt.Sprintf("%s = %s", name, v)
}

// AnalysePair reads one arm of the pair drill from its run record and
// evidence. worker is the node whose kubelet or power the fault took.
func AnalysePair(run verdict.Run, rec evidence.Record, worker string) (PairArm, error) {
	tl := rec.Timeline.Sorted()
	a := PairArm{Run: run, Worker: worker}
	inj := tl.OfKind("fault-injected")
	if len(inj) == 0 {
		return a, fmt.Errorf("run %s: its timeline has no fault-injected event (the fault was never injected)", run.RunID)
	}
	a.InjectTook = time.Duration(run.Timings["inject"] * float64(time.Second))
	a.FaultAt = inj[0].At.Add(-a.InjectTook)
	if h := tl.OfKind("fault-healed"); len(h) > 0 {
		a.Healed = h[0].At
	}
	a.HealStart = a.Healed
	if h := tl.OfKind("heal-started"); len(h) > 0 {
		a.HealStart = h[0].At
	} else {
		a.HealStartMissing = !a.Healed.IsZero()
	}
	if w := tl.OfKind("timeline-started"); len(w) > 0 {
		a.Watching = w[0].Detail
	}
	a.PhaseWatched = len(tl.OfKind(drills.KindPodPhaseWatching)) > 0
	snaps := samples(rec)
	a.EvidenceEnd = evidenceEnd(tl, snaps)

	x := pairEvidence{arm: &a, tl: tl, snaps: snaps, baseline: baselinePods(rec)}
	for _, spec := range x.windowSpecs() {
		a.Moments = append(a.Moments, x.find(spec))
	}
	a.Runtime = runtimeView(rec, worker, a.FaultAt, a.HealStart)
	a.RuntimeReads = runtimeReads(rec, worker, a.FaultAt)
	a.PodReads, a.PodSource = podReads(rec, x.baseline)
	a.Lease = leaseCheck(run, rec, a)
	for i := range a.Moments {
		m := &a.Moments[i]
		switch {
		case !m.Seen:
		case !a.Lease.LastRenew.IsZero():
			m.Anchor, m.Since = "last lease renewal", m.At.Sub(a.Lease.LastRenew)
		default:
			m.Anchor, m.Since = "fault", m.Offset
		}
	}
	a.Deleted = x.deletedPods()
	for _, spec := range x.returnSpecs() {
		a.Return = append(a.Return, x.find(spec))
	}
	a.Return = append(a.Return, x.terminalMoment(), x.terminatingGone())
	if a.HealStartMissing {
		a.Return[0].NotSeen = "not recorded: the record has no heal-started event (written before the engine stamped it), so the return is measured from the heal's end"
		a.Return[0].Read = ""
	}
	for i := range a.Return {
		if m := &a.Return[i]; m.Seen {
			m.Anchor, m.Since = a.returnAnchor(), m.At.Sub(a.HealStart)
		}
	}
	return a, nil
}

// samples are every snapshot the record holds after its baseline, in the
// order taken: the window's, those taken while heal ran, the settle
// samples and the final one.
func samples(rec evidence.Record) []evidence.Snapshot {
	out := append([]evidence.Snapshot{}, rec.Window...)
	out = append(out, rec.Heal...)
	out = append(out, rec.Settle...)
	if rec.Final != nil {
		out = append(out, *rec.Final)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Taken.Before(out[j].Taken) })
	return out
}

func evidenceEnd(tl evidence.Timeline, snaps []evidence.Snapshot) time.Time {
	var end time.Time
	if len(tl) > 0 {
		end = tl[len(tl)-1].At
	}
	for _, s := range snaps {
		if s.Taken.After(end) {
			end = s.Taken
		}
		for _, src := range s.Sources() {
			for _, a := range s.Answers[src] {
				if a.ReadAt.After(end) {
					end = a.ReadAt
				}
			}
		}
	}
	return end
}

// read is one source's answer to one question in one snapshot.
type read struct {
	src evidence.Source
	a   evidence.Answer
}

// apiReads returns every API server's reads of q made in [from, to) (no
// end when to is zero), in read order.
func apiReads(snaps []evidence.Snapshot, q evidence.Question, from, to time.Time) []read {
	var out []read
	for _, s := range snaps {
		for _, src := range s.Sources() {
			if !strings.HasPrefix(string(src), "apiserver/") {
				continue
			}
			a := s.Get(src, q)
			if a.State == evidence.NotAsked || !within(a.ReadAt, from, to) {
				continue
			}
			out = append(out, read{src, a})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].a.ReadAt.Before(out[j].a.ReadAt) })
	return out
}

func within(t, from, to time.Time) bool {
	return !t.Before(from) && (to.IsZero() || t.Before(to))
}

// momentSpec says how to find one moment: by its timeline event, and, for
// a moment a read can show, by the first read of question that shows it.
type momentSpec struct {
	key, label string
	ret        bool
	event      func(evidence.Event) bool
	// clusterTime places the event at the time the cluster recorded it
	// (where it has one) rather than when it was seen: a renewal at its
	// renewTime, a scheduling failure at the scheduler's report of it.
	clusterTime bool
	question    evidence.Question
	shows       func(evidence.Answer) (string, bool)
}

// timeOf is when the moment's event happened: when it was seen, except
// for a moment measured at its cluster time and for an event a relisting
// replayed (seen only when the listing came), each placed at the time the
// cluster recorded where the event has one.
func (spec momentSpec) timeOf(e evidence.Event) time.Time {
	if (spec.clusterTime || e.Replayed) && !e.ClusterAt.IsZero() {
		return e.ClusterAt
	}
	return e.At
}

// pairEvidence is one arm's evidence while its moments are looked for.
type pairEvidence struct {
	arm      *PairArm
	tl       evidence.Timeline
	snaps    []evidence.Snapshot
	baseline map[string]drills.PodState // by UID; nil when the baseline did not list the drill's pods
}

// span is the stretch a moment is looked for in: the window (fault to heal
// start) or the return (heal start to the end of the evidence).
func (x pairEvidence) span(ret bool) (from, to time.Time) {
	if ret {
		return x.arm.HealStart, time.Time{}
	}
	return x.arm.FaultAt, x.arm.HealStart
}

func (x pairEvidence) find(spec momentSpec) Moment {
	a := x.arm
	m := Moment{Key: spec.key, Label: spec.label, Return: spec.ret}
	if spec.ret && a.HealStart.IsZero() {
		m.NotSeen = "not seen: the run was never healed (its timeline has neither heal-started nor fault-healed)"
		return m
	}
	from, to := x.span(spec.ret)
	for _, e := range x.tl {
		if at := spec.timeOf(e); within(at, from, to) && spec.event(e) {
			m.Seen, m.At, m.Source, m.Detail = true, at, string(e.Source), e.Detail
			if e.Replayed {
				m.Detail += fmt.Sprintf(" (replayed: delivered by a relisting at +%s", secs(e.At.Sub(a.FaultAt)))
				if !e.ClusterAt.IsZero() {
					m.Detail += ", placed at its " + e.ClusterField
				}
				m.Detail += ")"
			}
			break
		}
	}
	if spec.shows != nil {
		notYet := map[evidence.Source]time.Time{}
		for _, r := range apiReads(x.snaps, spec.question, from, to) {
			if m.Seen && !r.a.ReadAt.Before(m.At) {
				break
			}
			detail, ok := spec.shows(r.a)
			if !ok {
				if r.a.Readable() {
					notYet[r.src] = r.a.ReadAt
				}
				continue
			}
			m.Seen, m.At, m.Source = true, r.a.ReadAt, fmt.Sprintf("%s (%s read)", r.src, spec.question)
			m.Detail = detail + ", in the first read that showed it"
			if prev, ok := notYet[r.src]; ok {
				m.Detail += fmt.Sprintf("; the read before, at +%s, did not (the moment lies between)", secs(prev.Sub(a.FaultAt)))
			}
			break
		}
	}
	if m.Seen {
		m.Offset = m.At.Sub(a.FaultAt)
		return m
	}
	var reads []read
	if spec.shows != nil {
		reads = apiReads(x.snaps, spec.question, from, to)
	}
	m.NotSeen, m.Read = x.notSeen(spec.ret, spec.question, reads)
	return m
}

// notSeen qualifies an absence by how far the evidence went, and says
// what it read: the timeline, and the reads of question where a read can
// show the moment (unreadable stretches named).
func (x pairEvidence) notSeen(ret bool, question evidence.Question, reads []read) (reach, read string) {
	a := x.arm
	var b strings.Builder
	switch {
	case ret:
		fmt.Fprintf(&b, "not seen in the evidence, which ends at +%s (%s after the %s)", secs(a.EvidenceEnd.Sub(a.FaultAt)), secs(a.EvidenceEnd.Sub(a.HealStart)), a.returnAnchor())
	case a.HealStart.IsZero():
		fmt.Fprintf(&b, "not seen in the evidence, which ends at +%s (the run was never healed)", secs(a.EvidenceEnd.Sub(a.FaultAt)))
	default:
		fmt.Fprintf(&b, "not seen in the window, which ends at the %s at +%s", a.returnAnchor(), secs(a.HealStart.Sub(a.FaultAt)))
	}
	parts := []string{x.timelineReach()}
	if question != "" {
		parts = append(parts, coverage(reads, question, a.FaultAt))
	}
	return b.String(), strings.Join(parts, "; ")
}

func (a PairArm) returnAnchor() string {
	if a.HealStartMissing {
		return "heal's end"
	}
	return "heal start"
}

func (x pairEvidence) timelineReach() string {
	w := x.arm.Watching
	if w == "" {
		w = "a recorder that did not say what it watched"
	}
	s := "the timeline (" + w + ")"
	if len(x.tl) > 0 {
		s += fmt.Sprintf(", its last event at +%s", secs(x.tl[len(x.tl)-1].At.Sub(x.arm.FaultAt)))
	}
	return s
}

// coverage says, per source, how many reads of question there were, how
// many answered, and where they did not.
func coverage(reads []read, question evidence.Question, faultAt time.Time) string {
	if len(reads) == 0 {
		return fmt.Sprintf("no read of %s in that stretch", question)
	}
	var order []evidence.Source
	bySrc := map[evidence.Source][]read{}
	for _, r := range reads {
		if _, ok := bySrc[r.src]; !ok {
			order = append(order, r.src)
		}
		bySrc[r.src] = append(bySrc[r.src], r)
	}
	var parts []string
	for _, src := range order {
		rs := bySrc[src]
		answered := 0
		var gaps []string
		for i := 0; i < len(rs); i++ {
			if rs[i].a.Readable() {
				answered++
				continue
			}
			j := i
			for j+1 < len(rs) && !rs[j+1].a.Readable() {
				j++
			}
			gaps = append(gaps, fmt.Sprintf("+%s to +%s (%s)", secs(rs[i].a.ReadAt.Sub(faultAt)), secs(rs[j].a.ReadAt.Sub(faultAt)), rs[i].a.Reason))
			i = j
		}
		s := fmt.Sprintf("%s from %s: %s", question, src, readSpan(rs, faultAt))
		switch {
		case len(rs) == 1 && answered == 1:
			s += ", answered"
		case len(rs) == 1:
			s += ", unreadable: " + rs[0].a.Reason
		case answered == len(rs):
			s += ", all answered"
		case answered == 0:
			s += ", none answered: " + rs[0].a.Reason
		default:
			s += fmt.Sprintf(", %d answered, unreadable %s", answered, strings.Join(gaps, ", "))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func readSpan(rs []read, faultAt time.Time) string {
	first := secs(rs[0].a.ReadAt.Sub(faultAt))
	if len(rs) == 1 {
		return "1 read, at +" + first
	}
	return fmt.Sprintf("%d reads from +%s to +%s", len(rs), first, secs(rs[len(rs)-1].a.ReadAt.Sub(faultAt)))
}

func decodePods(a evidence.Answer) ([]drills.PodState, bool) {
	var v drills.PodsValue
	if err := a.Decode(&v); err != nil {
		return nil, false
	}
	return v.Pods, true
}

// baselinePods are the drill's pods as the baseline listed them, by UID.
func baselinePods(rec evidence.Record) map[string]drills.PodState {
	if rec.Baseline == nil {
		return nil
	}
	for _, src := range rec.Baseline.Sources() {
		if !strings.HasPrefix(string(src), "apiserver/") {
			continue
		}
		if pods, ok := decodePods(rec.Baseline.Get(src, drills.QuestionPods)); ok {
			out := map[string]drills.PodState{}
			for _, p := range pods {
				out[p.UID] = p
			}
			return out
		}
	}
	return nil
}

func isWeb(name string) bool { return strings.HasPrefix(name, drills.DeploymentName+"-") }

func terminal(phase string) bool { return phase == "Succeeded" || phase == "Failed" }

func nodeStatus(want string) func(evidence.Answer) (string, bool) {
	return func(a evidence.Answer) (string, bool) {
		var v evidence.NodeReadyValue
		if err := a.Decode(&v); err != nil || !v.Exists || v.Status != want {
			return "", false
		}
		return fmt.Sprintf("Ready=%s (%s)", v.Status, v.Reason), true
	}
}

// taint shows a read in which the node has (present) or lacks the taint
// key, of effect when effect is not empty.
func taint(key, effect string, present bool) func(evidence.Answer) (string, bool) {
	return func(a evidence.Answer) (string, bool) {
		var ts []evidence.TaintValue
		if err := a.Decode(&ts); err != nil {
			return "", false
		}
		has := false
		for _, t := range ts {
			if t.Key == key && (effect == "" || t.Effect == effect) {
				has = true
			}
		}
		if has != present {
			return "", false
		}
		if present {
			return "taint " + key + " listed", true
		}
		return "taint " + key + " no longer listed", true
	}
}

// renewedAfter shows a read of the node lease renewed after t.
func renewedAfter(t time.Time) func(evidence.Answer) (string, bool) {
	return func(a evidence.Answer) (string, bool) {
		var v evidence.LeaseValue
		if err := a.Decode(&v); err != nil || !v.RenewTime.After(t) {
			return "", false
		}
		return "renewTime " + v.RenewTime.UTC().Format("15:04:05.000") + " by " + v.HolderIdentity, true
	}
}

// pod shows a read that lists a pod for which ok holds.
func pod(what string, ok func(drills.PodState) bool) func(evidence.Answer) (string, bool) {
	return func(a evidence.Answer) (string, bool) {
		pods, readable := decodePods(a)
		if !readable {
			return "", false
		}
		for _, p := range pods {
			if ok(p) {
				return fmt.Sprintf("%s: %s (uid %s, phase %s)", what, p.Name, p.UID, p.Phase), true
			}
		}
		return "", false
	}
}

func (x pairEvidence) windowSpecs() []momentSpec {
	a := x.arm
	node := "node/" + a.Worker
	web := "pod/" + drills.Namespace + "/" + drills.DeploymentName + "-"
	orphan := "pod/" + drills.Namespace + "/" + drills.OrphanName
	replacement := func(p drills.PodState) bool { return x.baseline != nil && isWeb(p.Name) && x.baseline[p.UID].UID == "" }
	recreated := func(p drills.PodState) bool {
		return x.baseline != nil && p.Name == drills.OrphanName && x.baseline[p.UID].UID == ""
	}
	specs := []momentSpec{
		{key: "lease-stopped", label: "node lease renewals stopped", event: kind("lease-renewals-stopped", "lease/kube-node-lease/"+a.Worker)},
		{key: "ready-unknown", label: "node Ready=Unknown", event: kind("ready-unknown", node), question: evidence.NodeReady, shows: nodeStatus("Unknown")},
		{key: "ready-false", label: "node Ready=False", event: kind("ready-false", node), question: evidence.NodeReady, shows: nodeStatus("False")},
		{key: "not-ready-taint", label: "not-ready taint", event: kind("taint-added", node, detail("node.kubernetes.io/not-ready")), question: evidence.NodeTaints, shows: taint("node.kubernetes.io/not-ready", "", true)},
		{key: "unreachable-noschedule", label: "unreachable taint (NoSchedule)", event: kind("taint-added", node, detail("node.kubernetes.io/unreachable:NoSchedule")), question: evidence.NodeTaints, shows: taint("node.kubernetes.io/unreachable", "NoSchedule", true)},
		{key: "unreachable-noexecute", label: "unreachable taint (NoExecute)", event: kind("taint-added", node, detail("node.kubernetes.io/unreachable:NoExecute")), question: evidence.NodeTaints, shows: taint("node.kubernetes.io/unreachable", "NoExecute", true)},
		{key: "web-deletion", label: "Deployment's pods get a deletionTimestamp", event: kind("pod-deletion-set", web), question: drills.QuestionPods, shows: pod("marked for deletion", func(p drills.PodState) bool { return isWeb(p.Name) && p.DeletionTimestamp != nil })},
		{key: "orphan-deletion", label: "bare pod gets a deletionTimestamp", event: kind("pod-deletion-set", orphan), question: drills.QuestionPods, shows: pod("marked for deletion", func(p drills.PodState) bool { return p.Name == drills.OrphanName && p.DeletionTimestamp != nil })},
		{key: "replacement-created", label: "replacement pod created", event: kind("pod-created", web), question: drills.QuestionPods, shows: pod("a pod the baseline did not list", replacement)},
		{key: "replacement-unschedulable", label: "replacement found no node (FailedScheduling)", event: kind(drills.KindFailedScheduling, web), clusterTime: true},
		{key: "replacement-scheduled", label: "replacement scheduled while the worker was away", event: kind("pod-scheduled", web), question: drills.QuestionPods, shows: pod("scheduled", func(p drills.PodState) bool { return replacement(p) && p.Node != "" })},
		{key: "orphan-recreated", label: "bare pod recreated", event: kind("pod-created", orphan), question: drills.QuestionPods, shows: pod("a bare pod the baseline did not list", recreated)},
	}
	if x.baseline == nil {
		for i := range specs {
			if specs[i].key == "replacement-created" || specs[i].key == "replacement-scheduled" || specs[i].key == "orphan-recreated" {
				specs[i].question, specs[i].shows = "", nil
			}
		}
	}
	return specs
}

func (x pairEvidence) returnSpecs() []momentSpec {
	a := x.arm
	node := "node/" + a.Worker
	web := "pod/" + drills.Namespace + "/" + drills.DeploymentName + "-"
	orphan := "pod/" + drills.Namespace + "/" + drills.OrphanName
	scenarioEvent := func(k string) func(evidence.Event) bool {
		return func(e evidence.Event) bool { return e.Kind == k }
	}
	replacement := func(p drills.PodState) bool { return x.baseline != nil && isWeb(p.Name) && x.baseline[p.UID].UID == "" }
	specs := []momentSpec{
		{key: "heal-started", label: "heal started (kubelet start / power on)", ret: true, event: scenarioEvent("heal-started")},
		{key: "healed", label: "heal call returned (kubelet service started / host powered on)", ret: true, event: scenarioEvent("fault-healed")},
		{key: "lease-resumed", label: "node lease renewed again", ret: true, event: kind("lease-renewals-resumed", "lease/kube-node-lease/"+a.Worker), clusterTime: true, question: evidence.NodeLease, shows: renewedAfter(a.HealStart)},
		{key: "ready-true", label: "node Ready=True again", ret: true, event: kind("ready-true", node), question: evidence.NodeReady, shows: nodeStatus("True")},
		{key: "unreachable-removed", label: "unreachable taint (NoExecute) removed", ret: true, event: kind("taint-removed", node, detail("node.kubernetes.io/unreachable:NoExecute"))},
		{key: "return-replacement-scheduled", label: "replacement scheduled", ret: true, event: kind("pod-scheduled", web)},
		{key: "replacement-running", label: "replacement Running", ret: true, event: kind("pod-running", web)},
		{key: "orphan-gone", label: "bare pod removed", ret: true, event: kind("pod-deleted", orphan)},
	}
	if a.Moment("unreachable-noexecute").Seen {
		specs[4].question, specs[4].shows = evidence.NodeTaints, taint("node.kubernetes.io/unreachable", "NoExecute", false)
	}
	if x.baseline != nil {
		specs[5].question, specs[5].shows = drills.QuestionPods, pod("scheduled", func(p drills.PodState) bool { return replacement(p) && p.Node != "" })
		specs[6].question, specs[6].shows = drills.QuestionPods, pod("running", func(p drills.PodState) bool { return replacement(p) && p.Phase == "Running" })
		var orphanUIDs []string
		for uid, p := range x.baseline {
			if p.Name == drills.OrphanName {
				orphanUIDs = append(orphanUIDs, uid)
			}
		}
		if len(orphanUIDs) == 1 {
			uid := orphanUIDs[0]
			specs[7].question, specs[7].shows = drills.QuestionPods, func(ans evidence.Answer) (string, bool) {
				pods, ok := decodePods(ans)
				if !ok {
					return "", false
				}
				for _, p := range pods {
					if p.UID == uid {
						return "", false
					}
				}
				return "the bare pod (uid " + uid + ") no longer listed", true
			}
		}
	}
	return specs
}

// kind matches events of kind k about a subject starting with
// subjectPrefix, and every further condition.
func kind(k, subjectPrefix string, more ...func(evidence.Event) bool) func(evidence.Event) bool {
	return func(e evidence.Event) bool {
		if e.Kind != k || !strings.HasPrefix(e.Subject, subjectPrefix) {
			return false
		}
		for _, m := range more {
			if !m(e) {
				return false
			}
		}
		return true
	}
}

func detail(prefix string) func(evidence.Event) bool {
	return func(e evidence.Event) bool { return strings.HasPrefix(e.Detail, prefix) }
}

func uidOf(detail string) string {
	f := strings.Fields(strings.TrimPrefix(detail, "uid "))
	if len(f) == 0 {
		return ""
	}
	return strings.TrimSuffix(f[0], ",")
}

// Moment returns the arm's moment by key, from the window or the return.
func (a PairArm) Moment(key string) Moment {
	for _, m := range a.Moments {
		if m.Key == key {
			return m
		}
	}
	for _, m := range a.Return {
		if m.Key == key {
			return m
		}
	}
	return Moment{Key: key}
}

// runtimeView reads what the worker's runtime said: window reads are those
// made between the fault and the heal start.
func runtimeView(rec evidence.Record, worker string, faultAt, healStart time.Time) RuntimeView {
	src := evidence.Source("cri/" + worker)
	v := RuntimeView{Source: string(src)}
	oldRunning := func(a evidence.Answer) (old, all int, ok bool) {
		var cv drills.ContainersValue
		if err := a.Decode(&cv); err != nil {
			return 0, 0, false
		}
		for _, c := range cv.Containers {
			if c.State != "CONTAINER_RUNNING" {
				continue
			}
			all++
			if c.CreatedAt.Before(faultAt) {
				old++
			}
		}
		return old, all, true
	}
	if rec.Baseline != nil {
		v.OldBefore, _, _ = oldRunning(rec.Baseline.Get(src, drills.QuestionContainers))
	}
	for _, s := range rec.Window {
		a := s.Get(src, drills.QuestionContainers)
		if a.State == evidence.NotAsked || !within(a.ReadAt, faultAt, healStart) {
			continue
		}
		v.WindowReads++
		if v.FirstReadAt.IsZero() {
			v.FirstReadAt = a.ReadAt
		}
		old, _, ok := oldRunning(a)
		if !ok {
			if v.FirstUnreadable == "" {
				v.FirstUnreadable = a.Reason
			}
			continue
		}
		v.WindowReadable++
		if v.FirstReadableAt.IsZero() {
			v.FirstReadableAt = a.ReadAt
		}
		if old > 0 {
			v.WindowStillRunning++
		}
		v.OldRunningLast, v.OldRunningLastAt = old, a.ReadAt
	}
	if rec.Final != nil {
		a := rec.Final.Get(src, drills.QuestionContainers)
		old, all, ok := oldRunning(a)
		v.FinalReadable, v.FinalOldRunning, v.FinalRunning = ok, old, all
		if ok {
			v.FinalAt = a.ReadAt
		}
	}
	return v
}

// leaseCheck predicts when the node lifecycle controller calls the node
// Unknown: the kubelet renews its lease every renew interval; the
// controller records when it last saw the lease renewed and, on each pass
// (every node-monitor-period), marks the node Unknown once that is older
// than node-monitor-grace-period. So the earliest is last renewal + grace,
// the latest one monitor period later.
func leaseCheck(run verdict.Run, rec evidence.Record, a PairArm) LeaseCheck {
	var c LeaseCheck
	c.Grace, _ = timer(run, "kube-controller-manager.node-monitor-grace-period")
	c.MonitorPeriod, _ = timer(run, "kube-controller-manager.node-monitor-period")
	c.RenewInterval, _ = timer(run, "kubelet.node-lease-renew-interval")
	unknown := a.Moment("ready-unknown")
	if !unknown.Seen {
		c.Why = "the node was never seen Ready=Unknown"
		return c
	}
	if c.Grace == 0 {
		c.Why = "the run record lacks node-monitor-grace-period"
		return c
	}
	snaps := append([]evidence.Snapshot{}, rec.Window...)
	if rec.Baseline != nil {
		snaps = append(snaps, *rec.Baseline)
	}
	for _, s := range snaps {
		for _, src := range s.Sources() {
			var lv evidence.LeaseValue
			if err := s.Get(src, evidence.NodeLease).Decode(&lv); err != nil {
				continue
			}
			if lv.RenewTime.After(c.LastRenew) && lv.RenewTime.Before(unknown.At) {
				c.LastRenew, c.LastRenewFrom = lv.RenewTime, string(src)
			}
		}
	}
	if c.LastRenew.IsZero() {
		c.Why = "no snapshot read the node's lease renewTime"
		return c
	}
	c.Measured = unknown.Offset
	c.PredictedMin = c.LastRenew.Add(c.Grace).Sub(a.FaultAt)
	c.PredictedMax = c.PredictedMin + c.MonitorPeriod
	switch {
	case c.Measured < c.PredictedMin:
		c.Off = c.PredictedMin - c.Measured
	case c.Measured > c.PredictedMax:
		c.Off = c.Measured - c.PredictedMax
	}
	c.OK = c.Off <= 2*time.Second
	if !c.OK {
		c.Why = fmt.Sprintf("the measured figure lies %s outside the predicted range; the timeline stamps a change when the watching client receives it, so a slow watch delivery (a loaded machine) or a late controller pass adds to it", c.Off.Round(time.Millisecond))
	}
	return c
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// signed is an offset with its sign: the last lease renewal falls before
// the fault.
func signed(d time.Duration) string { return fmt.Sprintf("%+.1fs", d.Seconds()) }

// decodeJSON is json.Unmarshal for values the evidence stores raw.
func decodeJSON(b json.RawMessage, v any) error { return json.Unmarshal(b, v) }
