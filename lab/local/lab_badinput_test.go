//go:build lab

package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/lab/local/internal/layout"
)

// TestUpRefusesATakenAddressPlanAndTouchesNothing: a second lab with the
// address plan of one that is up is refused with an error naming the
// network, and leaves no namespace, link or state behind; reset of a lab
// that is not up says so.
func TestUpRefusesATakenAddressPlanAndTouchesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testConfig(t, "pair")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	l.bareHosts = true
	t.Cleanup(func() {
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	if err := l.provisionHosts(ctx); err != nil {
		t.Fatal(err)
	}

	twin := testConfig(t, "pair")
	twin.Name = "pairtwin"
	// A short state dir, so that what refuses the up is the taken
	// network and not the length of the lab's socket paths under a
	// test's long temporary directory.
	short, err := os.MkdirTemp("/tmp", "fl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	twin.StateDir = filepath.Join(short, "twin")
	l2, err := New(twin)
	if err != nil {
		t.Fatal(err)
	}
	err = l2.Up(ctx)
	if err == nil || !strings.Contains(err.Error(), c.Network.Management) {
		t.Fatalf("up of a lab whose network is taken: %v", err)
	}
	if _, serr := os.Stat(twin.StateDir); serr == nil {
		t.Errorf("the refused up wrote its state dir")
	}
	if left := leftovers(t, twin, nil); len(left) > 0 {
		t.Errorf("the refused up left:\n%s", strings.Join(left, "\n"))
	}
	if err := l2.Reset(ctx); err == nil || !strings.Contains(err.Error(), "is it up") {
		t.Errorf("reset of a lab that is not up: %v", err)
	}

	// The same lab from another state dir: its bridge is the live lab's,
	// and building over it would take the live lab's hosts.
	same := testConfig(t, "pair")
	same.StateDir = filepath.Join(short, "same")
	l3, err := New(same)
	if err != nil {
		t.Fatal(err)
	}
	err = l3.Up(ctx)
	if err == nil || !strings.Contains(err.Error(), "from another state dir is up") {
		t.Fatalf("up of a lab already up from another state dir: %v", err)
	}
	if _, serr := os.Stat(same.StateDir); serr == nil {
		t.Errorf("the refused up wrote its state dir")
	}
	if _, serr := os.Stat(layout.NetnsPath(layout.NetnsName(c.Name, c.Hosts[0].Name))); serr != nil {
		t.Errorf("the refused up touched the live lab's host %s: %v", c.Hosts[0].Name, serr)
	}
}
