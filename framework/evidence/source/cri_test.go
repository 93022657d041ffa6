package source

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// fakeRuntime serves the two CRI listings the runtime source asks for,
// decoded from captured crictl output (which is their protojson), or
// fails them as told.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	pods *runtimeapi.ListPodSandboxResponse
	ctrs *runtimeapi.ListContainersResponse

	mu sync.Mutex
	// hang makes every call wait for its caller to give up (a frozen
	// runtime); fail is the error every call returns.
	hang bool
	fail error
	// filters are the filters the calls were asked with.
	filters []string
}

func (f *fakeRuntime) misbehave(ctx context.Context) error {
	f.mu.Lock()
	hang, fail := f.hang, f.fail
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return fail
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f.mu.Lock()
	f.filters = append(f.filters, fmt.Sprintf("pods %v", req.GetFilter()))
	f.mu.Unlock()
	if err := f.misbehave(ctx); err != nil {
		return nil, err
	}
	return f.pods, nil
}

func (f *fakeRuntime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f.mu.Lock()
	f.filters = append(f.filters, fmt.Sprintf("containers %v", req.GetFilter()))
	f.mu.Unlock()
	if err := f.misbehave(ctx); err != nil {
		return nil, err
	}
	return f.ctrs, nil
}

// runtimeHost is a worker whose Dial reaches a fake runtime's socket on
// this machine, as the host's SSH connection would reach the runtime's
// socket there: with the runtime down it is refused, as OpenSSH refuses a
// socket it cannot connect. It runs no commands.
type runtimeHost struct {
	scriptedHost
	t      *testing.T
	socket string
	rt     *fakeRuntime

	mu     sync.Mutex
	server *grpc.Server
	dials  int
	// dialErr, when set, is what every dial returns; dialHang makes a
	// dial wait for its context (a host that does not answer).
	dialErr  error
	dialHang bool
}

func newRuntimeHost(t *testing.T, pods, ps string) *runtimeHost {
	t.Helper()
	rt := &fakeRuntime{pods: &runtimeapi.ListPodSandboxResponse{}, ctrs: &runtimeapi.ListContainersResponse{}}
	if err := crictlJSON.Unmarshal(readTestdata(t, "crictl", pods), rt.pods); err != nil {
		t.Fatal(err)
	}
	if err := crictlJSON.Unmarshal(readTestdata(t, "crictl", ps), rt.ctrs); err != nil {
		t.Fatal(err)
	}
	h := &runtimeHost{t: t, socket: filepath.Join(t.TempDir(), "containerd.sock"), rt: rt}
	h.start()
	t.Cleanup(h.stop)
	return h
}

func (h *runtimeHost) Name() string { return "worker1" }

func (h *runtimeHost) start() {
	h.t.Helper()
	l, err := net.Listen("unix", h.socket)
	if err != nil {
		h.t.Fatal(err)
	}
	s := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(s, h.rt)
	go s.Serve(l)
	h.mu.Lock()
	h.server = s
	h.mu.Unlock()
}

// stop ends the runtime and every connection to it; its socket goes.
func (h *runtimeHost) stop() {
	h.mu.Lock()
	s := h.server
	h.server = nil
	h.mu.Unlock()
	if s != nil {
		s.Stop()
	}
}

func (h *runtimeHost) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	h.mu.Lock()
	h.dials++
	dialErr, hang := h.dialErr, h.dialHang
	h.mu.Unlock()
	if network != "unix" || address != h.socket {
		return nil, fmt.Errorf("dialing %s %s from worker1: not the runtime's socket", network, address)
	}
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if dialErr != nil {
		return nil, dialErr
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, fmt.Errorf("dialing unix %s from worker1: ssh: rejected: connect failed (open failed): %w: %w", address, lab.ErrNotConnectedByHost, syscall.ECONNREFUSED)
	}
	return c, nil
}

func (h *runtimeHost) dialCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dials
}

func readWithin(r evidence.Reader, d time.Duration) map[evidence.Question]evidence.Answer {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return r.Read(ctx)
}

