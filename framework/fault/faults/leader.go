package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/apiretry"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/faultline/faultline/lab"
)

// resolveLeader returns the host that leads service now.
func resolveLeader(ctx context.Context, l lab.Lab, service string) (lab.Host, error) {
	switch service {
	case lab.ServiceEtcd:
		return etcdLeaderHost(ctx, l)
	case lab.ServiceControllerManager, lab.ServiceScheduler:
		identity, err := leaseHolder(ctx, l, service)
		if err != nil {
			return nil, err
		}
		candidates := lab.HostsWithRole(l, lab.RoleControlPlane)
		hostnames := map[string]string{}
		for _, h := range candidates {
			out, err := run(ctx, h, "hostname")
			if err != nil {
				return nil, fmt.Errorf("finding the %s leader: %w", service, err)
			}
			hostnames[h.Name()] = strings.TrimSpace(out)
		}
		return matchHolder(service, identity, candidates, hostnames)
	}
	return nil, fmt.Errorf("service %q elects no leader", service)
}

// leaseHolder reads the holder identity of kube-system's Lease named after
// the component.
func leaseHolder(ctx context.Context, l lab.Lab, name string) (string, error) {
	cs, err := kubeClient(l)
	if err != nil {
		return "", fmt.Errorf("finding the %s leader: %w", name, err)
	}
	return holderOf(ctx, cs, name)
}

// holderOf reads the holder identity of kube-system's Lease name.
func holderOf(ctx context.Context, cs kubernetes.Interface, name string) (string, error) {
	return holderIn(ctx, cs, "kube-system", name)
}

// holderIn reads the holder identity of the Lease namespace/name.
func holderIn(ctx context.Context, cs kubernetes.Interface, namespace, name string) (string, error) {
	// One read may fail on a loaded API server (a reset connection, a
	// timeout); the Lease is read again a few times before the inject
	// gives up. A missing Lease or a refusal is final.
	var lease *coordinationv1.Lease
	transient := func(err error) bool { return ctx.Err() == nil && apiretry.Dropped(err) }
	err := retry.OnError(leaseReadBackoff, transient, func() error {
		var err error
		lease, err = cs.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("finding the %s leader: reading Lease %s/%s: %w", name, namespace, name, err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return "", fmt.Errorf("finding the %s leader: Lease %s/%s has no holder", name, namespace, name)
	}
	return *lease.Spec.HolderIdentity, nil
}

// leaseReadBackoff is how often the leader's Lease is read again: four
// tries over about 3.5 s, well inside any lease duration, so the holder
// read is still the one the inject acts on.
var leaseReadBackoff = wait.Backoff{Steps: 4, Duration: 500 * time.Millisecond, Factor: 2}

func kubeClient(l lab.Lab) (kubernetes.Interface, error) {
	path, err := l.Kubeconfig("")
	if err != nil {
		return nil, fmt.Errorf("getting the lab's kubeconfig: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a client from %s: %w", path, err)
	}
	return cs, nil
}

// matchHolder finds the host a leader-election identity names. Controller
// manager and scheduler identities are "<os hostname>_<uuid>", so the
// identity names a host only through its kernel hostname: it is matched
// against each candidate's lab name and its `hostname` output. Hosts that
// share one hostname (the local lab's namespaces share the machine's UTS
// namespace) cannot be told apart, and that is an error, never a guess.
func matchHolder(service, identity string, candidates []lab.Host, hostnames map[string]string) (lab.Host, error) {
	who := identity
	if i := strings.LastIndexByte(identity, '_'); i > 0 {
		who = identity[:i]
	}
	var byName, byHostname []lab.Host
	for _, h := range candidates {
		if h.Name() == who {
			byName = append(byName, h)
		}
		if hostnames[h.Name()] == who {
			byHostname = append(byHostname, h)
		}
	}
	if len(byName) == 1 {
		return byName[0], nil
	}
	switch len(byHostname) {
	case 1:
		return byHostname[0], nil
	case 0:
		return nil, fmt.Errorf("the %s leader %q is none of the lab's control-plane hosts %v", service, identity, hostnameList(hostnames))
	}
	var names []string
	for _, h := range byHostname {
		names = append(names, h.Name())
	}
	return nil, fmt.Errorf("the %s leader %q could be any of %v: they share the hostname %q, so the lease cannot say which one leads", service, identity, names, who)
}

func hostnameList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
