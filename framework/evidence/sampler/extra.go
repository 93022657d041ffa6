package sampler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/evidence/watch"
	"github.com/faultline/faultline/lab"
)

// DefaultExtraReadTimeout bounds a read of a suite's own questions, and
// the reads its watches make at a sample.
const DefaultExtraReadTimeout = 5 * time.Second

// DefaultExtraRequestTimeout bounds one request of the API server clients
// Env hands a suite's readers and watches.
const DefaultExtraRequestTimeout = 3 * time.Second

// Extra is a suite's own evidence, added to the sampler without wrapping
// it: questions of its own, read by readers it makes for the lab, and
// watches that stamp moments on the timeline. The sampler opens every
// Extra when it opens the lab's sources (its first sample of a lab, and
// the first after Reset) and closes what it opened on Reset and Close.
type Extra struct {
	// Name names the extra in errors ("drill/pods").
	Name string
	// Open makes the extra's parts for the lab Env describes. An error
	// means no snapshot can be taken: the lab is not what the suite needs.
	Open func(Env) (Parts, error)
}

// Env is what an Extra is opened with.
type Env struct {
	Lab lab.Lab
	// Run is the run the extras are opened for (Sampler.BeginRun); zero
	// when the sampler was told of none. A suite's readers read from it
	// what they ask in this run; the sampler opens its extras again when
	// the run changes.
	Run evidence.Run
	// APIServers are the control-plane hosts' API servers, in the lab's
	// order, each through a client of its own (Options.ExtraRequestTimeout
	// per request); Err says why one has no client.
	APIServers []APIServer
}

// APIServer is one control-plane host's API server.
type APIServer struct {
	Host   string
	Source evidence.Source // "apiserver/<host>"
	Client kubernetes.Interface
	Err    error
}

// FirstAPIServer is the first API server with a client, as the
// framework's own watcher picks the server it watches.
func (e Env) FirstAPIServer() (APIServer, bool) {
	for _, a := range e.APIServers {
		if a.Err == nil {
			return a, true
		}
	}
	return APIServer{}, false
}

// Parts are what an Extra adds.
type Parts struct {
	// Readers answer the suite's questions. They are asked in a round of
	// their own, right after the framework's round, each bounded by
	// Options.ExtraReadTimeout; readers that share a source name are
	// asked as one (source.Combine), and their answers join the snapshot
	// under that name beside the framework's.
	Readers []evidence.Reader
	// Runtime are questions each worker's container runtime source
	// ("cri/<worker>") answers from the listings it takes anyway.
	Runtime []source.RuntimeQuestion
	// Watches stamp moments between samples; their events are taken at
	// every sample while the readers are asked (under the same bound), and
	// come after the framework's timeline and before the notes.
	Watches []Watch
}

// Watch is a part of an Extra that stamps moments on the timeline.
type Watch interface {
	// Events returns the moments since the previous call; ctx bounds any
	// read it makes.
	Events(ctx context.Context) []evidence.Event
	// Close stops it.
	Close() error
}

// OnAPIServers is the question q asked of every control-plane host's API
// server ("apiserver/<host>"), read as read says. A server with no client
// answers unreadable, saying why.
func OnAPIServers(q evidence.Question, read source.APIRead) Extra {
	return Extra{Name: string(q), Open: func(env Env) (Parts, error) {
		var p Parts
		for _, a := range env.APIServers {
			if a.Err != nil {
				p.Readers = append(p.Readers, source.NewUnavailable(a.Source, []evidence.Question{q}, "no client: "+a.Err.Error()))
				continue
			}
			p.Readers = append(p.Readers, source.NewAPIQuestion(a.Source, a.Client, q, read))
		}
		return p, nil
	}}
}

