package drills_test

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab/timers"
	"github.com/faultline/faultline/suites/drills"
)

func TestTablesValidateForBothProfiles(t *testing.T) {
	for _, name := range timers.Names() {
		prof, err := timers.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		p := prof.Timers()
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
		need := p.NodeMonitorGracePeriod + p.UnreachableToleration
		if w := drills.PairWindow(p); w <= need {
			t.Errorf("%s: pair window %s does not outlast grace + toleration %s", name, w, need)
		}
	}
}

// The windows and settle bounds of both profiles, written out as they were
// when the drills read the profiles themselves: deriving them from the
// timers a lab reports changes none.
func TestWindowsOfBothProfilesAreUnchanged(t *testing.T) {
	for _, c := range []struct {
		profile             string
		pair, racks, settle time.Duration
	}{
		{timers.Fast, 73 * time.Second, 79 * time.Second, 192 * time.Second},
		{timers.KubernetesDefaults, 385 * time.Second, 400 * time.Second, 230 * time.Second},
	} {
		prof, err := timers.Get(c.profile)
		if err != nil {
			t.Fatal(err)
		}
		p := prof.Timers()
		if got := drills.PairWindow(p); got != c.pair {
			t.Errorf("%s: pair window %s, was %s", c.profile, got, c.pair)
		}
		if got := drills.RacksWindow(p); got != c.racks {
			t.Errorf("%s: racks window %s, was %s", c.profile, got, c.racks)
		}
		for _, s := range drills.Table(p, drills.NewSampler()) {
			want := c.pair
			if s.ID == drills.IDRackCut || s.ID == drills.IDRackForce {
				want = c.racks
			}
			if s.Window != want || s.Settle != c.settle {
				t.Errorf("%s: %s window %s settle %s, was %s and %s", c.profile, s.ID, s.Window, s.Settle, want, c.settle)
			}
		}
	}
}

// The drills size their windows from the lab file of any backend: the
// Proxmox pair reads through the registry and declares its timers.
func TestTimersOfReadsAProxmoxLabFile(t *testing.T) {
	t.Setenv(scenario.EnvLab, "../../testdata/labs/proxmox-pair.yaml")
	got, err := drills.TimersOf()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := timers.Get(timers.KubernetesDefaults)
	if got != d.Timers() {
		t.Errorf("proxmox-pair timers %+v, want the kubernetes-defaults it declares", got)
	}
	t.Setenv(scenario.EnvLab, "")
	f, _ := timers.Get(timers.Fast)
	if got, err := drills.TimersOf(); err != nil || got != f.Timers() {
		t.Errorf("no lab named: %+v, %v; want fast's", got, err)
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
	// Judged from the sample handed last: pods Terminating earlier (the
	// window, before the node came back) make it exercised, not VIOLATED.
	j := invariant.Judge(inv, invariant.Input{Moment: invariant.Final, Snapshots: []evidence.Snapshot{stuck, stuck, clean}})
	if j.Verdict != verdict.Preserved || j.Exercised == nil || !*j.Exercised || strings.Count(j.Reason, "web-b") != 0 {
		t.Errorf("terminating earlier, gone in the judged sample: %s %q exercised %v (%s)", j.Verdict, j.Reason, j.Exercised, j.Exercise)
	}
	j = invariant.Judge(inv, invariant.Input{Moment: invariant.Final, Snapshots: []evidence.Snapshot{stuck, stuck, stuck}})
	if j.Verdict != verdict.Violated || strings.Count(j.Reason, "web-b") != 1 {
		t.Errorf("terminating in the judged sample: %s %q, want VIOLATED naming the pod once", j.Verdict, j.Reason)
	}
	j = invariant.Judge(inv, invariant.Input{Moment: invariant.Final, Snapshots: []evidence.Snapshot{clean, clean}})
	if j.Exercised == nil || *j.Exercised {
		t.Errorf("never terminating: exercised %v, want not exercised", j.Exercised)
	}
}
