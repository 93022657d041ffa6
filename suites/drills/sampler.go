package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
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

// LeadersValue is each leader-election lease as one API server has it.
type LeadersValue struct {
	Leases map[string]evidence.LeaseValue `json:"leases"`
}

// Timeline kinds the drill sampler stamps.
const (
	KindFailedScheduling   = "failed-scheduling"
	KindComponentRestarted = "component-restarted"
	KindComponentStopped   = "component-stopped"
	KindComponentStarted   = "component-started"
)

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

// ContainersValue is the drill namespace's containers in one runtime.
type ContainersValue struct {
	Containers []ContainerState `json:"containers"`
}

// ContainerState is one container as crictl lists it.
type ContainerState struct {
	Pod       string    `json:"pod"`
	PodUID    string    `json:"podUid"`
	ID        string    `json:"id"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
}

// Running counts the containers in state CONTAINER_RUNNING.
func (v ContainersValue) Running() []ContainerState {
	var out []ContainerState
	for _, c := range v.Containers {
		if c.State == "CONTAINER_RUNNING" {
			out = append(out, c)
		}
	}
	return out
}

// ComponentsValue is the control-plane processes of one host.
type ComponentsValue struct {
	Services []lab.ServiceState `json:"services"`
}

// Sampler is the framework's sampler with the drill's questions added to
// every snapshot and the drill's moments added to the timeline.
type Sampler struct {
	// inner is made on first use from the lab, whose shape says which
	// node and pod the framework's questions ask after.
	newInner func(lab.Lab) (evidence.Sampler, error)
	inner    evidence.Sampler

	mu         sync.Mutex
	clients    map[string]kubernetes.Interface
	seenEvents map[string]int32
	procs      map[string]lab.ServiceState
	notes      []evidence.Event
	// phases watches the drill pods' phases on the first API server, from
	// the first sample after a reset.
	phases *phaseWatch
}

// NewSampler wraps the sampler newInner makes for the lab.
func NewSampler(newInner func(lab.Lab) (evidence.Sampler, error)) *Sampler {
	return &Sampler{newInner: newInner, clients: map[string]kubernetes.Interface{}, seenEvents: map[string]int32{}, procs: map[string]lab.ServiceState{}}
}

// Note adds an event faultline itself caused (a forced deletion) to the
// timeline at the next sample.
func (s *Sampler) Note(e evidence.Event) {
	s.mu.Lock()
	s.notes = append(s.notes, e)
	s.mu.Unlock()
}

// Reset forgets what was seen before, the inner sampler's timeline
// watcher included: after a lab reset the cluster's history starts again
// from the cold snapshot, and a watcher carried over from the previous run
// would hand this run that run's late events, or none at all once its
// informers lost their place. A new run starts from its baseline.
func (s *Sampler) Reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if c, ok := s.inner.(interface{ Close() error }); ok {
		err = c.Close()
	}
	s.inner = nil
	if s.phases != nil {
		s.phases.close()
		s.phases = nil
	}
	s.seenEvents = map[string]int32{}
	s.procs = map[string]lab.ServiceState{}
	s.notes = nil
	if err != nil {
		return fmt.Errorf("closing the previous run's sampler: %w", err)
	}
	return nil
}

// Sample takes the inner snapshot and adds the drill's answers to it.
func (s *Sampler) Sample(ctx context.Context, l lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
	s.mu.Lock()
	if s.inner == nil {
		inner, err := s.newInner(l)
		if err != nil {
			s.mu.Unlock()
			return evidence.Snapshot{}, nil, err
		}
		s.inner = inner
	}
	inner := s.inner
	s.mu.Unlock()
	snap, events, err := inner.Sample(ctx, l)
	if err != nil {
		return snap, events, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	set := func(src evidence.Source, q evidence.Question, a evidence.Answer, evs []evidence.Event) {
		mu.Lock()
		snap.Set(src, q, a)
		events = append(events, evs...)
		mu.Unlock()
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	firstAPI := true
	for _, h := range lab.HostsWithRole(l, lab.RoleControlPlane) {
		cs, err := s.client(l, h.Name())
		src := evidence.Source("apiserver/" + h.Name())
		if err != nil {
			set(src, QuestionPods, evidence.UnreadableAnswer("no client: "+err.Error(), time.Now().UTC()), nil)
			continue
		}
		withEvents := firstAPI
		firstAPI = false
		if withEvents {
			if err := s.watchPhases(cs, src); err != nil {
				events = append(events, evidence.Event{At: time.Now().UTC(), Source: src, Subject: "namespace/" + Namespace, Kind: KindPodPhaseWatchFailed, Detail: err.Error()})
			}
		}
		wg.Go(func() {
			a, evs := s.readPods(rctx, cs, src, withEvents)
			set(src, QuestionPods, a, evs)
		})
		wg.Go(func() {
			set(src, QuestionLeaders, readLeaders(rctx, cs), nil)
		})
		wg.Go(func() {
			a, evs := s.readComponents(rctx, h)
			set(evidence.Source("controlplane/"+h.Name()), QuestionComponents, a, evs)
		})
	}
	for _, h := range lab.HostsWithRole(l, lab.RoleWorker) {
		wg.Go(func() {
			set(evidence.Source("cri/"+h.Name()), QuestionContainers, readContainers(rctx, h), nil)
		})
	}
	wg.Wait()
	s.mu.Lock()
	events = append(events, s.notes...)
	s.notes = nil
	if s.phases != nil {
		events = append(events, s.phases.drain()...)
	}
	s.mu.Unlock()
	return snap, events, nil
}

// watchPhases starts the pod-phase watch once per run.
func (s *Sampler) watchPhases(cs kubernetes.Interface, src evidence.Source) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phases != nil {
		return nil
	}
	w, err := startPhaseWatch(cs, src, Namespace)
	if err != nil {
		return err
	}
	s.phases = w
	return nil
}

func (s *Sampler) client(l lab.Lab, host string) (kubernetes.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs, ok := s.clients[host]; ok {
		return cs, nil
	}
	path, err := l.Kubeconfig(host)
	if err != nil {
		return nil, err
	}
	cs, _, err := source.ClientFromKubeconfig(path, 3*time.Second)
	if err != nil {
		return nil, err
	}
	s.clients[host] = cs
	return cs, nil
}

// readPods lists the drill namespace's pods; from the first API server it
// also turns new FailedScheduling events into timeline moments, since the
// scheduler says there why a replacement found no node.
func (s *Sampler) readPods(ctx context.Context, cs kubernetes.Interface, src evidence.Source, withEvents bool) (evidence.Answer, []evidence.Event) {
	list, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
	at := time.Now().UTC()
	if err != nil {
		return evidence.UnreadableAnswer(source.Reason(err), at), nil
	}
	v := PodsValue{Pods: []PodState{}}
	for _, p := range list.Items {
		v.Pods = append(v.Pods, podState(&p))
	}
	sort.Slice(v.Pods, func(i, j int) bool { return v.Pods[i].Name < v.Pods[j].Name })
	a, err := evidence.ValueAnswer(v, at, list.ResourceVersion)
	if err != nil {
		return evidence.UnreadableAnswer("error: "+err.Error(), at), nil
	}
	if !withEvents {
		return a, nil
	}
	evs, err := cs.CoreV1().Events(Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
	if err != nil {
		return a, nil
	}
	var out []evidence.Event
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range evs.Items {
		count := max(e.Count, 1)
		if e.Series != nil {
			count = max(count, e.Series.Count)
		}
		key := string(e.UID)
		if s.seenEvents[key] >= count {
			continue
		}
		s.seenEvents[key] = count
		when := e.LastTimestamp.Time
		if e.Series != nil && !e.Series.LastObservedTime.IsZero() {
			when = e.Series.LastObservedTime.Time
		}
		if when.IsZero() {
			when = e.EventTime.Time
		}
		if when.IsZero() {
			when = at
		}
		out = append(out, evidence.Event{At: when.UTC(), Source: src, Subject: "pod/" + Namespace + "/" + e.InvolvedObject.Name,
			Kind: KindFailedScheduling, Detail: fmt.Sprintf("%s (uid %s, seen %d times)", e.Message, e.InvolvedObject.UID, count)})
	}
	return a, out
}

// readLeaders reads the leader-election leases: who leads, by the API
// server's account.
func readLeaders(ctx context.Context, cs kubernetes.Interface) evidence.Answer {
	v := LeadersValue{Leases: map[string]evidence.LeaseValue{}}
	for _, name := range LeaderLeases {
		l, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return evidence.UnreadableAnswer(source.Reason(err), time.Now().UTC())
		}
		v.Leases[name] = source.LeaseOf(l)
	}
	at := time.Now().UTC()
	a, err := evidence.ValueAnswer(v, at, "")
	if err != nil {
		return evidence.UnreadableAnswer("error: "+err.Error(), at)
	}
	return a
}

func podState(p *corev1.Pod) PodState {
	st := PodState{Name: p.Name, UID: string(p.UID), Node: p.Spec.NodeName, Phase: string(p.Status.Phase), Created: p.CreationTimestamp.UTC(), Terminated: terminatedOf(p)}
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

// readComponents reads the control-plane processes of a host as its lab
// reports them, and stamps a process that stopped, started or was replaced
// by a new one (a restart).
func (s *Sampler) readComponents(ctx context.Context, h lab.Host) (evidence.Answer, []evidence.Event) {
	svcs, err := h.Services(ctx)
	at := time.Now().UTC()
	if err != nil {
		return evidence.UnreadableAnswer(source.Reason(err), at), nil
	}
	v := ComponentsValue{}
	var out []evidence.Event
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range svcs {
		switch st.Name {
		case lab.ServiceAPIServer, lab.ServiceControllerManager, lab.ServiceScheduler:
		default:
			continue
		}
		v.Services = append(v.Services, st)
		key := h.Name() + "/" + st.Name
		prev, seen := s.procs[key]
		s.procs[key] = st
		if !seen {
			continue
		}
		subject := "process/" + key
		up, wasUp := st.State == "running", prev.State == "running"
		switch {
		case wasUp && up && prev.PID != st.PID:
			out = append(out, evidence.Event{At: at, Source: evidence.Source("controlplane/" + h.Name()), Subject: subject, Kind: KindComponentRestarted,
				Detail: fmt.Sprintf("pid %d → %d", prev.PID, st.PID)})
		case wasUp && !up:
			out = append(out, evidence.Event{At: at, Source: evidence.Source("controlplane/" + h.Name()), Subject: subject, Kind: KindComponentStopped,
				Detail: fmt.Sprintf("pid %d is %s", prev.PID, st.State)})
		case !wasUp && up:
			out = append(out, evidence.Event{At: at, Source: evidence.Source("controlplane/" + h.Name()), Subject: subject, Kind: KindComponentStarted,
				Detail: fmt.Sprintf("pid %d (was %s)", st.PID, prev.State)})
		}
	}
	a, err := evidence.ValueAnswer(v, at, "")
	if err != nil {
		return evidence.UnreadableAnswer("error: "+err.Error(), at), out
	}
	return a, out
}

// crictlContainers is the part of `crictl ps -a -o json` the drill reads.
type crictlContainers struct {
	Containers []struct {
		ID        string            `json:"id"`
		State     string            `json:"state"`
		CreatedAt json.Number       `json:"createdAt"`
		Labels    map[string]string `json:"labels"`
	} `json:"containers"`
}

// readContainers lists the drill namespace's containers on a worker with
// crictl over SSH: the runtime, not the API, says what still runs.
func readContainers(ctx context.Context, h lab.Host) evidence.Answer {
	res, err := h.Run(ctx, "crictl ps -a -o json")
	at := time.Now().UTC()
	if err != nil {
		return evidence.UnreadableAnswer(source.Reason(err), at)
	}
	if res.ExitCode != 0 {
		return evidence.UnreadableAnswer(fmt.Sprintf("error: crictl on %s exited %d: %s", h.Name(), res.ExitCode, strings.TrimSpace(res.Stderr)), at)
	}
	v, err := ContainersFromCrictl([]byte(res.Stdout), Namespace)
	if err != nil {
		return evidence.UnreadableAnswer("error: "+err.Error(), at)
	}
	a, err := evidence.ValueAnswer(v, at, "")
	if err != nil {
		return evidence.UnreadableAnswer("error: "+err.Error(), at)
	}
	return a
}

// ContainersFromCrictl picks namespace's containers out of
// `crictl ps -a -o json` (protojson: createdAt is int64 nanoseconds, quoted).
func ContainersFromCrictl(out []byte, namespace string) (ContainersValue, error) {
	var c crictlContainers
	if err := json.Unmarshal(out, &c); err != nil {
		return ContainersValue{}, fmt.Errorf("decoding crictl ps: %w", err)
	}
	v := ContainersValue{Containers: []ContainerState{}}
	for _, x := range c.Containers {
		if x.Labels["io.kubernetes.pod.namespace"] != namespace {
			continue
		}
		var created time.Time
		if n, err := x.CreatedAt.Int64(); err == nil && n > 0 {
			created = time.Unix(0, n).UTC()
		}
		v.Containers = append(v.Containers, ContainerState{
			Pod: x.Labels["io.kubernetes.pod.name"], PodUID: x.Labels["io.kubernetes.pod.uid"],
			ID: x.ID, State: x.State, CreatedAt: created,
		})
	}
	sort.Slice(v.Containers, func(i, j int) bool { return v.Containers[i].CreatedAt.Before(v.Containers[j].CreatedAt) })
	return v, nil
}
