package drills

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	evsampler "github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/evidence/watch"
	"github.com/faultline/faultline/lab"
)

// The questions the drills ask besides the framework's: every pod of the
// drill's namespace as each API server has it, the drill namespace's
// containers as each worker's runtime has them, and the control-plane
// processes of each control-plane host.
const (
	QuestionPods       evidence.Question = "drill/pods"
	QuestionContainers evidence.Question = "drill/containers"
	QuestionComponents evidence.Question = "drill/components"
	QuestionLeaders    evidence.Question = "drill/leaders"
)

// LeaderLeases are the leader-election leases the racks drill follows.
var LeaderLeases = []string{"kube-controller-manager", "kube-scheduler"}

// Timeline kinds the drills' evidence stamps, as the framework's readers
// and watches name them.
const (
	KindFailedScheduling    = watch.KindFailedScheduling
	KindComponentRestarted  = source.KindComponentRestarted
	KindComponentStopped    = source.KindComponentStopped
	KindComponentStarted    = source.KindComponentStarted
	KindPodPhase            = watch.KindPodPhase
	KindPodPhaseWatching    = watch.KindPodPhaseWatching
	KindPodPhaseWatchFailed = watch.KindPodPhaseWatchFailed
)

// LeadersValue is each leader-election lease as one API server has it.
type LeadersValue struct {
	Leases map[string]evidence.LeaseValue `json:"leases"`
}

// PodsValue is every pod of the drill namespace, by name.
type PodsValue struct {
	Pods []PodState `json:"pods"`
}

// PodState is one pod as an API server has it.
type PodState struct {
	Name              string     `json:"name"`
	UID               string     `json:"uid"`
	Owner             string     `json:"owner,omitempty"`
	Node              string     `json:"node,omitempty"`
	Phase             string     `json:"phase"`
	Ready             bool       `json:"ready"`
	DeletionTimestamp *time.Time `json:"deletionTimestamp,omitempty"`
	Created           time.Time  `json:"created"`
	// Terminated says how each terminated container ended ("web: Completed,
	// exit 0"): what decides a finished pod's phase. Absent in records
	// written before it was read.
	Terminated []string `json:"terminated,omitempty"`
}

// ContainersValue is the drill namespace's containers in one runtime;
// ContainerState is one of them as the runtime lists it.
type (
	ContainersValue = evidence.NamespaceContainersValue
	ContainerState  = evidence.NamespaceContainer
)

// ComponentsValue is the control-plane processes of one host.
type ComponentsValue = evidence.ServicesValue

// Sampler is the framework's sampler; NewSampler gives it the drills'
// questions.
type Sampler = evsampler.Sampler

// NewSampler is the framework's sampler with the drills' subjects and
// questions (Evidence).
func NewSampler() *Sampler {
	return evsampler.New(evsampler.Options{SubjectsFor: SubjectsOf, Extras: Evidence()})
}

// SubjectsOf names what the framework's questions ask after in a lab of
// either drill's shape: the pair's worker and bare pod, or the racks' W1
// and P1, in the drill's namespace.
func SubjectsOf(l lab.Lab) (evidence.Subjects, error) {
	subjects := evidence.Subjects{PodNamespace: Namespace, ServiceNamespace: Namespace, ServiceName: DeploymentName}
	if s, err := PairShapeOf(l); err == nil {
		subjects.Node, subjects.PodName = s.Worker, OrphanName
	} else if r, err := RacksShapeOf(l); err == nil {
		subjects.Node, subjects.PodName = r.W1, StatefulPodName
	} else {
		return evidence.Subjects{}, fmt.Errorf("lab %s has neither the pair nor the racks shape", l.Info().Name)
	}
	return subjects, nil
}

// Evidence is what the drills read besides the framework's questions, and
// how:
//   - drill/pods: the namespace's pods, listed from every API server;
//   - drill/leaders: the LeaderLeases, from every API server;
//   - drill/components: the API server, controller-manager and scheduler
//     processes of every control-plane host, from the lab's process table,
//     each restart, stop and start stamped on the timeline;
//   - drill/containers: the namespace's containers, from every worker's
//     container runtime (the listing the framework takes anyway);
//   - the scheduler's FailedScheduling events of the namespace, and every
//     phase change of its pods (a finished pod holds its terminal phase
//     for less than a sampling interval), from the first API server.
func Evidence() []evsampler.Extra {
	return []evsampler.Extra{
		evsampler.OnAPIServers(QuestionPods, readPods),
		evsampler.OnAPIServers(QuestionLeaders, readLeaders),
		evsampler.ServicesOn(lab.RoleControlPlane, "controlplane", QuestionComponents,
			lab.ServiceAPIServer, lab.ServiceControllerManager, lab.ServiceScheduler),
		evsampler.OnRuntimes(source.NamespaceContainers(QuestionContainers, Namespace)),
		evsampler.SchedulingFailures(Namespace),
		evsampler.PodPhaseWatch(Namespace),
	}
}

// readPods lists the drill namespace's pods.
func readPods(ctx context.Context, cs kubernetes.Interface) (any, string, error) {
	list, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	v := PodsValue{Pods: []PodState{}}
	for _, p := range list.Items {
		v.Pods = append(v.Pods, podState(&p))
	}
	sort.Slice(v.Pods, func(i, j int) bool { return v.Pods[i].Name < v.Pods[j].Name })
	return v, list.ResourceVersion, nil
}

// readLeaders reads the leader-election leases: who leads, by the API
// server's account.
func readLeaders(ctx context.Context, cs kubernetes.Interface) (any, string, error) {
	v := LeadersValue{Leases: map[string]evidence.LeaseValue{}}
	for _, name := range LeaderLeases {
		l, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, "", err
		}
		v.Leases[name] = source.LeaseOf(l)
	}
	return v, "", nil
}

func podState(p *corev1.Pod) PodState {
	st := PodState{Name: p.Name, UID: string(p.UID), Node: p.Spec.NodeName, Phase: string(p.Status.Phase), Created: p.CreationTimestamp.UTC(), Terminated: watch.TerminatedOf(p)}
	for _, o := range p.OwnerReferences {
		st.Owner = o.Kind + "/" + o.Name
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			st.Ready = c.Status == corev1.ConditionTrue
		}
	}
	if p.DeletionTimestamp != nil {
		t := p.DeletionTimestamp.UTC()
		st.DeletionTimestamp = &t
	}
	return st
}
