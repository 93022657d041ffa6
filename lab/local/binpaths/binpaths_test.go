package binpaths

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
)

var cachedBinaries = map[string][]string{
	"kubernetes-" + KubernetesVersion:              {"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"},
	"kubectl-" + KubernetesVersion:                 {"kubectl"},
	"etcd-" + EtcdVersion:                          {"etcd", "etcdctl"},
	"containerd-" + ContainerdVersion:              {"containerd", "ctr", "containerd-shim-runc-v2"},
	"crictl-" + CrictlVersion:                      {"crictl"},
	"kube-router-" + KubeRouterVersion:             {"kube-router"},
	"coredns-" + CoreDNSVersion:                    {"coredns"},
	"external-attacher-" + ExternalAttacherVersion: {"csi-attacher"},
}

func writeExecutable(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fakeSystem points the Debian and CNI lookups at a temporary directory
// holding executables for all of them, so the test does not depend on what
// the machine has installed.
func fakeSystem(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	saved, savedCNI := debianBinaries, cniDirs
	t.Cleanup(func() { debianBinaries, cniDirs = saved, savedCNI })
	debianBinaries = map[string]debianBinary{}
	for name, d := range saved {
		d.path = filepath.Join(root, "sbin", name)
		writeExecutable(t, d.path)
		debianBinaries[name] = d
	}
	cniDirs = []string{filepath.Join(root, "cni-missing"), filepath.Join(root, "cni")}
	for _, plugin := range CNIPlugins {
		writeExecutable(t, filepath.Join(root, "cni", plugin))
	}
	return root
}

func fullCache(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	for dir, names := range cachedBinaries {
		for _, name := range names {
			writeExecutable(t, filepath.Join(cache, "bins", dir, name))
		}
	}
	return cache
}

func noPath(string) (string, error) { return "", errors.New("not on PATH") }

func TestLocateFindsEveryBinary(t *testing.T) {
	root := fakeSystem(t)
	cache := fullCache(t)
	cfg := &lab.Config{Kubernetes: lab.KubernetesSettings{Version: KubernetesVersion, EtcdVersion: EtcdVersion}}
	p, err := locate(cfg, cache, noPath)
	if err != nil {
		t.Fatalf("locate: %v", err)
	}
	want := map[string]string{
		p.KubeAPIServer:        filepath.Join(cache, "bins", "kubernetes-v1.36.3", "kube-apiserver"),
		p.Kubelet:              filepath.Join(cache, "bins", "kubernetes-v1.36.3", "kubelet"),
		p.Kubectl:              filepath.Join(cache, "bins", "kubectl-v1.36.3", "kubectl"),
		p.Etcdctl:              filepath.Join(cache, "bins", "etcd-v3.6.8", "etcdctl"),
		p.ContainerdShimRuncV2: filepath.Join(cache, "bins", "containerd-v2.4.2", "containerd-shim-runc-v2"),
		p.Crictl:               filepath.Join(cache, "bins", "crictl-v1.37.0", "crictl"),
		p.Runc:                 filepath.Join(root, "sbin", "runc"),
		p.CNIBinDir:            filepath.Join(root, "cni"),
	}
	for got, w := range want {
		if got != w {
			t.Errorf("got path %q, want %q", got, w)
		}
	}
	if p.ContainerdDir() != filepath.Join(cache, "bins", "containerd-v2.4.2") {
		t.Errorf("ContainerdDir = %q", p.ContainerdDir())
	}
	for _, s := range []string{p.KubeControllerManager, p.KubeScheduler, p.KubeProxy, p.Etcd, p.Containerd, p.Ctr, p.Keepalived, p.Sshd, p.Nsenter} {
		if s == "" {
			t.Errorf("a path is empty: %+v", p)
		}
	}
}

func TestLocateNamesMissingBinariesAndTheBuildCommand(t *testing.T) {
	fakeSystem(t)
	cache := fullCache(t)
	if err := os.Remove(filepath.Join(cache, "bins", "kubernetes-v1.36.3", "kubelet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(cache, "bins", "etcd-v3.6.8", "etcd"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := locate(&lab.Config{}, cache, noPath)
	if err == nil {
		t.Fatal("locate succeeded with kubelet missing")
	}
	for _, want := range []string{"kubelet (missing)", "etcd (not an executable file)", "make bins"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "kube-apiserver") {
		t.Errorf("error %q names a binary that is present", err)
	}
}

// csi-attacher runs only on a storage host: a lab without one does not
// need it built, one with one does, and with no lab named every binary
// is needed.
func TestLocateNeedsTheAttacherOnlyForAStorageHost(t *testing.T) {
	fakeSystem(t)
	cache := fullCache(t)
	if err := os.Remove(filepath.Join(cache, "bins", "external-attacher-"+ExternalAttacherVersion, "csi-attacher")); err != nil {
		t.Fatal(err)
	}
	worker := lab.HostConfig{Name: "w1", Roles: []lab.Role{lab.RoleWorker}}
	storage := lab.HostConfig{Name: "s", Roles: []lab.Role{lab.RoleStorage}}
	if p, err := locate(&lab.Config{Hosts: []lab.HostConfig{worker}}, cache, noPath); err != nil || p.CSIAttacher != "" {
		t.Errorf("without a storage host: %q, %v", p.CSIAttacher, err)
	}
	for name, cfg := range map[string]*lab.Config{"with a storage host": {Hosts: []lab.HostConfig{worker, storage}}, "with no lab": nil} {
		if _, err := locate(cfg, cache, noPath); err == nil || !strings.Contains(err.Error(), "csi-attacher (missing)") {
			t.Errorf("%s: %v, want csi-attacher named missing", name, err)
		}
	}
}

func TestLocateNamesMissingDebianPackages(t *testing.T) {
	root := fakeSystem(t)
	cache := fullCache(t)
	if err := os.Remove(filepath.Join(root, "sbin", "keepalived")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "cni", "host-local")); err != nil {
		t.Fatal(err)
	}
	_, err := locate(nil, cache, noPath)
	if err == nil {
		t.Fatal("locate succeeded with keepalived and host-local missing")
	}
	for _, want := range []string{"apt-get install keepalived", "apt-get install containernetworking-plugins"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	// Found on PATH instead of the packaged location.
	elsewhere := filepath.Join(root, "elsewhere", "keepalived")
	writeExecutable(t, elsewhere)
	writeExecutable(t, filepath.Join(root, "cni", "host-local"))
	p, err := locate(nil, cache, func(name string) (string, error) {
		if name == "keepalived" {
			return elsewhere, nil
		}
		return "", errors.New("not on PATH")
	})
	if err != nil {
		t.Fatalf("locate with keepalived on PATH: %v", err)
	}
	if p.Keepalived != elsewhere {
		t.Errorf("Keepalived = %q, want %q", p.Keepalived, elsewhere)
	}
}

func TestLocateRejectsVersionsTheBuildDoesNotPin(t *testing.T) {
	fakeSystem(t)
	cache := fullCache(t)
	cfg := &lab.Config{Kubernetes: lab.KubernetesSettings{Version: "v1.35.0", EtcdVersion: "v3.5.21"}}
	_, err := locate(cfg, cache, noPath)
	if err == nil {
		t.Fatal("locate accepted versions nothing builds")
	}
	for _, want := range []string{"kubernetes.version v1.35.0", "kubernetes.etcdVersion v3.5.21"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// The build script and this package must agree on versions, or Locate would
// look for binaries the script never writes.
func TestVersionsMatchTheBuildScript(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "bins", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for variable, want := range map[string]string{
		"k8s_version":               KubernetesVersion,
		"etcd_version":              EtcdVersion,
		"containerd_version":        ContainerdVersion,
		"crictl_version":            CrictlVersion,
		"external_attacher_version": ExternalAttacherVersion,
	} {
		m := regexp.MustCompile(`(?m)^` + variable + `=(\S+)$`).FindSubmatch(script)
		if m == nil {
			t.Errorf("build.sh does not set %s", variable)
			continue
		}
		if string(m[1]) != want {
			t.Errorf("build.sh sets %s=%s, this package says %s", variable, m[1], want)
		}
	}
}

func TestCacheDirHonoursEnvironment(t *testing.T) {
	t.Setenv("FAULTLINE_CACHE", "/somewhere/else")
	if got := CacheDir(); got != "/somewhere/else" {
		t.Errorf("CacheDir = %q", got)
	}
	t.Setenv("FAULTLINE_CACHE", "")
	if got := CacheDir(); got != DefaultCacheDir {
		t.Errorf("CacheDir = %q, want %q", got, DefaultCacheDir)
	}
}

// The script's own listing (build.sh -l) names exactly the paths Locate
// looks at, so the two cannot drift apart in binary names or directories.
func TestBuildScriptListsWhatLocateExpects(t *testing.T) {
	cache := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "bins", "build.sh"), "-l")
	cmd.Env = append(os.Environ(), "FAULTLINE_CACHE="+cache)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build.sh -l: %v", err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("build.sh -l printed %q", line)
		}
		listed = append(listed, fields[2])
	}
	var want []string
	for _, b := range builtBinaries(&Paths{}) {
		want = append(want, filepath.Join(cache, "bins", b.dir, b.name))
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("build.sh -l lists\n%s\nLocate expects\n%s", strings.Join(listed, "\n"), strings.Join(want, "\n"))
	}
}
