package controls

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/lab"
)

// KindStoppedThroughHeal is the kind of StoppedThroughHeal faults.
const KindStoppedThroughHeal = "stopped-through-heal"

// StoppedThroughHeal stops service on host as faults.StopService does,
// and keeps it stopped through heal: whatever the stopped component left
// in place stays as it was when it stopped, so anything that component
// had to apply after the fault is still not applied when the convergence
// invariants are judged. A node agent stopped so (kube-proxy, the policy
// agent) leaves its last rules in the kernel and nothing else rewrites
// them: agents-converged must be VIOLATED after a change it had to apply.
//
// Heal does nothing; Release starts the service again, once the verdicts
// are in. The ledger entry carries the wrapped stop, so a heal from the
// ledger in another process starts the very service that was stopped.
func StoppedThroughHeal(host, service string) fault.Lingering {
	return &stoppedThroughHeal{stop: faults.StopService(host, service)}
}

type stoppedThroughHeal struct{ stop fault.Fault }

func (f *stoppedThroughHeal) Kind() string       { return KindStoppedThroughHeal }
func (f *stoppedThroughHeal) Class() fault.Class { return f.stop.Class() }
func (f *stoppedThroughHeal) Params() json.RawMessage {
	return mustJSON(KindStoppedThroughHeal, cutOf(f.stop))
}

func (f *stoppedThroughHeal) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.stop.Inject(ctx, l); err != nil {
		return fmt.Errorf("stopped through heal: %w", err)
	}
	return nil
}

// Heal does nothing: the stopped service is what the convergence
// invariants are judged on after heal, and Release starts it.
func (f *stoppedThroughHeal) Heal(context.Context, lab.Lab) error { return nil }

// Release starts the service again (the wrapped stop's heal, which starts
// it only if it is down).
func (f *stoppedThroughHeal) Release(ctx context.Context, l lab.Lab) error {
	if err := f.stop.Heal(ctx, l); err != nil {
		return fmt.Errorf("stopped through heal: releasing: %w", err)
	}
	return nil
}

// Probe sees the service not running, as the wrapped stop does.
func (f *stoppedThroughHeal) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	return f.stop.Probe(ctx, l)
}

func decodeStoppedThroughHeal(raw json.RawMessage) (fault.Fault, error) {
	var c cutParams
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	if c.Kind != faults.KindStopService {
		return nil, fmt.Errorf("stopped through heal wraps a %s fault, not %q", faults.KindStopService, c.Kind)
	}
	stop, err := c.decode()
	if err != nil {
		return nil, err
	}
	return &stoppedThroughHeal{stop: stop}, nil
}

func init() { fault.Register(KindStoppedThroughHeal, decodeStoppedThroughHeal) }
