package invariants_test

import (
	"reflect"
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
		if !reflect.DeepEqual(got, inv) {
			t.Errorf("%s from %s: got %#v, want %#v", inv.Name(), params, got, inv)
		}
	}
}
