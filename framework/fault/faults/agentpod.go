package faults

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/apiretry"
)

// A node agent (kube-proxy, the policy agent) runs as a service of its
// host or as a DaemonSet's pod on its node, as the lab says
// (lab.AgentRunOf). The faults that name an agent by its service name
// address a pod agent as a real cluster's operator and kubelet would:
// freeze through the pod's cgroup (as pod-freeze), kill its container's
// processes and let the kubelet start it again, restart by deleting the
// pod and letting the DaemonSet make another. Stopping one and keeping it
// down is not something a cluster offers for a DaemonSet's pod, and is
// refused.

// isAgent says whether service is a node agent, which a lab may run as a
// pod.
func isAgent(service string) bool {
	return service == lab.ServiceKubeProxy || service == lab.ServicePolicyAgent
}

// agentPodRun is how service runs on host when it is a node agent the lab
// runs as a pod; nil for every other service and for an agent the lab
// runs as a service.
func agentPodRun(l lab.Lab, host, service string) (*lab.AgentRun, error) {
	if !isAgent(service) || host == "" {
		return nil, nil
	}
	r, err := lab.AgentRunOf(l, host, service)
	if err != nil {
		return nil, err
	}
	if !r.AsPod() {
		return nil, nil
	}
	if err := r.Pod.Check(); err != nil {
		return nil, fmt.Errorf("%s on %s: %w", service, host, err)
	}
	return &r, nil
}

// agentPod is an agent's pod on its node as the API servers record it.
type agentPod struct {
	Name string
	UID  string
	// ContainerID is the agent's container's id in the runtime (the part
	// of its status's containerID after "<runtime>://"); empty while the
	// container has none.
	ContainerID  string
	Running      bool
	RestartCount int32
}

// containerIDPattern is a container id as containerd and CRI-O give them.
var containerIDPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// findAgentPod is the one pod of the agent's DaemonSet on its node that is
// not being deleted: an error when there is none or more than one.
func findAgentPod(ctx context.Context, cs kubernetes.Interface, r lab.AgentRun) (agentPod, error) {
	var list *corev1.PodList
	err := apiretry.Do(ctx, apiretry.Backoff, apiretry.Dropped, func() (err error) {
		list, err = cs.CoreV1().Pods(r.Pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.Pod.Selector, FieldSelector: "spec.nodeName=" + r.Node})
		return err
	})
	if err != nil {
		return agentPod{}, fmt.Errorf("finding %s's pod on %s (%s in %s): %w", r.Agent, r.Node, r.Pod.Selector, r.Pod.Namespace, err)
	}
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName == r.Node {
			live = append(live, p)
		}
	}
	switch len(live) {
	case 0:
		return agentPod{}, fmt.Errorf("no pod of %s (%s in %s) on %s", r.Agent, r.Pod.Selector, r.Pod.Namespace, r.Node)
	case 1:
	default:
		var names []string
		for _, p := range live {
			names = append(names, p.Name)
		}
		return agentPod{}, fmt.Errorf("%d pods of %s on %s (%v): which one is the agent is not known", len(live), r.Agent, r.Node, names)
	}
	p := live[0]
	if !podUID.MatchString(string(p.UID)) {
		return agentPod{}, fmt.Errorf("pod %s/%s has UID %q, not a UUID", p.Namespace, p.Name, p.UID)
	}
	out := agentPod{Name: p.Name, UID: string(p.UID)}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != r.Pod.Container {
			continue
		}
		out.Running = c.State.Running != nil
		out.RestartCount = c.RestartCount
		if _, id, ok := strings.Cut(c.ContainerID, "://"); ok && containerIDPattern.MatchString(id) {
			out.ContainerID = id
		}
	}
	return out, nil
}

// runningAgentPod is the agent's pod with its container running, or an
// error saying why a fault on it would show nothing.
func runningAgentPod(ctx context.Context, l lab.Lab, r lab.AgentRun) (kubernetes.Interface, agentPod, error) {
	cs, err := kubeClient(l)
	if err != nil {
		return nil, agentPod{}, err
	}
	p, err := findAgentPod(ctx, cs, r)
	if err != nil {
		return nil, agentPod{}, err
	}
	if !p.Running || p.ContainerID == "" {
		return nil, agentPod{}, fmt.Errorf("%s's pod %s on %s has no running container %s", r.Agent, p.Name, r.Node, r.Pod.Container)
	}
	return cs, p, nil
}

// killContainerScript sends SIGKILL to every process of the container
// whose cgroup, named by its id (cgroupfs) or as the systemd driver names
// it (cri-containerd-<id>.scope, crio-<id>.scope), is directly under the
// pod's cgroup directory; it fails when there is no such cgroup, or it
// holds no process, and prints the pids it killed.
func killContainerScript(podDir, containerID string) string {
	body := fmt.Sprintf(`d=$(find %[1]s -mindepth 1 -maxdepth 1 -type d \( -name %[2]s -o -name '*-%[2]s.scope' \)); `+
		`[ -n "$d" ] && [ $(printf '%%s\n' "$d" | wc -l) -eq 1 ] || { echo "no one cgroup of container %[2]s under %[1]s: $d" >&2; exit 1; }; `+
		`p=$(cat "$d/cgroup.procs"); [ -n "$p" ] || { echo "container %[2]s has no process in $d" >&2; exit 1; }; `+
		`kill -KILL $p && echo $p`, shellQuote(podDir), containerID)
	return "bash -c " + shellQuote(body)
}

