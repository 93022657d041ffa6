// Package sampler is the evidence.Sampler of real labs: every source of
// the lab asked every question in parallel, plus the timeline the watcher
// records between samples. A suite adds its own questions, readers and
// watches through Options.Extras, and its own steps put what they did on
// the timeline with Note.
package sampler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/evidence/watch"
	"github.com/faultline/faultline/lab"
)

// DefaultRate is how often Stream ticks when given no interval: once a second.
const DefaultRate = time.Second

// DefaultCommandReadTimeout bounds a source read that goes over SSH (the
// container runtimes, kube-proxy's rules, the endpoint probers), which may
// have to reconnect to its host first, and
// the controller-managers' and schedulers' whole /metrics pages, and the
// writer's log, which comes from the kubelet through an API server.
const DefaultCommandReadTimeout = 4 * time.Second

// Options configure a Sampler.
type Options struct {
	Sources source.Options
	// ReadTimeout bounds each source's read in a round (default
	// evidence.DefaultReadTimeout).
	ReadTimeout time.Duration
	// CommandReadTimeout bounds the reads that go over a host's SSH
	// connection (the container runtimes, kube-proxy's rules, the
	// endpoint probers), which may reconnect first, and where they run a
	// command start processes on the host, which take longer on a loaded
	// one (default DefaultCommandReadTimeout).
	CommandReadTimeout time.Duration
	// Watch tunes the timeline watcher; its Subjects follow Sources.
	Watch watch.Options
	// NoTimeline leaves the watcher out (snapshots only).
	NoTimeline bool
	// SubjectsFor, when set, picks the subjects for the lab being opened
	// (a suite whose labs differ in shape names its pod and node by the
	// shape); it overrides Sources.Subjects. An error means no snapshot.
	SubjectsFor func(lab.Lab) (evidence.Subjects, error)
	// Extras are the suite's own questions, readers and watches (see
	// Extra).
	Extras []Extra
	// ExtraReadTimeout bounds each read of the extras' readers and the
	// reads their watches make at a sample (default
	// DefaultExtraReadTimeout).
	ExtraReadTimeout time.Duration
	// ExtraRequestTimeout bounds one request of the API server clients the
	// extras are opened with (default DefaultExtraRequestTimeout).
	ExtraRequestTimeout time.Duration
}

// Sampler takes snapshots of a lab and records its timeline. It opens the
// lab's sources on first use and keeps them until Close.
type Sampler struct {
	opts Options

	mu      sync.Mutex
	lab     lab.Lab
	set     *source.Set
	round   *evidence.Round
	watcher *watch.Watcher
	extras  *opened
	// subjects are those of the open lab.
	subjects evidence.Subjects
	// run is the run the samples are for (BeginRun); openedFor is the
	// run the open extras were opened for.
	run, openedFor evidence.Run

	// notesMu guards notes alone, so that a step noting what it did never
	// waits for a round.
	notesMu sync.Mutex
	notes   []evidence.Event

	// pump holds what the extras' watches gave during a stream and no
	// snapshot has carried yet.
	pump watchPump
}

// New makes a sampler; nothing is opened until the first Sample.
func New(opts Options) *Sampler {
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = evidence.DefaultReadTimeout
	}
	if opts.CommandReadTimeout <= 0 {
		opts.CommandReadTimeout = DefaultCommandReadTimeout
	}
	if opts.Sources.Subjects == (evidence.Subjects{}) {
		opts.Sources.Subjects = evidence.DefaultSubjects
	}
	opts.Watch.Subjects = opts.Sources.Subjects
	if opts.ExtraReadTimeout <= 0 {
		opts.ExtraReadTimeout = DefaultExtraReadTimeout
	}
	if opts.ExtraRequestTimeout <= 0 {
		opts.ExtraRequestTimeout = DefaultExtraRequestTimeout
	}
	return &Sampler{opts: opts}
}

var _ evidence.RunSampler = (*Sampler)(nil)

// BeginRun says which run the samples from now on are for: the extras
// see it as Env.Run. Extras opened for another run are opened again at
// the next sample, with the lab's sources, as after Reset, since what
// they ask may depend on the run (their runtime questions too); a
// sampler without extras carries on as it was. It waits for a sample or
// a stream under way to end.
func (s *Sampler) BeginRun(run evidence.Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	run.Labels = slices.Clone(run.Labels)
	s.run = run
}

// open makes the lab's sources (once per lab, and for a sampler with
// extras once per run): the extras first, since they may add questions
// to the framework's runtime sources.
func (s *Sampler) open(l lab.Lab) error {
	if s.lab == l && s.round != nil && (len(s.opts.Extras) == 0 || s.openedFor.Equal(s.run)) {
		return nil
	}
	s.closeLocked()
	sources := s.opts.Sources
	if s.opts.SubjectsFor != nil {
		subjects, err := s.opts.SubjectsFor(l)
		if err != nil {
			return fmt.Errorf("the subjects of lab %s: %w", l.Info().Name, err)
		}
		sources.Subjects = subjects
	}
	extras, err := openExtras(l, s.run, s.opts.Extras, s.opts.ExtraRequestTimeout, s.opts.ExtraReadTimeout)
	if err != nil {
		return fmt.Errorf("opening the suite's evidence for lab %s: %w", l.Info().Name, err)
	}
	sources.RuntimeQuestions = append(append([]source.RuntimeQuestion(nil), sources.RuntimeQuestions...), extras.runtime...)
	set, err := source.FromLab(l, sources)
	if err != nil {
		extras.close()
		return fmt.Errorf("opening the sources of lab %s: %w", l.Info().Name, err)
	}
	round, err := evidence.NewRound(set.Readers, evidence.WithTimeouts(s.timeoutOf))
	if err != nil {
		extras.close()
		set.Close()
		return err
	}
	s.lab, s.set, s.round, s.extras, s.subjects, s.openedFor = l, set, round, extras, sources.Subjects, s.run
	return nil
}

