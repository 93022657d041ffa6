package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
	// The testdata lab files are read through the backends' registry.
	_ "github.com/faultline/faultline/lab/backends"
)

func loadLab(t *testing.T, topology string) *recordingLab {
	t.Helper()
	cfg, err := lab.LoadConfig(filepath.Join("..", "..", "..", "testdata", "labs", topology+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return newRecordingLab(cfg)
}

// everyFault is one fault of every kind the package registers.
func everyFault() []fault.Fault {
	return []fault.Fault{
		PowerOff("worker1"),
		StopService("worker1", lab.ServiceKubelet),
		StopLeader(lab.ServiceScheduler),
		Kill("cp1", lab.ServiceAPIServer),
		KillLeader(lab.ServiceControllerManager),
		Freeze("worker1", lab.ServiceContainerd),
		FreezeLeader(lab.ServiceEtcd),
		Partition([]string{"worker1"}, []string{"role:control-plane", "etcd1"}),
		OneWayPartition([]string{"worker1"}, []string{"rest"}),
		Isolate("worker2"),
		HostFromControlPlane("worker1"),
		EtcdSplit(3),
		EtcdLeaderFromPeers(),
		APIServerFromEtcd("cp1"),
		RackFromRest("r1"),
		Delay("etcd1", []string{"role:etcd"}, 200*time.Millisecond, 20*time.Millisecond),
		Delay("etcd1", nil, 50*time.Millisecond, 0),
		Loss("worker1", []string{"role:control-plane"}, 12.5),
		Throttle("etcd1", []string{"role:etcd"}, 512),
		EtcdLeaderThrottle(512),
		APIServerFromEtcdThrottle("cp2", 64),
		EtcdCompact(true),
		EtcdCompact(false),
		ClockSkew("worker1", -90*time.Second),
		PodNetworkCut("worker1"),
		Freeze("cp2", lab.ServiceKubeProxy),
		EtcdNoSpace(),
		BlackholeWatch("worker1"),
		BlackholeWatchAt("worker2", "/etc/kubernetes/authorization-config.yaml"),
		APIServerEtcdFork("cp2"),
		Compound(StopService("worker1", lab.ServiceKubeProxy), Freeze("worker1", lab.ServicePolicyAgent)),
		PinAgents("worker1", "cp2", lab.ServiceKubeProxy, lab.ServicePolicyAgent),
		Restart("worker1", lab.ServiceKubeProxy),
		BlackholeServiceAccountWatch("kube-system/coredns", "k8s-app=kube-dns", WatchedResource{Resource: "services"}),
		FreezePod("faultline-split", "elector-a-5d9f7c-x2x7q"),
		FreezeLeaseHolder("faultline-split", "elector"),
	}
}

func TestEveryFaultRoundTripsThroughItsParams(t *testing.T) {
	kinds := map[string]bool{}
	for _, f := range everyFault() {
		kinds[f.Kind()] = true
		g, err := fault.Decode(f.Kind(), f.Params())
		if err != nil {
			t.Errorf("%s: %v", fault.Describe(f), err)
			continue
		}
		if !bytes.Equal(g.Params(), f.Params()) || g.Class() != f.Class() || g.Kind() != f.Kind() {
			t.Errorf("decoded %s (%s), want %s (%s)", fault.Describe(g), g.Class(), fault.Describe(f), f.Class())
		}
		n := fault.Null(f)
		back, err := fault.Decode(n.Kind(), n.Params())
		if err != nil {
			t.Errorf("null arm of %s: %v", fault.Describe(f), err)
			continue
		}
		if s, ok := fault.StandsFor(back); !ok || !bytes.Equal(s.Params(), f.Params()) {
			t.Errorf("null arm of %s decoded as %s", fault.Describe(f), fault.Describe(back))
		}
	}
	want := []string{KindPowerOff, KindStopService, KindKill, KindFreeze, KindPartition, KindDelay, KindLoss, KindThrottle, KindEtcdCompact, KindClockSkew, KindPodNetworkCut, KindEtcdNoSpace, KindBlackholeWatch, KindAPIServerEtcdFork, KindCompound, KindPinAgents, KindRestart, KindPodFreeze}
	for _, k := range want {
		if !kinds[k] {
			t.Errorf("no fault of kind %s in the round trip", k)
		}
	}
}

func TestTagsDifferBetweenFaults(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		var p partitionParams
		if err := json.Unmarshal(Isolate("worker1").Params(), &p); err != nil {
			t.Fatal(err)
		}
		if seen[p.Tag] {
			t.Fatalf("tag %s given twice in 50 faults", p.Tag)
		}
		seen[p.Tag] = true
	}
}

func TestDecodeRefusesBadParameters(t *testing.T) {
	cases := []struct {
		kind, params, want string
	}{
		{KindPartition, `{"groups":[["worker1"],[]],"tag":"abcd"}`, "group 1 is empty"},
		{KindPartition, `{"groups":[["worker1"]],"tag":"abcd"}`, "at least two"},
		{KindPartition, `{"groups":[["role:db"],["rest"]],"tag":"abcd"}`, `"db" is not a role`},
		{KindPartition, `{"groups":[["role:etcd[3:1]"],["rest"]],"tag":"abcd"}`, "empty slice"},
		{KindPartition, `{"groups":[["rest"],["rest"]],"tag":"abcd"}`, "more than once"},
		{KindPartition, `{"groups":[["a"],["b"]],"tag":"xyz"}`, "hex"},
		{KindPartition, `{"groups":[["a"],["b"]],"tag":"abcd","extra":1}`, "unknown field"},
		{KindKill, `{"service":"kubelet","leader":true}`, "elects no leader"},
		{KindKill, `{"host":"cp1","service":"etcd","leader":true}`, "both host"},
		{KindKill, `{"host":"cp1"}`, "no service"},
		{KindFreeze, `{"service":"kubelet"}`, "no host"},
		{KindPowerOff, `{}`, "no host"},
		{KindDelay, `{"host":"etcd1","latency":"5ms","tag":"abcd"}`, "cannot tell from noise"},
		{KindDelay, `{"host":"etcd1","latency":"50ms","jitter":"60ms","tag":"abcd"}`, "jitter"},
		{KindDelay, `{"host":"etcd1","latency":"soon","tag":"abcd"}`, "latency"},
		{KindLoss, `{"host":"w1","percent":0,"tag":"abcd"}`, "percent"},
		{KindLoss, `{"host":"w1","percent":101,"tag":"abcd"}`, "percent"},
		{KindThrottle, `{"host":"w1","rateKbit":4,"tag":"abcd"}`, "rate 4 kbit/s"},
		{KindThrottle, `{"host":"w1","rateKbit":2000000,"tag":"abcd"}`, "rate 2000000 kbit/s"},
		{KindThrottle, `{"rateKbit":512,"tag":"abcd"}`, "no host"},
		{KindThrottle, `{"host":"role:db","rateKbit":512,"tag":"abcd"}`, `"db" is not a role`},
		{KindThrottle, `{"host":"rest","rateKbit":512,"tag":"abcd"}`, "rest names no host on its own"},
		{KindThrottle, `{"host":"w1","to":["role:db"],"rateKbit":512,"tag":"abcd"}`, `"db" is not a role`},
		{KindClockSkew, `{"host":"w1","offset":"1s","tag":"abcd"}`, "under 2s"},
		{KindPodNetworkCut, `{"tag":"abcd"}`, "no host"},
		{KindEtcdNoSpace, `{"quota":1}`, "unknown field"},
		{KindBlackholeWatch, `{"tag":"abcd"}`, "no node"},
		{KindBlackholeWatch, `{"node":"Worker_1","tag":"abcd"}`, "not a valid node name"},
		{KindBlackholeWatch, `{"node":"w1' || true || '","tag":"abcd"}`, "not a valid node name"},
		{KindBlackholeWatch, `{"node":"w1","tag":"abcd","configPath":"authz.yaml"}`, "not a clean absolute path"},
		{KindBlackholeWatch, `{"node":"w1","tag":"abcd","configPath":"/etc/../authz.yaml"}`, "not a clean absolute path"},
		{KindBlackholeWatch, `{"node":"w1"}`, "tag"},
		{KindAPIServerEtcdFork, `{"port":23790,"tag":"abcd"}`, "no host"},
		{KindAPIServerEtcdFork, `{"host":"cp1","port":65535,"tag":"abcd"}`, "port 65535"},
		{KindAPIServerEtcdFork, `{"host":"cp1","tag":"abcd"}`, "port 0"},
		{KindAPIServerEtcdFork, `{"host":"cp1","port":23790}`, "tag"},
		{KindPodFreeze, `{"pod":"p","tag":"abcd"}`, "no namespace"},
		{KindPodFreeze, `{"namespace":"n","tag":"abcd"}`, "no pod and no lease"},
		{KindPodFreeze, `{"namespace":"n","pod":"p","lease":"l","tag":"abcd"}`, "name one"},
		{KindPodFreeze, `{"namespace":"n","pod":"p"}`, "tag"},
	}
	for _, c := range cases {
		_, err := fault.Decode(c.kind, json.RawMessage(c.params))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%s, %s) = %v, want an error containing %q", c.kind, c.params, err, c.want)
		}
	}
}

