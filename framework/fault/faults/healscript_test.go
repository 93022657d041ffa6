package faults

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeIptables is bash that stands in for iptables, iptables-save and nft
// over files in $S: a chain is the file chain-<table>-<name> holding its
// rules, a jump the line "<hook> <chain>" in jumps-<table>.
const fakeIptables = `
iptables() {
	local t=filter op= c= hook= target=
	while [ $# -gt 0 ]; do
		case "$1" in
		-w|-n) ;;
		-t) t=$2; shift ;;
		-L|-S|-F|-X|-N) op=$1; c=$2; shift ;;
		-D) op=-D; hook=$2; shift ;;
		-j) target=$2; shift ;;
		esac
		shift
	done
	local f="$S/chain-$t-$c"
	case "$op" in
	-L) [ -e "$f" ] ;;
	-S) echo "-N $c"; sed "s/^/-A $c /" "$f" ;;
	-F) : > "$f" ;;
	-X) grep -q " $c\$" "$S/jumps-$t" 2>/dev/null && return 1; rm "$f" ;;
	-D) grep -qx "$hook $target" "$S/jumps-$t" 2>/dev/null || return 1
	    awk -v l="$hook $target" '!d && $0 == l { d = 1; next } 1' "$S/jumps-$t" > "$S/j" && mv "$S/j" "$S/jumps-$t" ;;
	esac
}
iptables-save() { printf '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n'; }
nft() { echo "$*" >> "$S/nft"; }
`

// runWithFakeIptables runs script in bash over the fake iptables in dir.
func runWithFakeIptables(t *testing.T, dir, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "-c", fakeIptables+script)
	cmd.Env = append(os.Environ(), "S="+dir)
	out, err := cmd.Output()
	return string(out), err
}

// The chain's removal says what it found (the rule count, every jump) and
// what it removed, leaves nothing of the chain, and a second run finds
// and removes nothing.
func TestRemoveChainScriptSaysWhatItFoundAndRemoved(t *testing.T) {
	dir := t.TempDir()
	chain := chainName("ab12")
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("chain-filter-"+chain, "-s 10.0.0.1 -j DROP\n-d 10.0.0.1 -j DROP\n")
	write("jumps-filter", "INPUT KUBE-FIREWALL\nINPUT "+chain+"\nOUTPUT "+chain+"\n")
	script := removeChainScript(chain, "10.0.0.2")
	out, err := runWithFakeIptables(t, dir, script)
	if err != nil {
		t.Fatalf("heal: %v: %s", err, out)
	}
	found, removed, rest := splitHealOutput(out)
	if want := []string{"iptables filter chain " + chain + " (2 rules), jumped to from: INPUT OUTPUT"}; !reflect.DeepEqual(found, want) {
		t.Errorf("found %q, want %q", found, want)
	}
	if want := []string{"iptables filter chain " + chain + " and its jumps"}; !reflect.DeepEqual(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	if strings.TrimSpace(rest) != "" {
		t.Errorf("printed besides: %q", rest)
	}
	if _, err := os.Stat(filepath.Join(dir, "chain-filter-"+chain)); !os.IsNotExist(err) {
		t.Errorf("the chain is still there (%v)", err)
	}
	if jumps, _ := os.ReadFile(filepath.Join(dir, "jumps-filter")); string(jumps) != "INPUT KUBE-FIREWALL\n" {
		t.Errorf("jumps left: %q, want only the other chain's", jumps)
	}
	out, err = runWithFakeIptables(t, dir, script)
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("a second heal: %v, printed %q; want nothing", err, out)
	}
}

