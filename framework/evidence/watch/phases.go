package watch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/faultline/faultline/framework/evidence"
)

// Timeline kinds of a pod-phase watch: a pod's phase changed; the watch
// began (so that a report can tell a pod that never reached a phase from a
// run that did not watch for it); it could not start.
const (
	KindPodPhase            = "pod-phase"
	KindPodPhaseWatching    = "pod-phase-watch-started"
	KindPodPhaseWatchFailed = "pod-phase-watch-failed"
)

// PodPhases watches one namespace's pods on one API server and stamps
// every phase change (no cluster time: a pod records no time of its phase
// changing; a change a relisting delivers is marked replayed). A pod the kubelet finishes after its node's return
// holds its terminal phase (Succeeded or Failed) only until the kubelet
// confirms its deletion, far less than a sampling interval, so snapshots
// alone mostly miss it.
type PodPhases struct {
	src  evidence.Source
	stop chan struct{}
	once sync.Once

	mu     sync.Mutex
	events []evidence.Event
}

// StartPodPhases starts watching namespace's pods through cs; the events
// it stamps are taken with Drain.
func StartPodPhases(cs kubernetes.Interface, src evidence.Source, namespace string) (*PodPhases, error) {
	w := &PodPhases{src: src, stop: make(chan struct{})}
	inf, rl := informer(&corev1.Pod{}, cs,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Pods(namespace).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return cs.CoreV1().Pods(namespace).Watch(ctx, o)
		})
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { rl.Replayed(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			replayed := rl.Replayed(newObj)
			was, ok := oldObj.(*corev1.Pod)
			p, ok2 := newObj.(*corev1.Pod)
			if !ok || !ok2 || was.Status.Phase == p.Status.Phase {
				return
			}
			w.add(evidence.Event{At: time.Now().UTC(), Source: src, Subject: "pod/" + p.Namespace + "/" + p.Name, Kind: KindPodPhase,
				Detail: phaseDetail(p, was.Status.Phase), Replayed: replayed})
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching the phases of the pods of %s on %s: %w", namespace, src, err)
	}
	go inf.Run(w.stop)
	go func() {
		if cache.WaitForCacheSync(w.stop, inf.HasSynced) {
			rl.arm()
			w.add(evidence.Event{At: time.Now().UTC(), Source: src, Subject: "namespace/" + namespace, Kind: KindPodPhaseWatching,
				Detail: fmt.Sprintf("watching the phases of the pods of %s on %s", namespace, src)})
		}
	}()
	return w, nil
}

// phaseDetail reads "uid X, Running → Failed" and, for a terminal phase,
// how the pod's containers ended, which is what decides the phase.
func phaseDetail(p *corev1.Pod, was corev1.PodPhase) string {
	d := fmt.Sprintf("uid %s, %s → %s", p.UID, orNone(string(was)), orNone(string(p.Status.Phase)))
	if t := TerminatedOf(p); len(t) > 0 {
		d += "; " + strings.Join(t, "; ")
	}
	return d
}

// TerminatedOf lists how each terminated container of the pod ended
// ("web: Completed, exit 0").
func TerminatedOf(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			out = append(out, fmt.Sprintf("%s: %s, exit %d", c.Name, orNone(t.Reason), t.ExitCode))
		}
	}
	return out
}

func (w *PodPhases) add(e evidence.Event) {
	w.mu.Lock()
	w.events = append(w.events, e)
	w.mu.Unlock()
}

// Drain returns the events stamped since the last Drain.
func (w *PodPhases) Drain() []evidence.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.events
	w.events = nil
	return out
}

// Stop ends the watch; it may be called more than once.
func (w *PodPhases) Stop() { w.once.Do(func() { close(w.stop) }) }
