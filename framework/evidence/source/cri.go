package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// The pod labels the kubelet puts on sandboxes and containers
// (pkg/kubelet/types/labels.go).
const (
	labelPodName      = "io.kubernetes.pod.name"
	labelPodNamespace = "io.kubernetes.pod.namespace"
	labelPodUID       = "io.kubernetes.pod.uid"
)

// criMaxMessage is the largest listing accepted, as the kubelet's and
// crictl's CRI clients allow.
const criMaxMessage = 16 << 20

// Runtime reads one node's container runtime: which sandboxes and
// containers of the stateful pod it holds, and whether one runs there. It
// asks the runtime's CRI socket (ListPodSandbox and ListContainers, as
// `crictl pods` and `crictl ps -a` do) through a connection the host dials
// to it (lab.Host.Dial), or, made by NewCrictlRuntime, runs those two
// crictl commands on the host.
type Runtime struct {
	name     evidence.Source
	host     lab.Host
	subjects evidence.Subjects
	also     []RuntimeQuestion
	// socket is the CRI socket's path on the host; empty for crictl.
	socket string

	mu     sync.Mutex
	conn   *criConn
	closed bool
}

// criConn is one gRPC connection to the runtime and the last error its
// dialer met, which gRPC reports only as text.
type criConn struct {
	cc *grpc.ClientConn

	mu      sync.Mutex
	dialErr error
}

func (c *criConn) setDialErr(err error) {
	c.mu.Lock()
	c.dialErr = err
	c.mu.Unlock()
}

func (c *criConn) lastDialErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dialErr
}

// RuntimeQuestion is a suite's own question about a node's container
// runtime, answered from the listings the runtime source takes anyway, so
// that a suite asking after its own containers reads the runtime no second
// time.
type RuntimeQuestion struct {
	Question evidence.Question
	// Answer makes the question's value from the listings; an error is an
	// unreadable answer naming it.
	Answer func(RuntimeListing) (any, error)
}

// NamespaceContainers is the RuntimeQuestion q answered with every
// container of namespace (an evidence.NamespaceContainersValue).
func NamespaceContainers(q evidence.Question, namespace string) RuntimeQuestion {
	return RuntimeQuestion{Question: q, Answer: func(l RuntimeListing) (any, error) {
		return l.NamespaceContainers(namespace), nil
	}}
}

// NewRuntime makes a reader named "cri/<host>" that asks the CRI socket at
// path socket on host (lab.RuntimeSocket) through host.Dial, over one gRPC
// connection kept across reads and dialled anew after a read that failed.
// It answers PodRunningHere and each of also; Close ends the connection.
func NewRuntime(host lab.Host, socket string, subjects evidence.Subjects, also ...RuntimeQuestion) *Runtime {
	return &Runtime{name: evidence.Source("cri/" + host.Name()), host: host, socket: socket, subjects: subjects, also: also}
}

// NewCrictlRuntime makes the same reader, for a host whose CRI socket the
// lab does not name: it runs `crictl pods -o json` and `crictl ps -a -o
// json` on the host at each read (lab.Host.Run).
func NewCrictlRuntime(host lab.Host, subjects evidence.Subjects, also ...RuntimeQuestion) *Runtime {
	return &Runtime{name: evidence.Source("cri/" + host.Name()), host: host, subjects: subjects, also: also}
}

func (r *Runtime) Source() evidence.Source { return r.name }

func (r *Runtime) Questions() []evidence.Question {
	qs := []evidence.Question{evidence.PodRunningHere}
	for _, a := range r.also {
		qs = append(qs, a.Question)
	}
	return qs
}

// Close ends the connection to the runtime, if there is one.
func (r *Runtime) Close() error {
	r.mu.Lock()
	c := r.conn
	r.conn, r.closed = nil, true
	r.mu.Unlock()
	if c == nil {
		return nil
	}
	if err := c.cc.Close(); err != nil {
		return fmt.Errorf("closing the CRI connection to %s: %w", r.host.Name(), err)
	}
	return nil
}

