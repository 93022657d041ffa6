package source

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/faultline/faultline/framework/evidence"
)

// EtcdRead says how etcd is read: serializable (the member's own state,
// answered even without a quorum) or linearizable (through the leader,
// needing a quorum). The two are separate sources because they disagree
// exactly when it matters.
type EtcdRead string

const (
	Serializable EtcdRead = "serializable"
	Linearizable EtcdRead = "linearizable"
)

// storagePrefix is where the API server keeps objects in etcd (its
// --etcd-prefix default).
const storagePrefix = "/registry"

// encryptedPrefix starts a value the API server encrypted at rest; faultline
// cannot decode it and says so rather than guess.
var encryptedPrefix = []byte("k8s:enc:")

// Keys are the etcd keys the etcd source reads for the subjects.
type Keys struct {
	Node, Lease, Pod, EndpointSlices string
}

// KeysFor returns the /registry keys of the subjects, as the API server's
// storage lays them out (nodes are still stored under "minions").
func KeysFor(s evidence.Subjects) Keys {
	return Keys{
		Node:           storagePrefix + "/minions/" + s.Node,
		Lease:          storagePrefix + "/leases/" + corev1.NamespaceNodeLease + "/" + s.Node,
		Pod:            storagePrefix + "/pods/" + s.PodNamespace + "/" + s.PodName,
		EndpointSlices: storagePrefix + "/endpointslices/" + s.ServiceNamespace + "/",
	}
}

// Decoder decodes values stored by the API server with the Kubernetes
// protobuf serializer.
type Decoder struct {
	serializer *protobuf.Serializer
}

// NewDecoder makes a decoder over client-go's scheme (every built-in type).
func NewDecoder() *Decoder {
	return &Decoder{serializer: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)}
}

// Decode decodes one stored value into a typed object.
func (d *Decoder) Decode(value []byte) (runtime.Object, error) {
	if bytes.HasPrefix(value, encryptedPrefix) {
		return nil, fmt.Errorf("value is encrypted at rest (%s...)", value[:min(len(value), 24)])
	}
	obj, _, err := d.serializer.Decode(value, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf value: %w", err)
	}
	return obj, nil
}

// DecodeAs decodes value and checks it is a T.
func DecodeAs[T runtime.Object](d *Decoder, value []byte) (T, error) {
	var zero T
	obj, err := d.Decode(value)
	if err != nil {
		return zero, err
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("stored value is a %T, want %T", obj, zero)
	}
	return t, nil
}

// Etcd reads the subjects straight from one etcd member, in one
// transaction so that every answer is at one revision.
type Etcd struct {
	name     evidence.Source
	client   *clientv3.Client
	read     EtcdRead
	keys     Keys
	subjects evidence.Subjects
	decoder  *Decoder
}

// NewEtcdClient connects (lazily) to one member only: the point is what
// that member says, so the client must not fail over to another.
func NewEtcdClient(endpoint string, tlsConfig *tls.Config, dialTimeout time.Duration) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            []string{endpoint},
		TLS:                  tlsConfig,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		PermitWithoutStream:  true,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %s: %w", endpoint, err)
	}
	return c, nil
}

// NewEtcd makes a reader named "etcd/<member>/<read>" over client.
func NewEtcd(member string, client *clientv3.Client, read EtcdRead, subjects evidence.Subjects) *Etcd {
	return &Etcd{
		name:     evidence.Source("etcd/" + member + "/" + string(read)),
		client:   client,
		read:     read,
		keys:     KeysFor(subjects),
		subjects: subjects,
		decoder:  NewDecoder(),
	}
}

func (e *Etcd) Source() evidence.Source { return e.name }

func (e *Etcd) Questions() []evidence.Question {
	return []evidence.Question{evidence.NodeReady, evidence.NodeTaints, evidence.NodeLease, evidence.PodObject, evidence.ServiceEndpoints}
}

func (e *Etcd) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	var opts []clientv3.OpOption
	if e.read == Serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	ops := []clientv3.Op{
		clientv3.OpGet(e.keys.Node, opts...),
		clientv3.OpGet(e.keys.Lease, opts...),
		clientv3.OpGet(e.keys.Pod, opts...),
		clientv3.OpGet(e.keys.EndpointSlices, append([]clientv3.OpOption{clientv3.WithPrefix()}, opts...)...),
	}
	resp, err := e.client.Txn(ctx).Then(ops...).Commit()
	at := now()
	out := map[evidence.Question]evidence.Answer{}
	if err != nil {
		for _, q := range e.Questions() {
			out[q] = evidence.UnreadableAnswer(Reason(err), at)
		}
		return out
	}
	rev := strconv.FormatInt(resp.Header.Revision, 10)
	kvsOf := func(i int) []kv {
		var kvs []kv
		for _, x := range resp.Responses[i].GetResponseRange().Kvs {
			kvs = append(kvs, kv{value: x.Value, modRevision: x.ModRevision})
		}
		return kvs
	}
	node, nodeRV, err := single[*corev1.Node](e.decoder, kvsOf(0), rev)
	if err != nil {
		out[evidence.NodeReady] = evidence.UnreadableAnswer("error: "+e.keys.Node+": "+err.Error(), at)
		out[evidence.NodeTaints] = out[evidence.NodeReady]
	} else {
		out[evidence.NodeReady] = answer(NodeReadyOf(node), at, nodeRV)
		out[evidence.NodeTaints] = answer(TaintsOf(node), at, nodeRV)
	}
	lease, leaseRV, err := single[*coordinationv1.Lease](e.decoder, kvsOf(1), rev)
	if err != nil {
		out[evidence.NodeLease] = evidence.UnreadableAnswer("error: "+e.keys.Lease+": "+err.Error(), at)
	} else {
		out[evidence.NodeLease] = answer(LeaseOf(lease), at, leaseRV)
	}
	pod, podRV, err := single[*corev1.Pod](e.decoder, kvsOf(2), rev)
	if err != nil {
		out[evidence.PodObject] = evidence.UnreadableAnswer("error: "+e.keys.Pod+": "+err.Error(), at)
	} else {
		out[evidence.PodObject] = answer(PodOf(pod), at, podRV)
	}
	slices, err := e.serviceSlices(kvsOf(3))
	if err != nil {
		out[evidence.ServiceEndpoints] = evidence.UnreadableAnswer("error: "+e.keys.EndpointSlices+": "+err.Error(), at)
	} else {
		out[evidence.ServiceEndpoints] = answer(EndpointsOf(slices), at, rev)
	}
	return out
}

type kv struct {
	value       []byte
	modRevision int64
}

// single decodes the one value of a key; no value is an object that does
// not exist (nil, with the read's revision).
func single[T runtime.Object](d *Decoder, kvs []kv, rev string) (T, string, error) {
	var zero T
	if len(kvs) == 0 {
		return zero, rev, nil
	}
	obj, err := DecodeAs[T](d, kvs[0].value)
	if err != nil {
		return zero, "", err
	}
	return obj, strconv.FormatInt(kvs[0].modRevision, 10), nil
}

// serviceSlices keeps the namespace's EndpointSlices that belong to the
// test service (by the label the EndpointSlice controller sets).
func (e *Etcd) serviceSlices(kvs []kv) ([]discoveryv1.EndpointSlice, error) {
	var out []discoveryv1.EndpointSlice
	for _, x := range kvs {
		s, err := DecodeAs[*discoveryv1.EndpointSlice](e.decoder, x.value)
		if err != nil {
			return nil, err
		}
		if s.Labels[discoveryv1.LabelServiceName] == e.subjects.ServiceName {
			out = append(out, *s)
		}
	}
	return out, nil
}
