package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// gatedFlagKind is a memlab flag whose heal fails until its gate opens, as
// a heal whose commands time out on a loaded machine fails, and then
// heals. A gate opens once the lab has been reset a given number of times
// (math.MaxInt: shut for good).
const gatedFlagKind = "test-gated-flag"

var gates = struct {
	sync.Mutex
	openAtResets map[string]int
}{openAtResets: map[string]int{}}

func setGate(gate string, openAtResets int) {
	gates.Lock()
	gates.openAtResets[gate] = openAtResets
	gates.Unlock()
}

type gatedFlag struct {
	Name string `json:"name"`
	Gate string `json:"gate"`
}

func (f gatedFlag) Kind() string       { return gatedFlagKind }
func (f gatedFlag) Class() fault.Class { return memlab.FlagClass }
func (f gatedFlag) Params() json.RawMessage {
	b, _ := json.Marshal(f)
	return b
}
func (f gatedFlag) Inject(ctx context.Context, l lab.Lab) error {
	return memlab.Flag{Name: f.Name}.Inject(ctx, l)
}
func (f gatedFlag) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	return memlab.Flag{Name: f.Name}.Probe(ctx, l)
}
func (f gatedFlag) Heal(ctx context.Context, l lab.Lab) error {
	st, err := l.(*memlab.Lab).Load()
	if err != nil {
		return err
	}
	gates.Lock()
	openAt := gates.openAtResets[f.Gate]
	gates.Unlock()
	if st.Resets < openAt {
		return fmt.Errorf("clearing flag %s: command did not finish: %w", f.Name, context.DeadlineExceeded)
	}
	fault.Found(ctx, "flag %s", f.Name)
	fault.Removed(ctx, "flag %s", f.Name)
	return memlab.Flag{Name: f.Name}.Heal(ctx, l)
}

func init() {
	fault.Register(gatedFlagKind, func(p json.RawMessage) (fault.Fault, error) {
		var f gatedFlag
		if err := json.Unmarshal(p, &f); err != nil {
			return nil, err
		}
		return f, nil
	})
}

// syncBuffer is a bytes.Buffer the run's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRunnerTo(t *testing.T, dir string, out io.Writer) *Runner {
	t.Helper()
	rn, err := NewRunner(context.Background(), memSuite(dir), out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Close() })
	return rn
}

