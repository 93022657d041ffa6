package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/state"
)

// lab11 and lab11b, as shipped, can be up at once: no name, network or
// kernel object in common.
func TestLab11AndLab11bCoexist(t *testing.T) {
	a, b := loadTopology(t, "lab11"), loadTopology(t, "lab11b")
	if problems := coexist(a, b); len(problems) > 0 {
		t.Errorf("lab11 and lab11b cannot be up at once: %v", problems)
	}
	if err := lab.CheckCoexist(a, b); err != nil {
		t.Errorf("CheckCoexist: %v", err)
	}
	// lab11b is lab11's shape: the same hosts with the same roles.
	if len(a.Hosts) != len(b.Hosts) {
		t.Fatalf("lab11 has %d hosts, lab11b %d", len(a.Hosts), len(b.Hosts))
	}
	for i := range a.Hosts {
		if a.Hosts[i].Name != b.Hosts[i].Name || strings.Join(roleNames(a.Hosts[i].Roles), ",") != strings.Join(roleNames(b.Hosts[i].Roles), ",") {
			t.Errorf("host %d: lab11 %s %v, lab11b %s %v", i, a.Hosts[i].Name, a.Hosts[i].Roles, b.Hosts[i].Name, b.Hosts[i].Roles)
		}
	}
	if !a.Kubernetes.Equal(b.Kubernetes) {
		t.Errorf("lab11 runs %+v, lab11b %+v: a pool's labs run one profile", a.Kubernetes, b.Kubernetes)
	}
}

func roleNames(rs []lab.Role) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// A copy of lab11 under another name but on lab11's networks is refused
// beside lab11, naming each overlapping pair of fields; so is a second
// lab11 (one name, one state dir).
func TestCoexistRefusesSharedNetworksAndNames(t *testing.T) {
	a := loadTopology(t, "lab11")
	copyOf := loadTopology(t, "lab11")
	copyOf.Name, copyOf.StateDir = "lab11copy", "/var/lib/faultline/lab11copy"
	err := lab.CheckCoexist(a, copyOf)
	if err == nil {
		t.Fatal("lab11 and a copy on its networks coexist")
	}
	for _, want := range []string{
		"labs lab11 and lab11copy cannot be up at once",
		"lab11's network.management 10.231.11.0/24 overlaps lab11copy's network.management 10.231.11.0/24",
		"lab11's network.pods 10.240.0.0/16 overlaps lab11copy's network.pods 10.240.0.0/16",
		"lab11's network.services 10.250.11.0/24 overlaps lab11copy's network.services 10.250.11.0/24",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// A range inside another overlaps too, across fields.
	wide := loadTopology(t, "lab11b")
	wide.Network.Pods = "10.0.0.0/8"
	if err := lab.CheckCoexist(a, wide); err == nil || !strings.Contains(err.Error(), "lab11b's network.pods 10.0.0.0/8") ||
		!strings.Contains(err.Error(), "lab11's network.management 10.231.11.0/24 overlaps") {
		t.Errorf("a pod range holding lab11's networks: %v", err)
	}

	twice := loadTopology(t, "lab11")
	problems := coexist(a, twice)
	joined := ""
	for _, p := range problems {
		joined += p.Error() + "\n"
	}
	for _, want := range []string{"both are named lab11", "both keep their state (and heal ledger) in /var/lib/faultline/lab11"} {
		if !strings.Contains(joined, want) {
			t.Errorf("lab11 twice: lacks %q:\n%s", want, joined)
		}
	}
}

// Lab and host names are DNS labels, so "a" with host "b-c" and "a-b"
// with host "c" would name one namespace and one cgroup alike: the check
// finds it even though their networks are apart.
func TestCoexistFindsKernelNamesTwoLabsWouldShare(t *testing.T) {
	a := loadTopology(t, "pair")
	a.Name, a.StateDir = "lab", "/var/lib/faultline/lab"
	a.Hosts[1].Name = "x-worker"
	b := loadTopology(t, "lab11b")
	b.Name, b.StateDir = "lab-x", "/var/lib/faultline/lab-x"
	b.Hosts[8].Name = "worker"
	problems := coexist(a, b)
	joined := ""
	for _, p := range problems {
		joined += p.Error() + "\n"
	}
	for _, want := range []string{
		"network namespace fl-lab-x-worker would be both host x-worker of lab lab and host worker of lab lab-x",
		"cgroup /fl-lab-x-worker would be both",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("lacks %q:\n%s", want, joined)
		}
	}
	if len(problems) != 2 {
		t.Errorf("want the namespace and the cgroup, got %d problems:\n%s", len(problems), joined)
	}
}

// Up refuses, before it touches anything, a lab that could not be up
// beside one that is (its record in a state dir under the state root).
func TestUpCheckRefusesALabBesideAnOverlappingOne(t *testing.T) {
	root := t.TempDir()
	t.Setenv(lab.EnvStateDir, root)
	up := loadTopology(t, "lab11")
	up.StateDir = filepath.Join(root, "lab11")
	if err := os.MkdirAll(up.StateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := state.Save(up.StateDir, &state.Record{Config: up}); err != nil {
		t.Fatal(err)
	}
	next := loadTopology(t, "lab11")
	next.Name, next.StateDir = "lab11copy", filepath.Join(root, "lab11copy")
	err := checkCoexistsWithUp(next)
	if err == nil || !strings.Contains(err.Error(), "lab lab11 is up (state dir "+up.StateDir+")") || !strings.Contains(err.Error(), "overlaps") {
		t.Errorf("beside an up lab11 on its networks: %v", err)
	}
	ok := loadTopology(t, "lab11b")
	ok.StateDir = filepath.Join(root, "lab11b")
	if err := checkCoexistsWithUp(ok); err != nil {
		t.Errorf("lab11b beside lab11: %v", err)
	}
	// The lab itself, up already, is not its own neighbour.
	if err := checkCoexistsWithUp(up); err != nil {
		t.Errorf("lab11 beside itself: %v", err)
	}
}