// values is each answer's value as JSON, or its state and reason.
func values(t *testing.T, got map[evidence.Question]evidence.Answer) map[evidence.Question]string {
	t.Helper()
	out := map[evidence.Question]string{}
	for q, a := range got {
		if a.State != evidence.Answered {
			out[q] = string(a.State) + ": " + a.Reason
			continue
		}
		out[q] = string(a.Value)
	}
	return out
}

const qContainers evidence.Question = "suite/containers"

// The CRI reader gives the answers the crictl reader gives for the same
// listings, the suite's runtime questions included, and asks the runtime
// for everything as crictl pods and crictl ps -a do (no filter).
func TestRuntimeOverCRIAnswersAsCrictlDoes(t *testing.T) {
	for _, files := range [][2]string{{"pods-worker1.json", "ps-worker1.json"}, {"pods.json", "ps.json"}} {
		h := newRuntimeHost(t, files[0], files[1])
		cri := NewRuntime(h, h.socket, evidence.DefaultSubjects, NamespaceContainers(qContainers, "faultline"))
		defer cri.Close()
		out := string(readTestdata(t, "crictl", files[0])) + "\n" + crictlSeparator + "\n" + string(readTestdata(t, "crictl", files[1]))
		calls := 0
		crictl := NewCrictlRuntime(scriptedHost{calls: &calls, out: lab.Result{Stdout: out}}, evidence.DefaultSubjects, NamespaceContainers(qContainers, "faultline"))

		got, want := values(t, readWithin(cri, 5*time.Second)), values(t, readWithin(crictl, 5*time.Second))
		if len(got) != 2 {
			t.Fatalf("%v: answers %v", files, got)
		}
		for q, w := range want {
			if !strings.HasPrefix(w, "{") {
				t.Fatalf("%v: the crictl reader's %s is %s", files, q, w)
			}
			if got[q] != w {
				t.Errorf("%v: %s over CRI\n got %s\nwant %s", files, q, got[q], w)
			}
		}
		var pod evidence.RuntimePodValue
		if err := json.Unmarshal([]byte(got[evidence.PodRunningHere]), &pod); err != nil || !pod.Running || len(pod.Sandboxes) == 0 {
			t.Errorf("%v: pod %+v, %v", files, pod, err)
		}
		h.rt.mu.Lock()
		filters := strings.Join(h.rt.filters, "; ")
		h.rt.mu.Unlock()
		if strings.Contains(filters, "state") || strings.Contains(filters, "id:") || strings.Count(filters, "pods") != 1 || strings.Count(filters, "containers") != 1 {
			t.Errorf("%v: calls with filters %q, want one of each, unfiltered", files, filters)
		}
	}
}

func TestRuntimeOverCRIKeepsItsConnectionAndDialsAgainAfterAFailure(t *testing.T) {
	h := newRuntimeHost(t, "pods-worker1.json", "ps-worker1.json")
	r := NewRuntime(h, h.socket, evidence.DefaultSubjects)
	defer r.Close()
	for i := range 3 {
		if a := readWithin(r, 5*time.Second)[evidence.PodRunningHere]; a.State != evidence.Answered {
			t.Fatalf("read %d: %+v", i, a)
		}
	}
	if n := h.dialCount(); n != 1 {
		t.Fatalf("%d dials for three reads, want one connection kept", n)
	}

	// The runtime restarts between two reads: the kept connection is
	// broken, and the read dials again rather than fail.
	h.stop()
	h.start()
	if a := readWithin(r, 5*time.Second)[evidence.PodRunningHere]; a.State != evidence.Answered {
		t.Fatalf("after a restart of the runtime: %+v", a)
	}
	if n := h.dialCount(); n < 2 {
		t.Fatalf("%d dials after a restart, want a new connection", n)
	}

	// The runtime goes away: its socket is refused.
	h.stop()
	a := readWithin(r, 5*time.Second)[evidence.PodRunningHere]
	if a.State != evidence.Unreadable || !strings.HasPrefix(a.Reason, "connection refused: ") || !strings.Contains(a.Reason, "worker1") {
		t.Fatalf("with the runtime down: %+v, want a refused connection naming the host", a)
	}
	// Back again: the next read dials at once, with no backoff to wait
	// out.
	h.start()
	start := time.Now()
	if a := readWithin(r, 5*time.Second)[evidence.PodRunningHere]; a.State != evidence.Answered {
		t.Fatalf("after the runtime came back: %+v", a)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the first read after the runtime came back took %s", d)
	}

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if a := readWithin(r, time.Second)[evidence.PodRunningHere]; a.State != evidence.Unreadable || !strings.HasPrefix(a.Reason, "error: ") {
		t.Errorf("a read after Close: %+v", a)
	}
}

