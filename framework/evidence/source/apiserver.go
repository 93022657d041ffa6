package source

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/framework/evidence"
)

// DefaultRequestTimeout bounds one request to an API server, so that a
// frozen server is seen as a timeout within one snapshot round.
const DefaultRequestTimeout = 1500 * time.Millisecond

// ClientFromKubeconfig makes a clientset from a kubeconfig file with a
// per-request timeout and no client-side rate limit (a snapshot must not
// wait on a limiter that another round filled). It asks for protobuf, as
// Kubernetes' own components do: the same objects, at a fraction of the
// encoding and decoding work JSON costs the API servers and this process
// in every snapshot round; JSON stays accepted for what has no protobuf
// form. It asks for no compression: a response compressed for each round
// costs the server more than sending it over the lab's network does.
func ClientFromKubeconfig(path string, timeout time.Duration) (kubernetes.Interface, *rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	cfg.Timeout = timeout
	cfg.QPS = 1000
	cfg.Burst = 1000
	cfg.UserAgent = "faultline-evidence"
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.DisableCompression = true
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("making a client for %s: %w", path, err)
	}
	return cs, cfg, nil
}

// APIServer reads one API server (or the virtual address) through its own
// client: worker1's Ready condition, taints and Lease, the stateful pod and
// the test service's EndpointSlices.
type APIServer struct {
	name     evidence.Source
	client   kubernetes.Interface
	subjects evidence.Subjects
}

// NewAPIServer makes a reader named name (e.g. "apiserver/cp1",
// "apiserver/vip") over client.
func NewAPIServer(name evidence.Source, client kubernetes.Interface, subjects evidence.Subjects) *APIServer {
	return &APIServer{name: name, client: client, subjects: subjects}
}

func (a *APIServer) Source() evidence.Source { return a.name }

func (a *APIServer) Questions() []evidence.Question {
	return []evidence.Question{evidence.NodeReady, evidence.NodeTaints, evidence.NodeLease, evidence.PodObject, evidence.ServiceEndpoints}
}

// Read issues its four requests at once.
func (a *APIServer) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	var mu sync.Mutex
	set := func(q evidence.Question, ans evidence.Answer) {
		mu.Lock()
		out[q] = ans
		mu.Unlock()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		node, err := a.client.CoreV1().Nodes().Get(ctx, a.subjects.Node, metav1.GetOptions{})
		at := now()
		switch {
		case apierrors.IsNotFound(err):
			set(evidence.NodeReady, answer(evidence.NodeReadyValue{}, at, ""))
			set(evidence.NodeTaints, answer([]evidence.TaintValue{}, at, ""))
		case err != nil:
			set(evidence.NodeReady, evidence.UnreadableAnswer(Reason(err), at))
			set(evidence.NodeTaints, evidence.UnreadableAnswer(Reason(err), at))
		default:
			set(evidence.NodeReady, answer(NodeReadyOf(node), at, node.ResourceVersion))
			set(evidence.NodeTaints, answer(TaintsOf(node), at, node.ResourceVersion))
		}
	})
	wg.Go(func() {
		l, err := a.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, a.subjects.Node, metav1.GetOptions{})
		set(evidence.NodeLease, objectAnswer(l, err, LeaseOf, func(l *coordinationv1.Lease) string { return l.ResourceVersion }))
	})
	wg.Go(func() {
		p, err := a.client.CoreV1().Pods(a.subjects.PodNamespace).Get(ctx, a.subjects.PodName, metav1.GetOptions{})
		set(evidence.PodObject, objectAnswer(p, err, PodOf, func(p *corev1.Pod) string { return p.ResourceVersion }))
	})
	wg.Go(func() {
		list, err := a.client.DiscoveryV1().EndpointSlices(a.subjects.ServiceNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + a.subjects.ServiceName,
		})
		at := now()
		if err != nil {
			set(evidence.ServiceEndpoints, evidence.UnreadableAnswer(Reason(err), at))
			return
		}
		set(evidence.ServiceEndpoints, answer(EndpointsOf(list.Items), at, list.ResourceVersion))
	})
	wg.Wait()
	return out
}

// objectAnswer turns a GET into an answer: the object's value, or the
// value of a missing object for NotFound (the server said so: that is an
// answer), or unreadable.
func objectAnswer[T any, V any](obj *T, err error, value func(*T) V, rv func(*T) string) evidence.Answer {
	at := now()
	switch {
	case apierrors.IsNotFound(err):
		return answer(value(nil), at, "")
	case err != nil:
		return evidence.UnreadableAnswer(Reason(err), at)
	}
	return answer(value(obj), at, rv(obj))
}
