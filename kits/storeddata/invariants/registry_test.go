package invariants_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/kits/storeddata/invariants"
)

// Every invariant the package holds is registered with the core's
// registry, and decoding its name and parameters gives back an equal
// invariant.
func TestEveryInvariantIsReCreatedFromItsNameAndParameters(t *testing.T) {
	registered := invariant.Registered()
	for _, inv := range []invariant.Invariant{
		invariants.AcknowledgedDataSurvives(),
		invariants.StorageIntegrity(),
		invariants.SingleWriterAtStorage(),
		invariants.SingleHistory(),
		invariants.FencingMonotonic(),
	} {
		if !slices.Contains(registered, inv.Name()) {
			t.Errorf("%s is not registered", inv.Name())
		}
		params := invariant.ParamsOf(inv)
		got, err := invariant.Decode(inv.Name(), params)
		if err != nil {
			t.Errorf("%s: %v", inv.Name(), err)
			continue
		}
		// %#v prints every field, a judge function by its code's
		// address: reflect.DeepEqual calls no two non-nil functions
		// equal, and an invariant made with invariant.New holds one.
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", inv) {
			t.Errorf("%s from %s: got %#v, want %#v", inv.Name(), params, got, inv)
		}
	}
}
