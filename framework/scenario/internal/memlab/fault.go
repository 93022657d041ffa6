package memlab

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// FlagKind is the memlab fault: it sets a flag in the lab's state.
const FlagKind = "memlab-flag"

// FlagClass is the memlab fault's class.
const FlagClass fault.Class = "memlab-flag"

// Flag sets Name while injected. With Hidden its probe never sees it, as
// with a fault whose effect cannot be observed. With FailInject its inject
// sets the flag and then fails, as a fault that took hold halfway. With
// FailHeal its heal always fails and leaves the flag set.
type Flag struct {
	Name       string `json:"name"`
	Hidden     bool   `json:"hidden,omitempty"`
	FailInject bool   `json:"failInject,omitempty"`
	FailHeal   bool   `json:"failHeal,omitempty"`
	// Unsupported makes inject refuse, touching nothing, as a fault the
	// lab cannot run does.
	Unsupported bool `json:"unsupported,omitempty"`
	// BlipAtHeal is a flag heal sets for BlipFor before it clears the
	// fault, as a component thawed or restarted at heal misbehaves for a
	// moment.
	BlipAtHeal string `json:"blipAtHeal,omitempty"`
	// AftershockAfterHeal is a flag that shows from AftershockDelay after
	// heal returns until AftershockDelay+AftershockFor after it, as damage
	// that appears once the fault is gone and passes by itself. The flag
	// AftershockAfterHeal+PendingSuffix shows from heal until the
	// aftershock has passed, so a convergence invariant can wait for it.
	AftershockAfterHeal string `json:"aftershockAfterHeal,omitempty"`
	// SeenOnce makes the probe see the effect only the first time it
	// looks, as a fault whose effect passes soon after inject.
	SeenOnce bool `json:"seenOnce,omitempty"`
}

// Timings of Flag's heal-time damage. The aftershock starts a while after
// heal returns so that no sample taken during heal can see it.
const (
	BlipFor         = 500 * time.Millisecond
	AftershockDelay = 150 * time.Millisecond
	AftershockFor   = 500 * time.Millisecond
	PendingSuffix   = "-pending"
)

func (f Flag) Kind() string       { return FlagKind }
func (f Flag) Class() fault.Class { return FlagClass }
func (f Flag) Params() json.RawMessage {
	b, _ := json.Marshal(f)
	return b
}

func asMemlab(l lab.Lab) (*Lab, error) {
	m, ok := l.(*Lab)
	if !ok {
		return nil, lab.Unsupported(l.Info().Kind, "memlab-flag fault", "only memlab has flags")
	}
	return m, nil
}

func (f Flag) Inject(ctx context.Context, l lab.Lab) error {
	m, err := asMemlab(l)
	if err != nil {
		return err
	}
	if f.Unsupported {
		return lab.Unsupported(l.Info().Kind, "flag "+f.Name, "this flag is engineered to be one the lab cannot set")
	}
	err = m.Update(func(s *State) {
		s.Flags[f.Name] = true
		if s.SetAt == nil {
			s.SetAt = map[string]time.Time{}
		}
		s.SetAt[f.Name] = time.Now()
		if s.Probes == nil {
			s.Probes = map[string]int{}
		}
		s.Probes[f.Name] = 0
		s.Log = append(s.Log, "inject "+f.Name)
	})
	if err == nil && f.FailInject {
		err = fmt.Errorf("flag %s set, then the inject broke off", f.Name)
	}
	return err
}

