package source

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/faultline/faultline/framework/evidence"
)

// fixtureProxy stands in for the API server's pod proxy to the informer
// fixture: what it answers, and which pods were asked.
type fixtureProxy struct {
	mu    sync.Mutex
	body  []byte
	err   error
	asked []string
	query []map[string]string
}

type proxyResponse struct {
	body []byte
	err  error
}

func (r proxyResponse) DoRaw(context.Context) ([]byte, error) { return r.body, r.err }
func (r proxyResponse) Stream(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(string(r.body))), r.err
}

func (p *fixtureProxy) react(action clienttesting.Action) (bool, restclient.ResponseWrapper, error) {
	get := action.(clienttesting.ProxyGetAction)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, get.GetName())
	p.query = append(p.query, get.GetParams())
	return true, proxyResponse{body: p.body, err: p.err}, nil
}

func fixturePod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: InformerNamespace, Labels: map[string]string{"app.kubernetes.io/name": "faultline-informer"}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func fixtureState(t *testing.T, s evidence.Subjects) []byte {
	t.Helper()
	st := InformerState{
		SyncedAt: time.Now(),
		Subjects: informerSubjects(s),
		Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.Node, ResourceVersion: "7"},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: s.PodName, Namespace: s.PodNamespace, UID: "uid-9", ResourceVersion: "8"}, Spec: corev1.PodSpec{NodeName: s.Node}},
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newInformerWith(objs ...*corev1.Pod) (*Informer, *fake.Clientset, *fixtureProxy) {
	client := fake.NewClientset()
	for _, o := range objs {
		client.Tracker().Add(o)
	}
	p := &fixtureProxy{}
	client.AddProxyReactor("pods", p.react)
	return NewInformer(client, evidence.DefaultSubjects), client, p
}

func TestInformerNotDeployedIsNeverAValue(t *testing.T) {
	i, _, p := newInformerWith(fixturePod("informer-pending", corev1.PodPending))
	for q, a := range i.Read(context.Background()) {
		if a.State != evidence.Unreadable || !strings.HasPrefix(a.Reason, "not deployed") {
			t.Errorf("%s with no running fixture: %+v", q, a)
		}
	}
	if len(p.asked) != 0 {
		t.Errorf("a pod that is not running was asked: %v", p.asked)
	}
}

func TestInformerAnswersAndAsksTheSameFixtureNextRound(t *testing.T) {
	s := evidence.DefaultSubjects
	i, client, p := newInformerWith(fixturePod("informer-a", corev1.PodRunning))
	p.body = fixtureState(t, s)
	got := i.Read(context.Background())
	if r := got[evidence.NodeReady]; r.State != evidence.Answered || r.ResourceVersion != "7" {
		t.Fatalf("node ready %+v", r)
	}
	var pod evidence.PodValue
	if err := got[evidence.PodObject].Decode(&pod); err != nil || pod.UID != "uid-9" {
		t.Errorf("pod %+v %v", pod, err)
	}
	// The subjects go with the request.
	if q := p.query[0]; q["node"] != s.Node || q["pod"] != s.PodNamespace+"/"+s.PodName || q["service"] != s.ServiceNamespace+"/"+s.ServiceName {
		t.Errorf("query %v", q)
	}
	lists := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "list" {
				n++
			}
		}
		return n
	}
	i.Read(context.Background())
	if lists() != 1 || len(p.asked) != 2 || p.asked[1] != "informer-a" {
		t.Errorf("second round: %d lists, asked %v; want the fixture asked again without a list", lists(), p.asked)
	}

	// A fixture that fails to answer is forgotten: unreadable now, looked
	// for again next round.
	p.err = errors.New("connection refused")
	for q, a := range i.Read(context.Background()) {
		if a.State != evidence.Unreadable || !strings.Contains(a.Reason, "informer-a") {
			t.Errorf("%s from a fixture that does not answer: %+v", q, a)
		}
	}
	p.err = nil
	i.Read(context.Background())
	if lists() != 2 {
		t.Errorf("%d lists after a failed read, want the fixture looked for again", lists())
	}
}

func TestInformerRefusesAStateAboutOtherSubjects(t *testing.T) {
	i, _, p := newInformerWith(fixturePod("informer-a", corev1.PodRunning))
	other := evidence.DefaultSubjects
	other.Node = "worker2"
	p.body = fixtureState(t, other)
	for q, a := range i.Read(context.Background()) {
		if a.State != evidence.Unreadable || !strings.Contains(a.Reason, "watches") {
			t.Errorf("%s from a fixture watching worker2: %+v", q, a)
		}
	}
	p.body = []byte(`{"syncedAt":"0001-01-01T00:00:00Z"}`)
	for q, a := range i.Read(context.Background()) {
		if a.State != evidence.Unreadable || !strings.Contains(a.Reason, "not synced") {
			t.Errorf("%s from a fixture not synced: %+v", q, a)
		}
	}
}
