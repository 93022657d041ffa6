package invariant

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/verdict"
)

// wantExercised checks that a PRESERVED or VIOLATED judgement says whether
// it was exercised, as want, and that its Exercise mentions every word.
func wantExercised(t *testing.T, j verdict.Judgement, want bool, words ...string) {
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
