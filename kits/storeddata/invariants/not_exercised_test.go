package invariants

import (
	"testing"

	"github.com/faultline/faultline/fixtures/electorlog/electortest"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// A null arm runs one writer, one leader: invariants that need a second
// copy to fire cannot, and their PRESERVED says "not exercised" in its
// reason, so no one counts it as a test of the detector.

func TestSingleWriterWithOneWriterSaysNotExercised(t *testing.T) {
	one := newLedgerBench(t)
	one.start(ledgerID("a", "worker1")).append(4)
	j := expect(t, SingleWriterAtStorage(), historyRounds(t, one, 11).Input(invariant.WindowToSettle), verdict.Preserved,
		"not exercised", "one writer")
	wantExercised(t, j, false, "not exercised")
}

func TestSingleHistoryWithOneLeaderSaysNotExercised(t *testing.T) {
	one := electortest.New(t, t0)
	a, c := one.Writer("a", "worker1", eFenced).Lead(1), one.Writer("c", "worker2", eFenced)
	a.Increment("", "1", eOK)
	c.Read("1")
	j := expect(t, SingleHistory(), electorRounds(t, one, false, 11), verdict.Preserved, "not exercised", "one writer")
	wantExercised(t, j, false, "not exercised")
}
