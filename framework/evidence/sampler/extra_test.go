package sampler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/lab"
)

// fakeLab has one control-plane host without a kubeconfig and one worker
// whose runtime lists the source package's captured crictl output; every
// other command fails.
type fakeLab struct{ hosts []lab.Host }

type fakeHost struct {
	name  string
	roles []lab.Role
	ps    string
}

var errNoCommand = errors.New("no such command here")

func (h fakeHost) Name() string      { return h.name }
func (h fakeHost) Roles() []lab.Role { return h.roles }
func (h fakeHost) HasRole(r lab.Role) bool {
	for _, x := range h.roles {
		if x == r {
			return true
		}
	}
	return false
}
func (h fakeHost) Address() string { return "127.0.0.2" }
func (h fakeHost) Run(_ context.Context, cmd string) (lab.Result, error) {
	if strings.Contains(cmd, "crictl ps") && h.ps != "" {
		return lab.Result{Stdout: h.ps}, nil
	}
	return lab.Result{}, errNoCommand
}
func (fakeHost) StopService(context.Context, string) error              { return errNoCommand }
func (fakeHost) StartService(context.Context, string) error             { return errNoCommand }
func (fakeHost) Signal(context.Context, string, syscall.Signal) error   { return errNoCommand }
func (fakeHost) Services(context.Context) ([]lab.ServiceState, error)   { return nil, errNoCommand }
func (fakeHost) PowerOff(context.Context) error                         { return errNoCommand }
func (fakeHost) PowerOn(context.Context) error                          { return errNoCommand }
func (fakeHost) Dial(context.Context, string, string) (net.Conn, error) { return nil, errNoCommand }

func (l *fakeLab) Info() lab.Info      { return lab.Info{Name: "fake", Kind: "test"} }
func (l *fakeLab) Config() *lab.Config { return &lab.Config{Name: "fake"} }
func (l *fakeLab) Hosts() []lab.Host   { return l.hosts }
func (l *fakeLab) StateDir() string    { return "" }
func (l *fakeLab) Timers() (lab.Timers, error) {
	return lab.Timers{}, lab.Unsupported("test", "timers", "it runs no cluster")
}
func (l *fakeLab) Close() error                               { return nil }
func (l *fakeLab) Reset(context.Context) error                { return nil }
func (l *fakeLab) Status(context.Context) (lab.Status, error) { return lab.Status{}, nil }
func (l *fakeLab) Kubeconfig(string) (string, error) {
	return "", errors.New("no kubeconfig in this lab")
}
func (l *fakeLab) Host(name string) (lab.Host, error) {
	for _, h := range l.hosts {
		if h.Name() == name {
			return h, nil
		}
	}
	return nil, errors.New("no host " + name)
}

func newFakeLab(t *testing.T) *fakeLab {
	t.Helper()
	pods, err := os.ReadFile("../source/testdata/crictl/pods-worker1.json")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := os.ReadFile("../source/testdata/crictl/ps-worker1.json")
	if err != nil {
		t.Fatal(err)
	}
	// The runtime source's two listings, as its command prints them.
	out := string(pods) + "\n----faultline-crictl-containers----\n" + string(ps)
	return &fakeLab{hosts: []lab.Host{
		fakeHost{name: "cp1", roles: []lab.Role{lab.RoleControlPlane}},
		fakeHost{name: "worker1", roles: []lab.Role{lab.RoleWorker}, ps: out},
	}}
}

// constReader answers its one question with a fixed value.
type constReader struct {
	src evidence.Source
	q   evidence.Question
	v   string
}

func (r constReader) Source() evidence.Source        { return r.src }
func (r constReader) Questions() []evidence.Question { return []evidence.Question{r.q} }
func (r constReader) Read(context.Context) map[evidence.Question]evidence.Answer {
	a, err := evidence.ValueAnswer(r.v, nowUTC(), "")
	if err != nil {
		panic(err)
	}
	return map[evidence.Question]evidence.Answer{r.q: a}
}

