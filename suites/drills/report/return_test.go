package report

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/suites/drills"
)

// A synthetic pair arm: the fault at t0, the worker "w", its API server
// "apiserver/cp", two Deployment pods and the bare pod on it.
type synthArm struct {
	t0  time.Time
	rec evidence.Record
}

const synthWorker = "w"

func newSynthArm() *synthArm {
	s := &synthArm{t0: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	base := evidence.NewSnapshot(s.at(-2))
	base.Set("cri/"+synthWorker, drills.QuestionContainers, s.containers(-2, 3))
	s.rec.Baseline = &base
	s.event(0, "fault-injected", "scenario/x", "")
	return s
}

func (s *synthArm) at(sec float64) time.Time {
	return s.t0.Add(time.Duration(sec * float64(time.Second)))
}

func (s *synthArm) event(sec float64, kind, subject, detail string) {
	s.rec.Timeline = append(s.rec.Timeline, evidence.Event{At: s.at(sec), Source: "apiserver/cp", Subject: subject, Kind: kind, Detail: detail})
}

// containers is a runtime read that sees n containers created before the
// fault running.
func (s *synthArm) containers(sec float64, n int) evidence.Answer {
	v := drills.ContainersValue{Containers: []drills.ContainerState{}}
	for i := range n {
		v.Containers = append(v.Containers, drills.ContainerState{Pod: drills.DeploymentName, ID: string(rune('a' + i)), State: "CONTAINER_RUNNING", CreatedAt: s.at(-60)})
	}
	a, err := evidence.ValueAnswer(v, s.at(sec), "")
	if err != nil {
		panic(err)
	}
	return a
}

// The drill's pods as the suite names them, and their timeline subjects.
var (
	web1   = drills.DeploymentName + "-1"
	web2   = drills.DeploymentName + "-2"
	orphan = drills.OrphanName
)

func podSubject(name string) string { return "pod/" + drills.Namespace + "/" + name }

func (s *synthArm) pods(sec float64, pods ...drills.PodState) evidence.Answer {
	if pods == nil {
		pods = []drills.PodState{}
	}
	a, err := evidence.ValueAnswer(drills.PodsValue{Pods: pods}, s.at(sec), "")
	if err != nil {
		panic(err)
	}
	return a
}

func (s *synthArm) ready(sec float64, status string) evidence.Answer {
	a, err := evidence.ValueAnswer(evidence.NodeReadyValue{Exists: true, Status: status}, s.at(sec), "")
	if err != nil {
		panic(err)
	}
	return a
}

// window samples the window every 2 s from +1 to before heal: the runtime
// answers with n pre-fault containers running (n < 0: SSH times out), the
// node Unknown from +12 s.
func (s *synthArm) window(until float64, n int) {
	for sec := 1.0; sec < until; sec += 2 {
		snap := evidence.NewSnapshot(s.at(sec))
		if n < 0 {
			snap.Set("cri/"+synthWorker, drills.QuestionContainers, evidence.UnreadableAnswer("timeout: ssh to w: i/o timeout", s.at(sec+0.5)))
		} else {
			snap.Set("cri/"+synthWorker, drills.QuestionContainers, s.containers(sec, n))
		}
		status := "True"
		if sec >= 12 {
			status = "Unknown"
		}
		snap.Set("apiserver/cp", evidence.NodeReady, s.ready(sec, status))
		s.rec.Window = append(s.rec.Window, snap)
	}
}

// apiMoments stamps the API-side moments the drill expects in both arms.
func (s *synthArm) apiMoments() {
	s.event(12, "ready-unknown", "node/w", "True → Unknown (NodeStatusUnknown)")
	s.event(12.5, "taint-added", "node/w", "node.kubernetes.io/unreachable:NoSchedule")
	s.event(13, "taint-added", "node/w", "node.kubernetes.io/unreachable:NoExecute")
	s.event(43, "pod-deletion-set", podSubject(web1), "uid u1, deletionTimestamp x")
	s.event(43, "pod-deletion-set", podSubject(orphan), "uid u0, deletionTimestamp x")
	s.event(43.2, "pod-created", podSubject(web2), "uid u2, created x")
	s.event(43.3, drills.KindFailedScheduling, podSubject(web2), "0/2 nodes are available: 2 node(s) had untolerated taint(s)")
}

func synthRun(id string) verdict.Run {
	return verdict.Run{RunID: id, Timings: map[string]float64{"inject": 0}, Lab: verdict.LabInfo{Name: "pair", Kind: "local", TimerProfile: "fast"}}
}

func (s *synthArm) analyse(t *testing.T, id string) PairArm {
	t.Helper()
	a, err := AnalysePair(synthRun(id), s.rec, synthWorker)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The pair as the issue found it: every API-side moment of the window
// matches; the replacement is scheduled during the kubelet's heal (before
// the heal call returned) and after the power-on's boot in the other arm;
// the runtime answered throughout with the kubelet stopped and never with
// the power off, and none of the pre-fault containers ran after the boot.
func issuePair() (c, e *synthArm) {
	c, e = newSynthArm(), newSynthArm()
	for _, s := range []*synthArm{c, e} {
		s.apiMoments()
		s.event(70, "heal-started", "scenario/x", "")
	}
	c.window(70, 3)
	e.window(70, -1)
	c.event(70.8, "pod-scheduled", podSubject(web2), "uid u2 on w")
	c.event(71, "fault-healed", "scenario/x", "")
	e.event(76, "fault-healed", "scenario/x", "")
	e.event(76.5, "pod-scheduled", podSubject(web2), "uid u2 on w")
	for _, s := range []*synthArm{c, e} {
		final := evidence.NewSnapshot(s.at(90))
		final.Set("cri/"+synthWorker, drills.QuestionContainers, s.containers(90, 0))
		final.Set("apiserver/cp", evidence.NodeReady, s.ready(90, "True"))
		s.rec.Final = &final
	}
	return c, e
}

func TestDivergenceIsTheRuntimeViewNotAReturnMoment(t *testing.T) {
	cs, es := issuePair()
	c, e := cs.analyse(t, "c"), es.analyse(t, "e")
	d, ok := Diverge(c, e)
	if !ok {
		t.Fatal("no divergence found")
	}
	if d.Key != "runtime-containers" {
		t.Errorf("divergence %q (%s), want the runtime view", d.Key, d.Reason)
	}
	for _, want := range []string{"35 of 35", "0 of 35"} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("divergence reason %q lacks the read counts %q", d.Reason, want)
		}
	}
}

