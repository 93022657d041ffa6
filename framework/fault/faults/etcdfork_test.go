package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
)

// forkingLab is a recording lab that offers an etcd fork on its
// control-plane hosts.
type forkingLab struct {
	*recordingLab
	fork lab.EtcdFork
}

func (l forkingLab) EtcdFork(host string) (lab.EtcdFork, error) {
	h, err := l.Host(host)
	if err != nil {
		return lab.EtcdFork{}, err
	}
	if !h.HasRole(lab.RoleControlPlane) {
		return lab.EtcdFork{}, fmt.Errorf("%s runs no API server", host)
	}
	return l.fork, nil
}

func TestEtcdForkNeedsTheLabsHelpAndAControlPlaneHost(t *testing.T) {
	l := loadLab(t, "lab11")
	err := APIServerEtcdFork("cp2").Inject(context.Background(), l)
	if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "lab.EtcdForks") {
		t.Errorf("Inject on a lab without forks = %v", err)
	}
	fl := forkingLab{recordingLab: l, fork: lab.EtcdFork{Binary: "/opt/etcd", Member: "https://10.0.0.21:2379", Dir: "/run/fork"}}
	for _, host := range []string{"worker1", "nosuch"} {
		if err := APIServerEtcdFork(host).Inject(context.Background(), fl); err == nil {
			t.Errorf("Inject on %s succeeded", host)
		}
	}
	for _, bad := range []lab.EtcdFork{
		{Binary: "/opt/etcd", Member: "https://etcd1:2379", Dir: "/run/fork"},
		{Binary: "/opt/etcd", Member: "https://10.0.0.21", Dir: "/run/fork"},
		{Binary: "/opt/etcd", Member: "https://10.0.0.21:2379", Dir: "run/fork"},
	} {
		fl.fork = bad
		if err := APIServerEtcdFork("cp2").Inject(context.Background(), fl); err == nil {
			t.Errorf("Inject with %+v succeeded", bad)
		}
	}
	if ch := l.changes(); len(ch) > 0 {
		t.Errorf("refused injects changed things: %v", ch)
	}
}

func TestEtcdForkScripts(t *testing.T) {
	l := loadLab(t, "lab11")
	fl := forkingLab{recordingLab: l, fork: lab.EtcdFork{
		Binary: "/opt/etcd", Member: "https://10.0.0.21:2379", Others: []string{"https://10.0.0.22:2379", "https://10.0.0.23:2379"},
		CertFile: "/pki/etcd1.crt", KeyFile: "/pki/etcd1.key", TrustedCAFile: "/pki/ca.crt", Dir: "/run/fork/",
	}}
	f := APIServerEtcdFork("cp2").(*etcdFork)
	s, err := f.setup(fl, "test")
	if err != nil {
		t.Fatal(err)
	}
	dir := "/run/fork/" + f.p.Tag
	if s.dir != dir {
		t.Errorf("fork dir %s, want %s", s.dir, dir)
	}
	start := f.startScript(s)
	addr := s.h.Address()
	for _, want := range []string{
		"! [ -e '" + dir + "' ]", "sport = :23790 or sport = :23791",
		"setsid '/opt/etcd'", "'--data-dir=" + dir + "/data'",
		"'--listen-client-urls=https://" + addr + ":23790'", "'--listen-peer-urls=http://127.0.0.1:23791'",
		"'--cert-file=/pki/etcd1.crt'", "'--key-file=/pki/etcd1.key'", "'--client-cert-auth'", "'--trusted-ca-file=/pki/ca.crt'",
		"echo $! > '" + dir + "/pid'",
	} {
		if !strings.Contains(start, want) {
			t.Errorf("start script lacks %q:\n%s", want, start)
		}
	}
	nat := f.natChainScript(s)
	if want := "-p tcp -d 10.0.0.21 --dport 2379 -j DNAT --to-destination " + addr + ":23790"; !strings.Contains(nat, want) || !strings.Contains(nat, "-t nat -I OUTPUT 1 -j "+f.chain()) {
		t.Errorf("nat script:\n%s\nwant %q and the OUTPUT jump", nat, want)
	}
	refuse := f.refuseRules(s)
	if len(refuse.rules) != 2 || !strings.Contains(refuse.rules[0], "-d 10.0.0.22 --dport 2379 -j REJECT --reject-with tcp-reset") || strings.Join(refuse.hooks, ",") != "OUTPUT" {
		t.Errorf("refuse rules %+v", refuse)
	}
	if rm := removeNatChainScript(f.chain()); !strings.Contains(rm, "-t nat -D OUTPUT -j "+f.chain()) || !strings.Contains(rm, "-t nat -X "+f.chain()) {
		t.Errorf("nat removal: %s", rm)
	}
}
