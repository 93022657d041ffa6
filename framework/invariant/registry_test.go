package invariant_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
)

// everyInvariant is one of each invariant of the package, built as the
// suites build them, with bounds that differ from each other so that a
// decoder mixing two of them up is seen.
func everyInvariant() []invariant.Invariant {
	b := invariant.Bounds{
		Agreement: map[evidence.Question]invariant.Bound{
			evidence.NodeReady:        {Limit: 4 * time.Second, Why: "node"},
			evidence.PodObject:        {Limit: 5 * time.Second, Why: "pod"},
			evidence.ServiceEndpoints: {Limit: 6500 * time.Millisecond, Why: "endpoints"},
		},
		Ordering:  invariant.Bound{Limit: 7 * time.Second, Why: "two sampling periods"},
		Endpoints: 41 * time.Second,
	}
	return invariant.All(b)
}

// Every invariant the package holds is registered, and decoding its name
// and parameters gives back an equal invariant.
func TestEveryInvariantIsReCreatedFromItsNameAndParameters(t *testing.T) {
	var names []string
	for _, inv := range everyInvariant() {
		names = append(names, inv.Name())
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
	slices.Sort(names)
	if got := invariant.Registered(); !slices.Equal(got, names) {
		t.Errorf("registered %v, want the package's %v", got, names)
	}
}

// A bound is recorded as the duration the suite declared, readable in the
// record.
func TestParametersReadAsTheBounds(t *testing.T) {
	got := string(invariant.ParamsOf(invariant.EndpointsTruthful(41 * time.Second)))
	if got != `{"bound":"41s"}` {
		t.Errorf("endpoints-truthful's parameters %s", got)
	}
	if p := invariant.ParamsOf(invariant.SingleCopy()); p != nil {
		t.Errorf("single-copy has parameters %s, want none", p)
	}
}

func TestDecodeRefusesWhatItCannotReCreate(t *testing.T) {
	for _, c := range []struct {
		name   string
		params string
		is     error
		says   string
	}{
		{"no-such-invariant", "", invariant.ErrUnknown, `"no-such-invariant" (known: [`},
		{invariant.EndpointsTruthfulName, "", invariant.ErrNoParams, "(none recorded)"},
		{invariant.APIAgreementName, "null", invariant.ErrNoParams, "(none recorded)"},
		{invariant.EndpointsTruthfulName, `{}`, nil, "needs its bound"},
		{invariant.EndpointsTruthfulName, `{"bound":"41s","extra":1}`, nil, `unknown field "extra"`},
		{invariant.EndpointsTruthfulName, `{"bound":41}`, nil, "a duration is a string"},
		{invariant.NoTimeTravelName, `{"coverage":{"why":"x"}}`, nil, "needs its limit"},
		{invariant.SingleCopyName, `{"bound":"3s"}`, nil, "takes no parameters"},
	} {
		_, err := invariant.Decode(c.name, json.RawMessage(c.params))
		switch {
		case err == nil:
			t.Errorf("%s %s: decoded", c.name, c.params)
		case c.is != nil && !errors.Is(err, c.is):
			t.Errorf("%s %s: %v, want %v", c.name, c.params, err, c.is)
		case !strings.Contains(err.Error(), c.says):
			t.Errorf("%s %s: %v, want it to say %q", c.name, c.params, err, c.says)
		}
	}
}

func TestRegisteringANameTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second registration of single-copy did not panic")
		}
	}()
	invariant.Register(invariant.SingleCopyName, invariant.Plain(invariant.SingleCopy))
}
