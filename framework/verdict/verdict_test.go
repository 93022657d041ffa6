package verdict

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWilsonKnownValues(t *testing.T) {
	// Reference values found independently of the closed form: by
	// bisection for the p at which the score statistic |p̂-p|/sqrt(p(1-p)/n)
	// equals z, which is what the Wilson interval inverts.
	cases := []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 10, 0.0, 0.2775328},
		{10, 10, 0.7224672, 1.0},
		{5, 10, 0.2365931, 0.7634069},
		{1, 20, 0.0088814, 0.2361312},
		{81, 263, 0.2552885, 0.3662096},
		{0, 1, 0.0, 0.7934507},
	}
	for _, c := range cases {
		lo, hi, ok := WilsonInterval(c.k, c.n, z95)
		if !ok {
			t.Fatalf("%d/%d: no interval", c.k, c.n)
		}
		if math.Abs(lo-c.lo) > 1e-6 || math.Abs(hi-c.hi) > 1e-6 {
			t.Errorf("%d/%d: got [%.7f, %.7f], want [%.7f, %.7f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
	if _, _, ok := WilsonInterval(0, 0, z95); ok {
		t.Error("0/0 must have no interval")
	}
	if _, _, ok := WilsonInterval(3, 2, z95); ok {
		t.Error("k > n must have no interval")
	}
}

func TestRateCountsOnlyPreservedAndViolated(t *testing.T) {
	var r Rate
	for _, v := range []Verdict{Preserved, Violated, Violated, InsufficientData, NotApplicable, DetectorInvalid, Preserved} {
		r.Add(v)
	}
	if r.N() != 4 || r.Violated != 2 {
		t.Fatalf("counted %d (violated %d), want 4 (2)", r.N(), r.Violated)
	}
	if got, _ := r.Value(); got != 0.5 {
		t.Errorf("rate %v, want 0.5", got)
	}
	if r.Other[InsufficientData] != 1 || r.Other[NotApplicable] != 1 || r.Other[DetectorInvalid] != 1 {
		t.Errorf("other counts %v", r.Other)
	}
	if !strings.HasPrefix(r.String(), "2/4 = 50.0% [") {
		t.Errorf("string %q", r.String())
	}
	var empty Rate
	if _, ok := empty.Value(); ok || !strings.Contains(empty.String(), "no counted") {
		t.Errorf("empty rate: %q", empty.String())
	}
}

func TestRunJSONRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	in := Run{
		RunID: "r1", Suite: "disagree", Scenario: "worker-power-off", Arm: "fault",
		Started: at, Ended: at.Add(time.Minute), RunVerdict: FaultIneffective, RunReason: "probe saw nothing",
		Judgements: []Judgement{{Invariant: "single-copy", Phase: Safety, Verdict: Violated, Reason: "two", Sources: []string{"cri/worker1"}, At: at}},
		Lab:        LabInfo{Name: "lab11", Kind: "local", TimerProfile: "fast"},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Run
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(out)
	if string(b) != string(b2) {
		t.Errorf("round trip changed the record:\n%s\n%s", b, b2)
	}
	if out.Counted() {
		t.Error("a FAULT_INEFFECTIVE run must not count")
	}
	if err := json.Unmarshal([]byte(`"MAYBE"`), new(Verdict)); err == nil {
		t.Error("an unknown verdict must not decode")
	}
	if _, err := json.Marshal(Verdict("")); err == nil {
		t.Error("an empty verdict must not encode")
	}
	if err := json.Unmarshal([]byte(`"FINE"`), new(RunVerdict)); err == nil {
		t.Error("an unknown run verdict must not decode")
	}
}

// A record written without a role takes it from its arm, controlOf and
// labels: an application control's fault arm by its label.
func TestRunRoleOfARecordWithoutOne(t *testing.T) {
	for name, c := range map[string]struct {
		r    Run
		want string
	}{
		"a fault arm":                {Run{Arm: "fault"}, RoleFinding},
		"a null arm":                 {Run{Arm: "null", Labels: []string{LabelApplicationControl}}, RoleNull},
		"a control by its controlOf": {Run{Arm: "fault", ControlOf: []string{"x"}}, RoleControl},
		"a control by its label":     {Run{Arm: "fault", Labels: []string{"control:x"}}, RoleControl},
		"an application control":     {Run{Arm: "fault", Labels: []string{"paper:p", LabelApplicationControl}}, RoleApplication},
		"a recorded role stands":     {Run{Arm: "fault", Role: RoleFinding, Labels: []string{LabelApplicationControl}}, RoleFinding},
	} {
		if got := c.r.RunRole(); got != c.want {
			t.Errorf("%s: role %q, want %q", name, got, c.want)
		}
	}
}

// A verdict's quantities travel in the record with their units.
func TestJudgementQuantitiesRoundTrip(t *testing.T) {
	j := Judgement{Invariant: "acknowledged-data-survives", Verdict: Violated, Quantities: map[string]Quantity{
		QuantityLost: {Value: 198, Unit: "appends", Per: []string{QuantityOverlap}}, QuantityOverlap: {Value: 19.5, Unit: "s"}}}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"quantities":{"lost":{"value":198,"unit":"appends","per":["overlap"]},"overlap":{"value":19.5,"unit":"s"}}`) {
		t.Errorf("%s", b)
	}
	var back Judgement
	if err := json.Unmarshal(b, &back); err != nil || back.Quantities[QuantityOverlap].Value != 19.5 || back.Quantities[QuantityLost].Per[0] != QuantityOverlap {
		t.Errorf("%+v %v", back, err)
	}
	if b, _ := json.Marshal(Judgement{Verdict: Preserved}); strings.Contains(string(b), "quantities") {
		t.Errorf("no quantities, no field: %s", b)
	}
}

// A control's violation kinds travel in the record; a record written
// before them reads as counting any kind. OtherKind says why a VIOLATED
// of another kind is no hit, and nothing for a hit.
func TestControlKindsRoundTripAndOtherKind(t *testing.T) {
	r := Run{Arm: "fault", RunVerdict: RunJudged, ControlOf: []string{"fencing-monotonic", "single-history"}, ControlKinds: map[string][]string{"fencing-monotonic": {"shared-token"}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"controlKinds":{"fencing-monotonic":["shared-token"]}`) {
		t.Errorf("%s", b)
	}
	var back Run
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.ControlKindsOf("fencing-monotonic"), []string{"shared-token"}) || back.ControlKindsOf("single-history") != nil {
		t.Errorf("%+v %v", back, err)
	}
	var old Run
	if err := json.Unmarshal([]byte(`{"arm":"fault","controlOf":["fencing-monotonic"],"runVerdict":"JUDGED"}`), &old); err != nil || old.ControlKinds != nil || KindsText(old.ControlKindsOf("fencing-monotonic")) != "any kind" {
		t.Errorf("a record without controlKinds: %+v %v", old, err)
	}
	if b, _ := json.Marshal(Run{RunVerdict: RunJudged}); strings.Contains(string(b), "controlKinds") {
		t.Errorf("a run naming no kinds writes them: %s", b)
	}
	kinds := []string{"shared-token"}
	for _, c := range []struct {
		j     Judgement
		kinds []string
		want  string
	}{
		{Judgement{Verdict: Violated, Violation: "shared-token"}, kinds, ""},
		{Judgement{Verdict: Violated, Violation: "token-went-down"}, nil, ""},
		{Judgement{Verdict: Violated, Violation: "token-went-down"}, kinds, "VIOLATED of kind token-went-down, not of the kind the control is built to break (shared-token)"},
		{Judgement{Verdict: Violated}, []string{"a", "b"}, "VIOLATED naming no kind, not of the kind the control is built to break (a or b)"},
	} {
		if got := OtherKind(c.j, c.kinds); got != c.want {
			t.Errorf("%q of %v: %q, want %q", c.j.Violation, c.kinds, got, c.want)
		}
	}
	if got := KindsText(kinds); got != "of kind shared-token" {
		t.Errorf("kinds text %q", got)
	}
}
