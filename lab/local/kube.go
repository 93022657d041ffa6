package local

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/supervise"
)

// Kubeconfig returns an admin kubeconfig: for the address a user's kubectl
// would use (the virtual address, or the sole API server) when target is
// empty, else for the named control-plane host's own API server.
func (l *Lab) Kubeconfig(target string) (string, error) {
	cc, err := l.comp.Env(context.Background())
	if err != nil {
		return "", err
	}
	if target == "" {
		return cc.PKI.AdminKubeconfig, nil
	}
	cp, ok := cc.PKI.ControlPlane[target]
	if !ok {
		var names []string
		for _, h := range l.controlPlaneHosts() {
			names = append(names, h.cfg.Name)
		}
		return "", fmt.Errorf("lab %s: %q is not a control-plane host (control-plane hosts: %v)", l.cfg.Name, target, names)
	}
	return cp.AdminKubeconfig, nil
}

func (l *Lab) kubeClient(target string) (kubernetes.Interface, error) {
	path, err := l.Kubeconfig(target)
	if err != nil {
		return nil, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	rc.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(rc)
}

// waitNodesReady waits until every kubelet host is a Ready node whose
// kubelet renewed its lease after since: a Ready condition restored from a
// snapshot says nothing about the kubelet that runs now.
func (l *Lab) waitNodesReady(ctx context.Context, since time.Time, timeout time.Duration) error {
	kc, err := l.kubeClient("")
	if err != nil {
		return err
	}
	want := l.nodeHosts()
	// A node whose kubelet exited will not become Ready: stop at once.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var exited error
	lastReady := -1
	err = lab.WaitFor(wctx, "every node Ready", timeout, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		for _, h := range want {
			if _, st := l.sup.Lookup(h.cfg.Name, lab.ServiceKubelet); st == supervise.StateExited {
				exited = fmt.Errorf("waiting for every node Ready: the kubelet of %s exited (log: %s)", h.cfg.Name, l.sup.LogFile(h.cfg.Name, lab.ServiceKubelet))
				cancel()
				return false, exited
			}
		}
		nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		leases, err := kc.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		byName := map[string]corev1.Node{}
		for _, n := range nodes.Items {
			byName[n.Name] = n
		}
		leaseBy := map[string]coordinationv1.Lease{}
		for _, ls := range leases.Items {
			leaseBy[ls.Name] = ls
		}
		var notReady []string
		for _, h := range want {
			n, ok := byName[h.cfg.Name]
			if !ok {
				notReady = append(notReady, h.cfg.Name+" (not registered)")
				continue
			}
			if !nodeReady(n) {
				notReady = append(notReady, h.cfg.Name+" (not Ready)")
				continue
			}
			ls, ok := leaseBy[h.cfg.Name]
			if !ok || ls.Spec.RenewTime == nil || ls.Spec.RenewTime.Time.Before(since.Truncate(time.Second)) {
				notReady = append(notReady, h.cfg.Name+" (lease not renewed)")
			}
		}
		if ready := len(want) - len(notReady); ready != lastReady {
			lastReady = ready
			l.logf("nodes Ready %d/%d", ready, len(want))
		}
		if len(notReady) > 0 {
			sort.Strings(notReady)
			return false, fmt.Errorf("waiting for %s", strings.Join(notReady, ", "))
		}
		return true, nil
	})
	if exited != nil {
		return exited
	}
	return err
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// labelControlPlaneNodes gives control-plane nodes the label kubeadm gives
// them; kubelet may not set labels under node-role.kubernetes.io itself
// (NodeRestriction forbids it).
func (l *Lab) labelControlPlaneNodes(ctx context.Context) error {
	kc, err := l.kubeClient("")
	if err != nil {
		return err
	}
	patch := []byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`)
	for _, h := range l.controlPlaneHosts() {
		if h.node == nil {
			continue
		}
		// A busy API server may time out; the patch is idempotent.
		if err := lab.WaitFor(ctx, "labelling node "+h.cfg.Name, time.Minute, time.Second, func(ctx context.Context) (bool, error) {
			_, err := kc.CoreV1().Nodes().Patch(ctx, h.cfg.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err == nil, err
		}); err != nil {
			return err
		}
	}
	return nil
}

// waitLeaders waits until the controller-manager and scheduler leases
// are held by a current holder.
func (l *Lab) waitLeaders(ctx context.Context, since time.Time, timeout time.Duration) error {
	kc, err := l.kubeClient("")
	if err != nil {
		return err
	}
	return lab.WaitFor(ctx, "leader leases held", timeout, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
			ls, err := kc.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if ls.Spec.HolderIdentity == nil || *ls.Spec.HolderIdentity == "" || ls.Spec.RenewTime == nil || ls.Spec.RenewTime.Time.Before(since.Truncate(time.Second)) {
				return false, fmt.Errorf("lease %s not renewed since %s", name, since.Format(time.RFC3339))
			}
		}
		return true, nil
	})
}
