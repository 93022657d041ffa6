package controls

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// useFake makes the controls talk to cs for the rest of the test.
func useFake(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	old := client
	client = func(lab.Lab, string) (kubernetes.Interface, error) { return cs, nil }
	t.Cleanup(func() { client = old })
}

func webDeployment(replicas, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "faultline", Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
		Status: appsv1.DeploymentStatus{ReadyReplicas: ready},
	}
}

func webPod(name string, ready bool, labels map[string]string) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	if labels == nil {
		labels = map[string]string{"app": "web"}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "faultline", Name: name, Labels: labels, UID: types.UID("uid-" + name)},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

// countingQuotas stands in for the quota controller: every quota created
// comes back with its pods counted.
func countingQuotas(cs *fake.Clientset) {
	cs.PrependReactor("create", "resourcequotas", func(a k8stesting.Action) (bool, runtime.Object, error) {
		q := a.(k8stesting.CreateAction).GetObject().(*corev1.ResourceQuota)
		q.Status.Hard = q.Spec.Hard.DeepCopy()
		q.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}
		return false, nil, nil
	})
}

func deletedPods(cs *fake.Clientset) []string {
	var names []string
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			names = append(names, d.GetName())
		}
	}
	return names
}

func TestOperatorControlsDecodeToTheSameFault(t *testing.T) {
	for _, f := range []fault.Lingering{
		QuotaThenDelete(Deployment{Namespace: "faultline", Name: "web", Wait: time.Minute}),
		FinalizerThenDelete(PodRef{Namespace: "faultline", Name: "stateful-0"}),
	} {
		got, err := fault.Decode(f.Kind(), f.Params())
		if err != nil {
			t.Fatalf("%s: %v", f.Kind(), err)
		}
		if !bytes.Equal(got.Params(), f.Params()) || got.Class() != ClassOperatorAction {
			t.Errorf("%s decoded to %s %s, want %s", f.Kind(), got.Class(), got.Params(), f.Params())
		}
		// faultline heal releases what a run left behind from the ledger
		// entry alone, so the decoded fault must be a lingering one.
		if _, ok := got.(fault.Lingering); !ok {
			t.Errorf("%s decoded to a fault that cannot be released", f.Kind())
		}
	}
}

func TestOperatorControlsRefuseIncompleteParams(t *testing.T) {
	for kind, raws := range map[string][]string{
		KindQuotaThenDelete:     {`{"namespace":"faultline"}`, `{"deployment":"web"}`, `{`},
		KindFinalizerThenDelete: {`{"namespace":"faultline"}`, `{"pod":"stateful-0"}`, `[]`},
	} {
		for _, raw := range raws {
			if _, err := fault.Decode(kind, []byte(raw)); err == nil {
				t.Errorf("%s decoded %s", kind, raw)
			}
		}
	}
}

