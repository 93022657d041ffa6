// Package agents is paper 2's suite: do the agents on each node (kube-proxy,
// the NetworkPolicy agent, CoreDNS) apply the rules the API server records?
// This package holds what its table needs: the fixtures it installs, the
// evidence it adds to the sampler, its bounds.
package agents

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/kits/dataplane/readers"
	"github.com/faultline/faultline/lab/apiretry"
	"github.com/faultline/faultline/lab/cleanup"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/fixtures/images"
)

// The fixtures' names.
const (
	Namespace = "faultline-agents"
	// Service is the test service the nodes translate.
	Service = "routes"
	// BackendLabel selects the service's backends.
	BackendLabel = "faultline.io/agents-backend"
	// BackendNode is where the backends run: a worker the probes reach
	// from the others, so every probe crosses the pod network.
	BackendNode = "worker3"
	// FirstBackend is the backend the fixtures start with, SecondBackend
	// the one a change replaces it with.
	FirstBackend  = "backend-a"
	SecondBackend = "backend-b"
)

// The policy fixtures: a target pod on worker1, whose node's policy agent
// the scenarios fault, and the policies the changes create and delete.
const (
	Target      = "target"
	TargetNode  = "worker1"
	TargetPort  = 8080
	RoleLabel   = "faultline.io/agents-role"
	DenyTarget  = "deny-target"
	AllowClient = "allow-clients"
)

// The newcomer: a pod that starts during the window on worker1, selected
// by a policy that denies its egress, and dials the target as soon as it
// has an address (isolated-from-start).
const (
	Newcomer          = "newcomer"
	NewcomerNode      = "worker1"
	DenyNewcomer      = "deny-newcomer-egress"
	newcomerRoleValue = "newcomer"
)

// Witness is a pod on NewcomerNode that DenyNewcomer selects too, there
// before the newcomer starts: the policy agent's rules for it show the
// policy handled before the newcomer exists, which is isolated-from-start's
// premise (a pod created before its agent handled a policy may start
// unprotected).
const Witness = "witness"

// InstallWitness creates the witness and waits until it is ready.
func InstallWitness(ctx context.Context, cs kubernetes.Interface) error {
	p := netexecPod(Witness, NewcomerNode, map[string]string{RoleLabel: newcomerRoleValue})
	if _, err := cs.CoreV1().Pods(Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pod %s: %w", Witness, err)
	}
	return waitReady(ctx, cs, Witness)
}

// DenyNewcomerEgress isolates the newcomer (and the witness) for egress:
// they may connect nowhere.
func DenyNewcomerEgress() *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: DenyNewcomer, Namespace: Namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: newcomerRoleValue}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		},
	}
}

