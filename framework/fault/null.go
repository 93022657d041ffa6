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
//   - fault arm: the probes that saw the effect attest less of the
//     window than the share declared (EffectShareOf) → the run is
//     FAULT_INEFFECTIVE and none of its verdicts count.
//   - null arm: no probe seeing the effect is what a control should show,
//     so it never makes the run FAULT_INEFFECTIVE. A probe that DOES see the
//     effect with nothing injected means the control is contaminated (the
//     lab shows the fault's signature by itself, or the probe cannot tell
//     the fault from background); that run is ABORTED with the probe's
//     detail as the reason, and none of its verdicts count. No share is
//     required of a null arm: one sighting is already contamination.
func Null(standsFor Fault) Fault { return nullFault{standsFor: standsFor} }

// NullWithDecoy is the null-arm fault for standsFor that injects and heals
// decoy in its place: an action of the same shape on something the
// judged behaviour does not depend on (an identity nothing uses, a process
// nothing needs), or the part of a compound fault that is the scenario's
// condition rather than its fault (agents pinned to one API server, with
// that server left connected). It probes as standsFor does, and the rules
// of Null apply: a probe that sees standsFor's effect contaminates the
// control. A decoy that is itself a null fault is refused at inject.
func NullWithDecoy(standsFor, decoy Fault) Fault {
	return nullFault{standsFor: standsFor, decoy: decoy}
}

// StandsFor returns the fault a null-arm fault stands for.
func StandsFor(f Fault) (Fault, bool) {
	n, ok := f.(nullFault)
	if !ok {
		return nil, false
	}
	return n.standsFor, true
}

// DecoyOf returns what a null-arm fault injects in its fault's place, if
// anything.
func DecoyOf(f Fault) (Fault, bool) {
	n, ok := f.(nullFault)
	if !ok || n.decoy == nil {
		return nil, false
	}
	return n.decoy, true
}

type nullFault struct{ standsFor, decoy Fault }

type faultRef struct {
	Kind   string          `json:"kind"`
	Params json.RawMessage `json:"params"`
}

func refOf(f Fault) faultRef {
	r := faultRef{Kind: f.Kind(), Params: f.Params()}
	if len(r.Params) == 0 {
		r.Params = json.RawMessage("null")
	}
	return r
}

type nullParams struct {
	StandsFor faultRef  `json:"standsFor"`
	Decoy     *faultRef `json:"decoy,omitempty"`
}

func (n nullFault) Kind() string { return NullKind }
func (n nullFault) Class() Class { return n.standsFor.Class() }
func (n nullFault) Params() json.RawMessage {
	p := nullParams{StandsFor: refOf(n.standsFor)}
	if n.decoy != nil {
		d := refOf(n.decoy)
		p.Decoy = &d
	}
	b, err := json.Marshal(p)
	if err != nil {
		// Params of a registered fault are JSON by contract.
		panic(fmt.Sprintf("fault: null arm of %s: params are not JSON: %v", n.standsFor.Kind(), err))
	}
	return b
}
func (n nullFault) Inject(ctx context.Context, l lab.Lab) error {
	if n.decoy == nil {
		return nil
	}
	if _, isNull := StandsFor(n.decoy); isNull {
		return fmt.Errorf("null arm of %s: its decoy is itself a null fault", n.standsFor.Kind())
	}
	if err := n.decoy.Inject(ctx, l); err != nil {
		return fmt.Errorf("null arm's decoy (%s): %w", Describe(n.decoy), err)
	}
	return nil
}

func (n nullFault) Heal(ctx context.Context, l lab.Lab) error {
	if n.decoy == nil {
		return nil
	}
	if err := HealAndRelease(Within(ctx, "decoy ("+n.decoy.Kind()+"): "), l, n.decoy); err != nil {
		return fmt.Errorf("null arm's decoy (%s): %w", Describe(n.decoy), err)
	}
	return nil
}
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
	if p.Decoy == nil {
		return Null(inner), nil
	}
	decoy, err := Decode(p.Decoy.Kind, p.Decoy.Params)
	if err != nil {
		return nil, fmt.Errorf("null arm's decoy: %w", err)
	}
	return NullWithDecoy(inner, decoy), nil
}

func init() { Register(NullKind, decodeNull) }