func TestRuntimeOverCRIClassesWhatWentWrong(t *testing.T) {
	for name, c := range map[string]struct {
		set  func(h *runtimeHost)
		want string
	}{
		"frozen runtime": {set: func(h *runtimeHost) { h.rt.hang = true }, want: "timeout: CRI "},
		"host not answering": {set: func(h *runtimeHost) {
			h.mu.Lock()
			h.dialHang = true
			h.mu.Unlock()
		}, want: "timeout: CRI "},
		"host unreachable": {set: func(h *runtimeHost) {
			h.mu.Lock()
			h.dialErr = fmt.Errorf("connecting to worker1 (10.0.0.31:22): dial tcp: %w", syscall.EHOSTUNREACH)
			h.mu.Unlock()
		}, want: "unreachable: CRI "},
		"runtime error":          {set: func(h *runtimeHost) { h.rt.fail = status.Error(codes.Internal, "the runtime broke") }, want: "error: CRI ListPodSandbox on worker1"},
		"runtime's own deadline": {set: func(h *runtimeHost) { h.rt.fail = status.Error(codes.DeadlineExceeded, "too slow") }, want: "timeout: CRI "},
	} {
		t.Run(name, func(t *testing.T) {
			h := newRuntimeHost(t, "pods-worker1.json", "ps-worker1.json")
			r := NewRuntime(h, h.socket, evidence.DefaultSubjects, NamespaceContainers(qContainers, "faultline"))
			defer r.Close()
			c.set(h)
			start := time.Now()
			got := readWithin(r, 300*time.Millisecond)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the read took %s past its 300ms bound", d)
			}
			if len(got) != 2 {
				t.Fatalf("answers %v", got)
			}
			for q, a := range got {
				if a.State != evidence.Unreadable || !strings.HasPrefix(a.Reason, c.want) {
					t.Errorf("%s: %+v, want a reason starting %q", q, a, c.want)
				}
			}
		})
	}
}

func TestRuntimeListingLeavesOutWhatCrictlLeavesOut(t *testing.T) {
	l := RuntimeListingOf(
		[]*runtimeapi.PodSandbox{{Id: "no-metadata"}, {Id: "s1", Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "n"}, State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: 2}},
		[]*runtimeapi.Container{
			{Id: "no-metadata", Labels: map[string]string{labelPodNamespace: "n", labelPodName: "p"}},
			{Id: "b", PodSandboxId: "s1", Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: 5, Labels: map[string]string{labelPodNamespace: "n", labelPodName: "p"}},
			{Id: "a", PodSandboxId: "s1", Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: 5, Labels: map[string]string{labelPodNamespace: "n", labelPodName: "p"}},
		})
	v := l.RuntimePod("n", "p")
	if len(v.Sandboxes) != 1 || len(v.Containers) != 2 || !v.Running {
		t.Fatalf("%+v", v)
	}
	// Created in the same nanosecond: by ID.
	if v.Containers[0].ID != "a" || v.Containers[0].State != "CONTAINER_EXITED" || v.Containers[1].CreatedAt != time.Unix(0, 5).UTC() {
		t.Errorf("containers %+v", v.Containers)
	}
	if got := l.NamespaceContainers("n"); len(got.Containers) != 2 || got.Containers[0].ID != "a" {
		t.Errorf("namespace containers %+v", got)
	}
}
