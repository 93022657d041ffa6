package invariant

import (
	"testing"

	"github.com/faultline/faultline/framework/verdict"
)

func TestAgentsConverged(t *testing.T) {
	inv := AgentsConverged()

	// worker1 kept the old backend until second 9 and follows after: the
	// last sample holds everywhere, and the earlier difference exercised it.
	j := expect(t, inv, routesRun(t, 12, 9, nil).input(Final), verdict.Preserved, "routes of kube-proxy/worker1", "routes of kube-proxy/worker2")
	if j.Exercised == nil || !*j.Exercised {
		t.Errorf("an earlier difference exercises it: %+v", j)
	}

	// worker1 never follows: still different in the sample judged.
	j = expect(t, inv, routesRun(t, 8, 100, nil).input(Final), verdict.Violated,
		"not converged", "kube-proxy/worker1 forwards to [10.240.3.5] while apiserver/cp1 records [10.240.3.9]")
	if j.Exercised == nil || !*j.Exercised || j.At.IsZero() {
		t.Errorf("a violation is exercised and names its moment: %+v", j)
	}

	// Both follow at once, but worker1 cannot be read in the sample judged.
	expect(t, inv, routesRun(t, 8, 0, map[int]bool{7: true}).input(Final), verdict.InsufficientData, "could not tell", "kube-proxy/worker1 could not be read")

	// Nothing changed before the sample judged: nothing to converge from.
	j = expect(t, inv, routesRun(t, 3, 0, nil).input(Final), verdict.Preserved, "every node applied what the API records")
	if j.Exercised == nil || *j.Exercised {
		t.Errorf("with no difference it is not exercised: %+v", j)
	}
}