func TestBadTargetsFailBeforeAnythingIsTouched(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		f    fault.Fault
		want string
	}{
		{PowerOff("nosuch"), `"nosuch"`},
		{StopService("worker1", "nosuchd"), `no service "nosuchd"`},
		{Kill("etcd1", lab.ServiceKubelet), `no service "kubelet"`},
		{Freeze("nosuch", lab.ServiceKubelet), `"nosuch"`},
		{Partition([]string{"worker1"}, []string{"nosuch"}), `"nosuch"`},
		{Partition([]string{"role:worker"}, []string{"worker1"}), "names no host that an earlier group did not take"},
		{Partition([]string{"rack:r9"}, []string{"rest"}), "no host on rack"},
		{EtcdSplit(6), "has 5 etcd hosts"},
		{Delay("etcd1", []string{"nosuch"}, time.Second, 0), `"nosuch"`},
		{Loss("nosuch", nil, 5), `"nosuch"`},
		{Throttle("nosuch", nil, 512), `"nosuch"`},
		{Throttle("etcd1", []string{"nosuch"}, 512), `"nosuch"`},
		{PodNetworkCut("etcd1"), "runs no pods"},
		{ClockSkew("nosuch", time.Minute), `"nosuch"`},
		{BlackholeWatchAt("nosuch", "/etc/authz.yaml"), `"nosuch"`},
		{BlackholeWatchAt("etcd1", "/etc/authz.yaml"), `no service "kubelet"`},
	}
	for _, c := range cases {
		l := loadLab(t, "lab11")
		err := c.f.Inject(ctx, l)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Inject = %v, want an error containing %q", fault.Describe(c.f), err, c.want)
		}
		if ch := l.changes(); len(ch) > 0 {
			t.Errorf("%s: changed the lab before failing: %q", fault.Describe(c.f), ch)
		}
	}
}

func TestPartitionRulesOnEachHost(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "racks")
	f := RackFromRest("r1").(*partition)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	chain := "FAULTLINE-" + f.p.Tag
	// r1 is m1 and w1; the rest are the etcd hosts, m2 and w2. The virtual
	// address goes with neither group: the control plane is split.
	rest := []string{"10.231.4.11", "10.231.4.12", "10.231.4.13", "10.231.4.22", "10.231.4.32"}
	var wantR1 []string
	wantR1 = append(wantR1, "iptables -w -N "+chain)
	for _, a := range rest {
		wantR1 = append(wantR1, "iptables -w -A "+chain+" -s "+a+" -j DROP", "iptables -w -A "+chain+" -d "+a+" -j DROP")
	}
	wantR1 = append(wantR1, "iptables -w -I INPUT 1 -j "+chain, "iptables -w -I OUTPUT 1 -j "+chain)
	for _, h := range []string{"m1", "w1"} {
		got := changing(l.host(h).commands())
		want := markTable(chain, l.host(h).addr) + strings.Join(wantR1, " && ")
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s ran\n%q\nwant\n%q", h, got, want)
		}
	}
	got := changing(l.host("etcd2").commands())
	want := markTable(chain, "10.231.4.12") + "iptables -w -N " + chain + " && iptables -w -A " + chain + " -s 10.231.4.21 -j DROP && iptables -w -A " + chain + " -d 10.231.4.21 -j DROP && iptables -w -A " + chain + " -s 10.231.4.31 -j DROP && iptables -w -A " + chain + " -d 10.231.4.31 -j DROP && iptables -w -I INPUT 1 -j " + chain + " && iptables -w -I OUTPUT 1 -j " + chain
	if len(got) != 1 || got[0] != want {
		t.Errorf("etcd2 ran\n%q\nwant\n%q", got, want)
	}

	// Heal removes the chain on every host, whoever was in which group.
	for _, h := range l.hosts {
		h.cmds = nil
	}
	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, h := range l.hosts {
		got := h.commands()
		if len(got) != 1 || got[0] != removeChainScript(chain, h.addr) {
			t.Errorf("heal on %s ran %q", h.name, got)
		}
	}
}

