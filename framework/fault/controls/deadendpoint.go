package controls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/lab"
)

// KindDeadEndpoint is the kind of DeadEndpoint faults.
const KindDeadEndpoint = "dead-endpoint"

// containerRunning is the CRI state of a running container, as crictl
// prints it.
const containerRunning = "CONTAINER_RUNNING"

// containersStoppedWait bounds the wait for the runtime to report the
// pod's containers stopped after crictl stop returned; a variable so tests
// need not wait it out.
var containersStoppedWait = 30 * time.Second

type deadEndpointParams struct {
	// Node is the host the pod runs on, whose kubelet is stopped.
	Node string `json:"node"`
	PodRef
}

// DeadEndpoint stops kube-controller-manager on every control-plane host,
// then the kubelet on node, then, through node's container runtime
// (crictl stop over SSH), every running container of pod, which must run
// on node, and checks with crictl that none runs any more.
//
// It breaks endpoints-truthful by construction: the pod's endpoint is
// ready and points at nothing alive (cri/<node> runs no container of the
// pod), while every component that could say so is stopped. The kubelet,
// which would report the pod not Ready and restart its containers, was
// stopped before them, so it never saw them die; the EndpointSlice
// controller, which would drop the endpoint, and the node lifecycle
// controller, which would mark the silent node not Ready and its pods not
// Ready, both run in the controller-managers, stopped first of all. So
// the API keeps the node Ready=True and the endpoint ready through the
// window, past any bound: endpoints-truthful must be VIOLATED.
//
// What else it touches: single-leader sees no controller-manager leader at
// all, which is not two; single-copy and graceful-deletion see no second
// copy and no deletion (the StatefulSet controller is stopped too); after
// heal the kubelet restarts the containers and the controllers resume, so
// convergence is expected to recover within the settle bound.
//
// Its class is crash-stop: processes stop (two services and the pod's
// containers), nothing is done through the API.
//
// Heal starts the kubelet on node, then kube-controller-manager on every
// control-plane host, wherever it is not running: the kubelet first, so
// that the node lifecycle controller, when it starts, finds the node
// renewing its lease again. The control-plane hosts are the lab's, found
// by role, so a heal decoded from the ledger in a fresh process starts
// the very services the inject stopped.
func DeadEndpoint(node string, pod PodRef) fault.Fault {
	return &deadEndpoint{p: deadEndpointParams{Node: node, PodRef: pod}}
}

type deadEndpoint struct{ p deadEndpointParams }

func (f *deadEndpoint) Kind() string            { return KindDeadEndpoint }
func (f *deadEndpoint) Class() fault.Class      { return faults.ClassCrashStop }
func (f *deadEndpoint) Params() json.RawMessage { return mustJSON(KindDeadEndpoint, f.p) }

func (f *deadEndpoint) pod() string { return f.p.Namespace + "/" + f.p.Name }

