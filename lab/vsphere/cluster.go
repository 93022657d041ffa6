package vsphere

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/guard"
	labssh "github.com/faultline/faultline/lab/ssh"
)

// requestTimeout bounds one request to the API server while booting: a
// server that is still starting should not stall a poll.
const requestTimeout = 10 * time.Second

// kubeconfigPath is the lab's kubeconfig with a leading ~/ expanded, as
// the other lab file paths are.
func kubeconfigPath(c *lab.Config) string { return labssh.ExpandHome(c.Kubeconfig) }

func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	rc.Timeout = requestTimeout
	// The waits poll at their own pace; client-go's client-side rate
	// limiter would only turn a slow poll into a limiter error that hides
	// what the API server last said.
	rc.QPS = -1
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("client for kubeconfig %s: %w", kubeconfig, err)
	}
	return cs, nil
}

// apiServerReady asks the API server behind the kubeconfig for /readyz,
// which covers its own etcd connection.
func apiServerReady(ctx context.Context, cs kubernetes.Interface) error {
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("API server /readyz: %w", err)
	}
	if strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("API server /readyz answered %q", strings.TrimSpace(string(body)))
	}
	return nil
}

// nodesReady succeeds when the cluster has at least want nodes and every
// node is Ready; otherwise it names the nodes that are not.
func nodesReady(ctx context.Context, cs kubernetes.Interface, want int) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	var notReady []string
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			notReady = append(notReady, n.Name)
		}
	}
	sort.Strings(notReady)
	switch {
	case len(notReady) > 0:
		return fmt.Errorf("nodes not Ready: %s", strings.Join(notReady, ", "))
	case len(nodes.Items) < want:
		return fmt.Errorf("%d nodes registered, want at least %d", len(nodes.Items), want)
	}
	return nil
}

// kubeClusterCheck asks the cluster, through the lab's kubeconfig, what a
// boot group should have brought up: nothing after etcd (no API server
// runs yet, so the SSH wait is the check), a ready API server after the
// control plane, and every node Ready and faultline's lab marker after the
// workers.
func kubeClusterCheck(c *lab.Config, interval time.Duration) ClusterCheck {
	want := 0
	for _, h := range c.Hosts {
		if hasRole(h.Roles, lab.RoleControlPlane) || hasRole(h.Roles, lab.RoleWorker) {
			want++
		}
	}
	return func(ctx context.Context, group lab.Role) error {
		if group == lab.RoleEtcd {
			return nil
		}
		cs, err := kubeClient(kubeconfigPath(c))
		if err != nil {
			return err
		}
		check := func(ctx context.Context) (bool, error) {
			err := apiServerReady(ctx, cs)
			if err == nil && group == lab.RoleWorker {
				err = nodesReady(ctx, cs, want)
			}
			if err != nil && ctx.Err() != nil {
				// The deadline cut this attempt short; the previous
				// attempt's error says more about what was wrong.
				return false, nil
			}
			return err == nil, err
		}
		deadline, ok := ctx.Deadline()
		if !ok {
			return errors.New("cluster check needs a deadline")
		}
		if err := lab.WaitFor(ctx, fmt.Sprintf("the cluster to answer with the %s hosts up", group), time.Until(deadline), interval, check); err != nil {
			return err
		}
		if group != lab.RoleWorker {
			return nil
		}
		// The marker comes back only if it was in the cold snapshot.
		if err := guard.Check(ctx, c, cs); err != nil {
			return fmt.Errorf("the cluster booted from the cold snapshot: %w (the marker must be placed before the cold snapshot is taken)", err)
		}
		return nil
	}
}