// StartNewcomer creates the newcomer on NewcomerNode and waits until it
// is ready.
func StartNewcomer(ctx context.Context, cs kubernetes.Interface) error {
	p := netexecPod(Newcomer, NewcomerNode, map[string]string{RoleLabel: newcomerRoleValue})
	if err := creating(ctx, func() error {
		_, err := cs.CoreV1().Pods(Namespace).Create(ctx, p, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating pod %s: %w", Newcomer, err)
	}
	return waitReady(ctx, cs, Newcomer)
}

// The DNS fixture: a service of its own, so recreating it (a new cluster
// address) leaves the routes service every other reader uses alone.
const (
	DNSService = "dns-routes"
	// DNSName is the name the instances are asked for.
	DNSName = DNSService + "." + Namespace + ".svc.cluster.local"
	// DNSNamespace and DNSSelector find the CoreDNS instances.
	DNSNamespace = "kube-system"
	DNSSelector  = "k8s-app=kube-dns"
	// DNSAskFrom is the node whose client pod asks the instances.
	DNSAskFrom = "worker2"
)

func dnsService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DNSService, Namespace: Namespace},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{BackendLabel: "true"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// DeleteDNSService deletes the DNS fixture's service: its name no longer
// exists.
func DeleteDNSService(ctx context.Context, cs kubernetes.Interface) error {
	if err := deleting(ctx, func() error { return cs.CoreV1().Services(Namespace).Delete(ctx, DNSService, metav1.DeleteOptions{}) }); err != nil {
		return fmt.Errorf("deleting service %s: %w", DNSService, err)
	}
	return nil
}

// RecreateDNSService deletes the DNS fixture's service and creates it
// again, which gives it another cluster address.
func RecreateDNSService(ctx context.Context, cs kubernetes.Interface) error {
	if err := DeleteDNSService(ctx, cs); err != nil {
		return err
	}
	for {
		err := creating(ctx, func() error {
			_, err := cs.CoreV1().Services(Namespace).Create(ctx, dnsService(), metav1.CreateOptions{})
			return err
		})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating service %s again: %w", DNSService, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("creating service %s again: %w", DNSService, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ClientNodes are the workers whose client pods probe, and whose agents
// the evidence reads.
var ClientNodes = []string{"worker1", "worker2"}

// ClientPod names the client pod on node.
func ClientPod(node string) string { return "client-" + node }

func netexecPod(name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			// Pinned: the scenarios fault named nodes' agents.
			NodeName:                      node,
			TerminationGracePeriodSeconds: new(int64(1)),
			// Kept through a node's partition: the paper watches what the
			// node's agents apply to these pods, not their eviction.
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			},
			Containers: []corev1.Container{{
				Name:            "netexec",
				Image:           images.Ref("netexec"),
				ImagePullPolicy: corev1.PullNever,
				Args:            []string{"--port=8080"},
				Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

// Backend is a backend pod of the test service on BackendNode.
func Backend(name string) *corev1.Pod {
	return netexecPod(name, BackendNode, map[string]string{BackendLabel: "true"})
}

// Install creates the fixtures (what exists is kept) and waits until every
// pod is ready: the namespace, the first backend, the service, a client
// pod on each client node.
func Install(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := cleanup.EnsureOwnedNamespace(ctx, cs, Namespace); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: Service, Namespace: Namespace},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{BackendLabel: "true"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, svc := range []*corev1.Service{svc, dnsService()} {
		if _, err := cs.CoreV1().Services(Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating service %s: %w", svc.Name, err)
		}
	}
	pods := []*corev1.Pod{Backend(FirstBackend), netexecPod(Target, TargetNode, map[string]string{RoleLabel: "target"})}
	for _, n := range ClientNodes {
		pods = append(pods, netexecPod(ClientPod(n), n, map[string]string{RoleLabel: "client", "faultline.io/agents-client": n}))
	}
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods(Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
	}
	for _, p := range pods {
		if err := waitReady(ctx, cs, p.Name); err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits until pod is Ready.
func waitReady(ctx context.Context, cs kubernetes.Interface, pod string) error {
	var last string
	for {
		p, err := cs.CoreV1().Pods(Namespace).Get(ctx, pod, metav1.GetOptions{})
		switch {
		case err != nil:
			last = err.Error()
		case podReady(p):
			return nil
		default:
			last = fmt.Sprintf("phase %s", p.Status.Phase)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s/%s not ready (%s): %w", Namespace, pod, last, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// changing makes one request of a change, asking again while the API
// server drops it (apiretry.Backoff: eight tries over about 30 s, inside
// the window a change is made in; the change's events bracket every
// try). A dropped request may still have landed: after one, the answer
// landed says (for a create, the object there; for a delete, the object
// gone) is the change made.
func changing(ctx context.Context, do func() error, landed func(error) bool) error {
	again := false
	return apiretry.Do(ctx, apiretry.Backoff, apiretry.Dropped, func() error {
		err := do()
		if again && err != nil && landed(err) {
			return nil
		}
		again = true
		return err
	})
}

func creating(ctx context.Context, do func() error) error {
	return changing(ctx, do, apierrors.IsAlreadyExists)
}

func deleting(ctx context.Context, do func() error) error {
	return changing(ctx, do, apierrors.IsNotFound)
}

// ReplaceBackend makes the service's only backend another: it creates
// SecondBackend, waits until it is ready, and deletes FirstBackend.
func ReplaceBackend(ctx context.Context, cs kubernetes.Interface) error {
	if err := AddBackend(ctx, cs); err != nil {
		return err
	}
	if err := deleting(ctx, func() error {
		return cs.CoreV1().Pods(Namespace).Delete(ctx, FirstBackend, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	}); err != nil {
		return fmt.Errorf("deleting %s: %w", FirstBackend, err)
	}
	return nil
}

// AddBackend gives the service a second ready backend: it creates
// SecondBackend and waits until it is ready, keeping FirstBackend.
func AddBackend(ctx context.Context, cs kubernetes.Interface) error {
	if err := creating(ctx, func() error {
		_, err := cs.CoreV1().Pods(Namespace).Create(ctx, Backend(SecondBackend), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating %s: %w", SecondBackend, err)
	}
	return waitReady(ctx, cs, SecondBackend)
}

// ErrNoClusterIP is returned while the service has no cluster address.
var ErrNoClusterIP = readers.ErrNoClusterIP

// ServiceAddress is the service's cluster address and port (host:port).
func ServiceAddress(ctx context.Context, cs kubernetes.Interface) (string, error) {
	return fixtures.ServiceAddress(ctx, cs)
}

// DenyIngress isolates the target for ingress: nothing is admitted.
func DenyIngress() *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: DenyTarget, Namespace: Namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: "target"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
}

// AllowClients admits the client pods to the target's port.
func AllowClients() *networkingv1.NetworkPolicy {
	port := intstr.FromInt32(TargetPort)
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: AllowClient, Namespace: Namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: "target"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: "client"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Port: &port}},
			}},
		},
	}
}

// CreatePolicy creates np.
func CreatePolicy(ctx context.Context, cs kubernetes.Interface, np *networkingv1.NetworkPolicy) error {
	if err := creating(ctx, func() error {
		_, err := cs.NetworkingV1().NetworkPolicies(Namespace).Create(ctx, np, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating NetworkPolicy %s: %w", np.Name, err)
	}
	return nil
}

// DeletePolicy deletes the policy named name.
func DeletePolicy(ctx context.Context, cs kubernetes.Interface, name string) error {
	if err := deleting(ctx, func() error {
		return cs.NetworkingV1().NetworkPolicies(Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	}); err != nil {
		return fmt.Errorf("deleting NetworkPolicy %s: %w", name, err)
	}
	return nil
}

// PodAddress is pod's address and the netexec port (ip:port).
func PodAddress(ctx context.Context, cs kubernetes.Interface, pod string) (string, error) {
	return fixtures.PodAddress(ctx, cs, pod)
}
