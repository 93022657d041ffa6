package ssh_test

import (
	"testing"

	"github.com/faultline/faultline/lab/internal/sshdtest"
	"github.com/faultline/faultline/lab/ssh"
)

// BenchmarkRun is one command's round trip on an open connection (a new
// session each time, as every Run opens one).
func BenchmarkRun(b *testing.B) {
	f := newFixture(b, sshdtest.Config{})
	h := f.newHost(b)
	ctx := testContext(b)
	if _, err := h.Run(ctx, "true"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := h.Run(ctx, "true"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunParallel is many callers sharing one host's connection.
func BenchmarkRunParallel(b *testing.B) {
	f := newFixture(b, sshdtest.Config{})
	h := f.newHost(b)
	ctx := testContext(b)
	if _, err := h.Run(ctx, "true"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := h.Run(ctx, "true"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDialAndRun is what a redial after a host comes back costs:
// TCP, handshake, host key check, authentication, one command.
func BenchmarkDialAndRun(b *testing.B) {
	f := newFixture(b, sshdtest.Config{Extra: []string{"MaxStartups 100"}})
	o := mustOptions(b, f)
	ctx := testContext(b)
	b.ResetTimer()
	for b.Loop() {
		c, err := ssh.Dial(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Run(ctx, "true"); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
