package drills_test

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab/local/timers"
	"github.com/faultline/faultline/suites/drills"
)

func TestTablesValidateForBothProfiles(t *testing.T) {
	for _, name := range timers.Names() {
		p, err := timers.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		s := drills.NewSampler()
		table, err := drills.WithFaults(drills.Table(p, s), "pair-worker", drills.RacksShape{M1: "m1", W1: "w1", M2: "m2", W2: "w2"}, s.Note)
		if err != nil {
			t.Fatal(err)
		}
		if err := scenario.ValidateTable(table); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		// The window must outlast detection and the NoExecute toleration,
		// or the drill never sees the evictions it is about.
		need := p.NodeMonitorGracePeriod + time.Duration(p.DefaultUnreachableTolerationSeconds)*time.Second
		if w := drills.PairWindow(p); w <= need {
			t.Errorf("%s: pair window %s does not outlast grace + toleration %s", name, w, need)
		}
	}
}

func podsSnapshot(t *testing.T, src evidence.Source, pods []drills.PodState) evidence.Snapshot {
	t.Helper()
	s := evidence.NewSnapshot(time.Now())
	a, err := evidence.ValueAnswer(drills.PodsValue{Pods: pods}, time.Now(), "1")
	if err != nil {
		t.Fatal(err)
	}
	s.Set(src, drills.QuestionPods, a)
	return s
}

func TestDeletionsComplete(t *testing.T) {
	inv := drills.DeletionsComplete()
	now := time.Now()
	clean := podsSnapshot(t, "apiserver/cp", []drills.PodState{{Name: "web-a", UID: "1", Phase: "Running"}})
	stuck := podsSnapshot(t, "apiserver/cp", []drills.PodState{{Name: "web-b", UID: "2", Node: "w", DeletionTimestamp: &now}})
	unread := evidence.NewSnapshot(now)
	unread.Set("apiserver/cp", drills.QuestionPods, evidence.UnreadableAnswer("timeout: x", now))
	for _, c := range []struct {
		name string
		snap evidence.Snapshot
		want verdict.Verdict
		says string
	}{
		{"no pod terminating", clean, verdict.Preserved, ""},
		{"a pod still terminating", stuck, verdict.Violated, "web-b"},
		{"no server answered", unread, verdict.InsufficientData, ""},
	} {
		j := invariant.Judge(inv, invariant.Input{Moment: invariant.Final, Snapshots: []evidence.Snapshot{c.snap}})
		if j.Verdict != c.want || !strings.Contains(j.Reason, c.says) {
			t.Errorf("%s: %s %q, want %s mentioning %q", c.name, j.Verdict, j.Reason, c.want, c.says)
		}
	}
}
