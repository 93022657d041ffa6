// Package binpaths finds the binaries a local lab runs: the ones built from
// pinned Go modules by lab/local/bins/build.sh (make bins) into a cache
// outside the repository, and the ones that come from Debian packages.
//
// The cache layout is ${FAULTLINE_CACHE:-/var/cache/faultline}/bins/
// <upstream>-<version>/<binary>; the build script writes a binary there only
// after it reported the expected version, so a binary's presence at its
// versioned path is what Locate trusts.
package binpaths

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faultline/faultline/lab"
)

// Versions built by lab/local/bins/build.sh. They must match the script.
const (
	KubernetesVersion = "v1.36.3"
	EtcdVersion       = "v3.6.8"
	ContainerdVersion = "v2.4.2"
	CrictlVersion     = "v1.37.0"
	// KubeRouterVersion is the NetworkPolicy agent's, the one version the
	// Go module proxy serves.
	KubeRouterVersion = "v2.1.0"
	CoreDNSVersion    = "v1.14.7"
	// ExternalAttacherVersion is kubernetes-csi's external-attacher,
	// which runs beside the block CSI driver's controller.
	ExternalAttacherVersion = "v4.13.0"
)

// BuildCommand is what builds the cached binaries.
const BuildCommand = "make bins (lab/local/bins/build.sh)"

// DefaultCacheDir is the cache root when FAULTLINE_CACHE is unset.
const DefaultCacheDir = "/var/cache/faultline"

// CNIPlugins are the CNI plugins a local lab's pod network uses.
var CNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// Paths holds the absolute path of every binary a local lab runs.
type Paths struct {
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Kubelet               string
	KubeProxy             string
	Kubectl               string
	Etcd                  string
	Etcdctl               string
	Containerd            string
	Ctr                   string
	// ContainerdShimRuncV2 is found by containerd through PATH, so the
	// directory holding it must be on the PATH containerd runs with
	// (ContainerdDir).
	ContainerdShimRuncV2 string
	Crictl               string
	// KubeRouter is the workers' NetworkPolicy agent (its firewall only).
	KubeRouter string
	// CoreDNS is packed into the cluster DNS image.
	CoreDNS string
	// CSIAttacher is kubernetes-csi's external-attacher: it acts on the
	// block CSI driver's VolumeAttachments.
	CSIAttacher string

	// From Debian packages.
	Runc       string
	Keepalived string
	Sshd       string
	Nsenter    string
	// Ipset is what the policy agent programs its sets with.
	Ipset string
	// CNIBinDir is the directory holding the CNI plugins (CNIPlugins).
	CNIBinDir string
}

// ContainerdDir is the directory holding containerd, ctr and the runc shim.
func (p Paths) ContainerdDir() string { return filepath.Dir(p.Containerd) }

// CacheDir is the root of the binary cache: $FAULTLINE_CACHE, else
// DefaultCacheDir.
func CacheDir() string {
	if d := os.Getenv("FAULTLINE_CACHE"); d != "" {
		return d
	}
	return DefaultCacheDir
}

// debianBinary is a binary from a Debian package, looked for at its packaged
// path first and then on PATH.
type debianBinary struct {
	name, path, pkg string
}

// debianBinaries are the binaries Locate takes from Debian packages, by name.
var debianBinaries = map[string]debianBinary{
	"runc":       {"runc", "/usr/sbin/runc", "runc"},
	"keepalived": {"keepalived", "/usr/sbin/keepalived", "keepalived"},
	"sshd":       {"sshd", "/usr/sbin/sshd", "openssh-server"},
	"nsenter":    {"nsenter", "/usr/bin/nsenter", "util-linux"},
	"ipset":      {"ipset", "/usr/sbin/ipset", "ipset"},
}

// Locate returns the path of every binary the lab described by cfg runs, or
// an error listing every one that is missing and the command that provides
// it. A cfg asking for a Kubernetes or etcd version other than the one the
// build pins is an error too, because nothing would build it.
func Locate(cfg *lab.Config) (Paths, error) {
	return locate(cfg, CacheDir(), exec.LookPath)
}

func locate(cfg *lab.Config, cache string, lookPath func(string) (string, error)) (Paths, error) {
	var problems []string
	if cfg != nil {
		if v := cfg.Kubernetes.Version; v != "" && v != KubernetesVersion {
			problems = append(problems, fmt.Sprintf("kubernetes.version %s: the build pins Kubernetes %s (change lab/local/bins to build another)", v, KubernetesVersion))
		}
		if v := cfg.Kubernetes.EtcdVersion; v != "" && v != EtcdVersion {
			problems = append(problems, fmt.Sprintf("kubernetes.etcdVersion %s: the build pins etcd %s (change lab/local/bins to build another)", v, EtcdVersion))
		}
	}

	var p Paths
	bins := filepath.Join(cache, "bins")
	var missingBuilt []string
	for _, b := range builtBinaries(&p) {
		path := filepath.Join(bins, b.dir, b.name)
		if err := checkExecutable(path); err != nil {
			if b.storageOnly && cfg != nil && !hasStorageHost(cfg) {
				continue // a lab without a storage host runs none
			}
			missingBuilt = append(missingBuilt, fmt.Sprintf("%s (%v)", b.name, err))
			continue
		}
		*b.dest = path
	}
	if len(missingBuilt) > 0 {
		problems = append(problems, fmt.Sprintf("not built: %s; run %s", strings.Join(missingBuilt, ", "), BuildCommand))
	}

	debian := []struct {
		name string
		dest *string
	}{
		{"runc", &p.Runc},
		{"keepalived", &p.Keepalived},
		{"sshd", &p.Sshd},
		{"nsenter", &p.Nsenter},
		{"ipset", &p.Ipset},
	}
	for _, d := range debian {
		path, err := findDebian(debianBinaries[d.name], lookPath)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		*d.dest = path
	}

	if dir, err := findCNIDir(); err != nil {
		problems = append(problems, err.Error())
	} else {
		p.CNIBinDir = dir
	}

	if len(problems) > 0 {
		return Paths{}, fmt.Errorf("locating local lab binaries under %s: %s", bins, strings.Join(problems, "; "))
	}
	return p, nil
}

