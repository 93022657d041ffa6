package controls

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/lab"
)

func workerNode(ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker1"},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
	}
}

func taintsOf(t *testing.T, cs kubernetes.Interface) []corev1.Taint {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), "worker1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Spec.Taints
}

func stopKubeletOutOfService(wait time.Duration) fault.Fault {
	return StopThenOutOfService(faults.StopService("worker1", lab.ServiceKubelet), "worker1", wait)
}

func TestStopThenOutOfServiceTaintsANotReadyNodeAndHealsBoth(t *testing.T) {
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	cs := fake.NewClientset(workerNode(corev1.ConditionUnknown, unreachable))
	useFake(t, cs)
	l := newFakeLab()
	ctx := context.Background()
	f := stopKubeletOutOfService(time.Minute)

	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got, want := l.takeLog(), []string{"worker1: stop kubelet"}; !slices.Equal(got, want) {
		t.Errorf("inject did %v, want %v", got, want)
	}
	want := []corev1.Taint{unreachable, {Key: corev1.TaintNodeOutOfService, Value: OutOfServiceValue, Effect: corev1.TaintEffectNoExecute}}
	if got := taintsOf(t, cs); !slices.Equal(got, want) {
		t.Errorf("taints after inject %v, want %v", got, want)
	}
	// A second inject (a retry) adds no second taint.
	if err := setOutOfService(ctx, cs, "worker1", true); err != nil || len(taintsOf(t, cs)) != 2 {
		t.Errorf("adding the taint again: %v, taints %v", err, taintsOf(t, cs))
	}

	for range 2 { // heal is idempotent
		if err := f.Heal(ctx, l); err != nil {
			t.Fatal(err)
		}
		if got := taintsOf(t, cs); !slices.Equal(got, []corev1.Taint{unreachable}) {
			t.Errorf("taints after heal %v, want only the node controller's", got)
		}
	}
	if got := l.takeLog(); !slices.Contains(got, "worker1: start kubelet") {
		t.Errorf("heal did %v, want the kubelet started", got)
	}
}

func TestStopThenOutOfServiceDoesNotTaintANodeThatStaysReady(t *testing.T) {
	cs := fake.NewClientset(workerNode(corev1.ConditionTrue))
	useFake(t, cs)
	l := newFakeLab()
	err := stopKubeletOutOfService(1500*time.Millisecond).Inject(context.Background(), l)
	if err == nil || !strings.Contains(err.Error(), "not Ready") {
		t.Fatalf("inject on a node that stays Ready: %v, want a timeout naming the wait", err)
	}
	if got := taintsOf(t, cs); len(got) != 0 {
		t.Errorf("a Ready node was tainted %v", got)
	}
}

func TestStopThenOutOfServiceRefusesAnUnknownNodeBeforeStopping(t *testing.T) {
	useFake(t, fake.NewClientset())
	l := newFakeLab()
	if err := stopKubeletOutOfService(time.Minute).Inject(context.Background(), l); err == nil || !strings.Contains(err.Error(), "reading Node worker1") {
		t.Fatalf("inject with no Node object: %v", err)
	}
	if got := l.takeLog(); len(got) != 0 {
		t.Errorf("stopped %v for a node the API does not know", got)
	}
}

func TestStopThenOutOfServiceDecodesToTheSameFault(t *testing.T) {
	f := stopKubeletOutOfService(time.Minute)
	got, err := fault.Decode(f.Kind(), f.Params())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Params(), f.Params()) || got.Class() != f.Class() {
		t.Errorf("decoded %s %s, want %s %s", got.Class(), got.Params(), f.Class(), f.Params())
	}
	if _, err := fault.Decode(KindStopThenOutOfService, []byte(strings.Replace(string(f.Params()), `"node":"worker1"`, `"node":""`, 1))); err == nil {
		t.Error("a fault naming no node decoded")
	}
}