// The nat chain of the etcd fork is removed the same way, from OUTPUT.
func TestRemoveNatChainScriptSaysWhatItFoundAndRemoved(t *testing.T) {
	dir := t.TempDir()
	chain := chainName("cd34")
	if err := os.WriteFile(filepath.Join(dir, "chain-nat-"+chain), []byte("-p tcp -d 10.0.0.11 --dport 2379 -j DNAT --to-destination 10.0.0.22:23790\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "jumps-nat"), []byte("OUTPUT "+chain+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runWithFakeIptables(t, dir, removeNatChainScript(chain))
	if err != nil {
		t.Fatalf("heal: %v: %s", err, out)
	}
	found, removed, _ := splitHealOutput(out)
	if want := []string{"iptables nat chain " + chain + " (1 rules), jumped to from: OUTPUT"}; !reflect.DeepEqual(found, want) {
		t.Errorf("found %q, want %q", found, want)
	}
	if len(removed) != 1 || !strings.Contains(removed[0], "nat chain "+chain) {
		t.Errorf("removed %q", removed)
	}
	if strings.Contains(removeNatChainScript(chain), "FORWARD") {
		t.Error("the nat table has no FORWARD chain to look in")
	}
}

// startFakeFork starts a process whose command line holds the fork's
// data-dir argument as one word, as the fork's etcd does, and returns it.
func startFakeFork(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", `trap 'exit 0' TERM; while :; do sleep 0.05; done`, "fork", "--data-dir="+dir+"/data")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func gone(cmd *exec.Cmd) bool {
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// The fork's stop finds its etcd by the pid file and, when the start was
// cut short before the pid file was written, by its command line; it
// stops it, removes the directory and says so. A second run finds nothing.
func TestStopScriptStopsTheForkWithOrWithoutItsPidFile(t *testing.T) {
	for _, pidFile := range []bool{true, false} {
		t.Run("pid file "+strconv.FormatBool(pidFile), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ab12")
			if err := os.MkdirAll(dir+"/data", 0o755); err != nil {
				t.Fatal(err)
			}
			fork := startFakeFork(t, dir)
			if pidFile {
				if err := os.WriteFile(dir+"/pid", []byte(strconv.Itoa(fork.Process.Pid)+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			other := startFakeFork(t, dir+"x") // another fork's: left alone
			out, err := exec.Command("bash", "-c", stopScript(dir)).Output()
			if err != nil {
				t.Fatalf("stop: %v: %s", err, out)
			}
			if !gone(fork) {
				t.Fatal("the fork still runs")
			}
			if err := other.Process.Signal(syscall.Signal(0)); err != nil {
				t.Errorf("another fork's process was stopped: %v", err)
			}
			pid := strconv.Itoa(fork.Process.Pid)
			found, removed, _ := splitHealOutput(string(out))
			wantFound := []string{"the fork's etcd, pid " + pid, "the fork's directory " + dir}
			wantRemoved := []string{"the fork's etcd, pid " + pid, "the fork's directory " + dir}
			if !reflect.DeepEqual(found, wantFound) || !reflect.DeepEqual(removed, wantRemoved) {
				t.Errorf("found %q, removed %q; want %q, %q", found, removed, wantFound, wantRemoved)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the fork's directory is still there (%v)", err)
			}
			out, err = exec.Command("bash", "-c", stopScript(dir)).Output()
			if err != nil || strings.TrimSpace(string(out)) != "" {
				t.Errorf("a second stop: %v, printed %q; want nothing", err, out)
			}
		})
	}
}

// The pod freeze's thaw says what it found and thawed and leaves the
// marker for the heal to drop afterwards, so a heal cut short between the
// two thaws again and only then drops it.
func TestThawScriptThawsAndKeepsTheMarkerUntilDropped(t *testing.T) {
	dir := t.TempDir()
	cg := filepath.Join(dir, "pod0b1c")
	if err := os.MkdirAll(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(cg, "freezer.state")
	if err := os.WriteFile(state, []byte("FROZEN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "marker")
	if out, err := exec.Command("bash", "-c", markScript(marker, podCgroup{Dir: cg})).CombinedOutput(); err != nil {
		t.Fatalf("mark: %v: %s", err, out)
	}
	if out, err := exec.Command("bash", "-c", markScript(marker, podCgroup{Dir: cg})).CombinedOutput(); err == nil {
		t.Errorf("a second mark over the first succeeded: %s", out)
	}
	thaw := func() ([]string, []string, string) {
		out, err := exec.Command("bash", "-c", thawScript(marker)).Output()
		if err != nil {
			t.Fatalf("thaw: %v: %s", err, out)
		}
		return splitHealOutput(string(out))
	}
	found, removed, rest := thaw()
	if strings.TrimSpace(rest) != "marked" || len(found) != 2 || !strings.Contains(found[1], "FROZEN") || len(removed) != 1 {
		t.Errorf("thaw found %q, removed %q, printed %q", found, removed, rest)
	}
	if b, _ := os.ReadFile(state); strings.TrimSpace(string(b)) != "THAWED" {
		t.Errorf("freezer.state %q after the thaw", b)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the thaw removed the marker: %v", err)
	}
	// Cut short here: the next heal thaws again (finding it thawed, so
	// removing nothing) and drops the marker.
	found, removed, rest = thaw()
	if strings.TrimSpace(rest) != "marked" || len(found) != 1 || len(removed) != 0 {
		t.Errorf("the second thaw found %q, removed %q, printed %q; want only the marker found", found, removed, rest)
	}
	out, err := exec.Command("bash", "-c", dropMarkerScript(marker)).Output()
	if _, removed, _ := splitHealOutput(string(out)); err != nil || len(removed) != 1 {
		t.Errorf("drop: %v, %q", err, out)
	}
	if _, _, rest := thaw(); strings.TrimSpace(rest) != "" {
		t.Errorf("a thaw with no marker printed %q", rest)
	}
}