// markTable is the first command of every chain install on a host.
func markTable(chain, addr string) string {
	return `{ iptables-save 2>/dev/null | grep -q '^\*filter' || touch /run/faultline-` + chain + "-" + addr + ".created-filter-table; } && "
}

// changing leaves out the read-only commands.
func changing(cmds []string) []string {
	var out []string
	for _, c := range cmds {
		if !readOnly(c) {
			out = append(out, c)
		}
	}
	return out
}

func TestPartitionTakesTheVirtualAddressWithTheWholeControlPlane(t *testing.T) {
	l := loadLab(t, "lab11")
	groups, err := resolveGroups(context.Background(), l, [][]string{{"worker1"}, {"role:control-plane"}})
	if err != nil {
		t.Fatal(err)
	}
	vipAt, err := virtualAddressGroup(context.Background(), l, groups)
	if err != nil || vipAt != 1 {
		t.Fatalf("virtual address goes with group %d (%v), want 1", vipAt, err)
	}
	rules := partitionRules(l, groups, vipAt, false, "FAULTLINE-abcd")
	if len(rules) != 4 || rules[0].host.Name() != "worker1" {
		t.Fatalf("rules for %d hosts", len(rules))
	}
	got := rules[0].rules.rules
	want := []string{
		"-s 10.231.11.21 -j DROP", "-d 10.231.11.21 -j DROP",
		"-s 10.231.11.22 -j DROP", "-d 10.231.11.22 -j DROP",
		"-s 10.231.11.23 -j DROP", "-d 10.231.11.23 -j DROP",
		"-s 10.231.11.10 -j DROP", "-d 10.231.11.10 -j DROP",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("worker1 rules %q, want %q", got, want)
	}
	if cp := rules[1].rules.rules; !reflect.DeepEqual(cp, []string{"-s 10.231.11.31 -j DROP", "-d 10.231.11.31 -j DROP"}) {
		t.Errorf("cp1 rules %q", cp)
	}
}

func TestPartitionGivesTheVirtualAddressToTheGroupHoldingIt(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "racks")
	l.host("m2").answers["ip -o -4 addr show"] = lab.Result{Stdout: "2: eth0    inet 10.231.4.22/24 brd 10.231.4.255 scope global eth0\n2: eth0    inet 10.231.4.10/32 scope global eth0\n"}
	f := RackFromRest("r1").(*partition)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	w1 := changing(l.host("w1").commands())
	if len(w1) != 1 || !strings.Contains(w1[0], "-d 10.231.4.10 -j DROP") {
		t.Errorf("w1 (rack r1) does not drop the virtual address m2 holds: %q", w1)
	}
	if m2 := l.host("m2").commands(); strings.Contains(strings.Join(m2, " "), "10.231.4.10 -j") {
		t.Errorf("m2 drops its own virtual address: %q", m2)
	}
}