func (r *Runtime) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	var l RuntimeListing
	var err error
	if r.socket == "" {
		l, err = r.listCrictl(ctx)
	} else {
		l, err = r.listCRI(ctx)
	}
	at := now()
	if err != nil {
		// The error's text is the reason, its class first.
		return r.unreadable(err.Error(), at)
	}
	out := map[evidence.Question]evidence.Answer{
		evidence.PodRunningHere: answer(l.RuntimePod(r.subjects.PodNamespace, r.subjects.PodName), at, ""),
	}
	for _, a := range r.also {
		v, err := a.Answer(l)
		if err != nil {
			out[a.Question] = evidence.UnreadableAnswer("error: "+err.Error(), at)
			continue
		}
		out[a.Question] = answer(v, at, "")
	}
	return out
}

// unreadable answers every question of r with why.
func (r *Runtime) unreadable(why string, at time.Time) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	for _, q := range r.Questions() {
		out[q] = evidence.UnreadableAnswer(why, at)
	}
	return out
}

// client is the connection to the runtime, made when there is none. It
// connects lazily: the first call on it dials.
func (r *Runtime) client() (*criConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("the runtime reader is closed")
	}
	if r.conn != nil {
		return r.conn, nil
	}
	c := &criConn{}
	// The socket is reached through the host's SSH connection, whose
	// host key is verified: the connection needs no credentials of its
	// own. The authority is what gRPC sends over a local socket.
	cc, err := grpc.NewClient("passthrough:///localhost",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			nc, err := r.host.Dial(ctx, "unix", r.socket)
			c.setDialErr(err)
			return nc, err
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(criMaxMessage)),
	)
	if err != nil {
		return nil, err
	}
	c.cc = cc
	r.conn = c
	return c, nil
}

// drop closes c so that the next read dials anew rather than wait out
// gRPC's reconnection backoff (up to two minutes after a runtime restart).
func (r *Runtime) drop(c *criConn) {
	r.mu.Lock()
	if r.conn == c {
		r.conn = nil
	}
	r.mu.Unlock()
	c.cc.Close()
}

// listCRI asks the runtime for every sandbox and every container at once.
// A connection that turns out to be broken (the runtime restarted since
// the last read) is dialled anew once within the read, as lab/ssh redials
// a broken connection.
func (r *Runtime) listCRI(ctx context.Context) (RuntimeListing, error) {
	for attempt := 0; ; attempt++ {
		c, err := r.client()
		if err != nil {
			return RuntimeListing{}, fmt.Errorf("error: CRI client for %s on %s: %v", r.socket, r.host.Name(), err)
		}
		l, rpc, err := listOver(ctx, c)
		if err == nil {
			return l, nil
		}
		r.drop(c)
		broken := status.Code(err) == codes.Unavailable && c.lastDialErr() == nil
		if attempt == 0 && broken && ctx.Err() == nil {
			continue
		}
		return RuntimeListing{}, errors.New(r.criReason(ctx, c, rpc, err))
	}
}

// listOver makes both calls on c; rpc names the one that failed.
func listOver(ctx context.Context, c *criConn) (l RuntimeListing, rpc string, err error) {
	rs := runtimeapi.NewRuntimeServiceClient(c.cc)
	var (
		wg   sync.WaitGroup
		pods *runtimeapi.ListPodSandboxResponse
		perr error
	)
	wg.Go(func() {
		pods, perr = rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{}})
	})
	// No state filter: exited containers are evidence too (crictl ps -a).
	ctrs, cerr := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{}})
	wg.Wait()
	if perr != nil {
		return RuntimeListing{}, "ListPodSandbox", perr
	}
	if cerr != nil {
		return RuntimeListing{}, "ListContainers", cerr
	}
	return RuntimeListingOf(pods.GetItems(), ctrs.GetContainers()), "", nil
}

// criReason classes a failed call: the read's context ending is a
// timeout; a call that could not connect has the dialer's error (a refused
// socket, an unreachable host); any other is an error the runtime gave.
func (r *Runtime) criReason(ctx context.Context, c *criConn, rpc string, err error) string {
	what := fmt.Sprintf("CRI %s on %s", rpc, r.host.Name())
	if ctx.Err() != nil {
		return Reason(fmt.Errorf("%s (%s): %w", what, r.socket, ctx.Err()))
	}
	code := status.Code(err)
	if code == codes.DeadlineExceeded {
		return fmt.Sprintf("timeout: %s (%s): %v", what, r.socket, err)
	}
	if dialErr := c.lastDialErr(); dialErr != nil && code == codes.Unavailable {
		return Reason(fmt.Errorf("%s: %w", what, dialErr))
	}
	return fmt.Sprintf("error: %s (%s): %v", what, r.socket, err)
}

