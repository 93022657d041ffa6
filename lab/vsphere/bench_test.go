package vsphere

import (
	"context"
	"testing"
	"time"
)

// BenchmarkResetSimulatedFleet measures one Reset of the 11-VM fleet
// against the in-process simulator: the lab's own cost (vCenter round
// trips, checks, waits' first polls), not a real vCenter's task times.
func BenchmarkResetSimulatedFleet(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	f := newSimFleet(b)
	l, _, _ := f.openSim(ctx, f.config())
	if err := l.ColdSnapshot(ctx, false); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := l.Reset(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
