package invariant

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/evidence"
)

// The latest readable answer is the last one that gave a value, decoded;
// a later unreadable read is skipped, and with none readable the reason
// is the last read's.
func TestLatestIsTheLastReadableAnswer(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value("writer", evidence.RegisterHistory, 0.1, evidence.RegisterHistoryValue{Ops: []evidence.RegisterOp{{}}}, "1")
	r.Round(1).Value("writer", evidence.RegisterHistory, 0.1, evidence.RegisterHistoryValue{Ops: []evidence.RegisterOp{{}, {}}}, "2")
	r.Round(2).Unreadable("writer", evidence.RegisterHistory, 0.1, "timeout")
	o, why := Latest[evidence.RegisterHistoryValue](r.Snaps, "writer", evidence.RegisterHistory)
	if why != "" || o.Snapshot != 1 || o.RV != "2" || len(o.Value.Ops) != 2 || !o.ReadAt.Equal(sec(1.1)) {
		t.Errorf("latest = %+v, %q; want round 1's two operations", o, why)
	}
	none := newRun(t)
	none.Round(0).Unreadable("writer", evidence.RegisterHistory, 0.1, "timeout")
	if _, why := Latest[evidence.RegisterHistoryValue](none.Snaps, "writer", evidence.RegisterHistory); !strings.Contains(why, "writer could not read register/history: timeout") {
		t.Errorf("with no readable answer: %q", why)
	}
	if _, why := Latest[evidence.RegisterHistoryValue](nil, "writer", evidence.RegisterHistory); !strings.Contains(why, "no snapshot to judge") {
		t.Errorf("with no snapshot: %q", why)
	}
}
