package scenario

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// healDeadlines are the deadlines the heals of deadlineFlag ran under,
// by flag name (zero: none).
var healDeadlines = struct {
	sync.Mutex
	at map[string][]time.Time
}{at: map[string][]time.Time{}}

// deadlineFlag is a memlab flag whose heal notes the deadline of its
// context.
type deadlineFlag struct {
	Name string `json:"name"`
}

func (f deadlineFlag) Kind() string       { return "test-deadline-flag" }
func (f deadlineFlag) Class() fault.Class { return memlab.FlagClass }
func (f deadlineFlag) Params() json.RawMessage {
	b, _ := json.Marshal(f)
	return b
}
func (f deadlineFlag) Inject(ctx context.Context, l lab.Lab) error {
	return memlab.Flag{Name: f.Name}.Inject(ctx, l)
}
func (f deadlineFlag) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	return memlab.Flag{Name: f.Name}.Probe(ctx, l)
}
func (f deadlineFlag) Heal(ctx context.Context, l lab.Lab) error {
	d, _ := ctx.Deadline()
	healDeadlines.Lock()
	healDeadlines.at[f.Name] = append(healDeadlines.at[f.Name], d)
	healDeadlines.Unlock()
	return memlab.Flag{Name: f.Name}.Heal(ctx, l)
}

// The engine heals under no deadline of another phase's: not the window's,
// nor one the caller's context carries. A heal's bounds are its own (an
// SSH lab's per-dial ConnectTimeout, a command timeout); Ginkgo's
// SpecContext, which the AfterEach heals with, carries no deadline either
// (Ginkgo cancels it when a node or the suite times out).
func TestRunnerHealsUnderNoDeadlineOfAnotherPhase(t *testing.T) {
	dir := t.TempDir()
	rn := newRunner(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res, err := rn.Run(ctx, scenarioOf("heal-context", deadlineFlag{Name: t.Name()}, t.Name(), 100*time.Millisecond))
	if err != nil || res.Record.RunVerdict != verdict.RunJudged {
		t.Fatalf("run %s (%s), %v", res.Record.RunVerdict, res.Record.RunReason, err)
	}
	healDeadlines.Lock()
	got := healDeadlines.at[t.Name()]
	healDeadlines.Unlock()
	if len(got) != 1 || !got[0].IsZero() {
		t.Errorf("heal ran %d times, under deadlines %v; want once, under none", len(got), got)
	}
}
