package faults

import (
	"context"
	"errors"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A failed read of the leader's Lease is read again, unless the API says
// the Lease is not there.
func TestHolderOfRereadsAfterATransientError(t *testing.T) {
	holder := "cp2_0f3c"
	cs := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-scheduler"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	})
	fails := 2
	cs.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails > 0 {
			fails--
			return true, nil, errors.New("read tcp 10.0.0.1:44250->10.0.0.10:6443: read: connection reset by peer")
		}
		return false, nil, nil
	})
	got, err := holderOf(context.Background(), cs, "kube-scheduler")
	if err != nil || got != holder {
		t.Fatalf("holderOf after two resets = %q, %v; want %q", got, err, holder)
	}

	reads := 0
	missing := fake.NewClientset()
	missing.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		reads++
		return true, nil, apierrors.NewNotFound(coordinationv1.Resource("leases"), "kube-scheduler")
	})
	if _, err := holderOf(context.Background(), missing, "kube-scheduler"); err == nil || !strings.Contains(err.Error(), "reading Lease kube-system/kube-scheduler") {
		t.Errorf("holderOf a missing Lease = %v, want an error naming it", err)
	}
	if reads != 1 {
		t.Errorf("a missing Lease was read %d times, want once", reads)
	}

	always := fake.NewClientset()
	tries := 0
	always.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		tries++
		return true, nil, errors.New("connection reset by peer")
	})
	if _, err := holderOf(context.Background(), always, "kube-scheduler"); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("holderOf with every read failing = %v, want the last error", err)
	}
	if tries != leaseReadBackoff.Steps {
		t.Errorf("every read failing: %d tries, want %d", tries, leaseReadBackoff.Steps)
	}
}
