package ledger

import (
	"path/filepath"
	"testing"
)

// BenchmarkRecordDone is the ledger's cost per scenario run: one synced
// entry written before inject and one synced removal after heal.
func BenchmarkRecordDone(b *testing.B) {
	dir := b.TempDir()
	led, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	f := markerFault{Path: filepath.Join(dir, "m")}
	for b.Loop() {
		a, err := led.Record(f, "lab-a", "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Done(); err != nil {
			b.Fatal(err)
		}
	}
}