// countingWatch hands out one event per call and counts its closes.
type countingWatch struct {
	kind   string
	closed *int
}

func (w countingWatch) Events(context.Context) []evidence.Event {
	return []evidence.Event{{At: nowUTC(), Source: "test", Kind: w.kind}}
}
func (w countingWatch) Close() error { *w.closed++; return nil }

func kinds(events []evidence.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Kind)
	}
	return out
}

const (
	qOne  evidence.Question = "suite/one"
	qTwo  evidence.Question = "suite/two"
	qCtrs evidence.Question = "suite/containers"
)

func TestExtrasJoinTheSnapshotBesideTheFrameworksAnswers(t *testing.T) {
	closed, opens := 0, 0
	extra := Extra{Name: "test", Open: func(env Env) (Parts, error) {
		opens++
		if len(env.APIServers) != 1 || env.APIServers[0].Source != "apiserver/cp1" || env.APIServers[0].Err == nil {
			t.Errorf("env API servers %+v: want cp1 without a client", env.APIServers)
		}
		return Parts{
			// Two readers of one source: asked as one.
			Readers: []evidence.Reader{constReader{"apiserver/cp1", qOne, "a"}, constReader{"apiserver/cp1", qTwo, "b"}},
			Runtime: []source.RuntimeQuestion{source.NamespaceContainers(qCtrs, "faultline")},
			Watches: []Watch{countingWatch{kind: "suite-moment", closed: &closed}},
		}, nil
	}}
	s := New(Options{Extras: []Extra{extra, OnAPIServers("suite/pods", nil)}, NoTimeline: true})
	defer s.Close()
	l := newFakeLab(t)
	s.Note(evidence.Event{Kind: "noted"})
	snap, events, err := s.Sample(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[evidence.Question]string{qOne: "a", qTwo: "b"} {
		var got string
		if err := snap.Get("apiserver/cp1", q).Decode(&got); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", q, got, err, want)
		}
	}
	// The framework's answers of the same source are kept.
	if a := snap.Get("apiserver/cp1", evidence.NodeReady); a.State != evidence.Unreadable {
		t.Errorf("the framework's NodeReady of cp1 is %s, want its unreadable answer kept", a.State)
	}
	if a := snap.Get("apiserver/cp1", "suite/pods"); a.State != evidence.Unreadable || !strings.Contains(a.Reason, "no client") {
		t.Errorf("a question of a server without a client: %+v", a)
	}
	var ctrs evidence.NamespaceContainersValue
	if err := snap.Get("cri/worker1", qCtrs).Decode(&ctrs); err != nil || len(ctrs.Containers) == 0 {
		t.Errorf("runtime question: %+v, %v", ctrs, err)
	}
	var pod evidence.RuntimePodValue
	if err := snap.Get("cri/worker1", evidence.PodRunningHere).Decode(&pod); err != nil || !pod.Running {
		t.Errorf("the runtime's own question from the same listing: %+v, %v", pod, err)
	}
	if got := strings.Join(kinds(events), ","); got != "suite-moment,noted" {
		t.Errorf("events %s: want the watch's, then the note", got)
	}
	if srcs := s.Sources(); len(srcs) == 0 {
		t.Error("no sources listed")
	}

	// Discarding drops the notes and what the watches hold.
	s.Note(evidence.Event{Kind: "noted"})
	if n := s.DiscardEvents(); n != 2 {
		t.Errorf("discarded %d, want the note and the watch's event", n)
	}
	// Reset closes the extras; the next sample opens them again.
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if closed != 1 {
		t.Errorf("watch closed %d times by Reset", closed)
	}
	if _, _, err := s.Sample(context.Background(), l); err != nil || opens != 2 {
		t.Errorf("after Reset: opened %d times, err %v", opens, err)
	}
}

