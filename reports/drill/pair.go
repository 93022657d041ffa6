// Package drill turns the evidence of the drills' runs (suites/drills) into
// what the drill asks a person to write down: the two pair timelines side by
// side with the divergence point and the timer behind each interval, the
// detection latency explained from the node lease, a plot of both
// timelines, and the racks drill's answers, each with its evidence.
// Everything printed is computed from the recorded timeline and snapshots.
package drill

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// Scenario IDs of the drills (suites/drills).
const (
	ScenarioKubeletStopped = "drill-6c2-kubelet-stopped"
	ScenarioPowerOff       = "drill-6c1-power-off"
	ScenarioRackCut        = "drill-racks-r1-cut"
	ScenarioRackForce      = "drill-racks-r1-cut-force-delete"
)

// Drill namespace and names (suites/drills).
const (
	drillNamespace = "c1"
	deploymentName = "web"
	orphanName     = "orphan"
)

// Moment is one of the drill's moments in one run.
type Moment struct {
	// Key identifies the moment across arms.
	Key   string
	Label string
	// Seen is false when the run's evidence holds no such moment.
	Seen   bool
	At     time.Time
	Offset time.Duration
	Source string
	Detail string
	// Since is the offset from the moment's anchor (Anchor names it): the
	// last node lease renewal before the fault for what happens while the
	// fault lasts, the heal for what comes after. The control plane knows
	// only when the lease was last renewed, and the fault falls anywhere in
	// a renew interval, so two arms compare from there, not from the fault.
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
	HealAt     time.Time
	Moments    []Moment
	// Runtime says what the worker's container runtime showed of the
	// drill's containers during the window and after heal.
	Runtime RuntimeView
	// Lease is the detection latency explained from the node lease.
	Lease LeaseCheck
}

