//go:build lab

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/binpaths"
	"github.com/faultline/faultline/lab/local/internal/components"
)

// TestEtcdAndAPIServers boots only the first phases of lab11 (five etcd
// members, three API servers, keepalived): it needs only etcd and
// kube-apiserver built, and checks the TLS cluster, every API server and
// the virtual address.
func TestEtcdAndAPIServers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bins := filepath.Join(binpaths.CacheDir(), "bins")
	etcd := filepath.Join(bins, "etcd-"+binpaths.EtcdVersion, "etcd")
	apiserver := filepath.Join(bins, "kubernetes-"+binpaths.KubernetesVersion, "kube-apiserver")
	if _, err := os.Stat(etcd); err != nil {
		t.Skipf("etcd not built: %v", err)
	}
	_, err := os.Stat(apiserver)
	withAPIServers := err == nil
	cm := filepath.Join(bins, "kubernetes-"+binpaths.KubernetesVersion, "kube-controller-manager")
	sched := filepath.Join(bins, "kubernetes-"+binpaths.KubernetesVersion, "kube-scheduler")
	_, err1 := os.Stat(cm)
	_, err2 := os.Stat(sched)
	withControlPlane := withAPIServers && err1 == nil && err2 == nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	c := testConfig(t, "lab11")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	downAtCleanup(t, l, c)
	provisionWithBins(t, ctx, l, binpaths.Paths{Etcd: etcd, KubeAPIServer: apiserver, KubeControllerManager: cm, KubeScheduler: sched, Keepalived: "/usr/sbin/keepalived"})
	phases := []components.Phase{components.PhaseEtcd}
	if withAPIServers {
		phases = append(phases, components.PhaseAPIServer)
	}
	if withControlPlane {
		phases = append(phases, components.PhaseControlPlane)
	}
	start := time.Now()
	for _, p := range phases {
		if err := l.forEachHost(func(h *Host) error { return h.startServices(ctx, p) }); err != nil {
			t.Fatal(err)
		}
		t.Logf("phase %d ready after %s", p, time.Since(start).Round(100*time.Millisecond))
	}
	for _, h := range l.etcdHosts() {
		if err := l.comp.HTTPSOK(ctx, fmt.Sprintf("https://%s:%d/health", h.Address(), components.EtcdClientPort), `"health":"true"`); err != nil {
			t.Errorf("etcd on %s: %v", h.Name(), err)
		}
	}
	if !withAPIServers {
		t.Skip("kube-apiserver not built: checked etcd only")
	}
	for _, h := range l.controlPlaneHosts() {
		if err := l.comp.HTTPSOK(ctx, fmt.Sprintf("https://%s:%d/readyz", h.Address(), c.Network.APIServerPort), "ok"); err != nil {
			t.Errorf("API server on %s: %v", h.Name(), err)
		}
	}
	if withControlPlane {
		// Leader election works through the virtual address.
		env, err := l.comp.Env(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", env.PKI.AdminKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		kc, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.waitLeaders(ctx, start, time.Minute); err != nil {
			t.Error(err)
		}
		for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
			ls, err := kc.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("lease %s held by %s", name, *ls.Spec.HolderIdentity)
		}
	}
	vip := fmt.Sprintf("https://%s:%d/readyz", c.Network.VirtualIP, c.Network.APIServerPort)
	if err := lab.WaitFor(ctx, "the virtual address", 30*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		err := l.comp.HTTPSOK(ctx, vip, "ok")
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	// The address moves when its holder's API server stops.
	// Right after start keepalived may still be handing the address to
	// the host of highest priority: no host holds it for a moment.
	holder := ""
	if err := lab.WaitFor(ctx, "a control-plane host to hold the virtual address", 30*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		for _, h := range l.controlPlaneHosts() {
			r, err := h.Run(ctx, "ip -o -4 addr show dev eth0")
			if err != nil {
				return false, err
			}
			if strings.Contains(r.Stdout, " "+c.Network.VirtualIP+"/") {
				holder = h.Name()
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	hh, _ := l.Host(holder)
	moved := time.Now()
	if err := hh.StopService(ctx, lab.ServiceAPIServer); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitFor(ctx, "the virtual address to move", 60*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		r, err := hh.Run(ctx, "ip -o -4 addr show dev eth0")
		if err != nil {
			return false, err
		}
		if strings.Contains(r.Stdout, " "+c.Network.VirtualIP+"/") {
			return false, nil
		}
		err = l.comp.HTTPSOK(ctx, vip, "ok")
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("virtual address moved away from %s within %s of its API server being told to stop", holder, time.Since(moved).Round(100*time.Millisecond))
}