func TestAFailedSampleKeepsTheNotes(t *testing.T) {
	fail := true
	s := New(Options{NoTimeline: true, SubjectsFor: func(lab.Lab) (evidence.Subjects, error) {
		if fail {
			return evidence.Subjects{}, errors.New("not this lab's shape")
		}
		return evidence.DefaultSubjects, nil
	}})
	defer s.Close()
	l := newFakeLab(t)
	s.Note(evidence.Event{Kind: "force-deleted"})
	if _, _, err := s.Sample(context.Background(), l); err == nil || !strings.Contains(err.Error(), "not this lab's shape") {
		t.Fatalf("sample with no subjects: %v", err)
	}
	fail = false
	_, events, err := s.Sample(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(events); len(got) != 1 || got[0] != "force-deleted" {
		t.Errorf("events %v: want the note kept through the failed sample", got)
	}
	if _, events, _ := s.Sample(context.Background(), l); len(events) != 0 {
		t.Errorf("the note came back: %v", kinds(events))
	}
}

func TestAnExtraThatCannotOpenIsAnError(t *testing.T) {
	s := New(Options{NoTimeline: true, Extras: []Extra{{Name: "broken", Open: func(Env) (Parts, error) {
		return Parts{}, errors.New("wrong shape")
	}}}})
	defer s.Close()
	if _, _, err := s.Sample(context.Background(), newFakeLab(t)); err == nil || !strings.Contains(err.Error(), "broken: wrong shape") {
		t.Errorf("err %v", err)
	}
	s = New(Options{NoTimeline: true, Extras: []Extra{{Name: "no open"}}})
	if _, _, err := s.Sample(context.Background(), newFakeLab(t)); err == nil || !strings.Contains(err.Error(), `"no open" has no Open`) {
		t.Errorf("err %v", err)
	}
}

func TestTwoExtrasAskingOneQuestionOfOneSourceAreRefused(t *testing.T) {
	dup := Extra{Name: "dup", Open: func(Env) (Parts, error) {
		return Parts{Readers: []evidence.Reader{constReader{"x", qOne, "a"}, constReader{"x", qOne, "b"}}}, nil
	}}
	s := New(Options{NoTimeline: true, Extras: []Extra{dup}})
	defer s.Close()
	if _, _, err := s.Sample(context.Background(), newFakeLab(t)); err == nil || !strings.Contains(err.Error(), "asked twice") {
		t.Errorf("err %v", err)
	}
}

func nowUTC() time.Time { return time.Now().UTC() }

// socketLab is the fake lab naming its workers' CRI sockets; worker1's
// dials are refused, as a host refuses a socket nobody listens on.
type socketLab struct {
	*fakeLab
	err error
}

func (l socketLab) RuntimeEndpoint(host string) (string, error) {
	return "/run/fake/" + host + "/containerd.sock", l.err
}

type refusingHost struct{ fakeHost }

func (refusingHost) Dial(_ context.Context, network, address string) (net.Conn, error) {
	return nil, fmt.Errorf("dialing %s %s from worker1: %w", network, address, syscall.ECONNREFUSED)
}

// The runtime is read over CRI where the lab names its socket, with crictl
// where it does not (the test above), and not at all where naming it fails.
func TestTheRuntimeIsReadThroughTheSocketTheLabNames(t *testing.T) {
	fl := newFakeLab(t)
	fl.hosts[1] = refusingHost{fl.hosts[1].(fakeHost)}
	for _, c := range []struct {
		lab  lab.Lab
		want string
	}{
		{socketLab{fakeLab: fl}, "connection refused: CRI ListPodSandbox on worker1: dialing unix /run/fake/worker1/containerd.sock"},
		{socketLab{fakeLab: fl, err: errors.New("host worker1 runs no container runtime")}, "the CRI socket: host worker1 runs no container runtime"},
	} {
		s := New(Options{NoTimeline: true, Extras: []Extra{OnRuntimes(source.NamespaceContainers(qCtrs, "faultline"))}})
		snap, _, err := s.Sample(context.Background(), c.lab)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []evidence.Question{evidence.PodRunningHere, qCtrs} {
			if a := snap.Get("cri/worker1", q); a.State != evidence.Unreadable || !strings.Contains(a.Reason, c.want) {
				t.Errorf("%s: %+v, want %q", q, a, c.want)
			}
		}
	}
}

// runReader answers, under its source, one question per label of the run
// its extra was opened for.
type runReader struct {
	src evidence.Source
	run evidence.Run
}

func (r runReader) Source() evidence.Source { return r.src }
func (r runReader) Questions() []evidence.Question {
	var qs []evidence.Question
	for _, l := range r.run.Labels {
		qs = append(qs, evidence.Question("label/"+l))
	}
	return qs
}
func (r runReader) Read(context.Context) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	for _, q := range r.Questions() {
		a, err := evidence.ValueAnswer(r.run.ID, nowUTC(), "")
		if err != nil {
			panic(err)
		}
		out[q] = a
	}
	return out
}

