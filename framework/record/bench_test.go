package record

import (
	"testing"

	"github.com/faultline/faultline/framework/verdict"
)

// BenchmarkAppendRun is the cost of recording one finished run: a locked,
// synced append to verdicts.jsonl.
func BenchmarkAppendRun(b *testing.B) {
	f, err := NewFolder(b.TempDir(), "bench", t0)
	if err != nil {
		b.Fatal(err)
	}
	r := run("a", verdict.RunJudged, j("x", verdict.Violated), j("y", verdict.Preserved), j("z", verdict.NotApplicable))
	for b.Loop() {
		if err := f.AppendRun(r); err != nil {
			b.Fatal(err)
		}
	}
}
