package matchers

import (
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// twoNodes is VIOLATED when the pod runs on more than one runtime at once.
type twoNodes struct{}

func (twoNodes) Name() string         { return "single-copy" }
func (twoNodes) Phase() verdict.Phase { return verdict.Safety }
func (twoNodes) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: "cri/*", Question: "pod/running"}}
}
func (twoNodes) Judge(in invariant.Input) verdict.Judgement {
	for _, s := range in.Snapshots {
		var on []string
		for _, src := range s.Sources() {
			var running bool
			if s.Get(src, "pod/running").Decode(&running) == nil && running {
				on = append(on, string(src))
			}
		}
		if len(on) > 1 {
			return verdict.Judgement{Verdict: verdict.Violated, Reason: "web-0 runs on " + strings.Join(on, " and "), Sources: on, At: s.Taken}
		}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: "web-0 ran on at most one node at every sample"}
}

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

func window(runningOn ...map[evidence.Source]bool) invariant.Input {
	in := invariant.Input{Moment: invariant.Window}
	for i, m := range runningOn {
		s := evidence.NewSnapshot(t0.Add(time.Duration(i) * time.Second))
		for src, r := range m {
			a, _ := evidence.ValueAnswer(r, s.Taken, "")
			s.Set(src, "pod/running", a)
		}
		in.Snapshots = append(in.Snapshots, s)
	}
	return in
}

// failures runs f with a Gomega whose failures are collected, not fatal.
func failures(f func(g gomega.Gomega)) []string {
	var msgs []string
	g := gomega.NewGomega(func(message string, _ ...int) { msgs = append(msgs, message) })
	f(g)
	return msgs
}

func TestPreserveFailureNamesInvariantSourcesAndMoment(t *testing.T) {
	in := window(
		map[evidence.Source]bool{"cri/worker1": true, "cri/worker2": false},
		map[evidence.Source]bool{"cri/worker1": true, "cri/worker2": true},
	)
	msgs := failures(func(g gomega.Gomega) { g.Expect(in).To(Preserve(twoNodes{})) })
	if len(msgs) != 1 {
		t.Fatalf("want one failure, got %q", msgs)
	}
	for _, want := range []string{
		"invariant single-copy (safety) was VIOLATED",
		"the window (2 snapshots, 10:00:00.000Z to 10:00:01.000Z)",
		"moment:  10:00:01.000Z",
		"sources: cri/worker1, cri/worker2",
		"reason:  web-0 runs on cri/worker1 and cri/worker2",
	} {
		if !strings.Contains(msgs[0], want) {
			t.Errorf("message lacks %q:\n%s", want, msgs[0])
		}
	}
}

func TestPreservePassesAndKeepsTheJudgement(t *testing.T) {
	in := window(map[evidence.Source]bool{"cri/worker1": true, "cri/worker2": false})
	m := Preserve(twoNodes{})
	if msgs := failures(func(g gomega.Gomega) { g.Expect(&in).To(m) }); len(msgs) != 0 {
		t.Fatalf("unexpected failure %q", msgs)
	}
	j, ok := m.Judgement()
	if !ok || j.Verdict != verdict.Preserved || j.Invariant != "single-copy" {
		t.Errorf("judgement %+v", j)
	}
}

func TestPreserveOverUnreadableEvidence(t *testing.T) {
	s := evidence.NewSnapshot(t0)
	s.Set("cri/worker1", "pod/running", evidence.UnreadableAnswer("ssh: connection refused", t0))
	in := invariant.Input{Moment: invariant.Final, Snapshots: []evidence.Snapshot{s}}
	m := Preserve(twoNodes{})
	// Lack of evidence is not a violation...
	if msgs := failures(func(g gomega.Gomega) { g.Expect(in).To(m) }); len(msgs) != 0 {
		t.Fatalf("unexpected failure %q", msgs)
	}
	if j, _ := m.Judgement(); j.Verdict != verdict.InsufficientData {
		t.Errorf("verdict %s, want INSUFFICIENT_DATA", j.Verdict)
	}
	// ...and never lets a negated assertion claim one.
	msgs := failures(func(g gomega.Gomega) { g.Expect(in).NotTo(Preserve(twoNodes{})) })
	if len(msgs) != 1 || !strings.Contains(msgs[0], "to be VIOLATED over the final (1 snapshot at 10:00:00.000Z), but it was INSUFFICIENT_DATA") {
		t.Errorf("negated message %q", msgs)
	}
}

func TestPreserveRejectsWhatIsNotEvidence(t *testing.T) {
	msgs := failures(func(g gomega.Gomega) { g.Expect("worker1").To(Preserve(twoNodes{})) })
	if len(msgs) != 1 || !strings.Contains(msgs[0], "Preserve(single-copy) matches evidence (invariant.Input), got string") {
		t.Errorf("got %q", msgs)
	}
}
