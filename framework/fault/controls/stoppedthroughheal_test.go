package controls

import (
	"bytes"
	"context"
	"testing"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// The service stays stopped through heal and is started by Release; the
// ledger's entry decodes to the same stop, so another process releases
// the very service that was stopped.
func TestStoppedThroughHealOutlastsHealAndReleaseStartsIt(t *testing.T) {
	ctx := context.Background()
	l := newFakeLab()
	f := StoppedThroughHeal("worker1", lab.ServiceKubeProxy)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.host("worker1").services[lab.ServiceKubeProxy]
	}
	if eff, err := f.Probe(ctx, l); err != nil || !eff.Observed {
		t.Fatalf("stopped, the probe saw %+v, %v", eff, err)
	}
	if err := f.Heal(ctx, l); err != nil || state() != "stopped" {
		t.Fatalf("after heal kube-proxy is %s (%v), want still stopped", state(), err)
	}
	got, err := fault.Decode(f.Kind(), f.Params())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Params(), f.Params()) {
		t.Errorf("decoded %s, want %s", got.Params(), f.Params())
	}
	lf, ok := got.(fault.Lingering)
	if !ok {
		t.Fatalf("decoded %T does not linger", got)
	}
	if err := lf.Release(ctx, l); err != nil || state() != "running" {
		t.Fatalf("after release kube-proxy is %s (%v), want running", state(), err)
	}
	if _, err := fault.Decode(KindStoppedThroughHeal, []byte(`{"kind":"freeze","params":{}}`)); err == nil {
		t.Error("a stopped-through-heal entry wrapping another kind decoded")
	}
}
