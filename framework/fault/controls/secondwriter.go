package controls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindSecondLedgerWriter is the kind of SecondLedgerWriter faults.
const KindSecondLedgerWriter = "second-ledger-writer"

// SecondWriter names the one-replica StatefulSet whose pod 0 writes, and
// the bare pod made beside it.
type SecondWriter struct {
	Namespace   string `json:"namespace"`
	StatefulSet string `json:"statefulSet"`
	// Pod is the name of the second writer, a bare pod (no owner) that
	// Heal deletes by this name.
	Pod string `json:"pod"`
}

// The second writer's bounds.
const (
	// SecondWriterStartWait bounds the wait for the second writer to be
	// ready: its image pulled on a node that may not have run it yet, the
	// claim's volume mounted there, and the readiness probe (every
	// second) answered.
	SecondWriterStartWait = 2 * time.Minute
	// SecondWriterGoneWait bounds the wait for the pod's object to leave
	// the API after a deletion with grace 0, which removes it at once:
	// the wait is for an API server slow to answer.
	SecondWriterGoneWait = time.Minute
)

// LabelSecondWriterOf labels the second writer with the StatefulSet it
// writes beside. The pod carries no label of the StatefulSet's selector,
// so no Service routes to it and the StatefulSet does not count it.
const LabelSecondWriterOf = "faultline-second-writer-of"

// SecondLedgerWriter makes a second writer of a StatefulSet's volume on
// purpose: a bare pod from the StatefulSet's pod template, mounting the
// claims of its pod 0 (the claim templates' claims of ordinal 0), pinned
// (spec.nodeName, no scheduler) to a worker host of the lab other than
// pod 0's node. Where the claim's class lets every node mount it at once
// (a shared directory), both copies run and append to one log, each from
// the offset it holds in memory: the positive control of
// single-writer-at-storage, which must find the two writers' appends
// accepted at once. The second writer takes its identity from the
// downward API as pod 0 does (its own name, UID and node) and keeps its
// history under the same prefix, so the history store holds both.
//
// Inject waits until the second writer is ready (SecondWriterStartWait).
// Heal deletes it with grace 0 and waits until its object is gone
// (SecondWriterGoneWait); its container's end and the volume's unmount on
// its node follow on the kubelet's time, which the suite's quiesce waits
// for. Heal needs only the params, so a fault decoded from a heal ledger
// heals. Probe sees the fault while the second writer and pod 0 are both
// ready, on two nodes.
func SecondLedgerWriter(w SecondWriter) fault.Fault { return &secondWriter{w: w} }

type secondWriter struct{ w SecondWriter }

func (f *secondWriter) Kind() string            { return KindSecondLedgerWriter }
func (f *secondWriter) Class() fault.Class      { return ClassOperatorAction }
func (f *secondWriter) Params() json.RawMessage { return mustJSON(KindSecondLedgerWriter, f.w) }

// firstPod is the StatefulSet's pod 0.
func (f *secondWriter) firstPod() string { return f.w.StatefulSet + "-0" }

