package fault

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
)

// counting is a fault that only counts what was done to it.
type counting struct {
	P        countingParams
	injected *int
	healed   *int
	probed   *int
}

type countingParams struct {
	Target string `json:"target"`
}

func (c counting) Kind() string { return "counting" }
func (c counting) Class() Class { return "test-class" }
func (c counting) Params() json.RawMessage {
	b, _ := json.Marshal(c.P)
	return b
}
func (c counting) Inject(context.Context, lab.Lab) error { *c.injected++; return nil }
func (c counting) Heal(context.Context, lab.Lab) error   { *c.healed++; return nil }
func (c counting) Probe(context.Context, lab.Lab) (Effect, error) {
	*c.probed++
	return Effect{Observed: *c.injected > 0, Detail: "looked at " + c.P.Target}, nil
}

var counts struct{ injected, healed, probed int }

func newCounting(target string) counting {
	return counting{P: countingParams{Target: target}, injected: &counts.injected, healed: &counts.healed, probed: &counts.probed}
}

func init() {
	Register("counting", func(p json.RawMessage) (Fault, error) {
		var cp countingParams
		if err := json.Unmarshal(p, &cp); err != nil {
			return nil, err
		}
		return newCounting(cp.Target), nil
	})
}

func TestDecodeRoundTrip(t *testing.T) {
	f := newCounting("worker1")
	g, err := Decode(f.Kind(), f.Params())
	if err != nil {
		t.Fatal(err)
	}
	if g.Kind() != "counting" || !bytes.Equal(g.Params(), f.Params()) {
		t.Errorf("decoded %s, want %s", Describe(g), Describe(f))
	}
	if _, err := Decode("no-such-fault", nil); err == nil || !strings.Contains(err.Error(), "no-such-fault") || !strings.Contains(err.Error(), "counting") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := Decode("counting", json.RawMessage(`{"target":`)); err == nil || !strings.Contains(err.Error(), "counting") {
		t.Errorf("bad params: %v", err)
	}
}

