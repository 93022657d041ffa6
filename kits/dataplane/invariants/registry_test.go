package invariants_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/kits/dataplane/invariants"
)

// everyInvariant is one of each invariant of the package, with bounds
// that differ from each other so that a decoder mixing two of them up is
// seen.
func everyInvariant() []invariant.Invariant {
	return []invariant.Invariant{
		invariants.ServiceRoutesTruthful(invariant.Bound{Limit: 5 * time.Second, Why: "routes"}),
		invariants.PolicyEnforced(invariant.Bound{Limit: 6 * time.Second, Why: "policies"}),
		invariants.AgentHealthTruthful(invariant.Bound{Limit: 7 * time.Second, Why: "kube-proxy"}, invariant.Bound{Limit: 8 * time.Second, Why: "policy agent"}),
		invariants.IsolatedFromStart(),
		invariants.DNSTruthful(invariant.Bound{Limit: 3 * time.Second, Why: "dns"}, 5*time.Second),
		invariants.AgentsConverged(),
	}
}

// Every invariant the package holds is registered with the core's
// registry, and decoding its name and parameters gives back an equal
// invariant.
func TestEveryInvariantIsReCreatedFromItsNameAndParameters(t *testing.T) {
	registered := invariant.Registered()
	for _, inv := range everyInvariant() {
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

func TestDecodeRefusesWhatItCannotReCreate(t *testing.T) {
	for _, c := range []struct {
		name   string
		params string
		says   string
	}{
		{invariants.DNSTruthfulName, `{"bound":"3s"}`, "cache TTL"},
		{invariants.AgentHealthTruthfulName, `{"kubeProxy":"7s"}`, "a bound for each agent"},
		{invariants.ServiceRoutesTruthfulName, `{"bound":{"limit":"7s","extra":1}}`, `unknown field "extra"`},
	} {
		_, err := invariant.Decode(c.name, json.RawMessage(c.params))
		switch {
		case err == nil:
			t.Errorf("%s %s: decoded", c.name, c.params)
		case !strings.Contains(err.Error(), c.says):
			t.Errorf("%s %s: %v, want it to say %q", c.name, c.params, err, c.says)
		}
	}
}

// Records written before the agents' invariants took a Bound (one limit,
// a negative TTL) are judged again with the same limits.
func TestOlderAgentParametersDecode(t *testing.T) {
	for _, c := range []struct {
		name, params string
		want         invariant.Invariant
	}{
		{invariants.ServiceRoutesTruthfulName, `{"bound":"5s"}`, invariants.ServiceRoutesTruthful(invariant.Bound{Limit: 5 * time.Second})},
		{invariants.PolicyEnforcedName, `{"bound":"5s"}`, invariants.PolicyEnforced(invariant.Bound{Limit: 5 * time.Second})},
		{invariants.AgentHealthTruthfulName, `{"bound":"5s"}`, invariants.AgentHealthTruthful(invariant.Bound{Limit: 5 * time.Second}, invariant.Bound{Limit: 5 * time.Second})},
		{invariants.DNSTruthfulName, `{"bound":"3s","negativeTTL":"5s"}`, invariants.DNSTruthful(invariant.Bound{Limit: 3 * time.Second}, 5*time.Second)},
	} {
		got, err := invariant.Decode(c.name, json.RawMessage(c.params))
		if err != nil {
			t.Errorf("%s %s: %v", c.name, c.params, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s: got %#v, want %#v", c.name, c.params, got, c.want)
		}
	}
}