// RuntimeListing is what one node's container runtime lists: every sandbox
// and every container (exited ones too), of every namespace.
type RuntimeListing struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

// RuntimeListingOf is the listing of ListPodSandbox's and ListContainers'
// answers. Entries without metadata are left out, as crictl leaves them
// out of its listings.
func RuntimeListingOf(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) RuntimeListing {
	var l RuntimeListing
	for _, s := range sandboxes {
		if s.GetMetadata() != nil {
			l.sandboxes = append(l.sandboxes, s)
		}
	}
	for _, c := range containers {
		if c.GetMetadata() != nil {
			l.containers = append(l.containers, c)
		}
	}
	return l
}

// criTime is a CRI timestamp (nanoseconds since the epoch; 0 unknown).
func criTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// RuntimePod is the pod's sandboxes and containers, in creation order.
// Running means a ready sandbox of the pod with a running container in it.
func (l RuntimeListing) RuntimePod(namespace, name string) evidence.RuntimePodValue {
	v := evidence.RuntimePodValue{Sandboxes: []evidence.RuntimeSandbox{}, Containers: []evidence.RuntimeContainer{}}
	readySandbox := map[string]bool{}
	for _, p := range l.sandboxes {
		m := p.GetMetadata()
		if m.GetNamespace() != namespace || m.GetName() != name {
			continue
		}
		v.Sandboxes = append(v.Sandboxes, evidence.RuntimeSandbox{
			ID: p.GetId(), Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUid(),
			State: p.GetState().String(), CreatedAt: criTime(p.GetCreatedAt()),
		})
		if p.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			readySandbox[p.GetId()] = true
		}
	}
	for _, ct := range l.containers {
		labels := ct.GetLabels()
		if labels[labelPodNamespace] != namespace || labels[labelPodName] != name {
			continue
		}
		v.Containers = append(v.Containers, evidence.RuntimeContainer{
			ID: ct.GetId(), Name: ct.GetMetadata().GetName(), SandboxID: ct.GetPodSandboxId(), PodUID: labels[labelPodUID],
			State: ct.GetState().String(), CreatedAt: criTime(ct.GetCreatedAt()),
		})
		if ct.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING && readySandbox[ct.GetPodSandboxId()] {
			v.Running = true
		}
	}
	sort.Slice(v.Sandboxes, func(i, j int) bool {
		return earlier(v.Sandboxes[i].CreatedAt, v.Sandboxes[j].CreatedAt, v.Sandboxes[i].ID, v.Sandboxes[j].ID)
	})
	sort.Slice(v.Containers, func(i, j int) bool {
		return earlier(v.Containers[i].CreatedAt, v.Containers[j].CreatedAt, v.Containers[i].ID, v.Containers[j].ID)
	})
	return v
}

// earlier orders by creation time, then by ID, so that entries created in
// the same nanosecond come in one order whatever order the runtime listed
// them in.
func earlier(a, b time.Time, idA, idB string) bool {
	if !a.Equal(b) {
		return a.Before(b)
	}
	return idA < idB
}

// NamespaceContainers is every container of namespace, in creation order,
// with its pod's name and UID from the kubelet's labels.
func (l RuntimeListing) NamespaceContainers(namespace string) evidence.NamespaceContainersValue {
	v := evidence.NamespaceContainersValue{Containers: []evidence.NamespaceContainer{}}
	for _, ct := range l.containers {
		labels := ct.GetLabels()
		if labels[labelPodNamespace] != namespace {
			continue
		}
		v.Containers = append(v.Containers, evidence.NamespaceContainer{
			Pod: labels[labelPodName], PodUID: labels[labelPodUID],
			ID: ct.GetId(), State: ct.GetState().String(), CreatedAt: criTime(ct.GetCreatedAt()),
		})
	}
	sort.Slice(v.Containers, func(i, j int) bool {
		return earlier(v.Containers[i].CreatedAt, v.Containers[j].CreatedAt, v.Containers[i].ID, v.Containers[j].ID)
	})
	return v
}