// Inject refuses, before stopping anything, when a controller-manager or
// the node's kubelet is not running (heal would start what the fault did
// not stop), or when the pod is not ready on node in the API and running
// there in the runtime (the control would then prove nothing).
func (f *deadEndpoint) Inject(ctx context.Context, l lab.Lab) error {
	node, controlPlane, err := f.hosts(l)
	if err != nil {
		return fmt.Errorf("dead endpoint: %w", err)
	}
	for _, h := range controlPlane {
		if err := mustRun(ctx, h, lab.ServiceControllerManager); err != nil {
			return fmt.Errorf("dead endpoint: %w", err)
		}
	}
	if err := mustRun(ctx, node, lab.ServiceKubelet); err != nil {
		return fmt.Errorf("dead endpoint: %w", err)
	}
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("dead endpoint: %w", err)
	}
	pod, err := cs.CoreV1().Pods(f.p.Namespace).Get(ctx, f.p.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("dead endpoint: reading pod %s: %w", f.pod(), err)
	}
	switch {
	case pod.Spec.NodeName != f.p.Node:
		return fmt.Errorf("dead endpoint: pod %s runs on %q, not on %s, so stopping %s's kubelet would leave it alive", f.pod(), pod.Spec.NodeName, f.p.Node, f.p.Node)
	case pod.DeletionTimestamp != nil:
		return fmt.Errorf("dead endpoint: pod %s is being deleted, so its endpoint is on its way out anyway", f.pod())
	case !podReady(pod):
		return fmt.Errorf("dead endpoint: pod %s is not Ready, so it is no ready endpoint to leave behind", f.pod())
	}
	before, err := f.runtimePod(ctx, node)
	if err != nil {
		return fmt.Errorf("dead endpoint: %w", err)
	}
	if !before.Running {
		return fmt.Errorf("dead endpoint: cri/%s runs no container of pod %s, so there is nothing to stop", f.p.Node, f.pod())
	}

	for _, h := range controlPlane {
		if err := h.StopService(ctx, lab.ServiceControllerManager); err != nil {
			return fmt.Errorf("dead endpoint: stopping %s on %s: %w", lab.ServiceControllerManager, h.Name(), err)
		}
		crashpoint.Reach("dead-endpoint/inject/controller-manager")
	}
	if err := node.StopService(ctx, lab.ServiceKubelet); err != nil {
		return fmt.Errorf("dead endpoint: stopping %s on %s: %w", lab.ServiceKubelet, f.p.Node, err)
	}
	crashpoint.Reach("dead-endpoint/inject/kubelet")
	// Read again: the containers must be the ones running now, not the
	// ones before the kubelet stopped.
	now, err := f.runtimePod(ctx, node)
	if err != nil {
		return fmt.Errorf("dead endpoint: %w", err)
	}
	if ids := runningContainers(now); len(ids) > 0 {
		// crictl's own request timeout is 2 s, which a stop under
		// load outlasts (the runtime then stops the container anyway);
		// the stop is given as long as a kubelet's.
		cmd := crictlStop + strings.Join(ids, " ")
		res, err := node.Run(ctx, cmd)
		if err != nil {
			return fmt.Errorf("dead endpoint: %s on %s: %w", cmd, f.p.Node, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("dead endpoint: %s on %s exited %d: %s", cmd, f.p.Node, res.ExitCode, strings.TrimSpace(res.Stderr))
		}
	}
	stopped := func(ctx context.Context) (bool, error) {
		v, err := f.runtimePod(ctx, node)
		if err != nil {
			return false, err
		}
		return len(runningContainers(v)) == 0, nil
	}
	what := fmt.Sprintf("cri/%s to run no container of pod %s", f.p.Node, f.pod())
	if err := lab.WaitFor(ctx, what, containersStoppedWait, time.Second, stopped); err != nil {
		return fmt.Errorf("dead endpoint: %w", err)
	}
	return nil
}

func (f *deadEndpoint) Heal(ctx context.Context, l lab.Lab) error {
	node, controlPlane, err := f.hosts(l)
	if err != nil {
		return fmt.Errorf("healing dead endpoint: %w", err)
	}
	if err := faults.StartIfDown(ctx, node, lab.ServiceKubelet); err != nil {
		return fmt.Errorf("healing dead endpoint: %w", err)
	}
	crashpoint.Reach("dead-endpoint/heal/kubelet")
	for _, h := range controlPlane {
		if err := faults.StartIfDown(ctx, h, lab.ServiceControllerManager); err != nil {
			return fmt.Errorf("healing dead endpoint: %w", err)
		}
	}
	return nil
}

