package source

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
)

// The informer fixture: a pod running client-go informers on nodes, pods,
// leases and EndpointSlices that serves what its caches hold as an
// InformerState on GET /state. faultline finds it by label and reads it
// through the API server's pod proxy.
const (
	InformerNamespace = "faultline"
	InformerSelector  = "app.kubernetes.io/name=faultline-informer"
	InformerPort      = "8080"
)

// InformerState is the fixture's answer: the cached objects, as the
// fixture's informers hold them, when its caches first synced, and the
// subjects it watches.
type InformerState struct {
	SyncedAt       time.Time                   `json:"syncedAt"`
	Subjects       InformerSubjects            `json:"subjects"`
	Node           *corev1.Node                `json:"node"`
	Lease          *coordinationv1.Lease       `json:"lease"`
	Pod            *corev1.Pod                 `json:"pod"`
	EndpointSlices []discoveryv1.EndpointSlice `json:"endpointSlices"`
}

// InformerSubjects are the objects the fixture watches, as its flags and
// the /state query parameters (node, pod, service) name them.
type InformerSubjects struct {
	Node    string `json:"node"`
	Pod     string `json:"pod"`     // namespace/name
	Service string `json:"service"` // namespace/name
}

// informerSubjects is how the fixture names s.
func informerSubjects(s evidence.Subjects) InformerSubjects {
	return InformerSubjects{Node: s.Node, Pod: s.PodNamespace + "/" + s.PodName, Service: s.ServiceNamespace + "/" + s.ServiceName}
}

// Informer reads the in-cluster informer fixture; when the fixture is not
// deployed every answer is unreadable "not deployed", never a value.
type Informer struct {
	client   kubernetes.Interface
	subjects evidence.Subjects

	// fixture is the pod that answered last: asked directly next round,
	// so a round costs one request, not a list and a request. Forgotten
	// when it fails to answer; the next round looks again.
	mu      sync.Mutex
	fixture string
}

// NewInformer makes the "informer" reader, finding the fixture through
// client.
func NewInformer(client kubernetes.Interface, subjects evidence.Subjects) *Informer {
	return &Informer{client: client, subjects: subjects}
}

func (i *Informer) Source() evidence.Source { return "informer" }

func (i *Informer) Questions() []evidence.Question {
	return []evidence.Question{evidence.NodeReady, evidence.NodeTaints, evidence.NodeLease, evidence.PodObject, evidence.ServiceEndpoints}
}

func (i *Informer) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	all := func(a evidence.Answer) map[evidence.Question]evidence.Answer {
		out := map[evidence.Question]evidence.Answer{}
		for _, q := range i.Questions() {
			out[q] = a
		}
		return out
	}
	i.mu.Lock()
	fixture := i.fixture
	i.mu.Unlock()
	if fixture == "" {
		pods, err := i.client.CoreV1().Pods(InformerNamespace).List(ctx, metav1.ListOptions{LabelSelector: InformerSelector})
		if err != nil {
			return all(evidence.UnreadableAnswer("finding the informer fixture: "+Reason(err), now()))
		}
		for j := range pods.Items {
			if pods.Items[j].Status.Phase == corev1.PodRunning && pods.Items[j].DeletionTimestamp == nil {
				fixture = pods.Items[j].Name
				break
			}
		}
		if fixture == "" {
			return all(evidence.UnreadableAnswer(NotDeployed(fmt.Sprintf("no running pod %s in namespace %s", InformerSelector, InformerNamespace)), now()))
		}
	}
	// The subjects go with the request: a fixture watching other objects
	// refuses (409) rather than answer about them.
	want := informerSubjects(i.subjects)
	params := map[string]string{"node": want.Node, "pod": want.Pod, "service": want.Service}
	body, err := i.client.CoreV1().Pods(InformerNamespace).ProxyGet("http", fixture, InformerPort, "state", params).DoRaw(ctx)
	at := now()
	i.mu.Lock()
	if err != nil {
		i.fixture = ""
	} else {
		i.fixture = fixture
	}
	i.mu.Unlock()
	if err != nil {
		return all(evidence.UnreadableAnswer("informer fixture "+fixture+": "+Reason(err), at))
	}
	var st InformerState
	if err := json.Unmarshal(body, &st); err != nil {
		return all(evidence.UnreadableAnswer("error: decoding informer fixture state: "+err.Error(), at))
	}
	if st.SyncedAt.IsZero() {
		return all(evidence.UnreadableAnswer("error: informer fixture has not synced", at))
	}
	if st.Subjects != want {
		return all(evidence.UnreadableAnswer(fmt.Sprintf("error: informer fixture %s watches %+v, not %+v", fixture, st.Subjects, want), at))
	}
	rv := func(o metav1.Object) string {
		if o == nil {
			return ""
		}
		return o.GetResourceVersion()
	}
	out := map[evidence.Question]evidence.Answer{}
	var nodeRV string
	if st.Node != nil {
		nodeRV = rv(st.Node)
	}
	out[evidence.NodeReady] = answer(NodeReadyOf(st.Node), at, nodeRV)
	out[evidence.NodeTaints] = answer(TaintsOf(st.Node), at, nodeRV)
	var leaseRV, podRV string
	if st.Lease != nil {
		leaseRV = rv(st.Lease)
	}
	if st.Pod != nil {
		podRV = rv(st.Pod)
	}
	out[evidence.NodeLease] = answer(LeaseOf(st.Lease), at, leaseRV)
	out[evidence.PodObject] = answer(PodOf(st.Pod), at, podRV)
	out[evidence.ServiceEndpoints] = answer(EndpointsOf(st.EndpointSlices), at, "")
	return out
}