// ServicesOn is the question q asked of every host with role: the host's
// services named in services as its lab reports them, under the source
// "<prefix>/<host>", each process that stopped, started or was replaced
// between two samples stamped on the timeline (source.KindComponent*).
func ServicesOn(role lab.Role, prefix string, q evidence.Question, services ...string) Extra {
	return Extra{Name: string(q), Open: func(env Env) (Parts, error) {
		var p Parts
		for _, h := range lab.HostsWithRole(env.Lab, role) {
			r := source.NewServices(evidence.Source(prefix+"/"+h.Name()), h, q, services...)
			p.Readers = append(p.Readers, r)
			p.Watches = append(p.Watches, eventsOnly{r})
		}
		return p, nil
	}}
}

// OnRuntimes adds questions every worker's container runtime source
// answers (see Parts.Runtime).
func OnRuntimes(qs ...source.RuntimeQuestion) Extra {
	name := "runtime questions"
	if len(qs) > 0 {
		name = string(qs[0].Question)
	}
	return Extra{Name: name, Open: func(Env) (Parts, error) { return Parts{Runtime: qs}, nil }}
}

// PodPhaseWatch watches namespace's pods on the first API server and
// stamps every phase change (watch.KindPodPhase), starting at the first
// sample; a watch that cannot start is stamped watch.KindPodPhaseWatchFailed
// and tried again at the next sample.
func PodPhaseWatch(namespace string) Extra {
	return Extra{Name: "pod phases of " + namespace, Open: func(env Env) (Parts, error) {
		a, ok := env.FirstAPIServer()
		if !ok {
			return Parts{}, nil
		}
		return Parts{Watches: []Watch{&podPhaseWatch{api: a, namespace: namespace}}}, nil
	}}
}

type podPhaseWatch struct {
	api       APIServer
	namespace string
	w         *watch.PodPhases
}

func (p *podPhaseWatch) Events(context.Context) []evidence.Event {
	if p.w == nil {
		w, err := watch.StartPodPhases(p.api.Client, p.api.Source, p.namespace)
		if err != nil {
			return []evidence.Event{{At: time.Now().UTC(), Source: p.api.Source, Subject: "namespace/" + p.namespace, Kind: watch.KindPodPhaseWatchFailed, Detail: err.Error()}}
		}
		p.w = w
	}
	return p.w.Drain()
}

func (p *podPhaseWatch) Close() error {
	if p.w != nil {
		p.w.Stop()
	}
	return nil
}

// SchedulingFailures stamps namespace's FailedScheduling events, listed
// through the first API server at every sample (watch.KindFailedScheduling).
// A list that fails stamps nothing; the next one catches up, each event
// with the time the cluster recorded it (evidence.Event.ClusterAt).
func SchedulingFailures(namespace string) Extra {
	return Extra{Name: "FailedScheduling events of " + namespace, Open: func(env Env) (Parts, error) {
		a, ok := env.FirstAPIServer()
		if !ok {
			return Parts{}, nil
		}
		return Parts{Watches: []Watch{schedulingWatch{watch.NewSchedulingFailures(a.Client, a.Source, namespace)}}}, nil
	}}
}

type schedulingWatch struct{ s *watch.SchedulingFailures }

func (w schedulingWatch) Events(ctx context.Context) []evidence.Event {
	evs, err := w.s.Poll(ctx)
	if err != nil {
		return nil
	}
	return evs
}

func (schedulingWatch) Close() error { return nil }

// eventsOnly is a reader's events as a Watch.
type eventsOnly struct {
	r interface {
		Events(context.Context) []evidence.Event
	}
}

func (e eventsOnly) Events(ctx context.Context) []evidence.Event { return e.r.Events(ctx) }
func (eventsOnly) Close() error                                  { return nil }

// opened is every Extra opened for one lab.
type opened struct {
	round   *evidence.Round
	runtime []source.RuntimeQuestion
	watches []Watch
}