// RuntimeView is what the worker's runtime said of the containers that ran
// before the fault.
type RuntimeView struct {
	WindowReads        int
	WindowReadable     int
	WindowStillRunning int
	// FirstUnreadable is the reason of the first unreadable read.
	FirstUnreadable string
	// OldRunningAtWindowEnd is how many pre-fault containers the last
	// readable window read saw running, and when.
	OldRunningLast   int
	OldRunningLastAt time.Time
	OldBefore        int
	// AfterHeal: pre-fault containers running in the final snapshot.
	FinalReadable   bool
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
		a.HealAt = h[0].At
	}
	node := "node/" + worker
	web := "pod/" + drillNamespace + "/" + deploymentName + "-"
	orphan := "pod/" + drillNamespace + "/" + orphanName
	after := func(t time.Time) func(evidence.Event) bool {
		return func(e evidence.Event) bool { return !e.At.Before(t) }
	}
	first := func(key, label string, ok func(evidence.Event) bool) Moment {
		m := Moment{Key: key, Label: label}
		for _, e := range tl {
			if ok(e) {
				m.Seen, m.At, m.Source, m.Detail = true, e.At, string(e.Source), e.Detail
				m.Offset = e.At.Sub(a.FaultAt)
				return m
			}
		}
		return m
	}
	last := func(key, label string, ok func(evidence.Event) bool) Moment {
		m := Moment{Key: key, Label: label}
		for _, e := range tl {
			if ok(e) {
				m.Seen, m.At, m.Source, m.Detail = true, e.At, string(e.Source), e.Detail
				m.Offset = e.At.Sub(a.FaultAt)
			}
		}
		return m
	}
	inFault := after(a.FaultAt)
	kind := func(k, subjectPrefix string, more ...func(evidence.Event) bool) func(evidence.Event) bool {
		return func(e evidence.Event) bool {
			if e.Kind != k || !strings.HasPrefix(e.Subject, subjectPrefix) || !inFault(e) {
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
	detail := func(prefix string) func(evidence.Event) bool {
		return func(e evidence.Event) bool { return strings.HasPrefix(e.Detail, prefix) }
	}
	beforeHeal := func(e evidence.Event) bool { return a.HealAt.IsZero() || e.At.Before(a.HealAt) }
	afterHeal := func(e evidence.Event) bool { return !a.HealAt.IsZero() && !e.At.Before(a.HealAt) }
	// Pods that were Terminating before heal, to see them go after it.
	terminating := map[string]bool{}
	for _, e := range tl {
		if e.Kind == "pod-deletion-set" && inFault(e) && beforeHeal(e) {
			terminating[uidOf(e.Detail)] = true
		}
	}
	a.Moments = []Moment{
		first("lease-stopped", "node lease renewals stopped", kind("lease-renewals-stopped", "lease/kube-node-lease/"+worker)),
		first("ready-unknown", "node Ready=Unknown", kind("ready-unknown", node)),
		first("ready-false", "node Ready=False", kind("ready-false", node, beforeHeal)),
		first("not-ready-taint", "not-ready taint", kind("taint-added", node, detail("node.kubernetes.io/not-ready"))),
		first("unreachable-noschedule", "unreachable taint (NoSchedule)", kind("taint-added", node, detail("node.kubernetes.io/unreachable:NoSchedule"))),
		first("unreachable-noexecute", "unreachable taint (NoExecute)", kind("taint-added", node, detail("node.kubernetes.io/unreachable:NoExecute"))),
		first("web-deletion", "Deployment's pods get a deletionTimestamp", kind("pod-deletion-set", web)),
		first("orphan-deletion", "bare pod gets a deletionTimestamp", kind("pod-deletion-set", orphan)),
		first("replacement-created", "replacement pod created", kind("pod-created", web, beforeHeal)),
		first("replacement-unschedulable", "replacement found no node (FailedScheduling)", kind("failed-scheduling", web, beforeHeal)),
		first("replacement-scheduled", "replacement scheduled", kind("pod-scheduled", web, beforeHeal)),
		first("healed", "fault healed (kubelet started / powered on)", func(e evidence.Event) bool { return e.Kind == "fault-healed" }),
		first("ready-true", "node Ready=True again", kind("ready-true", node, afterHeal)),
		last("terminating-gone", "last Terminating pod removed", func(e evidence.Event) bool {
			return e.Kind == "pod-deleted" && afterHeal(e) && terminating[uidOf(e.Detail)]
		}),
		first("orphan-gone", "bare pod removed", kind("pod-deleted", orphan)),
		first("orphan-recreated", "bare pod recreated", kind("pod-created", orphan)),
	}
	a.Runtime = runtimeView(rec, worker, a.FaultAt)
	a.Lease = leaseCheck(run, rec, a)
	for i := range a.Moments {
		m := &a.Moments[i]
		switch {
		case !m.Seen:
		case !a.HealAt.IsZero() && !m.At.Before(a.HealAt):
			m.Anchor, m.Since = "heal", m.At.Sub(a.HealAt)
		case !a.Lease.LastRenew.IsZero():
			m.Anchor, m.Since = "last lease renewal", m.At.Sub(a.Lease.LastRenew)
		default:
			m.Anchor, m.Since = "fault", m.Offset
		}
	}
	return a, nil
}

func uidOf(detail string) string {
	f := strings.Fields(strings.TrimPrefix(detail, "uid "))
	if len(f) == 0 {
		return ""
	}
	return strings.TrimSuffix(f[0], ",")
}

// Moment returns the arm's moment by key.
func (a PairArm) Moment(key string) Moment {
	for _, m := range a.Moments {
		if m.Key == key {
			return m
		}
	}
	return Moment{Key: key}
}

type containersValue struct {
	Containers []struct {
		Pod       string    `json:"pod"`
		ID        string    `json:"id"`
		State     string    `json:"state"`
		CreatedAt time.Time `json:"createdAt"`
	} `json:"containers"`
}

func runtimeView(rec evidence.Record, worker string, faultAt time.Time) RuntimeView {
	src := evidence.Source("cri/" + worker)
	const q = evidence.Question("drill/containers")
	var v RuntimeView
	oldRunning := func(a evidence.Answer) (old, all int, ok bool) {
		var cv containersValue
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
		v.OldBefore, _, _ = oldRunning(rec.Baseline.Get(src, q))
	}
	for _, s := range rec.Window {
		a := s.Get(src, q)
		if a.State == evidence.NotAsked {
			continue
		}
		v.WindowReads++
		old, _, ok := oldRunning(a)
		if !ok {
			if v.FirstUnreadable == "" {
				v.FirstUnreadable = a.Reason
			}
			continue
		}
		v.WindowReadable++
		if old > 0 {
			v.WindowStillRunning++
		}
		v.OldRunningLast, v.OldRunningLastAt = old, a.ReadAt
	}
	if rec.Final != nil {
		old, all, ok := oldRunning(rec.Final.Get(src, q))
		v.FinalReadable, v.FinalOldRunning, v.FinalRunning = ok, old, all
	}
	return v
}

type leaseValue struct {
	RenewTime time.Time `json:"renewTime"`
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
			var lv leaseValue
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

// Divergence is where the two arms first differ.
type Divergence struct {
	Key    string
	Label  string
	Reason string
}

// Tolerance is how far apart the same moment may lie in the two arms and
// still count as the same: the 2 s the drill allows.
const Tolerance = 2 * time.Second

// Diverge finds the first moment, in time order, that one arm shows and the
// other does not, or shows more than Tolerance apart from its anchor (the
// last lease renewal before heal, the heal after it).
func Diverge(c, e PairArm) (Divergence, bool) {
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
			return Divergence{p.mc.Key, p.mc.Label, fmt.Sprintf("seen at +%s with the kubelet stopped, never with the power off", secs(p.mc.Offset))}, true
		case !p.mc.Seen && p.me.Seen:
			return Divergence{p.me.Key, p.me.Label, fmt.Sprintf("seen at +%s with the power off, never with the kubelet stopped", secs(p.me.Offset))}, true
		}
		if p.mc.Anchor != p.me.Anchor {
			return Divergence{p.mc.Key, p.mc.Label, fmt.Sprintf("after the %s with the kubelet stopped, after the %s with the power off", p.mc.Anchor, p.me.Anchor)}, true
		}
		d := p.me.Since - p.mc.Since
		if d < 0 {
			d = -d
		}
		if d > Tolerance {
			return Divergence{p.mc.Key, p.mc.Label, fmt.Sprintf("%s after the %s with the kubelet stopped against %s with the power off (%s apart, more than %s)",
				secs(p.mc.Since), p.mc.Anchor, secs(p.me.Since), secs(d), Tolerance)}, true
		}
	}
	return Divergence{}, false
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// decodeJSON is json.Unmarshal for values the evidence stores raw.
func decodeJSON(b json.RawMessage, v any) error { return json.Unmarshal(b, v) }