func TestOneWayPartitionDropsOnlyWhatTheFirstGroupSends(t *testing.T) {
	l := loadLab(t, "racks")
	groups, err := resolveGroups(context.Background(), l, [][]string{{"w1"}, {"m1"}, {"m2"}})
	if err != nil {
		t.Fatal(err)
	}
	rules := partitionRules(l, groups, -1, true, "FAULTLINE-abcd")
	got := map[string][]string{}
	for _, r := range rules {
		got[r.host.Name()] = r.rules.rules
	}
	want := map[string][]string{
		"w1": {"-d 10.231.4.21 -j DROP", "-d 10.231.4.22 -j DROP"},
		"m1": {"-s 10.231.4.31 -j DROP"},
		"m2": {"-s 10.231.4.31 -j DROP"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("one-way rules %q, want %q", got, want)
	}
}

func TestEtcdSplitAndSelectors(t *testing.T) {
	l := loadLab(t, "lab11")
	names := func(hs []lab.Host) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Name())
		}
		return out
	}
	var p partitionParams
	if err := json.Unmarshal(EtcdSplit(3).Params(), &p); err != nil {
		t.Fatal(err)
	}
	groups, err := resolveGroups(context.Background(), l, p.Groups)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := names(groups[0]), names(groups[1]); !reflect.DeepEqual(a, []string{"etcd1", "etcd2", "etcd3"}) || !reflect.DeepEqual(b, []string{"etcd4", "etcd5"}) {
		t.Errorf("etcd 3|2 is %v|%v", a, b)
	}
	groups, err = resolveGroups(context.Background(), l, [][]string{{"worker2"}, {"rest"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups[1]) != 10 {
		t.Errorf("rest of lab11 without worker2 is %v", names(groups[1]))
	}
}

func TestDelayInstallsNetemTowardsTheTargetsOnly(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	etcd1 := l.host("etcd1")
	etcd1.answers["ip -o route get"] = lab.Result{Stdout: "10.231.11.12 dev eth0 src 10.231.11.11 uid 0 \\    cache \n"}
	etcd1.answers["tc qdisc show dev eth0 root"] = lab.Result{Stdout: "qdisc noqueue 0: root refcnt 2 \n"}
	f := Delay("etcd1", []string{"etcd2", "etcd3"}, 150*time.Millisecond, 10*time.Millisecond).(*delay)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	tag := f.p.Tag
	want := strings.Join([]string{
		"tc qdisc add dev eth0 root handle " + tag + ": prio bands 4 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1",
		"tc qdisc add dev eth0 parent " + tag + ":4 netem delay 150000us 10000us distribution normal",
		"tc filter add dev eth0 parent " + tag + ": protocol ip prio 1 u32 match ip dst 10.231.11.12/32 flowid " + tag + ":4",
		"tc filter add dev eth0 parent " + tag + ": protocol ip prio 1 u32 match ip dst 10.231.11.13/32 flowid " + tag + ":4",
	}, " && ")
	if ch := l.changes(); len(ch) != 1 || ch[0] != "etcd1: "+want {
		t.Errorf("delay changed\n%q\nwant\n%q", ch, "etcd1: "+want)
	}
	etcd1.cmds = nil
	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := etcd1.commands(); len(got) != 1 || !strings.Contains(got[0], `$2=="prio" && $3=="`+printedHandle(tag)+`" && $6=="root"`) || !strings.Contains(got[0], `tc qdisc del dev "$dev" root`) {
		t.Errorf("heal ran %q", got)
	}
}

// Delay and throttle both replace the root qdisc, so both refuse an
// interface that has one of its own, changing nothing.
func TestShapersRefuseAHostWithItsOwnRootQdisc(t *testing.T) {
	for _, c := range []struct {
		f    fault.Fault
		root string
	}{
		{Delay("etcd1", []string{"etcd2"}, time.Second, 0), "qdisc htb 1: root refcnt 2 r2q 10 default 0\n"},
		{Throttle("etcd1", []string{"etcd2"}, 512), "qdisc tbf 8001: root refcnt 2 rate 1Mbit burst 4Kb lat 50ms\n"},
	} {
		l := loadLab(t, "lab11")
		etcd1 := l.host("etcd1")
		etcd1.answers["ip -o route get"] = lab.Result{Stdout: "10.231.11.12 dev eth0 src 10.231.11.11\n"}
		etcd1.answers["tc qdisc show dev eth0 root"] = lab.Result{Stdout: c.root}
		err := c.f.Inject(context.Background(), l)
		if err == nil || !strings.Contains(err.Error(), "root qdisc of its own") {
			t.Errorf("%s: Inject = %v", c.f.Kind(), err)
		}
		if ch := l.changes(); len(ch) > 0 {
			t.Errorf("%s: changed %q", c.f.Kind(), ch)
		}
	}
}

// A kernel without the shaper's queueing discipline makes it unsupported,
// naming the module.
func TestShapersWithoutTheirQdiscAreUnsupported(t *testing.T) {
	for _, c := range []struct {
		f      fault.Fault
		module string
	}{
		{Delay("etcd1", nil, time.Second, 0), "sch_netem"},
		{Throttle("etcd1", nil, 512), "sch_htb"},
	} {
		l := loadLab(t, "lab11")
		etcd1 := l.host("etcd1")
		etcd1.answers["ip -o -4 addr show"] = lab.Result{Stdout: "1: lo    inet 127.0.0.1/8 scope host lo\n2: eth0    inet 10.231.11.11/24 brd 10.231.11.255 scope global eth0\n"}
		etcd1.answers["tc qdisc show dev eth0 root"] = lab.Result{Stdout: "qdisc noqueue 0: root refcnt 2\n"}
		etcd1.answers["tc qdisc add"] = lab.Result{ExitCode: 2, Stderr: "Error: Specified qdisc kind is unknown."}
		err := c.f.Inject(context.Background(), l)
		if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), c.module) {
			t.Errorf("%s: Inject = %v, want unsupported naming %s", c.f.Kind(), err, c.module)
		}
	}
}

func TestThrottleHoldsTheTargetsOnly(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	etcd1 := l.host("etcd1")
	etcd1.answers["ip -o route get"] = lab.Result{Stdout: "10.231.11.12 dev eth0 src 10.231.11.11 uid 0 \\    cache \n"}
	etcd1.answers["tc qdisc show dev eth0 root"] = lab.Result{Stdout: "qdisc noqueue 0: root refcnt 2 \n"}
	f := Throttle("etcd1", []string{"etcd2", "etcd3"}, 512).(*throttle)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	tag := f.p.Tag
	want := strings.Join([]string{
		"tc qdisc add dev eth0 root handle " + tag + ": htb default 1",
		"tc class add dev eth0 parent " + tag + ": classid " + tag + ":1 htb rate 10gbit quantum 60000",
		"tc class add dev eth0 parent " + tag + ": classid " + tag + ":2 htb rate 512kbit burst 8kb quantum 1514",
		"tc filter add dev eth0 parent " + tag + ": protocol ip prio 1 u32 match ip dst 10.231.11.12/32 flowid " + tag + ":2",
		"tc filter add dev eth0 parent " + tag + ": protocol ip prio 1 u32 match ip dst 10.231.11.13/32 flowid " + tag + ":2",
	}, " && ")
	if ch := l.changes(); len(ch) != 1 || ch[0] != "etcd1: "+want {
		t.Errorf("throttle changed\n%q\nwant\n%q", ch, "etcd1: "+want)
	}

	etcd1.answers["tc qdisc show | awk"] = lab.Result{Stdout: "class htb " + tag + ":2 root prio 0 rate 512Kbit ceil 512Kbit burst 8Kb cburst 1600b \n Sent 769815 bytes 3524 pkt (dropped 0, overlimits 3409 requeues 0) \n backlog 2506b 24p requeues 0\n"}
	e, err := f.Probe(ctx, l)
	if err != nil || !e.Observed || !strings.Contains(e.Detail, "3409 times") {
		t.Errorf("probe with 3409 overlimits: %+v, %v; want observed", e, err)
	}
	etcd1.answers["tc qdisc show | awk"] = lab.Result{Stdout: "class htb " + tag + ":2 root prio 0 rate 512Kbit ceil 512Kbit burst 8Kb cburst 1600b \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"}
	if e, err := f.Probe(ctx, l); err != nil || e.Observed {
		t.Errorf("probe with no overlimits: %+v, %v; want not observed", e, err)
	}
	etcd1.answers["tc qdisc show | awk"] = lab.Result{}
	if e, err := f.Probe(ctx, l); err != nil || e.Observed || !strings.Contains(e.Detail, "no throttled class") {
		t.Errorf("probe with the qdisc gone: %+v, %v; want not observed, saying so", e, err)
	}

	etcd1.cmds = nil
	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := etcd1.commands(); len(got) != 1 || got[0] != removeQdiscScript("htb", tag) {
		t.Errorf("heal ran %q", got)
	}
	if got := l.allCommands(); len(got) != 1 {
		t.Errorf("heal ran commands beyond etcd1: %q", got)
	}
}

