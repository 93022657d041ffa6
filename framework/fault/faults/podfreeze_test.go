package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/lab"
)

const testUID = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"

func TestParsePodCgroupFindsOneDirectory(t *testing.T) {
	v1 := "tmpfs\n/sys/fs/cgroup/freezer/fl-lab11s-worker1/kubepods/besteffort/pod" + testUID + "\n"
	cg, err := parsePodCgroup(v1, testUID)
	if err != nil || cg.V2 || cg.Dir != "/sys/fs/cgroup/freezer/fl-lab11s-worker1/kubepods/besteffort/pod"+testUID || !strings.HasSuffix(cg.control(), "/freezer.state") {
		t.Fatalf("v1: %+v, %v", cg, err)
	}
	v2 := "cgroup2fs\n/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b1c2d3e_4f50_6172_8394_a5b6c7d8e9f0.slice\n"
	cg, err = parsePodCgroup(v2, testUID)
	if err != nil || !cg.V2 || !strings.HasSuffix(cg.Dir, "-pod0b1c2d3e_4f50_6172_8394_a5b6c7d8e9f0.slice") || !strings.HasSuffix(cg.control(), "/cgroup.freeze") {
		t.Fatalf("v2: %+v, %v", cg, err)
	}
}

func TestParsePodCgroupRefusesNoneSeveralAndOddPaths(t *testing.T) {
	for out, want := range map[string]string{
		"cgroup2fs\n": "no cgroup named pod" + testUID + " or *-pod0b1c2d3e_4f50_6172_8394_a5b6c7d8e9f0.slice under /sys/fs/cgroup (cgroup2fs)",
		"tmpfs\n":     "under /sys/fs/cgroup/freezer",
		"cgroup2fs\n/sys/fs/cgroup/a/pod" + testUID + "\n/sys/fs/cgroup/b/pod" + testUID + "\n": "several cgroups",
		"cgroup2fs\n/tmp/pod" + testUID + "\n":                                                  "not a plain path",
		"cgroup2fs\n/sys/fs/cgroup/a b/pod" + testUID + "\n":                                    "not a plain path",
		"\n": "no file system type",
	} {
		if _, err := parsePodCgroup(out, testUID); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parsePodCgroup(%q) = %v, want an error containing %q", out, err, want)
		}
	}
}

func TestSearchScriptNamesBothSpellings(t *testing.T) {
	s := searchScript(testUID)
	for _, want := range []string{"-name 'pod" + testUID + "'", "-name '*-pod0b1c2d3e_4f50_6172_8394_a5b6c7d8e9f0.slice'", "r=/sys/fs/cgroup/freezer", "stat -fc %T /sys/fs/cgroup"} {
		if !strings.Contains(s, want) {
			t.Errorf("search script %q lacks %q", s, want)
		}
	}
	if _, err := findPodCgroup(context.Background(), &recordingHost{name: "w"}, "x'; rm -rf /; '"); err == nil {
		t.Error("a UID that is no UUID reached a command")
	}
}

func TestParseFrozen(t *testing.T) {
	cases := []struct {
		out    string
		v2     bool
		frozen bool
		bad    bool
	}{
		{"populated 1\nfrozen 1\n", true, true, false},
		{"populated 1\nfrozen 0\n", true, false, false},
		{"populated 1\n", true, false, true},
		{"FROZEN\n", false, true, false},
		{"FREEZING\n", false, false, false},
		{"THAWED\n", false, false, false},
		{"1\n", false, false, true},
	}
	for _, c := range cases {
		frozen, _, err := parseFrozen(c.out, c.v2)
		if frozen != c.frozen || (err != nil) != c.bad {
			t.Errorf("parseFrozen(%q, v2 %v) = %v, %v", c.out, c.v2, frozen, err)
		}
	}
}

func TestHolderPod(t *testing.T) {
	if p, err := holderPod("elector-a-7c9d-x2x7q_3f9a1b"); err != nil || p != "elector-a-7c9d-x2x7q" {
		t.Errorf("holderPod = %q, %v", p, err)
	}
	for _, id := range []string{"", "elector", "_3f9a"} {
		if _, err := holderPod(id); err == nil {
			t.Errorf("holderPod(%q) took it", id)
		}
	}
}