func (f *secondWriter) Inject(ctx context.Context, l lab.Lab) error {
	w := f.w
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("second writer: %w", err)
	}
	sts, err := cs.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.StatefulSet, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("second writer: reading statefulset %s/%s: %w", w.Namespace, w.StatefulSet, err)
	}
	if len(sts.Spec.VolumeClaimTemplates) == 0 {
		return fmt.Errorf("second writer: statefulset %s/%s has no claim template: its pod writes no volume to share", w.Namespace, w.StatefulSet)
	}
	first, err := cs.CoreV1().Pods(w.Namespace).Get(ctx, f.firstPod(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("second writer: reading %s/%s: %w", w.Namespace, f.firstPod(), err)
	}
	if first.Spec.NodeName == "" {
		return fmt.Errorf("second writer: %s/%s is on no node yet", w.Namespace, f.firstPod())
	}
	node, err := otherWorker(l, first.Spec.NodeName)
	if err != nil {
		return fmt.Errorf("second writer: %w", err)
	}
	spec := *sts.Spec.Template.Spec.DeepCopy()
	spec.NodeName = node
	for _, t := range sts.Spec.VolumeClaimTemplates {
		// The StatefulSet names pod N's claim of template t t-<name>-N.
		claim := t.Name + "-" + f.firstPod()
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: w.Pod, Namespace: w.Namespace, Labels: map[string]string{LabelSecondWriterOf: w.StatefulSet}},
		Spec:       spec,
	}
	if _, err := cs.CoreV1().Pods(w.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("second writer: creating pod %s/%s on %s: %w", w.Namespace, w.Pod, node, err)
	}
	ctx, cancel := context.WithTimeout(ctx, SecondWriterStartWait)
	defer cancel()
	last := "not read yet"
	for {
		p, err := cs.CoreV1().Pods(w.Namespace).Get(ctx, w.Pod, metav1.GetOptions{})
		switch {
		case err != nil:
			last = err.Error()
		case podIsReady(p):
			return nil
		default:
			last = fmt.Sprintf("phase %s on %s", p.Status.Phase, p.Spec.NodeName)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("second writer: pod %s/%s not ready after %s (%s): %w", w.Namespace, w.Pod, SecondWriterStartWait, last, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// otherWorker is the first, by name, of the lab's worker hosts other than
// node.
func otherWorker(l lab.Lab, node string) (string, error) {
	var workers []string
	for _, h := range l.Hosts() {
		if h.HasRole(lab.RoleWorker) {
			workers = append(workers, h.Name())
		}
	}
	sort.Strings(workers)
	for _, n := range workers {
		if n != node {
			return n, nil
		}
	}
	return "", fmt.Errorf("lab %s has no worker host other than %s (workers %v)", l.Info().Name, node, workers)
}

func podIsReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// Heal deletes the second writer with grace 0 and waits until its object
// is gone; one already gone is healed.
func (f *secondWriter) Heal(ctx context.Context, l lab.Lab) error {
	w := f.w
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("second writer: %w", err)
	}
	zero := int64(0)
	err = cs.CoreV1().Pods(w.Namespace).Delete(ctx, w.Pod, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("second writer: deleting pod %s/%s: %w", w.Namespace, w.Pod, err)
	}
	return waitPodGone(ctx, cs, w.Namespace, w.Pod, SecondWriterGoneWait)
}

// waitPodGone waits until the API has no pod namespace/name.
func waitPodGone(ctx context.Context, cs kubernetes.Interface, namespace, name string, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	last := "not read yet"
	for {
		p, err := cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			last = err.Error()
		default:
			last = fmt.Sprintf("still there (phase %s on %s)", p.Status.Phase, p.Spec.NodeName)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("second writer: pod %s/%s deleted with grace 0 and not gone after %s: %s: %w", namespace, name, bound, last, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// Probe sees the fault while the second writer and the StatefulSet's pod
// 0 are both ready, on two nodes.
func (f *secondWriter) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	w := f.w
	cs, err := client(l, "")
	if err != nil {
		return fault.Effect{}, err
	}
	pods := cs.CoreV1().Pods(w.Namespace)
	second, err := pods.Get(ctx, w.Pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fault.Effect{Detail: fmt.Sprintf("no second writer %s/%s", w.Namespace, w.Pod)}, nil
	}
	if err != nil {
		return fault.Effect{}, fmt.Errorf("reading pod %s/%s: %w", w.Namespace, w.Pod, err)
	}
	first, err := pods.Get(ctx, f.firstPod(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fault.Effect{Detail: fmt.Sprintf("second writer %s ready %v on %s; no %s", w.Pod, podIsReady(second), second.Spec.NodeName, f.firstPod())}, nil
	}
	if err != nil {
		return fault.Effect{}, fmt.Errorf("reading pod %s/%s: %w", w.Namespace, f.firstPod(), err)
	}
	both := podIsReady(second) && podIsReady(first) && second.Spec.NodeName != first.Spec.NodeName
	return fault.Effect{Observed: both, Detail: fmt.Sprintf("second writer %s ready %v on %s; %s ready %v on %s",
		w.Pod, podIsReady(second), second.Spec.NodeName, f.firstPod(), podIsReady(first), first.Spec.NodeName)}, nil
}

func decodeSecondWriter(raw json.RawMessage) (fault.Fault, error) {
	var w SecondWriter
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	if w.Namespace == "" || w.StatefulSet == "" || w.Pod == "" {
		return nil, errors.New("namespace, statefulSet and pod are all needed")
	}
	if w.Pod == w.StatefulSet+"-0" {
		return nil, fmt.Errorf("pod %s is the statefulset's own pod 0: heal would delete it", w.Pod)
	}
	return SecondLedgerWriter(w), nil
}

func init() { fault.Register(KindSecondLedgerWriter, decodeSecondWriter) }