// A throttle from a selector shapes every host it names, or, when one of
// them cannot be shaped, none.
func TestThrottleFromEveryEtcdHostToOneAPIServer(t *testing.T) {
	ctx := context.Background()
	etcdHosts := []string{"etcd1", "etcd2", "etcd3", "etcd4", "etcd5"}
	setUp := func(l *recordingLab) {
		for _, n := range etcdHosts {
			h := l.host(n)
			h.answers["ip -o route get"] = lab.Result{Stdout: "10.231.11.22 dev eth0 src " + h.addr + "\n"}
			h.answers["tc qdisc show dev eth0 root"] = lab.Result{Stdout: "qdisc noqueue 0: root refcnt 2\n"}
		}
	}
	l := loadLab(t, "lab11")
	setUp(l)
	f := APIServerFromEtcdThrottle("cp2", 64).(*throttle)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	tag := f.p.Tag
	ch := l.changes()
	if len(ch) != len(etcdHosts) {
		t.Fatalf("throttle changed %q, want one script on each etcd host", ch)
	}
	for i, n := range etcdHosts {
		if !strings.HasPrefix(ch[i], n+": tc qdisc add dev eth0 root handle "+tag+": htb") || !strings.HasSuffix(ch[i], "u32 match ip dst 10.231.11.22/32 flowid "+tag+":2") || !strings.Contains(ch[i], "htb rate 64kbit") {
			t.Errorf("%s: %q", n, ch[i])
		}
	}
	for i, n := range etcdHosts {
		l.host(n).answers["tc qdisc show | awk"] = lab.Result{Stdout: " Sent 100 bytes 1 pkt (dropped 0, overlimits " + strconv.Itoa(i) + " requeues 0)\n"}
	}
	e, err := f.Probe(ctx, l)
	if err != nil || !e.Observed || !strings.Contains(e.Detail, "etcd5 held back packets to [cp2] over 64 kbit/s 4 times") || !strings.Contains(e.Detail, "etcd1 held back packets to [cp2] over 64 kbit/s 0 times") {
		t.Errorf("probe: %+v, %v", e, err)
	}

	// Healed from the ledger: the selector names the same hosts again.
	g, err := fault.Decode(KindThrottle, f.Params())
	if err != nil {
		t.Fatal(err)
	}
	l = loadLab(t, "lab11")
	if err := g.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, h := range l.Hosts() {
		got := l.host(h.Name()).commands()
		want := 0
		if h.HasRole(lab.RoleEtcd) {
			want = 1
		}
		if len(got) != want || (want == 1 && got[0] != removeQdiscScript("htb", tag)) {
			t.Errorf("heal from the ledger ran %q on %s", got, h.Name())
		}
	}

	// etcd4 has a root qdisc of its own: nothing is changed anywhere.
	l = loadLab(t, "lab11")
	setUp(l)
	l.host("etcd4").answers["tc qdisc show dev eth0 root"] = lab.Result{Stdout: "qdisc tbf 8001: root refcnt 2 rate 1Mbit\n"}
	if err := APIServerFromEtcdThrottle("cp2", 64).Inject(ctx, l); err == nil || !strings.Contains(err.Error(), "etcd4") {
		t.Errorf("Inject = %v, want a refusal naming etcd4", err)
	}
	if ch := l.changes(); len(ch) > 0 {
		t.Errorf("a refused throttle changed %q", ch)
	}
}

// A throttle of the etcd leader healed from the ledger does not know which
// host the leader was, so its qdisc is looked for on every host.
func TestEtcdLeaderThrottleHealsWhereverItMayBe(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	f, err := fault.Decode(KindThrottle, EtcdLeaderThrottle(512).Params())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, h := range l.Hosts() {
		got := l.host(h.Name()).commands()
		if want := removeQdiscScript("htb", f.(*throttle).p.Tag); len(got) != 1 || got[0] != want {
			t.Errorf("%s ran %q, want the removal of the fault's qdisc alone", h.Name(), got)
		}
	}
}

func TestLossRules(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	f := Loss("worker1", []string{"role:control-plane"}, 12.5).(*loss)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	c := "FAULTLINE-" + f.p.Tag
	var want []string
	want = append(want, markTable(c, "10.231.11.31")+"iptables -w -N "+c)
	for _, a := range []string{"10.231.11.21", "10.231.11.22", "10.231.11.23", "10.231.11.10"} {
		want = append(want, "iptables -w -A "+c+" -d "+a+" -m statistic --mode random --probability 0.125 -j DROP")
	}
	want = append(want, "iptables -w -I OUTPUT 1 -j "+c)
	if got := l.host("worker1").commands(); len(got) != 1 || got[0] != strings.Join(want, " && ") {
		t.Errorf("loss ran\n%q\nwant\n%q", got, strings.Join(want, " && "))
	}
}