func (f Flag) Heal(ctx context.Context, l lab.Lab) error {
	m, err := asMemlab(l)
	if err != nil {
		return err
	}
	if f.FailHeal {
		return fmt.Errorf("flag %s cannot be cleared", f.Name)
	}
	if f.BlipAtHeal != "" {
		if err := m.Update(func(s *State) { s.Flags[f.BlipAtHeal] = true }); err != nil {
			return err
		}
		t := time.NewTimer(BlipFor)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return m.Update(func(s *State) {
		delete(s.Flags, f.Name)
		delete(s.SetAt, f.Name)
		if f.BlipAtHeal != "" {
			delete(s.Flags, f.BlipAtHeal)
		}
		if f.AftershockAfterHeal != "" {
			now := time.Now()
			if s.Lapsing == nil {
				s.Lapsing = map[string]Stretch{}
			}
			over := now.Add(AftershockDelay + AftershockFor)
			s.Lapsing[f.AftershockAfterHeal] = Stretch{From: now.Add(AftershockDelay), Until: over}
			s.Lapsing[f.AftershockAfterHeal+PendingSuffix] = Stretch{From: now, Until: over}
		}
		s.Log = append(s.Log, "heal "+f.Name)
	})
}

func (f Flag) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	m, err := asMemlab(l)
	if err != nil {
		return fault.Effect{}, err
	}
	var s State
	err = m.Update(func(st *State) {
		if st.Probes == nil {
			st.Probes = map[string]int{}
		}
		st.Probes[f.Name]++
		s = *st
	})
	if err != nil {
		return fault.Effect{}, err
	}
	if f.SeenOnce && s.Probes[f.Name] > 1 {
		return fault.Effect{Detail: fmt.Sprintf("flag %s is set, but its effect showed only to the first probe", f.Name)}, nil
	}
	if f.Hidden {
		return fault.Effect{Detail: fmt.Sprintf("flag %s cannot be seen from outside", f.Name)}, nil
	}
	if s.Flags[f.Name] {
		// The flag has held since its inject set it: the look attests
		// that stretch, as a probe that reads when a rule was installed
		// would, so a stalled look cadence leaves no gap it cannot vouch
		// for.
		e := fault.Effect{Observed: true, Detail: "flag " + f.Name + " is set"}
		if at, ok := s.SetAt[f.Name]; ok {
			e.Lasted = time.Since(at)
		}
		return e, nil
	}
	return fault.Effect{Detail: "flag " + f.Name + " is not set"}, nil
}

func init() {
	fault.Register(FlagKind, func(p json.RawMessage) (fault.Fault, error) {
		var f Flag
		if err := json.Unmarshal(p, &f); err != nil {
			return nil, err
		}
		if f.Name == "" {
			return nil, fmt.Errorf("memlab-flag needs a name")
		}
		return f, nil
	})
}

// LingeringFlagKind is the memlab fault whose flag outlives heal.
const LingeringFlagKind = "memlab-lingering-flag"

// LingeringFlag sets Name at inject; its heal leaves the flag set (and logs
// "heal <name>"), and only its release clears it ("release <name>"), as
// the positive control of an invariant judged after heal does.
type LingeringFlag struct {
	Name string `json:"name"`
}

func (f LingeringFlag) Kind() string       { return LingeringFlagKind }
func (f LingeringFlag) Class() fault.Class { return FlagClass }
func (f LingeringFlag) Params() json.RawMessage {
	b, _ := json.Marshal(f)
	return b
}

func (f LingeringFlag) Inject(ctx context.Context, l lab.Lab) error {
	return Flag{Name: f.Name}.Inject(ctx, l)
}

func (f LingeringFlag) Heal(ctx context.Context, l lab.Lab) error {
	m, err := asMemlab(l)
	if err != nil {
		return err
	}
	return m.Update(func(s *State) { s.Log = append(s.Log, "heal "+f.Name) })
}

func (f LingeringFlag) Release(ctx context.Context, l lab.Lab) error {
	m, err := asMemlab(l)
	if err != nil {
		return err
	}
	return m.Update(func(s *State) {
		delete(s.Flags, f.Name)
		delete(s.SetAt, f.Name)
		s.Log = append(s.Log, "release "+f.Name)
	})
}

func (f LingeringFlag) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	return Flag{Name: f.Name}.Probe(ctx, l)
}

func init() {
	fault.Register(LingeringFlagKind, func(p json.RawMessage) (fault.Fault, error) {
		var f LingeringFlag
		if err := json.Unmarshal(p, &f); err != nil {
			return nil, err
		}
		if f.Name == "" {
			return nil, fmt.Errorf("memlab-lingering-flag needs a name")
		}
		return f, nil
	})
}