// hasStorageHost says whether the lab has a host with the storage role.
func hasStorageHost(cfg *lab.Config) bool {
	for _, h := range cfg.Hosts {
		if slices.Contains(h.Roles, lab.RoleStorage) {
			return true
		}
	}
	return false
}

// builtBinary is a binary the build script writes to <cache>/bins/<dir>/<name>.
type builtBinary struct {
	dir, name string
	dest      *string
	// storageOnly: only a lab with a storage host runs it.
	storageOnly bool
}

// builtBinaries lists what the build script builds, each with the field of
// p that holds its path.
func builtBinaries(p *Paths) []builtBinary {
	return []builtBinary{
		{dir: "kubernetes-" + KubernetesVersion, name: "kube-apiserver", dest: &p.KubeAPIServer},
		{dir: "kubernetes-" + KubernetesVersion, name: "kube-controller-manager", dest: &p.KubeControllerManager},
		{dir: "kubernetes-" + KubernetesVersion, name: "kube-scheduler", dest: &p.KubeScheduler},
		{dir: "kubernetes-" + KubernetesVersion, name: "kubelet", dest: &p.Kubelet},
		{dir: "kubernetes-" + KubernetesVersion, name: "kube-proxy", dest: &p.KubeProxy},
		{dir: "kubectl-" + KubernetesVersion, name: "kubectl", dest: &p.Kubectl},
		{dir: "etcd-" + EtcdVersion, name: "etcd", dest: &p.Etcd},
		{dir: "etcd-" + EtcdVersion, name: "etcdctl", dest: &p.Etcdctl},
		{dir: "containerd-" + ContainerdVersion, name: "containerd", dest: &p.Containerd},
		{dir: "containerd-" + ContainerdVersion, name: "ctr", dest: &p.Ctr},
		{dir: "containerd-" + ContainerdVersion, name: "containerd-shim-runc-v2", dest: &p.ContainerdShimRuncV2},
		{dir: "crictl-" + CrictlVersion, name: "crictl", dest: &p.Crictl},
		{dir: "kube-router-" + KubeRouterVersion, name: "kube-router", dest: &p.KubeRouter},
		{dir: "coredns-" + CoreDNSVersion, name: "coredns", dest: &p.CoreDNS},
		{dir: "external-attacher-" + ExternalAttacherVersion, name: "csi-attacher", dest: &p.CSIAttacher, storageOnly: true},
	}
}

// CoreDNSIn is where the build script puts CoreDNS under cache (the
// directory CacheDir names).
func CoreDNSIn(cache string) string {
	return filepath.Join(cache, "bins", "coredns-"+CoreDNSVersion, "coredns")
}

// KubeProxyIn and KubeRouterIn are where the build script puts kube-proxy
// and kube-router under cache: the node agents, packed into images for a
// lab that runs them as pods.
func KubeProxyIn(cache string) string {
	return filepath.Join(cache, "bins", "kubernetes-"+KubernetesVersion, "kube-proxy")
}

func KubeRouterIn(cache string) string {
	return filepath.Join(cache, "bins", "kube-router-"+KubeRouterVersion, "kube-router")
}

func checkExecutable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errors.New("missing")
		}
		return err
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

func findDebian(d debianBinary, lookPath func(string) (string, error)) (string, error) {
	if checkExecutable(d.path) == nil {
		return d.path, nil
	}
	if path, err := lookPath(d.name); err == nil {
		if abs, err := filepath.Abs(path); err == nil {
			return abs, nil
		}
	}
	return "", fmt.Errorf("%s not found at %s or on PATH; install it with apt-get install %s", d.name, d.path, d.pkg)
}

// cniDirs are where distributions put the CNI plugins: Debian's
// containernetworking-plugins first, then the upstream default.
var cniDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

func findCNIDir() (string, error) {
	for _, dir := range cniDirs {
		ok := true
		for _, plugin := range CNIPlugins {
			if checkExecutable(filepath.Join(dir, plugin)) != nil {
				ok = false
				break
			}
		}
		if ok {
			return dir, nil
		}
	}
	return "", fmt.Errorf("CNI plugins %s not found in %s; install them with apt-get install containernetworking-plugins",
		strings.Join(CNIPlugins, ", "), strings.Join(cniDirs, " or "))
}
