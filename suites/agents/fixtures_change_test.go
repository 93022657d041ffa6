package agents

import (
	"errors"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// resetErr is what a request through the virtual address returns when
// keepalived moves the address mid-request.
var resetErr = errors.New(`Delete "https://10.0.0.10:6443/api/v1/namespaces/faultline-agents/pods/backend-a?timeout=10s": read tcp 10.0.0.1:59284->10.0.0.10:6443: read: connection reset by peer`)

// A change's request the API server dropped is asked again; where the
// dropped request landed, the object it made is there (AlreadyExists) or
// the object it deleted is gone (NotFound), and that is the change made.
func TestAChangeTheAPIServerDroppedIsAskedAgain(t *testing.T) {
	cs := fake.NewClientset(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: AllowClient, Namespace: Namespace}})
	// The first create lands and its answer is lost; the first delete
	// is dropped before it lands.
	landedThenLost, dropped := true, true
	cs.PrependReactor("create", "networkpolicies", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if landedThenLost {
			landedThenLost = false
			obj := a.(k8stesting.CreateAction).GetObject()
			if err := cs.Tracker().Create(a.GetResource(), obj, a.GetNamespace()); err != nil {
				t.Fatal(err)
			}
			return true, nil, resetErr
		}
		return false, nil, nil
	})
	cs.PrependReactor("delete", "networkpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
		if dropped {
			dropped = false
			return true, nil, resetErr
		}
		return false, nil, nil
	})
	if err := CreatePolicy(t.Context(), cs, DenyIngress()); err != nil {
		t.Fatalf("a create whose answer was lost: %v", err)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(Namespace).Get(t.Context(), DenyTarget, metav1.GetOptions{}); err != nil {
		t.Fatalf("after the create: %v", err)
	}
	if err := DeletePolicy(t.Context(), cs, AllowClient); err != nil {
		t.Fatalf("a dropped delete: %v", err)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(Namespace).Get(t.Context(), AllowClient, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the delete: %v, want it gone", err)
	}

	// The API's own answer is final: a create of what was there before
	// is no change made.
	if err := CreatePolicy(t.Context(), cs, DenyIngress()); err == nil || !apierrors.IsAlreadyExists(err) {
		t.Errorf("creating what was there: %v, want AlreadyExists", err)
	}
	refused := fake.NewClientset()
	refused.PrependReactor("delete", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, DNSService, errors.New("no"))
	})
	if err := DeleteDNSService(t.Context(), refused); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a refused delete: %v, want the refusal", err)
	}
}
