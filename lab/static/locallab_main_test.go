//go:build lab

package static_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	// The images the local lab loads into its nodes.
	"github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/guard"
	"github.com/faultline/faultline/lab/local"
	"github.com/faultline/faultline/lab/local/binpaths"
	"github.com/faultline/faultline/lab/local/pki"
	"github.com/faultline/faultline/lab/static"
)

// The local lab brought up for these tests is named and addressed apart
// from the pair topology it copies, so that it can run beside the local
// lab's own tests.
const (
	localLabName       = "stat"
	localLabManagement = "10.231.41.0/24"
	localLabPods       = "10.245.0.0/16"
	localLabServices   = "10.250.41.0/24"
	// localLabStore is the storage host added to pair's, and
	// historyPort the port of the history store the static lab runs
	// there beside the local lab's own.
	localLabStore = "stat-store"
	historyPort   = 2391
)

// skipReason is set when no cluster can be had: the tests skip with it.
var skipReason string

// underLocal is the local lab the static lab file describes, when the
// tests brought one up: what the static lab reads through SSH is held to
// what the local lab knows of itself.
var underLocal *local.Lab

// TestMain runs the tests against the cluster FAULTLINE_STATIC_LAB names or,
// when it names none, against a local lab of their own, brought up here and
// described by a static lab file as if it were someone else's cluster.
func TestMain(m *testing.M) {
	if os.Getenv("FAULTLINE_STATIC_LAB") != "" {
		os.Exit(m.Run())
	}
	if os.Geteuid() != 0 {
		skipReason = "FAULTLINE_STATIC_LAB is unset and bringing up a local lab needs root"
		os.Exit(m.Run())
	}
	os.Exit(runAgainstLocalLab(m))
}

func runAgainstLocalLab(m *testing.M) (code int) {
	// Short: the lab's unix sockets lie deep under the state directory
	// and must fit a socket address (107 bytes).
	dir, err := os.MkdirTemp("/tmp", "flst")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv("FAULTLINE_STATE_DIR", filepath.Join(dir, "s"))

	c, err := localLabConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := local.New(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l.SetProgress(os.Stderr)

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	var inodes []uint64
	defer func() {
		start := time.Now()
		if err := l.Down(context.Background()); err != nil {
			fmt.Fprintf(os.Stderr, "bringing the local lab %s down: %v\n", c.Name, err)
			code = 1
		}
		fmt.Fprintf(os.Stderr, "local lab %s down in %s\n", c.Name, time.Since(start).Round(time.Second))
		if left := localLabLeftovers(c, inodes); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "left after down of lab %s:\n%s\n", c.Name, strings.Join(left, "\n"))
			code = 1
		}
	}()
	start := time.Now()
	if err := l.Up(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "bringing the local lab %s up: %v\n", c.Name, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "local lab %s up in %s\n", c.Name, time.Since(start).Round(time.Second))
	for _, h := range c.Hosts {
		if fi, err := os.Stat(filepath.Join("/run/netns", "fl-"+c.Name+"-"+h.Name)); err == nil {
			inodes = append(inodes, fi.Sys().(*syscall.Stat_t).Ino)
		}
	}
	// The check for leftovers after down must see the lab while it is up,
	// or its silence afterwards proves nothing.
	if seen := localLabLeftovers(c, inodes); len(seen) == 0 || len(inodes) != len(c.Hosts) {
		fmt.Fprintf(os.Stderr, "the leftovers check does not see the running lab %s (namespaces %d of %d, items %d)\n", c.Name, len(inodes), len(c.Hosts), len(seen))
		return 1
	}

	underLocal = l
	path, err := writeStaticLabFile(ctx, dir, c, l)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("FAULTLINE_STATIC_LAB", path)
	defer os.Unsetenv("FAULTLINE_STATIC_LAB")
	return m.Run()
}

// localLabConfig is testdata/labs/pair.yaml renamed and readdressed.
func localLabConfig() (*lab.Config, error) {
	c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", "pair.yaml"))
	if err != nil {
		return nil, err
	}
	c.Name = localLabName
	c.StateDir = ""
	c.Network.Management = localLabManagement
	c.Network.Pods = localLabPods
	c.Network.Services = localLabServices
	for i := range c.Hosts {
		h := &c.Hosts[i]
		h.Name = strings.Replace(h.Name, "pair", localLabName, 1)
		last := h.Address[strings.LastIndex(h.Address, ".")+1:]
		h.Address = strings.TrimSuffix(localLabManagement, "0/24") + last
	}
	c.Hosts = append(c.Hosts, lab.HostConfig{Name: localLabStore, Roles: []lab.Role{lab.RoleStorage}, Address: strings.TrimSuffix(localLabManagement, "0/24") + "41"})
	// The state dir default comes from FAULTLINE_STATE_DIR, set by the caller.
	raw, err := yaml.Marshal(c)
	if err != nil {
		return nil, err
	}
	return lab.ParseConfig(raw)
}