// asked are the questions snap holds of src.
func asked(snap evidence.Snapshot, src evidence.Source) []string {
	var out []string
	for q := range snap.Answers[src] {
		out = append(out, string(q))
	}
	slices.Sort(out)
	return out
}

// The extras are opened with the run the sampler was told of (Env.Run),
// and opened again when a new run begins, without a Reset: each run's
// readers ask what that run's labels say, and nothing of the run before.
func TestTheExtrasAreOpenedForTheRun(t *testing.T) {
	var opened []evidence.Run
	extra := Extra{Name: "per run", Open: func(env Env) (Parts, error) {
		opened = append(opened, env.Run)
		return Parts{Readers: []evidence.Reader{runReader{"suite", env.Run}}}, nil
	}}
	s := New(Options{Extras: []Extra{extra}, NoTimeline: true})
	defer s.Close()
	l := newFakeLab(t)
	a := evidence.Run{ID: "a-fault-1", Scenario: "a", Arm: "fault", Labels: []string{"arm:fault", "workload:ledger"}}
	b := evidence.Run{ID: "b-null-2", Scenario: "b", Arm: "null", Labels: []string{"arm:null", "workload:kvdb"}}
	s.BeginRun(a)
	for range 2 {
		snap, _, err := s.Sample(context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(asked(snap, "suite"), " "); got != "label/arm:fault label/workload:ledger" {
			t.Fatalf("run a asked %s", got)
		}
	}
	if len(opened) != 1 {
		t.Fatalf("opened %d times within one run", len(opened))
	}
	s.BeginRun(b)
	snap, _, err := s.Sample(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(asked(snap, "suite"), " "); got != "label/arm:null label/workload:kvdb" {
		t.Fatalf("run b asked %s", got)
	}
	if len(opened) != 2 || !opened[0].Equal(a) || !opened[1].Equal(b) {
		t.Fatalf("opened for %+v, want a then b", opened)
	}
	// The same run told again opens nothing anew.
	s.BeginRun(b)
	if _, _, err := s.Sample(context.Background(), l); err != nil || len(opened) != 2 {
		t.Fatalf("the same run again: opened %d times, err %v", len(opened), err)
	}
}

// A sampler without extras keeps its sources across runs: nothing it
// opens depends on the run.
func TestASamplerWithoutExtrasKeepsItsSourcesAcrossRuns(t *testing.T) {
	s := New(Options{NoTimeline: true})
	defer s.Close()
	l := newFakeLab(t)
	s.BeginRun(evidence.Run{ID: "a"})
	if _, _, err := s.Sample(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	set := s.set
	s.BeginRun(evidence.Run{ID: "b"})
	if _, _, err := s.Sample(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	if s.set != set {
		t.Error("the lab's sources were opened again for a new run")
	}
}
