// Package fault defines what a scenario does to a lab: a Fault injects,
// heals and probes for its own effect, written only against lab.Lab and
// lab.Host. The registry turns a heal-ledger entry back into a Fault in a
// process other than the one that injected it.
package fault

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/faultline/faultline/lab"
)

// Class is a family of faults (partition, slow-etcd, clock-skew,
// process-freeze, ...); the applicability table is keyed by it.
type Class string

// Effect is what one probe saw.
type Effect struct {
	// Observed is true when the probe saw the fault's effect in the lab.
	Observed bool `json:"observed"`
	// Detail says what was seen, or what was looked at and found normal.
	Detail string `json:"detail"`
	// Lasted is how long before the look ended the effect was seen to
	// hold without a break: a connect that waited out its timeout with no
	// answer saw a cut for that long. Zero for an effect seen at one
	// moment (a state read), which is most.
	Lasted time.Duration `json:"lasted,omitempty"`
}

// Fault is one thing a scenario does to a lab.
type Fault interface {
	// Kind names the fault ("worker-power-off"); it is the key Decode
	// looks up, so it must be the kind the fault was registered under.
	Kind() string
	Class() Class
	// Params are the fault's parameters; Decode(Kind(), Params()) must
	// give back an equal fault.
	Params() json.RawMessage
	Inject(ctx context.Context, l lab.Lab) error
	// Heal removes the fault. It must be idempotent: healing a fault that
	// was never injected, or was already healed, succeeds and does nothing.
	Heal(ctx context.Context, l lab.Lab) error
	// Probe looks for the fault's effect in the lab, as it is now: the
	// engine probes once per tick through the window, and the share of
	// the window the looks that saw the effect attest (each what it saw,
	// Effect.Lasted, and half a tick either side; a look that could not
	// look attests nothing) decides whether the run counts
	// (DefaultEffectShare, EffectSharer). A probe reading a counter must
	// report growth since its last look, not a total since inject, or a
	// fault that stopped acting would still be seen. An error means the
	// probe could not look; it is not an effect.
	Probe(ctx context.Context, l lab.Lab) (Effect, error)
}

// DefaultEffectShare is the share of a window that the effect probes
// which saw a fault's effect must attest for its run to count, when
// neither the scenario nor the fault declares another. A verdict judged over the window describes
// the cluster under the fault only if the fault held for most of what was
// judged: with the effect shown over less than half the window, most of
// the window shows a cluster without the fault, or one not shown under it (a throttle whose traffic moved
// to another path, a process restarted early), and its verdicts would be
// pooled with runs that tested the fault. Half, not all, because a probe
// that misses now and then (a connect that happened to get through, a
// sample that fell between two bursts) does not mean the fault was gone.
const DefaultEffectShare = 0.5

// EffectSharer is a fault that declares what share of a window its
// probes must show its effect in, because it knows its effect is momentary or begins
// late (an effect its probe can see only for a moment after inject, or
// only once a controller has acted). Its EffectShare doc comment must say
// why the share is what it is; a fault whose probe sees its effect for as
// long as it is in place needs no declaration.
type EffectSharer interface {
	Fault
	// EffectShare is in (0, 1].
	EffectShare() float64
}

// EffectShareOf is the share of the window f declares (looking through a null
// arm to the fault it stands for), or DefaultEffectShare.
func EffectShareOf(f Fault) float64 {
	if inner, isNull := StandsFor(f); isNull {
		f = inner
	}
	if es, ok := f.(EffectSharer); ok {
		if share := es.EffectShare(); share > 0 && share <= 1 {
			return share
		}
	}
	return DefaultEffectShare
}

// Composite is a fault made of other faults (a compound), which says
// what they are.
type Composite interface {
	Fault
	Parts() []Fault
}