// writeStaticLabFile marks the local lab's cluster and describes it in a
// static lab file under dir, with what a user of someone's cluster would
// have: an admin kubeconfig, a non-root login with passwordless sudo, its
// SSH key and the hosts' known keys, and the cluster's storage classes,
// with a history store the static lab runs itself on the storage host.
func writeStaticLabFile(ctx context.Context, dir string, c *lab.Config, l *local.Lab) (string, error) {
	login, err := l.AddSudoUser(ctx)
	if err != nil {
		return "", err
	}
	info, err := l.StorageInfo()
	if err != nil {
		return "", err
	}
	bins, err := binpaths.Locate(c)
	if err != nil {
		return "", err
	}
	// The hosts run the local lab's supervisor, not systemd: their
	// services are managed through faultline's own service command, run
	// on the host as a fleet's systemctl would be.
	faultline := filepath.Join(dir, "faultline")
	build := exec.CommandContext(ctx, "go", "build", "-o", faultline, "../../cmd/faultline")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building faultline for the service command: %v\n%s", err, out)
	}
	serviceCommand := "FAULTLINE_STATE_DIR=" + lab.StateRoot() + " " + faultline + " lab service --lab " + c.Name + " --host {host}"
	hosts := append([]lab.HostConfig(nil), c.Hosts...)
	for i := range hosts {
		if hosts[i].Name != localLabStore {
			hosts[i].KubeletRootDir = l.KubeletRootDir(hosts[i].Name)
		}
	}
	kubeconfig, err := l.Kubeconfig("")
	if err != nil {
		return "", err
	}
	kube, err := guard.Client(kubeconfig)
	if err != nil {
		return "", err
	}
	if err := guard.PlaceMarker(ctx, c, kube); err != nil {
		return "", err
	}
	// The agents' kubeconfigs, as a fleet's lab file names its hosts'
	// (each worker's own client certificate, in the lab's PKI directory).
	k8s := c.Kubernetes
	if k8s.AgentsLayout() == lab.AgentsAsServices {
		k8s.AgentKubeconfigs = map[string]string{}
		for _, agent := range []string{lab.ServiceKubeProxy, lab.ServicePolicyAgent} {
			k8s.AgentKubeconfigs[agent] = filepath.Join(filepath.Dir(kubeconfig), pki.AgentKubeconfigFile(agent, "{host}"))
		}
	}
	static := lab.Config{
		Name:       c.Name,
		Kind:       static.Kind,
		Lab:        true,
		Kubeconfig: kubeconfig,
		// The static lab's state (its per-API-server kubeconfigs) is kept
		// apart from the local lab's, as a user's would be.
		StateDir:   filepath.Join(dir, "static-state"),
		Kubernetes: k8s,
		Network:    c.Network,
		Hosts:      hosts,
		SSH: &lab.SSHConfig{
			User:           login.Name,
			IdentityFile:   login.KeyFile,
			KnownHosts:     login.KnownHosts,
			Sudo:           true,
			ServiceCommand: serviceCommand,
		},
		Storage: &lab.StorageSettings{
			SharedClass: info.SharedClass, BlockClass: info.BlockClass, BlockMMPClass: info.BlockMMPClass, BlockFencedClass: info.BlockFencedClass,
			History: lab.HistoryStore{Host: localLabStore, Etcd: bins.Etcd, DataDir: filepath.Join(dir, "history"), Port: historyPort},
			// The pause image every node of the local lab holds.
			ReaderImage: images.SandboxImage,
			Emulated:    info.Emulated,
		},
	}
	raw, err := yaml.Marshal(static)
	if err != nil {
		return "", fmt.Errorf("writing the static lab file: %w", err)
	}
	path := filepath.Join(dir, "static.yaml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return "", fmt.Errorf("writing the static lab file: %w", err)
	}
	return path, nil
}

// localLabLeftovers lists what of lab c is still on the machine: its
// namespaces, links, iptables rules, mounts, state and processes in its
// namespaces (by the namespaces' inodes, which outlive their names).
func localLabLeftovers(c *lab.Config, nsInodes []uint64) []string {
	var out []string
	for _, h := range c.Hosts {
		if _, err := os.Stat(filepath.Join("/run/netns", "fl-"+c.Name+"-"+h.Name)); err == nil {
			out = append(out, "netns fl-"+c.Name+"-"+h.Name)
		}
	}
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, line := range strings.Split(string(links), "\n") {
		if strings.Contains(line, "faultline:"+c.Name+":") {
			out = append(out, "link "+line)
		}
	}
	for _, tool := range []string{"iptables-save", "ip6tables-save"} {
		rules, err := exec.Command(tool).Output()
		if err != nil {
			out = append(out, tool+": "+err.Error())
			continue
		}
		for _, r := range strings.Split(string(rules), "\n") {
			if strings.Contains(r, "faultline lab "+c.Name+"\"") || strings.Contains(r, "faultline lab "+c.Name+" ") ||
				strings.Contains(r, strings.TrimSuffix(localLabManagement, "0/24")) || strings.Contains(r, "10.245.") {
				out = append(out, tool+": "+r)
			}
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, m := range strings.Split(string(mounts), "\n") {
		if c.StateDir != "" && strings.Contains(m, c.StateDir) {
			out = append(out, "mount "+m)
		}
	}
	if _, err := os.Stat(c.StateDir); err == nil {
		out = append(out, "state dir "+c.StateDir)
	}
	if _, err := user.Lookup(local.SudoUserName(c.Name)); err == nil {
		out = append(out, "user "+local.SudoUserName(c.Name))
	}
	if _, err := os.Stat("/etc/sudoers.d/faultline-" + c.Name); err == nil {
		out = append(out, "sudoers /etc/sudoers.d/faultline-"+c.Name)
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		inState := c.StateDir != "" && bytes.Contains(cmdline, []byte(c.StateDir))
		inNetns := false
		if fi, err := os.Stat(filepath.Join("/proc", p.Name(), "ns", "net")); err == nil {
			ino := fi.Sys().(*syscall.Stat_t).Ino
			for _, n := range nsInodes {
				inNetns = inNetns || n == ino
			}
		}
		if inState || inNetns {
			out = append(out, fmt.Sprintf("process %d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return out
}