func TestPodNetworkCutOnOverlayDevices(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	l.cfg.Kind = "static"
	w := l.host("worker1")
	w.answers["ip -o link show type vxlan"] = lab.Result{Stdout: "7: flannel.1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UNKNOWN mode DEFAULT group default \\    link/ether 1a:2b brd ff:ff:ff:ff:ff:ff\n"}
	f := PodNetworkCut("worker1").(*podNetworkCut)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	c := "FAULTLINE-" + f.p.Tag
	want := markTable(c, "10.231.11.31") + "iptables -w -N " + c + " && iptables -w -A " + c + " -i flannel.1 -j DROP && iptables -w -A " + c + " -o flannel.1 -j DROP && iptables -w -I INPUT 1 -j " + c + " && iptables -w -I OUTPUT 1 -j " + c + " && iptables -w -I FORWARD 1 -j " + c
	if ch := l.changes(); len(ch) != 1 || ch[0] != "worker1: "+want {
		t.Errorf("pod network cut changed\n%q\nwant\n%q", ch, want)
	}

	// No pod interface named and no overlay device: unsupported, untouched.
	l2 := loadLab(t, "lab11")
	l2.cfg.Kind = "static"
	err := PodNetworkCut("worker1").Inject(ctx, l2)
	if !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("Inject without pod devices = %v", err)
	}
	if ch := l2.changes(); len(ch) > 0 {
		t.Errorf("changed %q", ch)
	}
}

func TestClockSkew(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	err := ClockSkew("worker1", time.Minute).Inject(ctx, l)
	if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "vDSO") {
		t.Errorf("local lab: Inject = %v, want unsupported with the reason", err)
	}
	if ch := l.changes(); len(ch) > 0 {
		t.Errorf("local lab: changed %q", ch)
	}

	l.cfg.Kind = "static"
	f := ClockSkew("worker1", -90*time.Second).(*clockSkew)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	m := "/run/faultline-clock-" + f.p.Tag
	got := l.host("worker1").commands()
	if len(got) != 1 || !strings.HasPrefix(got[0], "mkdir "+m+" && ") || !strings.Contains(got[0], "(-90000000000)") || !strings.HasSuffix(got[0], "touch "+m+"/stepped") || !strings.Contains(got[0], "systemctl stop") {
		t.Errorf("skew ran %q", got)
	}
	l.host("worker1").cmds = nil
	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	got = l.host("worker1").commands()
	if len(got) != 1 || !strings.HasPrefix(got[0], "if [ -d "+m+" ]; then ") || !strings.Contains(got[0], "(90000000000)") || !strings.Contains(got[0], "rm "+m+"/stepped") || !strings.Contains(got[0], "systemctl start") {
		t.Errorf("heal ran %q", got)
	}
}

func TestProcessFaultsSignalAndHeal(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	w := l.host("worker1")
	w.answers["cat /proc/"] = lab.Result{Stdout: "1061 (kube let) (x) T 1 1061 1061 0 -1 4194560 ...\n"}

	fr := Freeze("worker1", lab.ServiceKubelet)
	if err := fr.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	e, err := fr.Probe(ctx, l)
	if err != nil || !e.Observed || !strings.Contains(e.Detail, "state T") {
		t.Errorf("freeze probe %+v %v", e, err)
	}
	// SIGSTOP has reached the main thread but not yet every thread.
	w.answers["cat /proc/"] = lab.Result{Stdout: "1061 (kube let) (x) T 1 1061 1061 0 -1 4194560 ...\n1070 (kubelet) R 1 1061 1061 0 -1 4194560 ...\n"}
	if e, err := fr.Probe(ctx, l); err != nil || e.Observed || !strings.Contains(e.Detail, "1 of 2 threads") {
		t.Errorf("freeze probe with one thread still running: %+v %v", e, err)
	}
	w.answers["cat /proc/"] = lab.Result{Stdout: "1061 (kube let) (x) T 1 1061 1061 0 -1 4194560 ...\n"}
	if err := fr.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := fr.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := w.operations(); !reflect.DeepEqual(got, []string{"signal kubelet stopped (signal)", "signal kubelet continued", "signal kubelet continued"}) {
		t.Errorf("freeze operations %q", got)
	}

	w.ops = nil
	k := Kill("worker1", lab.ServiceContainerd)
	if err := k.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	if e, err := k.Probe(ctx, l); err != nil || !e.Observed {
		t.Errorf("kill probe %+v %v", e, err)
	}
	if err := k.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := k.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := w.operations(); !reflect.DeepEqual(got, []string{"signal containerd killed", "start containerd"}) {
		t.Errorf("kill operations %q (heal must start it once)", got)
	}
	// After heal, the probe of the same fault value (the null arm) sees a
	// running service and no kill.
	if e, err := k.Probe(ctx, l); err != nil || e.Observed {
		t.Errorf("probe after heal %+v %v", e, err)
	}

	w.ops = nil
	s := StopService("worker1", lab.ServiceKubeProxy)
	if e, err := s.Probe(ctx, l); err != nil || e.Observed {
		t.Errorf("stop probe before inject %+v %v", e, err)
	}
	if err := s.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Probe(ctx, l); err != nil || !e.Observed {
		t.Errorf("stop probe %+v %v", e, err)
	}
	if err := s.Inject(ctx, l); err == nil || !strings.Contains(err.Error(), "already stopped") {
		t.Errorf("stopping a stopped service: %v", err)
	}
	if err := s.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := w.operations(); !reflect.DeepEqual(got, []string{"stop kube-proxy", "start kube-proxy"}) {
		t.Errorf("stop operations %q", got)
	}

	w.ops = nil
	r := Restart("worker1", lab.ServiceKubeProxy)
	if e, err := r.Probe(ctx, l); err != nil || e.Observed {
		t.Errorf("restart probe before inject %+v %v", e, err)
	}
	if err := r.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := r.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := w.operations(); !reflect.DeepEqual(got, []string{"stop kube-proxy", "start kube-proxy"}) {
		t.Errorf("restart operations %q (heal starts only a service that is down)", got)
	}
}

func TestPowerOffHealsOnlyAHostThatIsOff(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "pair")
	name := l.hosts[len(l.hosts)-1].name
	f := PowerOff(name)
	if e, err := f.Probe(ctx, l); err != nil || e.Observed {
		t.Errorf("probe of a host that is on: %+v %v", e, err)
	}
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	l.power[name] = "off"
	if e, err := f.Probe(ctx, l); err != nil || !e.Observed {
		t.Errorf("probe of a host that is off: %+v %v", e, err)
	}
	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	l.power[name] = "on"
	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := l.host(name).operations(); !reflect.DeepEqual(got, []string{"power off", "power on"}) {
		t.Errorf("operations %q", got)
	}
}

