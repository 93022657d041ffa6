package scenario

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/lab"
)

// toldSampler is memlab's sampler that keeps the runs it is told of, and
// for each sample the run it was told last.
type toldSampler struct {
	memlab.Sampler
	mu      sync.Mutex
	told    []evidence.Run
	sampled []string
}

func (s *toldSampler) BeginRun(r evidence.Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.told = append(s.told, r)
}

func (s *toldSampler) Sample(ctx context.Context, l lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
	s.mu.Lock()
	id := ""
	if len(s.told) > 0 {
		id = s.told[len(s.told)-1].ID
	}
	s.sampled = append(s.sampled, id)
	s.mu.Unlock()
	return s.Sampler.Sample(ctx, l)
}

// The engine tells a RunSampler each run before the suite's Prepare: its
// ID, scenario, arm and the labels its record keeps, so a suite's readers
// learn from the run what it uses; every sample of the run comes after.
func TestTheSamplerIsToldTheRunBeforePrepare(t *testing.T) {
	dir := t.TempDir()
	s := memSuite(dir)
	sampler := &toldSampler{}
	s.Sampler = sampler
	// How many runs the sampler was told of when each Prepare began.
	var toldAtPrepare []int
	s.Prepare = func(context.Context, lab.Lab, Scenario) error {
		sampler.mu.Lock()
		defer sampler.mu.Unlock()
		toldAtPrepare = append(toldAtPrepare, len(sampler.told))
		return nil
	}
	rn, err := NewRunner(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Close() })
	sc := scenarioOf("told", memlab.Flag{Name: "a"}, "b", 200*time.Millisecond)
	sc.Labels = []string{"workload:ledger", "volume:block"}
	for _, arm := range []Arm{FaultArm, NullArm} {
		sc.Arm = arm
		sampler.mu.Lock()
		sampler.sampled = nil
		sampler.mu.Unlock()
		res, err := rn.Run(context.Background(), sc)
		if err != nil {
			t.Fatal(err)
		}
		rec := res.Record
		if len(sampler.told) == 0 {
			t.Fatalf("%s arm: the sampler was told of no run", arm)
		}
		told := sampler.told[len(sampler.told)-1]
		want := evidence.Run{ID: rec.RunID, Scenario: rec.Scenario, Arm: rec.Arm, Labels: rec.Labels}
		if !told.Equal(want) || told.Arm != string(arm) || !slices.Contains(told.Labels, "workload:ledger") {
			t.Errorf("%s arm: told %+v, want the record's run %+v", arm, told, want)
		}
		if len(sampler.sampled) == 0 {
			t.Fatalf("%s arm: no sample", arm)
		}
		for _, id := range sampler.sampled {
			if id != rec.RunID {
				t.Fatalf("%s arm: a sample for run %q, want %s", arm, id, rec.RunID)
			}
		}
	}
	if len(sampler.told) != 2 || !slices.Equal(toldAtPrepare, []int{1, 2}) {
		t.Errorf("told %d runs; at each Prepare, %v had been told, want [1 2]", len(sampler.told), toldAtPrepare)
	}
}