// EnvFor is the Env extras of l are opened with: a client of each
// control-plane host's API server, each request bounded by
// requestTimeout. A benchmark or a tool that asks an extra's readers
// outside a sampler opens them with it.
func EnvFor(l lab.Lab, requestTimeout time.Duration) Env {
	env := Env{Lab: l}
	for _, h := range lab.HostsWithRole(l, lab.RoleControlPlane) {
		a := APIServer{Host: h.Name(), Source: evidence.Source("apiserver/" + h.Name())}
		if path, err := l.Kubeconfig(h.Name()); err != nil {
			a.Err = err
		} else {
			a.Client, _, a.Err = source.ClientFromKubeconfig(path, requestTimeout)
		}
		env.APIServers = append(env.APIServers, a)
	}
	return env
}

// openExtras opens extras for l and run; it closes what it opened on
// error.
func openExtras(l lab.Lab, run evidence.Run, extras []Extra, requestTimeout, readTimeout time.Duration) (*opened, error) {
	if len(extras) == 0 {
		return &opened{}, nil
	}
	env := EnvFor(l, requestTimeout)
	env.Run = run
	o := &opened{}
	var readers []evidence.Reader
	for _, x := range extras {
		if x.Open == nil {
			o.close()
			return nil, fmt.Errorf("extra %q has no Open", x.Name)
		}
		p, err := x.Open(env)
		if err != nil {
			o.close()
			return nil, fmt.Errorf("opening %s: %w", x.Name, err)
		}
		readers = append(readers, p.Readers...)
		o.runtime = append(o.runtime, p.Runtime...)
		o.watches = append(o.watches, p.Watches...)
	}
	combined, err := combineBySource(readers)
	if err != nil {
		o.close()
		return nil, err
	}
	if len(combined) > 0 {
		round, err := evidence.NewRound(combined, evidence.WithTimeouts(func(evidence.Reader) time.Duration { return readTimeout }))
		if err != nil {
			o.close()
			return nil, err
		}
		o.round = round
	}
	return o, nil
}

// combineBySource joins readers that share a source name, keeping the
// order in which each name first appears.
func combineBySource(readers []evidence.Reader) ([]evidence.Reader, error) {
	var order []evidence.Source
	bySource := map[evidence.Source][]evidence.Reader{}
	for _, r := range readers {
		if _, ok := bySource[r.Source()]; !ok {
			order = append(order, r.Source())
		}
		bySource[r.Source()] = append(bySource[r.Source()], r)
	}
	var out []evidence.Reader
	for _, src := range order {
		rs := bySource[src]
		if len(rs) == 1 {
			out = append(out, rs[0])
			continue
		}
		c, err := source.Combine(rs...)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// take asks the extras' readers and adds their answers to snap, and takes
// their watches' events meanwhile, under the same bound, so that the
// extras lengthen a sample by one read timeout at most.
func (o *opened) take(ctx context.Context, snap *evidence.Snapshot, readTimeout time.Duration) []evidence.Event {
	events := make(chan []evidence.Event, 1)
	go func() {
		var out []evidence.Event
		if len(o.watches) > 0 {
			wctx, cancel := context.WithTimeout(ctx, readTimeout)
			defer cancel()
			for _, w := range o.watches {
				out = append(out, w.Events(wctx)...)
			}
		}
		events <- out
	}()
	if o.round != nil {
		o.merge(snap, o.round.Take(ctx))
	}
	return <-events
}

// merge puts the extras' answers into the framework's snapshot: each
// reader's own questions, under its source, beside the framework's
// answers of the same source.
func (o *opened) merge(snap *evidence.Snapshot, extra evidence.Snapshot) {
	for _, r := range o.round.Readers() {
		for _, q := range r.Questions() {
			snap.Set(r.Source(), q, extra.Get(r.Source(), q))
		}
	}
}

// sources lists the extras' sources.
func (o *opened) sources() []evidence.Source {
	if o == nil || o.round == nil {
		return nil
	}
	var out []evidence.Source
	for _, r := range o.round.Readers() {
		out = append(out, r.Source())
	}
	return out
}

func (o *opened) close() error {
	if o == nil {
		return nil
	}
	var errs []error
	for _, w := range o.watches {
		if err := w.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	o.watches = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing the suite's watches: %w", err)
	}
	return nil
}