func TestMatchHolder(t *testing.T) {
	l := loadLab(t, "lab11")
	cps := lab.HostsWithRole(l, lab.RoleControlPlane)
	distinct := map[string]string{"cp1": "vm-a", "cp2": "vm-b", "cp3": "vm-c"}
	h, err := matchHolder("kube-scheduler", "vm-b_8e3f0c6a-1d2e-4f5a-9b8c-7d6e5f4a3b2c", cps, distinct)
	if err != nil || h.Name() != "cp2" {
		t.Errorf("by hostname: %v %v", h, err)
	}
	h, err = matchHolder("kube-scheduler", "cp3_8e3f0c6a", cps, distinct)
	if err != nil || h.Name() != "cp3" {
		t.Errorf("by lab name: %v %v", h, err)
	}
	shared := map[string]string{"cp1": "box", "cp2": "box", "cp3": "box"}
	if _, err := matchHolder("kube-controller-manager", "box_1234", cps, shared); err == nil || !strings.Contains(err.Error(), "share the hostname") {
		t.Errorf("shared hostname: %v", err)
	}
	if _, err := matchHolder("kube-controller-manager", "elsewhere_1234", cps, distinct); err == nil || !strings.Contains(err.Error(), "none of the lab's") {
		t.Errorf("unknown holder: %v", err)
	}
}

func TestParsers(t *testing.T) {
	if s, err := parseProcStatState("77 (a) b) c) S 1 77"); err != nil || s != "S" {
		t.Errorf("proc stat: %q %v", s, err)
	}
	if _, err := parseProcStatState("garbage"); err == nil {
		t.Error("malformed stat accepted")
	}
	listing := `Chain FAULTLINE-abcd (1 references)
    pkts      bytes target     prot opt in     out     source               destination
      12      720 DROP       0    --  *      *       0.0.0.0/0            10.1.1.1             statistic mode random probability 0.1
       3      180 DROP       0    --  *      *       0.0.0.0/0            10.1.1.2
`
	if n, err := parseChainDrops(listing); err != nil || n != 15 {
		t.Errorf("chain drops %d %v", n, err)
	}
	addrs := "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n2: eth0    inet 10.231.11.31/24 brd 10.231.11.255 scope global eth0\n3: pod0    inet 10.243.0.1/24 scope global pod0\n"
	if d, err := interfaceWithAddress(addrs, "10.231.11.31"); err != nil || d != "eth0" {
		t.Errorf("interface %q %v", d, err)
	}
	if _, err := interfaceWithAddress(addrs, "10.231.11.3"); err == nil {
		t.Error("prefix of an address matched")
	}
	if got := linkNames("5: vxlan.calico: <UP> mtu 1450\n6: flannel.1@NONE: <UP>\n"); !reflect.DeepEqual(got, []string{"vxlan.calico", "flannel.1"}) {
		t.Errorf("link names %q", got)
	}
}

func TestEtcdFaultsNeedEtcdAccess(t *testing.T) {
	l := loadLab(t, "pair")
	for _, f := range []fault.Fault{EtcdCompact(false), EtcdNoSpace(), KillLeader(lab.ServiceEtcd), EtcdLeaderFromPeers()} {
		err := f.Inject(context.Background(), l)
		if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "lab.EtcdAccess") {
			t.Errorf("%s: Inject = %v", fault.Describe(f), err)
		}
	}
}

// overlimitsAnswer is what `tc -s class show` prints for the throttled
// class with n overlimits.
func overlimitsAnswer(tag string, n int) lab.Result {
	return lab.Result{Stdout: "class htb " + tag + ":2 root prio 0 rate 512Kbit ceil 512Kbit burst 8Kb cburst 1600b \n Sent 769815 bytes 3524 pkt (dropped 0, overlimits " + strconv.Itoa(n) + " requeues 0) \n"}
}

// The throttle's overlimits counter only ever grows from inject on: a
// probe sees the effect when it grew since the previous probe, not when
// it is above zero, or a throttle whose traffic went elsewhere would be
// seen through the rest of the window.
func TestThrottleProbeSeesTheEffectOnlyWhileTheCounterGrows(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	etcd1 := l.host("etcd1")
	etcd1.answers["ip -o route get"] = lab.Result{Stdout: "10.231.11.12 dev eth0 src 10.231.11.11 uid 0 \\    cache \n"}
	etcd1.answers["tc qdisc show dev eth0 root"] = lab.Result{Stdout: "qdisc noqueue 0: root refcnt 2 \n"}
	f := Throttle("etcd1", []string{"etcd2"}, 512)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	tag := f.(*throttle).p.Tag
	for i, c := range []struct {
		overlimits int
		observed   bool
		detail     string
	}{
		{100, true, "etcd1 held back packets to [etcd2] over 512 kbit/s 100 times since the last probe (100 since inject)"},
		{100, false, "etcd1 held back packets to [etcd2] over 512 kbit/s 0 times since the last probe (100 since inject)"},
		{150, true, "50 times since the last probe (150 since inject)"},
	} {
		etcd1.answers["tc qdisc show | awk"] = overlimitsAnswer(tag, c.overlimits)
		e, err := f.Probe(ctx, l)
		if err != nil || e.Observed != c.observed || !strings.Contains(e.Detail, c.detail) {
			t.Errorf("probe %d with %d overlimits: %+v, %v; want observed %v, saying %q", i, c.overlimits, e, err, c.observed, c.detail)
		}
	}
}

// A process that did not inject the throttle (one healing from the
// ledger) has no earlier reading: it reports the total since inject and
// says that it cannot tell whether the counter still grows; its next
// probe can.
func TestThrottleProbeWithNoEarlierReadingSaysSo(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	f, err := fault.Decode(KindThrottle, Throttle("etcd1", []string{"etcd2"}, 512).Params())
	if err != nil {
		t.Fatal(err)
	}
	tag := f.(*throttle).p.Tag
	l.host("etcd1").answers["tc qdisc show | awk"] = overlimitsAnswer(tag, 3409)
	e, err := f.Probe(ctx, l)
	if err != nil || !e.Observed || !strings.Contains(e.Detail, "3409 since inject") || !strings.Contains(e.Detail, "no earlier reading") {
		t.Errorf("first probe of a fresh process: %+v, %v; want the total, saying it has no earlier reading", e, err)
	}
	if e, err := f.Probe(ctx, l); err != nil || e.Observed || strings.Contains(e.Detail, "no earlier reading") {
		t.Errorf("second probe, counter unchanged: %+v, %v; want not observed", e, err)
	}
}

