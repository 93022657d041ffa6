package static_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/internal/sshdtest"
	"github.com/faultline/faultline/lab/static"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: example
  cluster: {server: "https://192.168.56.100:6443", certificate-authority-data: ""}
contexts:
- name: admin
  context: {cluster: example, user: admin}
current-context: admin
users:
- name: admin
  user: {token: not-a-real-token}
`

// exampleLab opens testdata/labs/static-example.yaml with files of the
// test's own in place of the user's key and kubeconfig. Nothing is dialled.
func exampleLab(t *testing.T) lab.Lab {
	t.Helper()
	c, err := lab.LoadConfig("../../testdata/labs/static-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c.SSH.IdentityFile = sshdtest.NewKey(t, dir, "id_ed25519").Path
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	c.StateDir = filepath.Join(dir, "state")
	os.WriteFile(c.Kubeconfig, []byte(kubeconfig), 0o600)
	l, err := lab.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestExampleLabSaysItHasNoSnapshot(t *testing.T) {
	l := exampleLab(t)
	info := l.Info()
	if info.Kind != static.Kind || info.ResetKind != lab.ResetCleanup || info.Name != "static-example" {
		t.Fatalf("Info = %+v", info)
	}
	if !strings.Contains(info.Timers["profileSource"], "declared") {
		t.Errorf("Info does not say the timer profile is only declared: %+v", info.Timers)
	}
	if len(l.Hosts()) != 3 {
		t.Fatalf("%d hosts, want 3", len(l.Hosts()))
	}
}

func TestPowerIsUnsupportedNamingTheKind(t *testing.T) {
	l := exampleLab(t)
	h, err := l.Host("worker1")
	if err != nil {
		t.Fatal(err)
	}
	err = h.PowerOff(context.Background())
	if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "static lab") || !strings.Contains(err.Error(), "worker1") {
		t.Fatalf("PowerOff = %v, want lab.ErrUnsupported naming the static lab and the host", err)
	}
	if _, err := l.Host("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Host(nope) = %v, want an error naming it", err)
	}
}

func TestKubeconfigForOneAPIServer(t *testing.T) {
	l := exampleLab(t)
	if p, err := l.Kubeconfig(""); err != nil || p != l.Config().Kubeconfig {
		t.Fatalf("Kubeconfig(\"\") = %q, %v", p, err)
	}
	p, err := l.Kubeconfig("cp1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Clusters["example"].Server; got != "https://192.168.56.10:6443" {
		t.Fatalf("server for cp1 = %q", got)
	}
	if got := cfg.AuthInfos["admin"].Token; got != "not-a-real-token" {
		t.Fatalf("credentials not carried over")
	}
	if _, err := l.Kubeconfig("worker1"); err == nil || !strings.Contains(err.Error(), "not a control-plane host") {
		t.Fatalf("Kubeconfig(worker1) = %v, want a refusal", err)
	}
}

func TestUnreadableIdentityFileNamesTheHost(t *testing.T) {
	c, err := lab.LoadConfig("../../testdata/labs/static-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.SSH.IdentityFile = filepath.Join(t.TempDir(), "missing")
	_, err = lab.Open(c)
	if err == nil || !strings.Contains(err.Error(), "hosts[0]") || !strings.Contains(err.Error(), "reading identity file") {
		t.Fatalf("Open with a missing identity file: %v", err)
	}
}

func TestResetRefusesALabFileWithoutLabTrue(t *testing.T) {
	l := exampleLab(t)
	l.Config().Lab = false
	err := l.Reset(context.Background())
	if err == nil || !strings.Contains(err.Error(), "lab: true") {
		t.Fatalf("Reset of a config without lab: true = %v, want a refusal", err)
	}
}