// runWithFailedHeal runs a scenario whose heal fails (its gate shut) and
// returns its record; the fault's entry stays in the ledger.
func runWithFailedHeal(t *testing.T, rn *Runner, dir, gate string) verdict.Run {
	t.Helper()
	setGate(gate, math.MaxInt)
	res, err := rn.Run(context.Background(), scenarioOf("heal-times-out", gatedFlag{Name: "g", Gate: gate}, "g", 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if rec := res.Record; rec.RunVerdict != verdict.RunAborted || !strings.Contains(rec.RunReason, "heal failed") {
		t.Fatalf("run %s (%s); want ABORTED, heal failed", rec.RunVerdict, rec.RunReason)
	}
	if es := entries(t, dir); len(es) != 1 || es[0].Scenario != res.Record.RunID {
		t.Fatalf("the unhealed fault must stay in the ledger, naming its run %s: %v", res.Record.RunID, es)
	}
	return res.Record
}

// A heal that failed in one run (its commands timed out) must not abort
// every later run of the suite: the next run heals the entry it left, as
// `faultline heal` would, and runs; its timeline and progress say so.
func TestRunnerNextRunHealsWhatAFailedHealLeft(t *testing.T) {
	dir := t.TempDir()
	var out syncBuffer
	rn := newRunnerTo(t, dir, &out)
	failed := runWithFailedHeal(t, rn, dir, t.Name())

	setGate(t.Name(), 0) // the load is gone: the heal works now
	res, err := rn.Run(context.Background(), scenarioOf("next", memlab.Flag{Name: "a"}, "a", 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Record
	if rec.RunVerdict != verdict.RunJudged {
		t.Fatalf("the run after a failed heal: %s (%s); want JUDGED after healing the leftover", rec.RunVerdict, rec.RunReason)
	}
	if es := entries(t, dir); len(es) != 0 {
		t.Errorf("ledger holds %v", es)
	}
	st := labState(t, dir)
	if st.Flags["g"] {
		t.Errorf("the leftover fault is still in the lab: %v", st.Flags)
	}
	// Healed before the second run's reset.
	if i := slices.Index(st.Log, "heal g"); i < 0 || !slices.Equal(st.Log[i:i+2], []string{"heal g", "reset"}) {
		t.Errorf("lab log %v; want the leftover healed just before the next reset", st.Log)
	}
	healed := res.Evidence.Timeline.OfKind(LeftoverHealedEvent)
	if len(healed) != 1 {
		t.Fatalf("timeline has %d %s events, want 1: %v", len(healed), LeftoverHealedEvent, res.Evidence.Timeline)
	}
	for _, want := range []string{"before reset", "healed " + gatedFlagKind, "left by run " + failed.RunID, "found: flag g", "removed: flag g"} {
		if !strings.Contains(healed[0].Detail, want) {
			t.Errorf("event detail %q lacks %q", healed[0].Detail, want)
		}
	}
	if healed[0].Subject != "scenario/next" {
		t.Errorf("event subject %q", healed[0].Subject)
	}
	if _, ok := rec.Timings[leftoverHealTiming]; !ok {
		t.Errorf("no %s timing in %v", leftoverHealTiming, rec.Timings)
	}
	if !strings.Contains(out.String(), rec.RunID+": before reset, the heal ledger held what an earlier run left (healed 1") || !strings.Contains(out.String(), failed.RunID) {
		t.Errorf("progress does not say the leftover was healed:\n%s", out.String())
	}
	// A run on a ledger with nothing left says nothing of it.
	res, err = rn.Run(context.Background(), scenarioOf("clean", memlab.Flag{Name: "c"}, "c", 100*time.Millisecond))
	if err != nil || res.Record.RunVerdict != verdict.RunJudged {
		t.Fatalf("a clean run: %s (%s), %v", res.Record.RunVerdict, res.Record.RunReason, err)
	}
	if n := len(leftoverEvents(res.Evidence.Timeline)); n != 0 {
		t.Errorf("a run with no leftover has %d leftover events", n)
	}
	if _, ok := res.Record.Timings[leftoverHealTiming]; ok {
		t.Errorf("a run with no leftover has a %s timing", leftoverHealTiming)
	}
}

func leftoverEvents(tl evidence.Timeline) evidence.Timeline {
	var out evidence.Timeline
	for _, e := range tl {
		if strings.HasPrefix(e.Kind, "leftover-") {
			out = append(out, e)
		}
	}
	return out
}

// A leftover whose heal fails before the reset (the hosts it needs are
// back only after it) is healed once more after the reset.
func TestRunnerHealsALeftoverAgainAfterTheReset(t *testing.T) {
	dir := t.TempDir()
	rn := newRunnerTo(t, dir, nil)
	failed := runWithFailedHeal(t, rn, dir, t.Name())

	setGate(t.Name(), labState(t, dir).Resets+1)
	res, err := rn.Run(context.Background(), scenarioOf("next", memlab.Flag{Name: "a"}, "a", 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if rec := res.Record; rec.RunVerdict != verdict.RunJudged {
		t.Fatalf("run %s (%s); want JUDGED after healing the leftover after the reset", rec.RunVerdict, rec.RunReason)
	}
	evs := leftoverEvents(res.Evidence.Timeline)
	if len(evs) != 2 || evs[0].Kind != LeftoverHealFailedEvent || !strings.HasPrefix(evs[0].Detail, "before reset: could not heal") ||
		evs[1].Kind != LeftoverHealedEvent || !strings.HasPrefix(evs[1].Detail, "after reset: healed") || !strings.Contains(evs[1].Detail, failed.RunID) {
		t.Errorf("leftover events %v; want a failed heal before the reset, then a heal after it", evs)
	}
	if es := entries(t, dir); len(es) != 0 {
		t.Errorf("ledger holds %v", es)
	}
}

// A leftover that cannot be healed still refuses the run, naming it and
// saying why.
func TestRunnerRefusesALeftoverItCannotHeal(t *testing.T) {
	dir := t.TempDir()
	rn := newRunnerTo(t, dir, nil)
	failed := runWithFailedHeal(t, rn, dir, t.Name())

	res, err := rn.Run(context.Background(), scenarioOf("next", memlab.Flag{Name: "a"}, "a", 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Record
	for _, want := range []string{"clean-start check failed: the heal ledger still holds 1 entries after reset", failed.RunID, gatedFlagKind + " (entry ", "could not be healed", "command did not finish"} {
		if rec.RunVerdict != verdict.RunAborted || !strings.Contains(rec.RunReason, want) {
			t.Errorf("run %s (%s); want ABORTED saying %q", rec.RunVerdict, rec.RunReason, want)
		}
	}
	if n := len(res.Evidence.Timeline.OfKind(LeftoverHealFailedEvent)); n != 2 {
		t.Errorf("%d %s events, want 2 (before and after the reset)", n, LeftoverHealFailedEvent)
	}
	if st := labState(t, dir); !st.Flags["g"] || slices.Contains(st.Log, "inject a") {
		t.Errorf("lab %v, log %v; want the leftover still there and nothing injected", st.Flags, st.Log)
	}
}

// An entry a live process holds is that process's fault, in a run still
// going: it is left alone and the run is refused.
func TestRunnerLeavesAnEntryHeldByALiveProcess(t *testing.T) {
	dir := t.TempDir()
	rn := newRunnerTo(t, dir, nil)
	led, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	held, err := led.Record(memlab.Flag{Name: "b"}, memlab.Name, "another-run")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Done() })
	if err := (memlab.Flag{Name: "b"}).Inject(context.Background(), memlab.Open(dir, true)); err != nil {
		t.Fatal(err)
	}
	res, err := rn.Run(context.Background(), scenarioOf("next", memlab.Flag{Name: "a"}, "a", 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Record
	if rec.RunVerdict != verdict.RunAborted || !strings.Contains(rec.RunReason, "the heal ledger still holds 1 entries after reset") || !strings.Contains(rec.RunReason, "held by running pid") {
		t.Errorf("run %s (%s); want ABORTED, the entry held by a live process", rec.RunVerdict, rec.RunReason)
	}
	if evs := res.Evidence.Timeline.OfKind(LeftoverHeldEvent); len(evs) != 2 || !strings.Contains(evs[0].Detail, "another-run") {
		t.Errorf("%s events %v", LeftoverHeldEvent, evs)
	}
	if st := labState(t, dir); !st.Flags["b"] || slices.Contains(st.Log, "heal b") {
		t.Errorf("a fault held by a live process was healed: %v %v", st.Flags, st.Log)
	}
}
