package fault

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/faultline/faultline/lab"
)

// NullKind is the kind of every null-arm fault.
const NullKind = "null"

// Null returns the null-arm fault for standsFor: it injects and heals
// nothing, and probes exactly as standsFor does, so both arms carry the same
// probe load and the null arm shows what the probe sees with no fault.
//
// How a probe is read depends on the arm (the scenario engine applies it):
//   - fault arm: fewer of the window's probes saw the effect than the
//     share declared (EffectShareOf) → the run is FAULT_INEFFECTIVE and
//     none of its verdicts count.
//   - null arm: no probe seeing the effect is what a control should show,
//     so it never makes the run FAULT_INEFFECTIVE. A probe that DOES see the
//     effect with nothing injected means the control is contaminated (the
//     lab shows the fault's signature by itself, or the probe cannot tell
//     the fault from background); that run is ABORTED with the probe's
//     detail as the reason, and none of its verdicts count. No share is
//     required of a null arm: one sighting is already contamination.
func Null(standsFor Fault) Fault { return nullFault{standsFor: standsFor} }

// StandsFor returns the fault a null-arm fault stands for.
func StandsFor(f Fault) (Fault, bool) {
	n, ok := f.(nullFault)
	if !ok {
		return nil, false
	}
	return n.standsFor, true
}

type nullFault struct{ standsFor Fault }

type nullParams struct {
	StandsFor struct {
		Kind   string          `json:"kind"`
		Params json.RawMessage `json:"params"`
	} `json:"standsFor"`
}

func (n nullFault) Kind() string { return NullKind }
func (n nullFault) Class() Class { return n.standsFor.Class() }
func (n nullFault) Params() json.RawMessage {
	var p nullParams
	p.StandsFor.Kind = n.standsFor.Kind()
	p.StandsFor.Params = n.standsFor.Params()
	if len(p.StandsFor.Params) == 0 {
		p.StandsFor.Params = json.RawMessage("null")
	}
	b, err := json.Marshal(p)
	if err != nil {
		// Params of a registered fault are JSON by contract.
		panic(fmt.Sprintf("fault: null arm of %s: params are not JSON: %v", n.standsFor.Kind(), err))
	}
	return b
}
func (n nullFault) Inject(context.Context, lab.Lab) error { return nil }
func (n nullFault) Heal(context.Context, lab.Lab) error   { return nil }
func (n nullFault) Probe(ctx context.Context, l lab.Lab) (Effect, error) {
	return n.standsFor.Probe(ctx, l)
}

func decodeNull(params json.RawMessage) (Fault, error) {
	var p nullParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	if p.StandsFor.Kind == "" {
		return nil, fmt.Errorf("null fault does not say what it stands for")
	}
	inner, err := Decode(p.StandsFor.Kind, p.StandsFor.Params)
	if err != nil {
		return nil, err
	}
	return Null(inner), nil
}

func init() { Register(NullKind, decodeNull) }