// Classes are the classes of what f injects: its own, and every part's
// of a composite fault (whose own class is one part's); for a null arm,
// its decoy's (DecoyOf), none when it injects nothing. Each class once,
// in the order met.
func Classes(f Fault) []Class {
	if f == nil {
		return nil
	}
	if _, isNull := StandsFor(f); isNull {
		if d, ok := DecoyOf(f); ok {
			return Classes(d)
		}
		return nil
	}
	var out []Class
	add := func(c Class) {
		for _, have := range out {
			if have == c {
				return
			}
		}
		if c != "" {
			out = append(out, c)
		}
	}
	add(f.Class())
	if c, ok := f.(Composite); ok {
		for _, p := range c.Parts() {
			for _, pc := range Classes(p) {
				add(pc)
			}
		}
	}
	return out
}

// Emulated is a fault some labs can only emulate: where the lab cannot do
// what the fault names (one kernel's shared wall clock), the fault does
// what comes closest and says how, and the run record carries it, so that
// no report passes an emulation off as the real thing.
type Emulated interface {
	Fault
	// Emulation says how the fault is emulated on l and what the
	// emulation does not reach, in one line; empty where l does the real
	// thing.
	Emulation(l lab.Lab) string
}

// EmulationOf is what f (or, for a null arm, the fault it stands for)
// says of its emulation on l, or "".
func EmulationOf(f Fault, l lab.Lab) string {
	if inner, isNull := StandsFor(f); isNull {
		f = inner
	}
	if e, ok := f.(Emulated); ok && l != nil {
		return e.Emulation(l)
	}
	return ""
}

// Lingering is a fault whose damage outlives Heal on purpose. The positive
// control of an invariant judged after heal (replicas-restored,
// convergence) must leave the cluster broken past heal, or settling would
// find nothing to judge VIOLATED. Release removes what Heal left: the
// engine calls it once the final verdicts are in, and the heal ledger keeps
// the fault's entry until Release succeeds, so the next start and
// `faultline heal` release it too. Like Heal it must be idempotent.
type Lingering interface {
	Fault
	Release(ctx context.Context, l lab.Lab) error
}

// HealAndRelease heals f and, when it lingers, releases it too: what
// undoing a fault completely means outside a run.
func HealAndRelease(ctx context.Context, l lab.Lab, f Fault) error {
	if err := f.Heal(ctx, l); err != nil {
		return err
	}
	if lf, ok := f.(Lingering); ok {
		if err := lf.Release(ctx, l); err != nil {
			return fmt.Errorf("healed, but releasing what it left: %w", err)
		}
	}
	return nil
}

// Decoder builds a fault of one kind from its parameters.
type Decoder func(params json.RawMessage) (Fault, error)

var (
	registryMu sync.Mutex
	registry   = map[string]Decoder{}
)

// Register makes a fault kind decodable. Fault packages call it from init.
func Register(kind string, decode Decoder) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if kind == "" || decode == nil {
		panic("fault: Register needs a kind and a decoder")
	}
	if _, dup := registry[kind]; dup {
		panic("fault: kind registered twice: " + kind)
	}
	registry[kind] = decode
}

// Decode turns a kind and its parameters back into a Fault.
func Decode(kind string, params json.RawMessage) (Fault, error) {
	registryMu.Lock()
	d, ok := registry[kind]
	var kinds []string
	for k := range registry {
		kinds = append(kinds, k)
	}
	registryMu.Unlock()
	if !ok {
		sort.Strings(kinds)
		return nil, fmt.Errorf("fault kind %q is not known to this program (known: %v)", kind, kinds)
	}
	f, err := d(params)
	if err != nil {
		return nil, fmt.Errorf("decoding %s fault parameters %s: %w", kind, params, err)
	}
	if f.Kind() != kind {
		return nil, fmt.Errorf("decoding %s fault: decoder returned a %s fault", kind, f.Kind())
	}
	return f, nil
}

// Kinds lists every registered kind, sorted: what this program can heal
// from a heal ledger.
func Kinds() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	kinds := make([]string, 0, len(registry))
	for k := range registry {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// Describe renders a fault as "kind {params}" for messages.
func Describe(f Fault) string {
	return fmt.Sprintf("%s %s", f.Kind(), f.Params())
}
