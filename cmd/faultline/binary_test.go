package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
)

// binary is the faultline program built once for the tests that run it as
// a user would.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "faultline-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// No test may find the labs that are up on this machine: every lab
	// command that names no lab looks under the state root.
	if err := os.Setenv(lab.EnvStateDir, filepath.Join(dir, "state")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "faultline")
	build := exec.Command("go", "build", "-o", binary, "-ldflags", "-X main.gitCommit=0123456789abcdef -X main.version=v0.0.0-test", ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building faultline:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// faultline runs the built binary in dir (the package directory if empty).
func faultline(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FAULTLINE_LAB=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running faultline %v: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

func (r result) expect(t *testing.T, code int, stderrHas ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range stderrHas {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"bogus"}, []string{`unknown command "bogus" for "faultline"`, "commands: heal, lab, rejudge, report, version", "Run 'faultline --help' for usage."}},
		{[]string{"labb"}, []string{`unknown command "labb"`, "did you mean lab?"}},
		{[]string{"lab", "stat"}, []string{`unknown command "stat" for "faultline lab"`, "did you mean status?", "Run 'faultline lab --help'"}},
		{[]string{"--bogus"}, []string{"unknown flag: --bogus"}},
		{[]string{"lab", "status", "--bogus"}, []string{"unknown flag: --bogus", "Run 'faultline lab status --help'"}},
		{[]string{"lab", "status", "extra"}, []string{`unknown command "extra" for "faultline lab status"`}},
		{[]string{"lab", "up", "--profile", "slow"}, []string{`--profile "slow" is not a timer profile`}},
		{[]string{"lab", "status", "--lab", "lab11", "--topology", "pair"}, []string{`--lab "lab11" and --topology "pair" name different labs`}},
		{[]string{"report"}, []string{"no run folders given"}},
		{[]string{"rejudge"}, []string{"no run folders given", "Run 'faultline rejudge --help'"}},
		{[]string{"report", "--format", "pdf", "x"}, []string{`--format "pdf": give markdown, csv, latex or html`}},
		{[]string{"report", "--by", "class:gray", "x"}, []string{"not a dimension name"}},
		{[]string{"version", "now"}, []string{`unknown command "now"`}},
		{[]string{"heal", "now"}, []string{`unknown command "now" for "faultline heal"`}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := faultline(t, "", c.args...)
			r.expect(t, exitUsage, c.want...)
			if r.stdout != "" {
				t.Errorf("a usage error printed to stdout: %q", r.stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"help"}, {"lab"}, {"lab", "--help"}, {"report", "--help"}, {"rejudge", "--help"}} {
		r := faultline(t, "", args...)
		r.expect(t, exitOK)
		if !strings.Contains(r.stdout, "Usage:") {
			t.Errorf("faultline %v: no usage on stdout:\n%s", args, r.stdout)
		}
	}
	r := faultline(t, "", "report", "--help")
	for _, want := range []string{"--by", "--format", "Wilson", "FAULT_INEFFECTIVE"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report --help lacks %q", want)
		}
	}
}

func TestLabFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeTestFile(t, bad, `name: broken
kind: local
lab: true
network: {management: 10.231.99.0/24, pods: 10.240.0.0/16, services: 10.250.99.0/24}
hosts:
  - {name: etcd1, roles: [etcd], address: 10.231.99.11}
  - {name: cp1, roles: [master], address: 10.231.99.21}
`)
	unknownField := filepath.Join(dir, "typo.yaml")
	writeTestFile(t, unknownField, "name: typo\nkind: local\nlab: true\nhostz: []\n")

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"missing file", []string{"lab", "status", "--lab", filepath.Join(dir, "missing.yaml")}, []string{"missing.yaml", "does not exist"}},
		{"unknown topology", []string{"lab", "status", "--lab", "nosuchlab"}, []string{`unknown lab "nosuchlab"`, "testdata/labs/nosuchlab.yaml"}},
		{"malformed field", []string{"lab", "status", "--lab", bad}, []string{bad, `hosts[1].roles[0]: "master" is not a role`}},
		{"unknown field", []string{"lab", "up", "--lab", unknownField}, []string{unknownField, "hostz"}},
		{"reset malformed", []string{"lab", "reset", "--topology", bad}, []string{`hosts[1].roles[0]`}},
		{"heal malformed", []string{"heal", "--lab", bad}, []string{`hosts[1].roles[0]`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			faultline(t, "", c.args...).expect(t, exitError, c.want...)
		})
	}
}

// TestUnknownKindNamesTheRegisteredOnes reads a lab file of a kind no
// backend registers and expects the error to list every kind the program
// links: all four, through lab/backends.
func TestUnknownKindNamesTheRegisteredOnes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unknown.yaml")
	writeTestFile(t, path, "name: unlinked\nkind: openstack\nlab: true\nnetwork: {management: 10.231.98.0/24}\n"+
		"hosts: [{name: cp1, roles: [control-plane], address: 10.231.98.21}]\n")
	faultline(t, "", "lab", "status", "--lab", path).expect(t, exitError,
		`kind: "openstack" is not a lab kind this program knows (registered: local, proxmox, static, vsphere)`)
}

func TestVersion(t *testing.T) {
	r := faultline(t, "", "version")
	r.expect(t, exitOK)
	for _, want := range []string{"faultline v0.0.0-test", "commit:     0123456789abcdef", "kubernetes: " + pinnedKubernetesVersion, "etcd:       " + pinnedEtcdVersion, "module:     github.com/faultline/faultline"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("version lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestPinnedVersionsMatchTopologies keeps `faultline version` honest about
// what the shipped local topologies run; other kinds run whatever their
// cluster runs, and pin nothing or their own.
func TestPinnedVersionsMatchTopologies(t *testing.T) {
	files, err := filepath.Glob("../../testdata/labs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no topologies found: %v", err)
	}
	for _, f := range files {
		c, err := lab.LoadConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		if c.Kind != "local" {
			continue
		}
		if c.Kubernetes.Version != pinnedKubernetesVersion || c.Kubernetes.EtcdVersion != pinnedEtcdVersion {
			t.Errorf("%s pins Kubernetes %s and etcd %s; faultline version says %s and %s",
				f, c.Kubernetes.Version, c.Kubernetes.EtcdVersion, pinnedKubernetesVersion, pinnedEtcdVersion)
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