func TestAMomentAfterHealStartIsMeasuredFromHealStart(t *testing.T) {
	cs, _ := issuePair()
	// Ready=True comes after the heal started but before the heal call
	// returned: caused by the kubelet's start, so part of the return.
	cs.event(70.6, "ready-true", "node/w", "Unknown → True (KubeletReady)")
	c := cs.analyse(t, "c")
	if m := c.Moment("replacement-scheduled"); m.Seen {
		t.Errorf("the scheduling after heal started counts as a window moment: %+v", m)
	}
	r := c.Moment("ready-true")
	if !r.Seen || r.Since != 600*time.Millisecond || !strings.Contains(r.Anchor, "heal start") {
		t.Errorf("Ready=True again: seen %v, %s after the %q; want 0.6s after the heal start", r.Seen, r.Since, r.Anchor)
	}
}

func TestReturnWithoutHealStartedEventSaysSo(t *testing.T) {
	cs, es := issuePair()
	for _, s := range []*synthArm{cs, es} {
		var keep evidence.Timeline
		for _, ev := range s.rec.Timeline {
			if ev.Kind != "heal-started" {
				keep = append(keep, ev)
			}
		}
		s.rec.Timeline = keep
	}
	var b strings.Builder
	if err := WritePairMarkdown(&b, cs.analyse(t, "c"), es.analyse(t, "e"), ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no heal-started event") {
		t.Errorf("the report does not say the return is measured from the heal's end:\n%s", b.String())
	}
}

func TestReadyTrueAfterHealFoundInSettleSamples(t *testing.T) {
	cs, _ := issuePair()
	// The timeline has no ready-true; the settle samples read the node.
	for _, sec := range []float64{74, 78, 82} {
		snap := evidence.NewSnapshot(cs.at(sec))
		status := "Unknown"
		if sec >= 78 {
			status = "True"
		}
		snap.Set("apiserver/cp", evidence.NodeReady, cs.ready(sec, status))
		cs.rec.Settle = append(cs.rec.Settle, snap)
	}
	cs.rec.Final = nil
	c := cs.analyse(t, "c")
	r := c.Moment("ready-true")
	if !r.Seen || r.Offset != 78*time.Second {
		t.Errorf("Ready=True again: seen %v at +%s; want +78s from the settle sample", r.Seen, r.Offset)
	}
}

func TestNotSeenSaysHowFarTheEvidenceWent(t *testing.T) {
	cs, es := issuePair()
	for _, s := range []*synthArm{cs, es} {
		// The node still Unknown in the last read.
		s.rec.Final.Set("apiserver/cp", evidence.NodeReady, s.ready(90, "Unknown"))
	}
	var b strings.Builder
	if err := WritePairMarkdown(&b, cs.analyse(t, "c"), es.analyse(t, "e"), ""); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, l := range strings.Split(md, "\n") {
		if strings.Contains(l, "| not seen |") || strings.HasSuffix(l, "| not seen") {
			t.Errorf("an unqualified \"not seen\": %s", l)
		}
	}
	if !strings.Contains(md, "not seen in the evidence, which ends at +90.0s") {
		t.Errorf("the report does not say where the evidence ends:\n%s", md)
	}
}

