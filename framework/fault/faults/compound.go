package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindCompound is the kind of Compound faults.
const KindCompound = "compound"

// Compound is several faults held at once, as one: inject injects them in
// the order given, heal heals them in the reverse order (each part's heal
// undoes what it found, so a part that changed what an earlier one left,
// such as a second authorization webhook put in front of the first, is
// undone before the earlier one is). The condition a scenario sets up
// comes first and the fault that makes the scenario comes last: the
// compound's class is the last part's. Its effect is seen when every
// part's probe sees its own, and it asks the smallest share of the window
// any part declares (fault.EffectShareOf), since no part's effect is required
// longer than that part's own. A part that fails to inject leaves the
// earlier ones in place for the engine's heal, which heals every part,
// injected or not (every Heal is idempotent).
func Compound(parts ...fault.Fault) fault.Fault {
	return &compound{parts: parts}
}

type compound struct{ parts []fault.Fault }

type compoundPart struct {
	Kind   string          `json:"kind"`
	Params json.RawMessage `json:"params"`
}

type compoundParams struct {
	Parts []compoundPart `json:"parts"`
}

func (f *compound) Kind() string { return KindCompound }

// Parts are the faults the compound holds, in inject order.
func (f *compound) Parts() []fault.Fault { return append([]fault.Fault(nil), f.parts...) }

func (f *compound) Class() fault.Class {
	if len(f.parts) == 0 {
		return ""
	}
	return f.parts[len(f.parts)-1].Class()
}

func (f *compound) Params() json.RawMessage {
	var p compoundParams
	for _, part := range f.parts {
		p.Parts = append(p.Parts, compoundPart{Kind: part.Kind(), Params: part.Params()})
	}
	return mustJSON(p)
}

func (f *compound) check() error {
	if len(f.parts) < 2 {
		return fmt.Errorf("compound fault of %d part(s): give at least two", len(f.parts))
	}
	for i, p := range f.parts {
		if p == nil {
			return fmt.Errorf("compound fault: part %d is nil", i)
		}
		if _, isNull := fault.StandsFor(p); isNull {
			return fmt.Errorf("compound fault: part %d is a null fault", i)
		}
	}
	return nil
}

func (f *compound) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.check(); err != nil {
		return err
	}
	for i, p := range f.parts {
		if err := p.Inject(ctx, l); err != nil {
			return fmt.Errorf("compound fault, part %d of %d (%s): %w", i+1, len(f.parts), p.Kind(), err)
		}
		crashpoint.Reach("compound/inject/part")
	}
	return nil
}

// partContext prefixes what part i's heal or release notes in the heal's
// account with the part.
func (f *compound) partContext(ctx context.Context, i int) context.Context {
	return fault.Within(ctx, fmt.Sprintf("part %d (%s): ", i+1, f.parts[i].Kind()))
}

func (f *compound) Heal(ctx context.Context, l lab.Lab) error {
	var errs []error
	for i := len(f.parts) - 1; i >= 0; i-- {
		if err := f.parts[i].Heal(f.partContext(ctx, i), l); err != nil {
			errs = append(errs, fmt.Errorf("part %d (%s): %w", i+1, f.parts[i].Kind(), err))
		}
		crashpoint.Reach("compound/heal/part")
	}
	if len(errs) > 0 {
		return fmt.Errorf("healing compound fault: %w", errors.Join(errs...))
	}
	return nil
}

// Release releases every part that lingers (fault.Lingering).
func (f *compound) Release(ctx context.Context, l lab.Lab) error {
	var errs []error
	for i := len(f.parts) - 1; i >= 0; i-- {
		if lf, ok := f.parts[i].(fault.Lingering); ok {
			if err := lf.Release(f.partContext(ctx, i), l); err != nil {
				errs = append(errs, fmt.Errorf("part %d (%s): %w", i+1, f.parts[i].Kind(), err))
			}
		}
	}
	return errors.Join(errs...)
}

func (f *compound) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	observed := true
	var details []string
	for i, p := range f.parts {
		e, err := p.Probe(ctx, l)
		if err != nil {
			return fault.Effect{}, fmt.Errorf("part %d (%s): %w", i+1, p.Kind(), err)
		}
		observed = observed && e.Observed
		seen := "not seen"
		if e.Observed {
			seen = "seen"
		}
		details = append(details, fmt.Sprintf("[%d %s, %s] %s", i+1, p.Kind(), seen, e.Detail))
	}
	return fault.Effect{Observed: observed, Detail: strings.Join(details, " ")}, nil
}

// EffectShare is the smallest share any part asks.
func (f *compound) EffectShare() float64 {
	share := 1.0
	for _, p := range f.parts {
		share = min(share, fault.EffectShareOf(p))
	}
	return share
}

// Emulation names every part's emulation on l.
func (f *compound) Emulation(l lab.Lab) string {
	var es []string
	for _, p := range f.parts {
		if e := fault.EmulationOf(p, l); e != "" {
			es = append(es, p.Kind()+": "+e)
		}
	}
	return strings.Join(es, "; ")
}

func decodeCompound(raw json.RawMessage) (fault.Fault, error) {
	var p compoundParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	f := &compound{}
	for i, part := range p.Parts {
		d, err := fault.Decode(part.Kind, part.Params)
		if err != nil {
			return nil, fmt.Errorf("compound fault, part %d: %w", i+1, err)
		}
		f.parts = append(f.parts, d)
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

func init() { fault.Register(KindCompound, decodeCompound) }