func TestResolvePodTargetThroughTheLease(t *testing.T) {
	holder := "elector-b-66f-abcde_77aa"
	cs := fake.NewClientset(
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "elector"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "elector-b-66f-abcde", UID: types.UID(testUID)}, Spec: corev1.PodSpec{NodeName: "worker2"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pending", UID: types.UID(testUID)}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
	)
	ctx := context.Background()
	got, err := resolvePodTarget(ctx, cs, podFreezeParams{Namespace: "ns", Lease: "elector", Tag: "abcd"})
	if err != nil || got != (podTarget{Name: "elector-b-66f-abcde", Node: "worker2", UID: testUID}) {
		t.Fatalf("through the Lease: %+v, %v", got, err)
	}
	if _, err := resolvePodTarget(ctx, cs, podFreezeParams{Namespace: "ns", Pod: "pending", Tag: "abcd"}); err == nil || !strings.Contains(err.Error(), "not running on a node") {
		t.Errorf("a pending pod: %v", err)
	}
	if _, err := resolvePodTarget(ctx, cs, podFreezeParams{Namespace: "ns", Pod: "gone", Tag: "abcd"}); err == nil || !strings.Contains(err.Error(), "reading pod ns/gone") {
		t.Errorf("a missing pod: %v", err)
	}
}

// Inject's host half: the marker first, then the freeze, then the wait
// for the kernel's word; heal thaws on the host it froze on.
func TestPodFreezeOnTheNodeAndItsHeal(t *testing.T) {
	l := loadLab(t, "lab11")
	h := l.host("worker2")
	h.answers["t=$(stat"] = lab.Result{Stdout: "cgroup2fs\n/sys/fs/cgroup/kubepods/besteffort/pod" + testUID + "\n"}
	h.answers["cat '/sys/fs/cgroup/kubepods/besteffort/pod"+testUID+"/cgroup.events'"] = lab.Result{Stdout: "populated 1\nfrozen 1\n"}
	f := FreezeLeaseHolder("ns", "elector").(*podFreeze)
	ctx := context.Background()
	cg, err := findPodCgroup(ctx, h, testUID)
	if err != nil {
		t.Fatal(err)
	}
	f.host, f.frozen = h, cg
	if _, err := run(ctx, h, markScript(f.marker(), cg)); err != nil {
		t.Fatal(err)
	}
	if _, err := run(ctx, h, freezeScript(cg)); err != nil {
		t.Fatal(err)
	}
	if err := waitFrozen(ctx, h, cg, time.Second); err != nil {
		t.Fatal(err)
	}
	eff, err := f.Probe(ctx, l)
	if err != nil || !eff.Observed || !strings.Contains(eff.Detail, "frozen 1") {
		t.Fatalf("probe: %+v, %v", eff, err)
	}
	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	cmds := h.commands()
	marker := "/run/faultline-pod-freeze-" + f.p.Tag
	mark, freeze := cmds[1], cmds[2]
	if !strings.Contains(mark, "! [ -e "+marker+" ]") || !strings.Contains(mark, "> "+marker) {
		t.Errorf("mark script %q: want the marker refused if there, then written", mark)
	}
	if freeze != "echo 1 > '/sys/fs/cgroup/kubepods/besteffort/pod"+testUID+"/cgroup.freeze'" {
		t.Errorf("after the marker ran %q, want the freeze", freeze)
	}
	if last := cmds[len(cmds)-1]; last != thawScript(marker) {
		t.Errorf("heal ran %q, want the thaw script", last)
	}
	for _, other := range l.hosts {
		if other != h && len(other.commands()) != 0 {
			t.Errorf("%s ran %v", other.name, other.commands())
		}
	}
	if f.host != nil {
		t.Error("heal kept the injected host")
	}
}

// A heal from the ledger knows no node: it thaws by the marker on every
// host that runs pods, and only there.
func TestPodFreezeHealFromTheLedgerLooksOnEveryPodHost(t *testing.T) {
	l := loadLab(t, "lab11")
	f := FreezePod("ns", "p").(*podFreeze)
	if err := f.Heal(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	for _, h := range l.hosts {
		ran := len(h.commands()) == 1 && h.commands()[0] == thawScript(f.marker())
		if runsPods := h.HasRole(lab.RoleWorker) || h.HasRole(lab.RoleControlPlane); ran != runsPods {
			t.Errorf("%s (roles %v) ran %v", h.name, h.roles, h.commands())
		}
	}
	thaw := thawScript(f.marker())
	for _, want := range []string{`echo 0 > "$d/cgroup.freeze"`, `echo THAWED > "$d/freezer.state"`, "if [ -f " + f.marker() + " ]"} {
		if !strings.Contains(thaw, want) {
			t.Errorf("thaw script %q lacks %q", thaw, want)
		}
	}
	if strings.Contains(thaw, "rm ") {
		t.Errorf("thaw script %q removes the marker: it must stay until the thaw is done", thaw)
	}
}

func TestWaitFrozenGivesUpWithTheState(t *testing.T) {
	h := &recordingHost{name: "worker1", answers: map[string]lab.Result{"cat ": {Stdout: "FREEZING\n"}}}
	err := waitFrozen(context.Background(), h, podCgroup{Dir: "/sys/fs/cgroup/freezer/x/pod" + testUID}, 250*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "FREEZING") {
		t.Fatalf("waitFrozen = %v", err)
	}
}