func TestNullInjectsNothingAndProbesAsItsFault(t *testing.T) {
	counts = struct{ injected, healed, probed int }{}
	real := newCounting("worker1")
	n := Null(real)
	ctx := context.Background()
	if err := n.Inject(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.Heal(ctx, nil); err != nil {
		t.Fatal(err)
	}
	e, err := n.Probe(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if counts.injected != 0 || counts.healed != 0 {
		t.Errorf("null arm touched the lab: %+v", counts)
	}
	if counts.probed != 1 || e.Observed || e.Detail != "looked at worker1" {
		t.Errorf("null arm did not probe as its fault does: %+v, %+v", counts, e)
	}
	if n.Kind() != NullKind || n.Class() != real.Class() {
		t.Errorf("null arm is %s of class %s", n.Kind(), n.Class())
	}
	if s, ok := StandsFor(n); !ok || s.Kind() != "counting" {
		t.Errorf("StandsFor: %v %v", s, ok)
	}
	if _, ok := StandsFor(real); ok {
		t.Error("a real fault is not a null arm")
	}

	// A ledger entry of a null arm decodes into a null arm again: healing it
	// on replay must not heal (touch) the real fault's target.
	back, err := Decode(n.Kind(), n.Params())
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := StandsFor(back); !ok || !bytes.Equal(s.Params(), real.Params()) {
		t.Fatalf("decoded null arm %s", Describe(back))
	}
	if err := back.Heal(ctx, nil); err != nil || counts.healed != 0 {
		t.Errorf("healing a decoded null arm healed the real fault (%d) or failed: %v", counts.healed, err)
	}
}

// momentary declares a share of its own.
type momentary struct {
	counting
	share float64
}

func (m momentary) EffectShare() float64 { return m.share }

func TestEffectShareOfComesFromTheFaultOrTheDefault(t *testing.T) {
	plain := newCounting("w1")
	for name, c := range map[string]struct {
		f    Fault
		want float64
	}{
		"a fault that declares nothing":         {plain, DefaultEffectShare},
		"a fault that declares its share":       {momentary{plain, 0.2}, 0.2},
		"a null arm, through its fault":         {Null(momentary{plain, 0.2}), 0.2},
		"a declared share out of (0, 1]":        {momentary{plain, 1.5}, DefaultEffectShare},
		"a declared share of nothing":           {momentary{plain, 0}, DefaultEffectShare},
		"the null arm of a fault with no share": {Null(plain), DefaultEffectShare},
	} {
		if got := EffectShareOf(c.f); got != c.want {
			t.Errorf("%s: share %v, want %v", name, got, c.want)
		}
	}
}

func TestNullWithDecoyInjectsTheDecoyAndProbesAsItsFault(t *testing.T) {
	counts = struct{ injected, healed, probed int }{}
	real, decoy := newCounting("worker1"), newCounting("decoy")
	n := NullWithDecoy(real, decoy)
	ctx := context.Background()
	if err := n.Inject(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.Heal(ctx, nil); err != nil {
		t.Fatal(err)
	}
	e, err := n.Probe(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if counts.injected != 1 || counts.healed != 1 {
		t.Errorf("the decoy was not injected and healed once each: %+v", counts)
	}
	if e.Detail != "looked at worker1" {
		t.Errorf("the null arm probed the decoy, not its fault: %+v", e)
	}
	if d, ok := DecoyOf(n); !ok || !bytes.Equal(d.Params(), decoy.Params()) {
		t.Errorf("DecoyOf: %v %v", d, ok)
	}
	if _, ok := DecoyOf(Null(real)); ok {
		t.Error("a null arm without a decoy says it has one")
	}

	// The ledger entry keeps the decoy: healing it on replay heals the
	// decoy, never the real fault.
	back, err := Decode(n.Kind(), n.Params())
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := DecoyOf(back); !ok || !bytes.Equal(d.Params(), decoy.Params()) {
		t.Fatalf("decoded null arm lost its decoy: %s", Describe(back))
	}
	if err := back.Heal(ctx, nil); err != nil || counts.healed != 2 {
		t.Errorf("healing the decoded null arm: %d heals, %v", counts.healed, err)
	}

	if err := NullWithDecoy(real, Null(decoy)).Inject(ctx, nil); err == nil || !strings.Contains(err.Error(), "decoy is itself a null fault") {
		t.Errorf("a null decoy: %v", err)
	}
}

func TestKindsListsEveryRegisteredKindSorted(t *testing.T) {
	kinds := Kinds()
	if !sort.StringsAreSorted(kinds) {
		t.Errorf("kinds %v are not sorted", kinds)
	}
	for _, want := range []string{"counting", NullKind} {
		if !slices.Contains(kinds, want) {
			t.Errorf("kinds %v lack %s", kinds, want)
		}
	}
}

// A heal's account keeps what was noted, prefixed by Within, and a context
// without one notes nothing.
func TestHealAccountNotesWithPrefixes(t *testing.T) {
	Found(context.Background(), "nobody keeps this")
	if Accounting(context.Background()) {
		t.Error("a bare context has no account")
	}
	ctx, account := WithHealAccount(context.Background())
	Found(ctx, "chain %s on %s", "FAULTLINE-ab12", "cp1")
	part := Within(Within(ctx, "part 2 (freeze): "), "decoy (kill): ")
	Removed(part, "kubelet started")
	got := account()
	if !slices.Equal(got.Found, []string{"chain FAULTLINE-ab12 on cp1"}) || !slices.Equal(got.Removed, []string{"part 2 (freeze): decoy (kill): kubelet started"}) {
		t.Errorf("account %+v", got)
	}
	if got.Empty() || !(HealAccount{}).Empty() {
		t.Error("Empty")
	}
}

// A composite's classes are its own and every part's; a null arm injects
// nothing, or its decoy.
func TestClassesOfWhatIsInjected(t *testing.T) {
	a := counting{}
	if got := Classes(a); len(got) != 1 || got[0] != "test-class" {
		t.Errorf("one fault: %v", got)
	}
	if got := Classes(Null(a)); len(got) != 0 {
		t.Errorf("a null arm: %v", got)
	}
	if got := Classes(NullWithDecoy(a, skewed{a})); len(got) != 1 || got[0] != "clock-skew" {
		t.Errorf("a null arm with a decoy: %v", got)
	}
	got := Classes(composite{counting: a, parts: []Fault{skewed{a}, a}})
	if len(got) != 2 || got[0] != "test-class" || got[1] != "clock-skew" {
		t.Errorf("a composite whose first part skews a clock: %v", got)
	}
}

type composite struct {
	counting
	parts []Fault
}

func (c composite) Parts() []Fault { return c.parts }

type skewed struct{ counting }

func (skewed) Class() Class { return "clock-skew" }
