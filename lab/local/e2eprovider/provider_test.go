package e2eprovider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local"
	"github.com/faultline/faultline/lab/local/internal/state"
	_ "github.com/faultline/faultline/lab/static"
)

// unitLabFile writes a local lab file whose name, addresses and state dir
// no real lab has, so that nothing a test does can reach a running lab.
func unitLabFile(t *testing.T, profile string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "flunit-e2e.yaml")
	content := fmt.Sprintf(`name: flunit-e2e
kind: local
lab: true
stateDir: %s
kubernetes: {version: v1.36.3, etcdVersion: v3.6.8, timerProfile: %s}
network: {management: 10.199.77.0/24, pods: 10.198.0.0/16, services: 10.199.78.0/24}
hosts:
  - {name: e2e-cp, roles: [etcd, control-plane], address: 10.199.77.11}
  - {name: e2e-worker, roles: [worker], address: 10.199.77.21}
`, filepath.Join(dir, "state"), profile)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// markUp writes the lab's record, which is what says a local lab is up.
func markUp(t *testing.T, labFile string) {
	t.Helper()
	c, err := lab.LoadConfig(labFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := state.Save(c.StateDir, &state.Record{Config: c}); err != nil {
		t.Fatal(err)
	}
}

// withUnitLab is a provider holding the unit lab, opened but not up, as
// if Create had returned.
func withUnitLab(t *testing.T) *Provider {
	t.Helper()
	c, err := lab.LoadConfig(unitLabFile(t, "fast"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := local.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := New()
	p.WithName("unit")
	p.lab, p.rc = l, &rest.Config{Host: "https://10.199.77.11:6443"}
	return p
}

func wantErr(t *testing.T, what string, err error, says ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one saying %q", what, says)
		return
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q does not say %q", what, err, s)
		}
	}
}

// envfuncs finds the optional interfaces by type assertion on the
// provider it keeps (LoadImageToCluster, PerformNodeOperation): the value
// NewProvider gives must satisfy them, and the builder methods must hand
// back that same provider.
func TestTheProviderIsEveryKindOfFrameworkProvider(t *testing.T) {
	p := NewProvider()
	if _, ok := p.(support.E2EClusterProviderWithImageLoader); !ok {
		t.Error("not an E2EClusterProviderWithImageLoader")
	}
	if _, ok := p.(support.E2EClusterProviderWithLifeCycle); !ok {
		t.Error("not an E2EClusterProviderWithLifeCycle")
	}
	same := p.SetDefaults().WithName("pair").WithOpts(WithLab("pair")).WithVersion("1.36.3").WithPath("")
	if same != p {
		t.Error("a builder method returned another provider")
	}
	got, ok := envfuncs.GetClusterFromContext(context.WithValue(context.Background(), support.ClusterNameContextKey("pair"), p), "pair")
	if !ok || got != p {
		t.Error("envfuncs does not find the provider under its cluster name")
	}
}

// otherProvider stands for any other provider of the framework.
type otherProvider struct{ support.E2EClusterProvider }

func TestOptionsSetTheirSettingAndLeaveOtherProvidersAlone(t *testing.T) {
	var progress bytes.Buffer
	opts := []support.ClusterOpts{WithLab("testdata/labs/pair.yaml"), WithTimerProfile("fast"), UseRunning(), KeepOnFailure(), WithProgress(&progress)}
	p := New()
	p.WithOpts(opts...)
	if p.labArg != "testdata/labs/pair.yaml" || p.profile != "fast" || !p.useRunning || !p.keepOnFailure || p.progress != &progress {
		t.Errorf("options not applied: %+v", p)
	}
	other := otherProvider{}
	for _, o := range opts {
		o(other) // must not panic
	}
	if p.WithVersion("1.36.3"); p.version != "v1.36.3" {
		t.Errorf("WithVersion(1.36.3) kept %q, want v1.36.3", p.version)
	}
	if p.WithVersion("v1.36.3"); p.version != "v1.36.3" {
		t.Errorf("WithVersion(v1.36.3) kept %q", p.version)
	}
}

func TestCreateArgsAreThoseOfLabUp(t *testing.T) {
	for _, c := range []struct {
		args          []string
		lab, profile  string
		wantErrSaying string
	}{
		{args: nil},
		{args: []string{"--lab", "pair"}, lab: "pair"},
		{args: []string{"--lab=testdata/labs/pair.yaml", "--profile=fast"}, lab: "testdata/labs/pair.yaml", profile: "fast"},
		{args: []string{"--topology", "lab11", "--profile", "kubernetes-defaults"}, lab: "lab11", profile: "kubernetes-defaults"},
		{args: []string{"--lab", "pair", "--topology", "pair"}, lab: "pair"},
		{args: []string{"--lab", "pair", "--topology", "lab11"}, wantErrSaying: `--lab "pair" and --topology "lab11" name different labs`},
		{args: []string{"--config", "kind.yaml"}, wantErrSaying: "unknown flag: --config"},
		{args: []string{"pair"}, wantErrSaying: `unexpected ["pair"]`},
		{args: []string{"--lab"}, wantErrSaying: "flag needs an argument"},
		{args: []string{"--lab="}, wantErrSaying: "--lab is empty"},
		{args: []string{"--profile", ""}, wantErrSaying: "--profile is empty"},
	} {
		a, err := parseCreateArgs(c.args)
		if c.wantErrSaying != "" {
			wantErr(t, fmt.Sprint(c.args), err, c.wantErrSaying)
			continue
		}
		if err != nil || a.lab != c.lab || a.profile != c.profile {
			t.Errorf("%q: %+v, %v; want lab %q, profile %q", c.args, a, err, c.lab, c.profile)
		}
	}
}

func TestTheLabComesFromOnePlace(t *testing.T) {
	for _, c := range []struct {
		what                  string
		name, labArg, profile string
		configFile            string
		args                  []string
		wantLab, wantProfile  string
		wantErrSaying         string
	}{
		{what: "the cluster name", name: "pair", wantLab: "pair"},
		{what: "WithLab over the cluster name", name: "e2e", labArg: "lab11", wantLab: "lab11"},
		{what: "--lab", name: "e2e", args: []string{"--lab", "racks"}, wantLab: "racks"},
		{what: "CreateWithConfig", name: "e2e", configFile: "my-lab.yaml", wantLab: "my-lab.yaml"},
		{what: "WithLab and --lab agreeing", labArg: "pair", args: []string{"--lab=pair"}, wantLab: "pair"},
		{what: "WithLab and --lab differing", labArg: "pair", args: []string{"--lab=lab11"}, wantErrSaying: `name different labs`},
		{what: "WithLab and CreateWithConfig differing", labArg: "pair", configFile: "lab11.yaml", wantErrSaying: `"lab11.yaml" and an earlier setting "pair"`},
		{what: "nothing", wantErrSaying: "no lab: give a topology name as the cluster name"},
		{what: "WithTimerProfile", name: "pair", profile: "fast", wantLab: "pair", wantProfile: "fast"},
		{what: "--profile", name: "pair", args: []string{"--profile=kubernetes-defaults"}, wantLab: "pair", wantProfile: "kubernetes-defaults"},
		{what: "the profiles differing", name: "pair", profile: "fast", args: []string{"--profile=kubernetes-defaults"}, wantErrSaying: `WithTimerProfile "fast" and Create's --profile "kubernetes-defaults" differ`},
		{what: "no such profile", name: "pair", profile: "slow", wantErrSaying: `timer profile "slow" is not one (kubernetes-defaults or fast)`},
	} {
		p := New()
		p.name, p.labArg, p.profile = c.name, c.labArg, c.profile
		s, err := p.settings(c.configFile, c.args)
		if c.wantErrSaying != "" {
			wantErr(t, c.what, err, c.wantErrSaying)
			continue
		}
		if err != nil || s.lab != c.wantLab || s.profile != c.wantProfile {
			t.Errorf("%s: %+v, %v; want lab %q, profile %q", c.what, s, err, c.wantLab, c.wantProfile)
		}
	}
}

// Every refusal below comes before the lab is brought up: none of these
// may reach Up (the unit tests may run as root).
func TestCreateRefusesBeforeBringingAnythingUp(t *testing.T) {
	ctx := context.Background()
	static := filepath.Join("..", "..", "..", "testdata", "labs", "static-example.yaml")
	free := unitLabFile(t, "kubernetes-defaults")
	up := unitLabFile(t, "kubernetes-defaults")
	markUp(t, up)
	for _, c := range []struct {
		what    string
		opts    []support.ClusterOpts
		path    string
		args    []string
		config  string
		wantErr []string
	}{
		{what: "WithPath", opts: []support.ClusterOpts{WithLab(free)}, path: "/usr/local/bin/kind", wantErr: []string{`WithPath("/usr/local/bin/kind")`, "binary cache"}},
		{what: "an unknown topology", opts: []support.ClusterOpts{WithLab("no-such-topology")}, wantErr: []string{`unknown lab "no-such-topology"`}},
		{what: "a lab file that is not there", config: "/nonexistent/lab.yaml", wantErr: []string{"/nonexistent/lab.yaml", "does not exist"}},
		{what: "a static lab", config: static, wantErr: []string{"is a static lab", "local labs only"}},
		{what: "bad arguments", opts: []support.ClusterOpts{WithLab(free)}, args: []string{"--image", "kindest/node"}, wantErr: []string{"unknown flag: --image"}},
		{what: "a bad profile", opts: []support.ClusterOpts{WithLab(free), WithTimerProfile("slow")}, wantErr: []string{`"slow" is not one`}},
		{what: "a lab that is up", opts: []support.ClusterOpts{WithLab(up)}, wantErr: []string{"lab flunit-e2e is already up", "UseRunning()", "faultline lab down --lab " + up}},
		{what: "UseRunning, the lab not up", opts: []support.ClusterOpts{WithLab(free), UseRunning()}, wantErr: []string{"UseRunning: lab flunit-e2e is not up"}},
		{what: "UseRunning, the lab up with other timers", opts: []support.ClusterOpts{WithLab(up), UseRunning(), WithTimerProfile("fast")}, wantErr: []string{"is up with timer profile kubernetes-defaults, not fast"}},
	} {
		p := New()
		p.WithName("e2e").WithOpts(c.opts...)
		if c.path != "" {
			p.WithPath(c.path)
		}
		var err error
		if c.config != "" {
			_, err = p.CreateWithConfig(ctx, c.config)
		} else {
			_, err = p.Create(ctx, c.args...)
		}
		wantErr(t, c.what, err, c.wantErr...)
		if p.Lab() != nil || p.GetKubeconfig() != "" {
			t.Errorf("%s: the provider holds a lab after a failed Create", c.what)
		}
	}
	if _, err := New().CreateWithConfig(ctx, ""); err == nil {
		t.Error("CreateWithConfig with no file accepted")
	}
	for _, f := range []string{free} {
		c, _ := lab.LoadConfig(f)
		if state.Exists(c.StateDir) {
			t.Errorf("a refused Create left state in %s", c.StateDir)
		}
	}
}

func TestEveryOperationBeforeCreateSaysThereIsNoLab(t *testing.T) {
	ctx := context.Background()
	p := New()
	p.WithName("pair")
	node := &support.Node{Name: "pair-worker", Cluster: "pair"}
	for op, err := range map[string]error{
		"Destroy":             p.Destroy(ctx),
		"WaitForControlPlane": p.WaitForControlPlane(ctx, nil),
		"ExportLogs":          p.ExportLogs(ctx, t.TempDir()),
		"LoadImage":           p.LoadImage(ctx, "nginx:1.27"),
		"LoadImageArchive":    p.LoadImageArchive(ctx, "image.tar"),
		"StopNode":            p.StopNode(ctx, node),
		"StartNode":           p.StartNode(ctx, node),
		"GenerateKubeconfig": func() error {
			_, err := p.GenerateKubeconfig()
			return err
		}(),
		"ListNode": func() error {
			_, err := p.ListNode(ctx)
			return err
		}(),
	} {
		wantErr(t, op, err, op, "no lab (Create has not succeeded)")
	}
	if p.GetKubeconfig() != "" || p.GetKubectlContext() != "" || p.KubernetesRestConfig() != nil || p.Lab() != nil {
		t.Error("a provider without a lab reports a kubeconfig, context, REST config or lab")
	}
}

func TestNodesCannotBeAddedOrRemoved(t *testing.T) {
	p := withUnitLab(t)
	for op, err := range map[string]error{
		"AddNode":    p.AddNode(context.Background(), &support.Node{Name: "worker4"}),
		"RemoveNode": p.RemoveNode(context.Background(), &support.Node{Name: "e2e-worker"}),
	} {
		if !errors.Is(err, lab.ErrUnsupported) {
			t.Errorf("%s: %v, want lab.ErrUnsupported", op, err)
		}
		wantErr(t, op, err, op, "lab file")
	}
}

// StopNode and StartNode check what they are given and refuse a host of
// a lab that is not up, before powering anything (the unit lab is never
// up, so every call here must be refused).
func TestNodeOperationsCheckTheirInput(t *testing.T) {
	p := withUnitLab(t)
	ctx := context.Background()
	for _, op := range []struct {
		name string
		do   func(context.Context, *support.Node, ...string) error
	}{{"StopNode", p.StopNode}, {"StartNode", p.StartNode}} {
		wantErr(t, op.name+" nil", op.do(ctx, nil), "no node name given")
		wantErr(t, op.name+" unnamed", op.do(ctx, &support.Node{}), "no node name given")
		wantErr(t, op.name+" args", op.do(ctx, &support.Node{Name: "e2e-worker"}, "--force"), `takes no arguments, got ["--force"]`)
		wantErr(t, op.name+" other cluster", op.do(ctx, &support.Node{Name: "e2e-worker", Cluster: "kind"}), `the node is of cluster "kind", this provider is cluster "unit"`)
		wantErr(t, op.name+" unknown host", op.do(ctx, &support.Node{Name: "worker9"}), `no host "worker9"`, "e2e-cp", "e2e-worker")
		wantErr(t, op.name+" lab not up", op.do(ctx, &support.Node{Name: "e2e-worker", Cluster: "unit"}), "the host is absent (is lab flunit-e2e up?)")
	}
	nodes, err := p.ListNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []support.Node{
		{Name: "e2e-cp", Role: "etcd,control-plane", Cluster: "unit", State: PowerAbsent},
		{Name: "e2e-worker", Role: "worker", Cluster: "unit", State: PowerAbsent},
	}
	if len(nodes) != len(want) {
		t.Fatalf("ListNode: %+v, want %+v", nodes, want)
	}
	for i, n := range nodes {
		w := want[i]
		if n.Name != w.Name || n.Role != w.Role || n.Cluster != w.Cluster || n.State != w.State || n.IP == nil {
			t.Errorf("ListNode[%d] = %+v, want %+v with an IP", i, n, w)
		}
	}
	if nodes[1].IP.String() != "10.199.77.21" {
		t.Errorf("ListNode: e2e-worker's IP %s, want 10.199.77.21", nodes[1].IP)
	}
	if _, err := p.ListNode(ctx, "-o", "json"); err == nil {
		t.Error("ListNode with arguments accepted")
	}
}

func TestLoadImageArchiveGoesThroughTheLabsChecks(t *testing.T) {
	p := withUnitLab(t)
	ctx := context.Background()
	wantErr(t, "no archive", p.LoadImageArchive(ctx, ""), "no archive given")
	wantErr(t, "missing archive", p.LoadImageArchive(ctx, filepath.Join(t.TempDir(), "absent.tar")), "LoadImageArchive", "absent.tar")
	wantErr(t, "unknown host", p.LoadImageArchive(ctx, "image.tar", "worker9"), `no host "worker9"`)
	wantErr(t, "no image", p.LoadImage(ctx, ""), "no image given")
}

// fakeTool puts an executable script named name on an otherwise empty
// PATH.
func fakeTool(t *testing.T, name, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

func TestSaveImageUsesDockerOrPodmanAndSaysWhenNeitherIsThere(t *testing.T) {
	ctx := context.Background()
	archive := func() string { return filepath.Join(t.TempDir(), "image.tar") }

	t.Setenv("PATH", t.TempDir())
	wantErr(t, "no tool", saveImage(ctx, "web:dev", archive()), "neither docker nor podman is on PATH", "LoadImageArchive")

	// The script writes its arguments where -o says, so the test reads
	// how it was called.
	fakeTool(t, "podman", `[ "$1" = save ] && [ "$2" = -o ] && echo "$0 $*" > "$3"`)
	out := archive()
	if err := saveImage(ctx, "web:dev", out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if !strings.HasSuffix(strings.TrimSpace(string(got)), "podman save -o "+out+" web:dev") {
		t.Errorf("podman was called as %q", got)
	}

	fakeTool(t, "docker", `echo "Error response from daemon: reference does not exist" >&2; exit 1`)
	wantErr(t, "the tool fails", saveImage(ctx, "web:dev", archive()), "saving web:dev with", "docker", "reference does not exist")

	fakeTool(t, "docker", `exit 0`)
	wantErr(t, "the tool writes nothing", saveImage(ctx, "web:dev", archive()), "it wrote no archive")
}

// fakeClient is a klient.Client at another address.
type fakeClient struct{ rc *rest.Config }

func (f fakeClient) RESTConfig() *rest.Config                 { return f.rc }
func (f fakeClient) Resources(...string) *resources.Resources { return nil }

var _ klient.Client = fakeClient{}

func TestWaitForControlPlaneRefusesAClientOfAnotherCluster(t *testing.T) {
	p := withUnitLab(t)
	err := p.WaitForControlPlane(context.Background(), fakeClient{&rest.Config{Host: "https://127.0.0.1:39443"}})
	wantErr(t, "another cluster's client", err, "talks to https://127.0.0.1:39443", "https://10.199.77.11:6443")
	if p.Lab() == nil {
		t.Error("a refused client made the provider let go of its lab")
	}
}
