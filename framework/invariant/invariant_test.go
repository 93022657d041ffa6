package invariant

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// noneTrue is VIOLATED when any source matching "flag/*" answers true.
type noneTrue struct{ says verdict.Verdict }

func (noneTrue) Name() string         { return "none-true" }
func (noneTrue) Phase() verdict.Phase { return verdict.Safety }
func (noneTrue) Reads() []Reading     { return []Reading{{Sources: "flag/*", Question: "set"}} }
func (n noneTrue) Judge(in Input) verdict.Judgement {
	if n.says != "" {
		return verdict.Judgement{Verdict: n.says, Reason: "forced"}
	}
	for _, s := range in.Snapshots {
		for _, src := range s.Sources() {
			if !strings.HasPrefix(string(src), "flag/") {
				continue
			}
			var set bool
			if s.Get(src, "set").Decode(&set) == nil && set {
				return verdict.Judgement{Verdict: verdict.Violated, Reason: string(src) + " is set", Sources: []string{string(src)}, At: s.Taken}
			}
		}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: "nothing set"}
}

func snap(t0 time.Time, answers map[evidence.Source]evidence.Answer) evidence.Snapshot {
	s := evidence.NewSnapshot(t0)
	for src, a := range answers {
		s.Set(src, "set", a)
	}
	return s
}

func TestJudgeHoldsInvariantsToTheEvidence(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	yes, _ := evidence.ValueAnswer(true, t0, "")
	no, _ := evidence.ValueAnswer(false, t0, "")
	readable := Input{Moment: Window, Snapshots: []evidence.Snapshot{snap(t0, map[evidence.Source]evidence.Answer{"flag/a": no, "other/x": yes})}}
	unreadable := Input{Moment: Window, Snapshots: []evidence.Snapshot{snap(t0, map[evidence.Source]evidence.Answer{"flag/a": evidence.UnreadableAnswer("timeout", t0), "other/x": yes})}}

	j := Judge(noneTrue{}, readable)
	if j.Verdict != verdict.Preserved || j.Invariant != "none-true" || j.Phase != verdict.Safety {
		t.Errorf("readable, nothing set: %+v", j)
	}
	if !reflect.DeepEqual(j.Sources, []string{"flag/a"}) {
		t.Errorf("sources not filled from the evidence read: %v", j.Sources)
	}
	// other/x is true but is not what the invariant reads; flag/a is unreadable.
	j = Judge(noneTrue{}, unreadable)
	if j.Verdict != verdict.InsufficientData || !strings.Contains(j.Reason, "no source gave a readable answer") {
		t.Errorf("PRESERVED over unreadable evidence must become INSUFFICIENT_DATA: %+v", j)
	}
	j = Judge(noneTrue{says: verdict.Violated}, unreadable)
	if j.Verdict != verdict.InsufficientData {
		t.Errorf("VIOLATED over unreadable evidence must become INSUFFICIENT_DATA: %+v", j)
	}
	for _, v := range []verdict.Verdict{verdict.NotApplicable, verdict.DetectorInvalid, "MAYBE"} {
		j = Judge(noneTrue{says: v}, readable)
		if j.Verdict != verdict.InsufficientData || !strings.Contains(j.Reason, string(v)) {
			t.Errorf("an invariant returning %s: %+v", v, j)
		}
	}
	set := Input{Moment: Window, Snapshots: []evidence.Snapshot{snap(t0, map[evidence.Source]evidence.Answer{"flag/a": no}), snap(t0.Add(time.Second), map[evidence.Source]evidence.Answer{"flag/b": yes})}}
	j = Judge(noneTrue{}, set)
	if j.Verdict != verdict.Violated || !j.At.Equal(t0.Add(time.Second)) || !reflect.DeepEqual(j.Sources, []string{"flag/b"}) {
		t.Errorf("violation: %+v", j)
	}
	if from, to := set.Span(); !from.Equal(t0) || !to.Equal(t0.Add(time.Second)) {
		t.Errorf("span %v %v", from, to)
	}
}

func TestApplicabilityLookupAndValidate(t *testing.T) {
	tab := Table{
		{FaultClass: "clock-skew", Invariant: "single-copy", Reason: "runtimes are read over SSH, not through clocks"},
		{FaultClass: "partition", Invariant: "none-true", Reason: "flags live outside the network"},
	}
	if err := tab.Validate("single-copy", "none-true"); err != nil {
		t.Fatal(err)
	}
	if r, ok := tab.Lookup("partition", "none-true"); !ok || r != "flags live outside the network" {
		t.Errorf("lookup: %q %v", r, ok)
	}
	if _, ok := tab.Lookup("partition", "single-copy"); ok {
		t.Error("a pair not in the table must be applicable")
	}
	bad := Table{
		{FaultClass: "partition", Invariant: "none-true", Reason: "x"},
		{FaultClass: "partition", Invariant: "none-true", Reason: "y"},
		{FaultClass: "", Invariant: "a", Reason: "z"},
		{FaultClass: "b", Invariant: "c", Reason: ""},
		{FaultClass: "b", Invariant: "ghost", Reason: "r"},
	}
	err := bad.Validate("none-true", "a", "c")
	for _, want := range []string{"repeats row 0", "row 2: no fault class", "no reason", `unknown invariant "ghost"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validation error %v lacks %q", err, want)
		}
	}
}

func TestProjectApplicabilityTableIsValid(t *testing.T) {
	if err := Applicability.Validate(); err != nil {
		t.Fatal(err)
	}
}
