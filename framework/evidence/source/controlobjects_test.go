package source

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/faultline/faultline/framework/evidence"
)

func decodeJSON[T any](t *testing.T, parts ...string) *T {
	t.Helper()
	var v T
	if err := json.Unmarshal(readTestdata(t, parts...), &v); err != nil {
		t.Fatalf("%v: %v", parts, err)
	}
	return &v
}

func TestDeploymentOfRealDeployments(t *testing.T) {
	rolling := DeploymentOf(decodeJSON[appsv1.Deployment](t, "apiserver", "deployment-web-rolling.json"))
	want := evidence.DeploymentValue{Exists: true, Generation: 1, ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3}
	if rolling != want {
		t.Errorf("just created: got %+v, want %+v", rolling, want)
	}
	ready := DeploymentOf(decodeJSON[appsv1.Deployment](t, "apiserver", "deployment-web-ready.json"))
	want = evidence.DeploymentValue{Exists: true, Generation: 1, ObservedGeneration: 1, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, UpdatedReplicas: 3}
	if ready != want {
		t.Errorf("ready: got %+v, want %+v", ready, want)
	}
	noSpec := &appsv1.Deployment{}
	if got := DeploymentOf(noSpec); got.Replicas != 1 || !got.Exists {
		t.Errorf("no spec.replicas: got %+v, want one replica as the API server defaults it", got)
	}
	if got := DeploymentOf(nil); got.Exists {
		t.Errorf("missing Deployment read as existing: %+v", got)
	}
}

func TestControlObjectsAnswersLeasesAndDeploymentFromOneServer(t *testing.T) {
	cm := decodeJSON[coordinationv1.Lease](t, "apiserver", "lease-kube-controller-manager.json")
	sched := decodeJSON[coordinationv1.Lease](t, "apiserver", "lease-kube-scheduler.json")
	web := decodeJSON[appsv1.Deployment](t, "apiserver", "deployment-web-ready.json")
	client := fake.NewClientset([]runtime.Object{cm, sched, web}...)

	r := NewControlObjects("apiserver/cp1", client, "", "")
	got := r.Read(context.Background())
	if len(got) != len(r.Questions()) {
		t.Fatalf("answered %d of %d questions", len(got), len(r.Questions()))
	}
	var lease evidence.LeaseValue
	if err := got[evidence.SchedulerLease].Decode(&lease); err != nil {
		t.Fatal(err)
	}
	if lease.HolderIdentity != "cp2_32249b3d-fa09-4722-9f2b-4acafa6036dd" || lease.LeaseDurationSeconds != 6 ||
		!lease.RenewTime.Equal(time.Date(2026, 11, 29, 15, 8, 44, 996400000, time.UTC)) {
		t.Errorf("scheduler lease: %+v", lease)
	}
	if got[evidence.SchedulerLease].ResourceVersion != "3981" {
		t.Errorf("scheduler lease resourceVersion %q, want the object's", got[evidence.SchedulerLease].ResourceVersion)
	}
	if err := got[evidence.ControllerManagerLease].Decode(&lease); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(lease.HolderIdentity, "cp") || lease.HolderIdentity == "cp2_32249b3d-fa09-4722-9f2b-4acafa6036dd" {
		t.Errorf("controller-manager lease answered with %+v", lease)
	}
	var d evidence.DeploymentValue
	if err := got[evidence.DeploymentReplicas].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Replicas != 3 || d.ReadyReplicas != 3 {
		t.Errorf("deployment: %+v", d)
	}

	// Another Deployment name: the server says it is not there, which is
	// an answer, not unreadable.
	got = NewControlObjects("apiserver/cp1", client, "faultline", "other").Read(context.Background())
	if err := got[evidence.DeploymentReplicas].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Exists {
		t.Errorf("a missing Deployment read as %+v", d)
	}
}

func TestControlObjectsUnreadableWhenTheServerFails(t *testing.T) {
	got := NewControlObjects("apiserver/cp2", failingClient(), "", "").Read(context.Background())
	for _, q := range []evidence.Question{evidence.ControllerManagerLease, evidence.SchedulerLease, evidence.DeploymentReplicas} {
		if got[q].Readable() || got[q].Reason == "" {
			t.Errorf("%s: got %+v, want unreadable with a reason", q, got[q])
		}
	}
}

// failingClient fails every request as an API server cut from etcd does.
func failingClient() *fake.Clientset {
	client := fake.NewClientset()
	client.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcdserver: request timed out")
	})
	return client
}
