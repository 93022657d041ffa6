package controls

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/faultline/faultline/framework/fault"
)

// ledgerSet is a one-replica ledger StatefulSet with its claim template
// data, and its pod 0 ready on worker1.
func ledgerSet() []runtime.Object {
	labels := map[string]string{"app": "ledger"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "faultline-split", Name: "ledger"},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "ledger", Image: "registry/ledger:1", Args: []string{"--dir=/data"},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
		},
	}
	first := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "faultline-split", Name: "ledger-0", Labels: labels},
		Spec: corev1.PodSpec{NodeName: "worker1"}}
	readyStatus(first)
	return []runtime.Object{sts, first}
}

func readyStatus(p *corev1.Pod) {
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
}

// startsReady makes every pod the fake creates running and ready, as the
// kubelet would once it started it.
func startsReady(cs *fake.Clientset) {
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		readyStatus(a.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
		return false, nil, nil
	})
}

func secondLedgerWriter() fault.Fault {
	return SecondLedgerWriter(SecondWriter{Namespace: "faultline-split", StatefulSet: "ledger", Pod: "ledger-second-writer"})
}

func TestSecondLedgerWriterRunsTheTemplateOnAnotherWorkerWithPod0sClaim(t *testing.T) {
	cs := fake.NewClientset(ledgerSet()...)
	startsReady(cs)
	useFake(t, cs)
	l := newFakeLab()
	ctx := context.Background()
	f := secondLedgerWriter()

	if e, err := f.Probe(ctx, l); err != nil || e.Observed || !strings.Contains(e.Detail, "no second writer") {
		t.Fatalf("probe before inject: %+v, %v", e, err)
	}
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods("faultline-split").Get(ctx, "ledger-second-writer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "worker2" {
		t.Errorf("on %q, want worker2 (a worker other than ledger-0's worker1)", p.Spec.NodeName)
	}
	if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != "registry/ledger:1" || p.Spec.Containers[0].Args[0] != "--dir=/data" {
		t.Errorf("containers %+v, want the template's", p.Spec.Containers)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != "data" || p.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-ledger-0" {
		t.Errorf("volumes %+v, want data on ledger-0's claim data-ledger-0", p.Spec.Volumes)
	}
	if p.Labels["app"] != "" || p.Labels[LabelSecondWriterOf] != "ledger" || len(p.OwnerReferences) != 0 {
		t.Errorf("labels %v, owners %v: want a bare pod outside the StatefulSet's selector", p.Labels, p.OwnerReferences)
	}
	if e, err := f.Probe(ctx, l); err != nil || !e.Observed || !strings.Contains(e.Detail, "on worker2") || !strings.Contains(e.Detail, "on worker1") {
		t.Errorf("probe after inject: %+v, %v", e, err)
	}
}

// Heal needs nothing but the params: the fault decoded from them, as the
// heal ledger holds them after a kill -9, deletes the pod with grace 0 and
// finds it gone; a second heal finds nothing to do.
func TestSecondLedgerWriterHealsFromItsParamsAlone(t *testing.T) {
	cs := fake.NewClientset(ledgerSet()...)
	startsReady(cs)
	useFake(t, cs)
	l := newFakeLab()
	ctx := context.Background()
	f := secondLedgerWriter()
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	var grace *int64
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		grace = a.(k8stesting.DeleteAction).GetDeleteOptions().GracePeriodSeconds
		return false, nil, nil
	})
	decoded, err := fault.Decode(f.Kind(), f.Params())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := decoded.Heal(ctx, l); err != nil {
			t.Fatalf("heal %d: %v", i+1, err)
		}
	}
	if grace == nil || *grace != 0 {
		t.Errorf("deleted with grace %v, want 0", grace)
	}
	if _, err := cs.CoreV1().Pods("faultline-split").Get(ctx, "ledger-second-writer", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second writer after heal: %v", err)
	}
	if _, err := cs.CoreV1().Pods("faultline-split").Get(ctx, "ledger-0", metav1.GetOptions{}); err != nil {
		t.Errorf("ledger-0 after heal: %v", err)
	}
	if e, err := decoded.Probe(ctx, l); err != nil || e.Observed {
		t.Errorf("probe after heal: %+v, %v", e, err)
	}
}

func TestSecondLedgerWriterWithNoOtherWorkerSaysSo(t *testing.T) {
	objs := ledgerSet()
	objs[1].(*corev1.Pod).Spec.NodeName = "worker1"
	cs := fake.NewClientset(objs...)
	useFake(t, cs)
	l := newFakeLab()
	l.hosts = l.hosts[:4] // cp1..cp3 and worker1
	err := secondLedgerWriter().Inject(context.Background(), l)
	if err == nil || !strings.Contains(err.Error(), "no worker host other than worker1") {
		t.Errorf("inject: %v", err)
	}
	if pods, _ := cs.CoreV1().Pods("faultline-split").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 1 {
		t.Errorf("%d pods, want ledger-0 alone", len(pods.Items))
	}
}

func TestSecondLedgerWriterParamsAreCheckedOnDecode(t *testing.T) {
	for _, tc := range []struct {
		params, want string
	}{
		{`{"namespace":"faultline-split","statefulSet":"ledger"}`, "namespace, statefulSet and pod are all needed"},
		{`{"namespace":"faultline-split","pod":"x"}`, "namespace, statefulSet and pod are all needed"},
		{`{"namespace":"faultline-split","statefulSet":"ledger","pod":"ledger-0"}`, "own pod 0"},
		{`{"namespace":`, "unexpected end"},
	} {
		_, err := fault.Decode(KindSecondLedgerWriter, json.RawMessage(tc.params))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.params, err, tc.want)
		}
	}
	f, err := fault.Decode(KindSecondLedgerWriter, secondLedgerWriter().Params())
	if err != nil || f.Class() != ClassOperatorAction || string(f.Params()) != string(secondLedgerWriter().Params()) {
		t.Errorf("round trip: %v, %v", f, err)
	}
}