// timeoutOf is a source's read timeout: longer for the sources that go
// over SSH.
func (s *Sampler) timeoutOf(r evidence.Reader) time.Duration {
	switch r.(type) {
	case *source.Runtime, *source.Proxy, *source.Prober, *source.Leading, *source.Writer:
		return s.opts.CommandReadTimeout
	}
	return s.opts.ReadTimeout
}

// startWatcher starts the timeline watcher if it is not running. A
// watcher that cannot start (no API server answers) is not a failed
// snapshot: the attempt is an event of its own and the next sample
// tries again.
func (s *Sampler) startWatcher(ctx context.Context) []evidence.Event {
	if s.opts.NoTimeline || s.watcher != nil {
		return nil
	}
	fail := func(err error) []evidence.Event {
		return []evidence.Event{{At: time.Now().UTC(), Source: "faultline", Subject: "timeline", Kind: "timeline-unavailable", Detail: err.Error()}}
	}
	wopts := s.opts.Watch
	wopts.Subjects = s.subjects
	w, err := watch.New(s.set.Watch, s.set.Poll, wopts)
	if err != nil {
		return fail(err)
	}
	// The watcher outlives this call's context: it runs until Close.
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return fail(err)
	}
	s.watcher = w
	return []evidence.Event{{At: time.Now().UTC(), Source: s.set.Watch.Source, Subject: "timeline", Kind: "timeline-started",
		Detail: fmt.Sprintf("watching %s, polling %d more", s.set.Watch.Source, len(s.set.Poll))}}
}

// Sample asks every source every question once, then the extras' readers,
// and returns the snapshot with the timeline's events since the previous
// Sample: the watcher's, the extras' watches', and the notes. A failed
// Sample keeps the notes for the next.
func (s *Sampler) Sample(ctx context.Context, l lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(l); err != nil {
		return evidence.Snapshot{}, nil, err
	}
	events := s.startWatcher(ctx)
	snap := s.round.Take(ctx)
	if s.watcher != nil {
		events = append(events, s.watcher.Drain()...)
	}
	events = append(events, s.pump.take()...)
	events = append(events, s.extras.take(ctx, &snap, s.opts.ExtraReadTimeout)...)
	return snap, append(events, s.takeNotes()...), nil
}

// Note puts e on the timeline at the next sample: for what faultline
// itself does to the cluster (a forced deletion, a placement of the
// leaders), which no watcher can tell apart from the cluster's own doing.
// It never waits for a round.
func (s *Sampler) Note(e evidence.Event) {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	s.notes = append(s.notes, e)
}

func (s *Sampler) takeNotes() []evidence.Event {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	out := s.notes
	s.notes = nil
	return out
}

// DiscardEvents drops the timeline's events not yet handed out: the
// watcher's, the extras' watches' and the notes. A suite calls it from
// Suite.Prepare, after the lab's reset: what the watcher saw while the lab
// was put back (pods gone, nodes restarting) belongs to no run, and must
// not open the next run's timeline.
func (s *Sampler) DiscardEvents() int {
	n := len(s.takeNotes()) + len(s.pump.take())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watcher != nil {
		n += len(s.watcher.Drain())
	}
	if s.extras != nil && len(s.extras.watches) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.ExtraReadTimeout)
		defer cancel()
		for _, w := range s.extras.watches {
			n += len(w.Events(ctx))
		}
	}
	return n
}

// Reset forgets everything: it closes the sources, the watcher and the
// extras and drops the notes, and the next Sample opens them again. A
// suite calls it from Suite.Prepare, after the lab's reset, when the run
// must start from its own baseline: after a reset the cluster's history
// starts again from the cold snapshot, and a watcher carried over from the
// previous run would hand this run that run's late events, or none at all
// once its informers lost their place.
func (s *Sampler) Reset() error {
	s.takeNotes()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.closeLocked(); err != nil {
		return fmt.Errorf("closing the previous run's sampler: %w", err)
	}
	return nil
}

// Sources lists the sources the sampler asks (empty before first use).
func (s *Sampler) Sources() []evidence.Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.round == nil {
		return nil
	}
	var out []evidence.Source
	seen := map[evidence.Source]bool{}
	for _, r := range s.round.Readers() {
		out = append(out, r.Source())
		seen[r.Source()] = true
	}
	for _, src := range s.extras.sources() {
		if !seen[src] {
			out = append(out, src)
		}
	}
	return out
}

// Close stops the watcher and closes the sources.
func (s *Sampler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeLocked()
}

func (s *Sampler) closeLocked() error {
	var errs []error
	if s.watcher != nil {
		s.watcher.Stop()
		s.watcher = nil
	}
	if s.extras != nil {
		errs = append(errs, s.extras.close())
		s.extras = nil
	}
	if s.set != nil {
		errs = append(errs, s.set.Close())
		s.set = nil
	}
	s.round, s.lab = nil, nil
	return errors.Join(errs...)
}
