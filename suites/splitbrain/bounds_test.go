package splitbrain

import (
	"testing"
	"time"

	"github.com/faultline/faultline/lab/timers"
)

// The suite's bounds for both profiles, written out as they were when it
// took them from paper 1's suite: owning them changes no wait and no
// tick.
func TestBoundsOfBothProfilesAreUnchanged(t *testing.T) {
	for name, node := range map[string]time.Duration{
		timers.Fast:               66 * time.Second,
		timers.KubernetesDefaults: 450 * time.Second,
	} {
		p, err := timers.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		b := BoundsFor(p.Timers())
		if b.NodeWindow != node {
			t.Errorf("%s: node window %s, was %s", name, b.NodeWindow, node)
		}
		if b.Profile != name {
			t.Errorf("%s: bounds say profile %q", name, b.Profile)
		}
		// The wait covers the event it waits for: the node not Ready, or
		// tainted unreachable, a grace period and a monitor pass after
		// the last status.
		if notice := p.NodeMonitorGracePeriod + p.NodeMonitorPeriod; b.NodeWindow <= notice {
			t.Errorf("%s: node window %s within the node controller's notice %s", name, b.NodeWindow, notice)
		}
	}
	if SampleEvery != time.Second {
		t.Errorf("sampling interval %s, was 1s", SampleEvery)
	}
}