// A throttle of the etcd leader holds commits back only while the member
// it throttles leads: once another leads, its probe sees no effect however
// the counter grows, and when etcd cannot say who leads the counter
// decides and the detail says the leadership was not known.
func TestEtcdLeaderThrottleProbeLosesTheEffectWhenTheLeaderMoves(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	etcd1 := l.host("etcd1")
	f := EtcdLeaderThrottle(512).(*throttle)
	// As Inject leaves it with etcd1 leading (finding the leader needs an
	// etcd, which this lab does not have).
	f.hosts = []lab.Host{etcd1}
	f.lastOverlimits = map[string]int64{"etcd1": 0}
	leader := func(h lab.Host, err error) {
		currentEtcdLeader = func(context.Context, lab.Lab) (lab.Host, error) { return h, err }
	}
	defer func(orig func(context.Context, lab.Lab) (lab.Host, error)) { currentEtcdLeader = orig }(currentEtcdLeader)
	for i, c := range []struct {
		overlimits int
		leader     lab.Host
		err        error
		observed   bool
		detail     string
	}{
		{100, etcd1, nil, true, "etcd1 still leads etcd"},
		{200, l.host("etcd2"), nil, false, "etcd2 leads etcd now, not the throttled etcd1, so the throttle no longer holds commits back"},
		{300, nil, errors.New("context deadline exceeded"), true, "whether etcd1 still leads etcd is not known: context deadline exceeded"},
	} {
		leader(c.leader, c.err)
		etcd1.answers["tc qdisc show | awk"] = overlimitsAnswer(f.p.Tag, c.overlimits)
		e, err := f.Probe(ctx, l)
		if err != nil || e.Observed != c.observed || !strings.Contains(e.Detail, c.detail) {
			t.Errorf("probe %d: %+v, %v; want observed %v, saying %q", i, e, err, c.observed, c.detail)
		}
	}
}

// The loss's drop count is cumulative since inject: only its growth since
// the previous probe shows the fault still acts.
func TestLossProbeSeesTheEffectOnlyWhileDropsGrow(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	f := Loss("worker1", []string{"role:control-plane"}, 12.5).(*loss)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	w := l.host("worker1")
	listing := func(n int) lab.Result {
		return lab.Result{Stdout: fmt.Sprintf("Chain FAULTLINE-%s (1 references)\n    pkts      bytes target     prot opt in     out     source               destination\n%8d    12345 DROP       all  --  *      *       0.0.0.0/0            10.231.11.21\n", f.p.Tag, n)}
	}
	for i, c := range []struct {
		drops    int
		observed bool
		detail   string
	}{
		{40, true, "since inject (this process has no earlier reading"},
		{40, false, "dropped 0 packets it sent to [role:control-plane] since the last probe (40 since inject)"},
		{55, true, "dropped 15 packets"},
	} {
		w.answers["iptables -w -n -v -x -L"] = listing(c.drops)
		e, err := f.Probe(ctx, l)
		if err != nil || e.Observed != c.observed || !strings.Contains(e.Detail, c.detail) {
			t.Errorf("probe %d with %d drops: %+v, %v; want observed %v, saying %q", i, c.drops, e, err, c.observed, c.detail)
		}
	}
}

func TestCompoundInjectsInOrderAndHealsInReverse(t *testing.T) {
	ctx := context.Background()
	l := loadLab(t, "lab11")
	w := l.host("worker1")
	c := Compound(StopService("worker1", lab.ServiceKubeProxy), Kill("worker1", lab.ServiceContainerd))
	if c.Class() != Kill("worker1", lab.ServiceContainerd).Class() {
		t.Errorf("class %s is not the last part's", c.Class())
	}
	if e, err := c.Probe(ctx, l); err != nil || e.Observed {
		t.Errorf("probe before inject %+v %v", e, err)
	}
	if err := c.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	e, err := c.Probe(ctx, l)
	if err != nil || !e.Observed || !strings.Contains(e.Detail, "[1 stop-service, seen]") || !strings.Contains(e.Detail, "[2 kill, seen]") {
		t.Errorf("probe of both parts %+v %v", e, err)
	}
	if err := c.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := w.operations(); !reflect.DeepEqual(got, []string{"stop kube-proxy", "signal containerd killed", "start containerd", "start kube-proxy"}) {
		t.Errorf("operations %q: inject in order, heal in reverse", got)
	}
	if share := fault.EffectShareOf(c); share != fault.DefaultEffectShare {
		t.Errorf("share %v", share)
	}
	for _, bad := range []fault.Fault{Compound(), Compound(Kill("worker1", lab.ServiceContainerd)), Compound(Kill("worker1", lab.ServiceContainerd), fault.Null(Kill("worker1", lab.ServiceKubelet)))} {
		if err := bad.Inject(ctx, l); err == nil {
			t.Errorf("%s injected", fault.Describe(bad))
		}
		if _, err := fault.Decode(bad.Kind(), bad.Params()); err == nil {
			t.Errorf("%s decoded", fault.Describe(bad))
		}
	}
}

// A cut's connect that timed out saw the cut for the whole wait; one that
// was refused or connected saw no cut, for no stretch.
func TestConnectEffectLastsTheWait(t *testing.T) {
	if e := connectEffect("timed out", "d"); !e.Observed || e.Lasted != connectProbeTimeout*time.Second {
		t.Errorf("timed out: %+v, want observed for %ds", e, connectProbeTimeout)
	}
	for _, res := range []string{"refused", "connected"} {
		if e := connectEffect(res, "d"); e.Observed || e.Lasted != 0 {
			t.Errorf("%s: %+v, want no effect", res, e)
		}
	}
}