// Probe sees the fault while node's runtime runs no container of the pod
// and no controller-manager runs anywhere: an endpoint is left that
// nothing can take away. The kubelet's state is in the detail.
func (f *deadEndpoint) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	node, controlPlane, err := f.hosts(l)
	if err != nil {
		return fault.Effect{}, err
	}
	var running, down []string
	for _, h := range controlPlane {
		st, err := faults.ServiceState(ctx, h, lab.ServiceControllerManager)
		if err != nil {
			return fault.Effect{}, err
		}
		if faults.IsUp(st) {
			running = append(running, h.Name())
		} else {
			down = append(down, h.Name())
		}
	}
	kubelet, err := faults.ServiceState(ctx, node, lab.ServiceKubelet)
	if err != nil {
		return fault.Effect{}, err
	}
	v, err := f.runtimePod(ctx, node)
	if err != nil {
		return fault.Effect{}, err
	}
	var parts []string
	if len(down) > 0 {
		parts = append(parts, fmt.Sprintf("%s down on %s", lab.ServiceControllerManager, strings.Join(down, ", ")))
	}
	if len(running) > 0 {
		parts = append(parts, fmt.Sprintf("%s running on %s", lab.ServiceControllerManager, strings.Join(running, ", ")))
	}
	parts = append(parts, fmt.Sprintf("%s on %s %s", lab.ServiceKubelet, f.p.Node, kubelet.State))
	alive := runningContainers(v)
	if len(alive) > 0 {
		parts = append(parts, fmt.Sprintf("cri/%s runs %d of %d containers of pod %s", f.p.Node, len(alive), len(v.Containers), f.pod()))
	} else {
		parts = append(parts, fmt.Sprintf("cri/%s runs none of the %d containers of pod %s", f.p.Node, len(v.Containers), f.pod()))
	}
	return fault.Effect{Observed: len(running) == 0 && len(alive) == 0, Detail: strings.Join(parts, "; ")}, nil
}

// hosts are the pod's node and every control-plane host of the lab.
func (f *deadEndpoint) hosts(l lab.Lab) (lab.Host, []lab.Host, error) {
	node, err := l.Host(f.p.Node)
	if err != nil {
		return nil, nil, fmt.Errorf("host %q: %w", f.p.Node, err)
	}
	controlPlane := lab.HostsWithRole(l, lab.RoleControlPlane)
	if len(controlPlane) == 0 {
		return nil, nil, fmt.Errorf("the lab has no %s host to run %s", lab.RoleControlPlane, lab.ServiceControllerManager)
	}
	return node, controlPlane, nil
}

// runtimePod reads the pod from node's runtime as the cri/<node> source
// does, so that "not running" here is what endpoints-truthful reads.
func (f *deadEndpoint) runtimePod(ctx context.Context, node lab.Host) (evidence.RuntimePodValue, error) {
	pods, err := crictl(ctx, node, "crictl pods -o json")
	if err != nil {
		return evidence.RuntimePodValue{}, err
	}
	ctrs, err := crictl(ctx, node, "crictl ps -a -o json")
	if err != nil {
		return evidence.RuntimePodValue{}, err
	}
	v, err := source.RuntimePodFromCrictl([]byte(pods), []byte(ctrs), f.p.Namespace, f.p.Name)
	if err != nil {
		return evidence.RuntimePodValue{}, fmt.Errorf("cri/%s: %w", node.Name(), err)
	}
	return v, nil
}

// crictlStop is the command that stops containers, before their IDs.
const crictlStop = "crictl --timeout=30s stop "

func crictl(ctx context.Context, h lab.Host, cmd string) (string, error) {
	res, err := h.Run(ctx, cmd)
	if err != nil {
		return "", fmt.Errorf("cri/%s: %s: %w", h.Name(), cmd, err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("cri/%s: %s exited %d: %s", h.Name(), cmd, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return res.Stdout, nil
}

// runningContainers are the IDs of the pod's containers the runtime runs,
// in any sandbox: one running outside a ready sandbox is alive all the
// same.
func runningContainers(v evidence.RuntimePodValue) []string {
	var ids []string
	for _, c := range v.Containers {
		if c.State == containerRunning {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// mustRun refuses a service that is not running: heal would start what
// the fault did not stop.
func mustRun(ctx context.Context, h lab.Host, service string) error {
	st, err := faults.ServiceState(ctx, h, service)
	if err != nil {
		return err
	}
	if st.State != "running" {
		return fmt.Errorf("%s on %s is already %s: heal would start what the fault did not stop", service, h.Name(), st.State)
	}
	return nil
}

func decodeDeadEndpoint(raw json.RawMessage) (fault.Fault, error) {
	var p deadEndpointParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Node == "" || p.Namespace == "" || p.Name == "" {
		return nil, errors.New("node, namespace and pod are all needed")
	}
	return &deadEndpoint{p: p}, nil
}

func init() { fault.Register(KindDeadEndpoint, decodeDeadEndpoint) }