func TestQuotaThenDeleteFreezesAndDeletesOneReadyPod(t *testing.T) {
	cs := fake.NewClientset(webDeployment(3, 3),
		webPod("web-a", false, nil), webPod("web-b", true, nil), webPod("web-c", true, nil),
		webPod("other", true, map[string]string{"app": "other"}))
	countingQuotas(cs)
	useFake(t, cs)
	ctx := context.Background()
	f := QuotaThenDelete(Deployment{Namespace: "faultline", Name: "web", Wait: 3 * time.Second})

	if err := f.Inject(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// The first ready pod of the Deployment, and only it: not the one
	// that is not ready, not another workload's.
	if got := deletedPods(cs); !slices.Equal(got, []string{"web-b"}) {
		t.Errorf("deleted %v, want [web-b]", got)
	}
	q, err := cs.CoreV1().ResourceQuotas("faultline").Get(ctx, FreezeQuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hard, ok := q.Spec.Hard[corev1.ResourcePods]; !ok || hard.Value() != 0 || len(q.Spec.Hard) != 1 {
		t.Errorf("quota hard %v, want pods: 0 alone", q.Spec.Hard)
	}

	// The ReplicaSet controller cannot replace the pod: 2 of 3 ready.
	if _, err := cs.AppsV1().Deployments("faultline").UpdateStatus(ctx, webDeployment(3, 2), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e, err := f.Probe(ctx, nil); err != nil || !e.Observed {
		t.Errorf("probe with the quota and 2 of 3 ready: %+v, %v; want observed", e, err)
	}
	// A Deployment back at spec is not broken, quota or not.
	if _, err := cs.AppsV1().Deployments("faultline").UpdateStatus(ctx, webDeployment(3, 3), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e, err := f.Probe(ctx, nil); err != nil || e.Observed {
		t.Errorf("probe with 3 of 3 ready: %+v, %v; want not observed", e, err)
	}

	if err := f.Heal(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ResourceQuotas("faultline").Get(ctx, FreezeQuotaName, metav1.GetOptions{}); err != nil {
		t.Errorf("heal removed the quota (%v); it lingers until release", err)
	}
	for range 2 { // released twice: the second finds nothing and is fine
		if err := f.Release(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ResourceQuotas("faultline").Get(ctx, FreezeQuotaName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("quota after release: %v, want not found", err)
	}
	if _, err := cs.AppsV1().Deployments("faultline").UpdateStatus(ctx, webDeployment(3, 2), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e, err := f.Probe(ctx, nil); err != nil || e.Observed {
		t.Errorf("probe after release: %+v, %v; want not observed", e, err)
	}
}

func TestQuotaThenDeleteRefusesWithoutTouchingAnything(t *testing.T) {
	theirs := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "faultline", Name: FreezeQuotaName}}
	for name, objs := range map[string][]runtime.Object{
		"quota already there": {webDeployment(3, 3), webPod("web-a", true, nil), theirs},
		"no deployment":       {webPod("web-a", true, nil)},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(objs...)
			useFake(t, cs)
			err := QuotaThenDelete(Deployment{Namespace: "faultline", Name: "web", Wait: time.Second}).Inject(context.Background(), nil)
			if err == nil {
				t.Fatal("injected")
			}
			for _, a := range cs.Actions() {
				if a.GetVerb() != "get" && a.GetVerb() != "list" {
					t.Errorf("refused inject still did %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}

func TestQuotaThenDeleteGivesUpWhenNoPodIsReady(t *testing.T) {
	cs := fake.NewClientset(webDeployment(3, 0), webPod("web-a", false, nil))
	countingQuotas(cs)
	useFake(t, cs)
	err := QuotaThenDelete(Deployment{Namespace: "faultline", Name: "web", Wait: 1500 * time.Millisecond}).Inject(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "a ready pod of deployment faultline/web") {
		t.Errorf("inject: %v, want a timeout naming the wait", err)
	}
	if got := deletedPods(cs); len(got) != 0 {
		t.Errorf("deleted %v", got)
	}
}

// gracefulPods makes pod deletion what the API server does with a
// finalizer in place: the pod gets a deletion timestamp and stays.
func gracefulPods(cs *fake.Clientset) {
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		obj, err := cs.Tracker().Get(a.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod)
		if len(pod.Finalizers) == 0 {
			return false, nil, nil
		}
		now := metav1.Now()
		pod.DeletionTimestamp = &now
		return true, nil, cs.Tracker().Update(a.GetResource(), pod, d.GetNamespace())
	})
}

func TestFinalizerThenDeleteHoldsThePodUntilRelease(t *testing.T) {
	pod := webPod("stateful-0", true, nil)
	pod.Finalizers = []string{"example.com/theirs"}
	cs := fake.NewClientset(pod)
	gracefulPods(cs)
	useFake(t, cs)
	ctx := context.Background()
	f := FinalizerThenDelete(PodRef{Namespace: "faultline", Name: "stateful-0"})

	if e, err := f.Probe(ctx, nil); err != nil || e.Observed {
		t.Errorf("probe before inject: %+v, %v; want not observed", e, err)
	}
	if err := f.Inject(ctx, nil); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Pods("faultline").Get(ctx, "stateful-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held := slices.Sorted(slices.Values(got.Finalizers))
	if got.DeletionTimestamp == nil || !slices.Equal(held, []string{"example.com/theirs", HoldFinalizer}) {
		t.Errorf("after inject: deleted at %v, finalizers %v; want deleting, both finalizers", got.DeletionTimestamp, got.Finalizers)
	}
	if e, err := f.Probe(ctx, nil); err != nil || !e.Observed {
		t.Errorf("probe while held: %+v, %v; want observed", e, err)
	}
	if err := f.Heal(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := f.Release(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err = cs.CoreV1().Pods("faultline").Get(ctx, "stateful-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Finalizers, []string{"example.com/theirs"}) {
		t.Errorf("after release finalizers %v, want only the other one", got.Finalizers)
	}
	if e, err := f.Probe(ctx, nil); err != nil || e.Observed {
		t.Errorf("probe after release: %+v, %v; want not observed", e, err)
	}
	// Once the pod is gone there is nothing to release.
	if err := cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "faultline", "stateful-0"); err != nil {
		t.Fatal(err)
	}
	if err := f.Release(ctx, nil); err != nil {
		t.Errorf("release of a pod that is gone: %v", err)
	}
}

func TestFinalizerThenDeleteRefusesAPodAlreadyDeleting(t *testing.T) {
	pod := webPod("stateful-0", true, nil)
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.Finalizers = []string{"example.com/theirs"}
	cs := fake.NewClientset(pod)
	useFake(t, cs)
	if err := FinalizerThenDelete(PodRef{Namespace: "faultline", Name: "stateful-0"}).Inject(context.Background(), nil); err == nil {
		t.Fatal("injected on a pod already being deleted")
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("refused inject still did %s", a.GetVerb())
		}
	}
}