func TestTerminalPhasesOfTheDeletedPodsAtTheReturn(t *testing.T) {
	cs, es := issuePair()
	for _, p := range []struct {
		s     *synthArm
		phase string
	}{{cs, "Succeeded"}, {es, "Failed"}} {
		del := p.s.at(53)
		marked := func(name, uid, phase string) drills.PodState {
			return drills.PodState{Name: name, UID: uid, Node: synthWorker, Phase: phase, DeletionTimestamp: &del, Created: p.s.at(-60)}
		}
		for _, sec := range []float64{80, 82} {
			snap := evidence.NewSnapshot(p.s.at(sec))
			phase := "Running"
			if sec >= 82 {
				phase = p.phase
			}
			snap.Set("apiserver/cp", drills.QuestionPods, p.s.pods(sec, marked(orphan, "u0", phase), marked(web1, "u1", phase)))
			p.s.rec.Settle = append(p.s.rec.Settle, snap)
		}
		p.s.rec.Final.Set("apiserver/cp", drills.QuestionPods, p.s.pods(90))
		p.s.event(84, "pod-deleted", podSubject(web1), "uid u1")
		p.s.event(84, "pod-deleted", podSubject(orphan), "uid u0")
	}
	var b strings.Builder
	if err := WritePairMarkdown(&b, cs.analyse(t, "c"), es.analyse(t, "e"), ""); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"6.C2 kubelet stopped: 2 of 2 pods marked for deletion in the window ended Succeeded",
		"6.C1 power off: 2 of 2 pods marked for deletion in the window ended Failed",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// The terminal phase lasts less than a sampling interval; the drill
// sampler's pod-phase watch sees it when no read does.
func TestTerminalPhaseFromThePhaseWatch(t *testing.T) {
	cs, es := issuePair()
	for _, p := range []struct {
		s     *synthArm
		phase string
	}{{cs, "Succeeded"}, {es, "Failed"}} {
		p.s.event(-1, drills.KindPodPhaseWatching, "namespace/"+drills.Namespace, "watching the phases of the pods of "+drills.Namespace+" on apiserver/cp")
		for _, pod := range []struct{ name, uid string }{{orphan, "u0"}, {web1, "u1"}} {
			p.s.event(81, drills.KindPodPhase, podSubject(pod.name), "uid "+pod.uid+", Running → "+p.phase+"; web: Completed, exit 0")
			p.s.event(82, "pod-deleted", podSubject(pod.name), "uid "+pod.uid)
		}
	}
	c, e := cs.analyse(t, "c"), es.analyse(t, "e")
	if got := ReturnDifference(c, e); !strings.Contains(got, "**Succeeded** with the kubelet stopped and **Failed** with the power off") {
		t.Errorf("return difference: %s", got)
	}
	if m := c.Moment("deleted-terminal"); !m.Seen || m.Since != 11*time.Second {
		t.Errorf("first terminal phase: %+v, want 11s after the heal start", m)
	}
	if m := c.Moment("terminating-gone"); !m.Seen || m.Since != 12*time.Second {
		t.Errorf("last Terminating pod gone: %+v, want 12s after the heal start", m)
	}
}

// A moment is measured when the cluster recorded it for a renewal and a
// scheduling failure (as it was when their events were stamped at that
// time), and for an event a relisting replayed, whose seen time is only
// when the listing came; other events at their seen time.
func TestMomentsAtTheirClusterTime(t *testing.T) {
	cs, _ := issuePair()
	for i, e := range cs.rec.Timeline {
		switch e.Kind {
		case drills.KindFailedScheduling:
			// Seen at the next poll, 0.7 s after the scheduler's report.
			cs.rec.Timeline[i] = evidence.Event{At: cs.at(44), Source: e.Source, Subject: e.Subject, Kind: e.Kind, Detail: e.Detail}.
				WithCluster(cs.at(43.3), "series.lastObservedTime", evidence.Microseconds)
		case "pod-created":
			// Replayed by a relisting 20 s after its creation.
			r := evidence.Event{At: cs.at(63.2), Source: e.Source, Subject: e.Subject, Kind: e.Kind, Detail: e.Detail, Replayed: true}.
				WithCluster(cs.at(43.2), "metadata.creationTimestamp", evidence.Seconds)
			cs.rec.Timeline[i] = r
		}
	}
	renewed := evidence.Event{At: cs.at(72.5), Source: "apiserver/cp", Subject: "lease/kube-node-lease/" + synthWorker, Kind: "lease-renewals-resumed"}.
		WithCluster(cs.at(72.25), "spec.renewTime", evidence.Microseconds)
	cs.rec.Timeline = append(cs.rec.Timeline, renewed).Sorted()
	c := cs.analyse(t, "c")
	if m := c.Moment("replacement-unschedulable"); !m.Seen || m.Offset != 43300*time.Millisecond {
		t.Errorf("FailedScheduling at +%s, want its cluster time +43.3s: %+v", m.Offset, m)
	}
	// The creation's whole second, not the relisting's +63.2 s.
	if m := c.Moment("replacement-created"); !m.Seen || m.Offset != 43*time.Second || !strings.Contains(m.Detail, "replayed: delivered by a relisting at +63.2") {
		t.Errorf("replayed creation at +%s (%s), want +43s and the replay said", m.Offset, m.Detail)
	}
	if m := c.Moment("lease-resumed"); !m.Seen || m.Offset != 72250*time.Millisecond {
		t.Errorf("renewal at +%s, want its renewTime +72.25s", m.Offset)
	}
	if m := c.Moment("ready-unknown"); m.Offset != 12*time.Second {
		t.Errorf("a live event without a cluster time moved: +%s", m.Offset)
	}
}