// killAgentPod kills the processes of the agent's container on its node,
// as a crash would: the kubelet sees the container exit and starts it
// again in the same pod (at once the first time, then after its back-off).
// It returns the container and pod it killed.
func killAgentPod(ctx context.Context, l lab.Lab, r lab.AgentRun) (agentPod, error) {
	_, p, err := runningAgentPod(ctx, l, r)
	if err != nil {
		return agentPod{}, err
	}
	h, err := hostByName(l, r.Node)
	if err != nil {
		return agentPod{}, err
	}
	cg, err := findPodCgroup(ctx, h, p.UID)
	if err != nil {
		return agentPod{}, fmt.Errorf("%s's pod %s: %w", r.Agent, p.Name, err)
	}
	if _, err := run(ctx, h, killContainerScript(cg.Dir, p.ContainerID)); err != nil {
		return agentPod{}, fmt.Errorf("killing %s's container in pod %s: %w", r.Agent, p.Name, err)
	}
	return p, nil
}

// agentPodKillSeen is the kill's effect, as the API servers record the
// pod: its container is no longer the one killed, or not running.
func agentPodKillSeen(ctx context.Context, l lab.Lab, r lab.AgentRun, killed agentPod) (bool, string, error) {
	cs, err := kubeClient(l)
	if err != nil {
		return false, "", err
	}
	p, err := findAgentPod(ctx, cs, r)
	if err != nil {
		return false, "", err
	}
	where := fmt.Sprintf("%s's pod %s on %s", r.Agent, p.Name, r.Node)
	switch {
	case killed.ContainerID == "":
		return false, fmt.Sprintf("%s: nothing was killed (container %.12s, running %v, %d restarts)", where, p.ContainerID, p.Running, p.RestartCount), nil
	case p.UID != killed.UID:
		return true, fmt.Sprintf("%s replaces the killed pod %s", where, killed.Name), nil
	case p.ContainerID != killed.ContainerID:
		return true, fmt.Sprintf("%s runs container %.12s, not the killed %.12s (%d restarts)", where, p.ContainerID, killed.ContainerID, p.RestartCount), nil
	case !p.Running:
		return true, fmt.Sprintf("%s: container %.12s is not running", where, p.ContainerID), nil
	}
	return false, fmt.Sprintf("%s: the killed container %.12s is recorded running", where, p.ContainerID), nil
}

// deleteAgentPod deletes the agent's pod, gracefully and only if it is
// still the one found (UID precondition): its kubelet stops it and the
// DaemonSet controller makes another, which is how an agent run as a pod
// is restarted.
func deleteAgentPod(ctx context.Context, l lab.Lab, r lab.AgentRun) (agentPod, error) {
	cs, p, err := runningAgentPod(ctx, l, r)
	if err != nil {
		return agentPod{}, err
	}
	uid := types.UID(p.UID)
	// A dropped delete may have landed: asked again, the pod is being
	// deleted (the same UID: the delete is accepted again) or gone
	// (NotFound, which counts as deleted only after a dropped try).
	tries := 0
	err = apiretry.Do(ctx, apiretry.Backoff, apiretry.Dropped, func() error {
		tries++
		return cs.CoreV1().Pods(r.Pod.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	})
	if err != nil && !(tries > 1 && apierrors.IsNotFound(err)) {
		return agentPod{}, fmt.Errorf("deleting %s's pod %s: %w", r.Agent, p.Name, err)
	}
	return p, nil
}

// agentPodReplaced is the restart's effect: the pod deleted is gone from
// the API (its kubelet stopped it), whether or not its replacement runs
// yet.
func agentPodReplaced(ctx context.Context, l lab.Lab, r lab.AgentRun, deleted agentPod) (bool, string, error) {
	cs, err := kubeClient(l)
	if err != nil {
		return false, "", err
	}
	old, err := cs.CoreV1().Pods(r.Pod.Namespace).Get(ctx, deleted.Name, metav1.GetOptions{})
	switch {
	case err == nil && string(old.UID) == deleted.UID:
		state := "running"
		if old.DeletionTimestamp != nil {
			state = "being deleted since " + old.DeletionTimestamp.UTC().Format(time.RFC3339)
		}
		return false, fmt.Sprintf("%s's pod %s on %s is still there, %s", r.Agent, deleted.Name, r.Node, state), nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, "", fmt.Errorf("reading %s's pod %s: %w", r.Agent, deleted.Name, err)
	}
	now, err := findAgentPod(ctx, cs, r)
	if err != nil {
		return true, fmt.Sprintf("%s's pod %s is gone from %s; no replacement yet (%v)", r.Agent, deleted.Name, r.Node, err), nil
	}
	return true, fmt.Sprintf("%s's pod %s is gone from %s; %s replaces it (running %v)", r.Agent, deleted.Name, r.Node, now.Name, now.Running), nil
}

// agentPodStopUnsupported is why a pod agent cannot be stopped and kept
// down.
func agentPodStopUnsupported(l lab.Lab, r lab.AgentRun) error {
	return lab.Unsupported(l.Info().Kind, "stopping "+r.Agent+" on "+r.Node,
		fmt.Sprintf("it runs as a pod of the DaemonSet %s/%s: its kubelet starts a stopped container again and the DaemonSet makes a deleted pod again, and keeping it down would take a change to the DaemonSet every node's pod sees (kill or restart it instead)", r.Pod.Namespace, r.Pod.DaemonSet))
}
