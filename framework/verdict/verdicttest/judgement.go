package verdicttest

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/verdict"
)

// WantVerdict fails t unless j gave want, and checks that its reason
// mentions every word given.
func WantVerdict(t *testing.T, j verdict.Judgement, want verdict.Verdict, words ...string) {
	t.Helper()
	if j.Verdict != want {
		t.Fatalf("%s: got %s, want %s: %s", j.Invariant, j.Verdict, want, j.Reason)
	}
	for _, w := range words {
		if !strings.Contains(j.Reason, w) {
			t.Errorf("%s: reason lacks %q: %s", j.Invariant, w, j.Reason)
		}
	}
}

// NotVerdict fails t when j gave bad: for evidence that supports more
// than one verdict but never bad.
func NotVerdict(t *testing.T, j verdict.Judgement, bad verdict.Verdict) {
	t.Helper()
	if j.Verdict == bad {
		t.Errorf("%s: got %s, which the evidence does not support: %s", j.Invariant, j.Verdict, j.Reason)
	}
}

// WantExercised checks that a PRESERVED or VIOLATED judgement says whether
// it was exercised, as want, and that its Exercise mentions every word.
func WantExercised(t *testing.T, j verdict.Judgement, want bool, words ...string) {
	t.Helper()
	if j.Exercised == nil {
		t.Fatalf("%s %s does not say whether it was exercised (exercise %q; reason %s)", j.Invariant, j.Verdict, j.Exercise, j.Reason)
	}
	if *j.Exercised != want {
		t.Errorf("%s %s: exercised %v, want %v (exercise %q)", j.Invariant, j.Verdict, *j.Exercised, want, j.Exercise)
	}
	for _, w := range words {
		if !strings.Contains(j.Exercise, w) {
			t.Errorf("%s: exercise lacks %q: %q", j.Invariant, w, j.Exercise)
		}
	}
}
