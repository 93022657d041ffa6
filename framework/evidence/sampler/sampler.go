// Package sampler is the evidence.Sampler of real labs: every source of
// the lab asked every question in parallel, plus the timeline the watcher
// records between samples.
package sampler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/evidence/watch"
	"github.com/faultline/faultline/lab"
)

// DefaultRate is how often Run samples: once a second.
const DefaultRate = time.Second

// DefaultCommandReadTimeout bounds a source read that runs commands over SSH
// (the container runtimes, kube-proxy's rules, the endpoint probers), and
// the controller-managers' and schedulers' whole /metrics pages, and the
// writer's log, which comes from the kubelet through an API server.
const DefaultCommandReadTimeout = 4 * time.Second

// Options configure a Sampler.
type Options struct {
	Sources source.Options
	// ReadTimeout bounds each source's read in a round (default
	// evidence.DefaultReadTimeout).
	ReadTimeout time.Duration
	// CommandReadTimeout bounds the reads that run a command on a host over
	// SSH (the container runtimes, kube-proxy's rules), which start
	// processes on the host and so take longer on a loaded one (default
	// DefaultCommandReadTimeout).
	CommandReadTimeout time.Duration
	// Watch tunes the timeline watcher; its Subjects follow Sources.
	Watch watch.Options
	// NoTimeline leaves the watcher out (snapshots only).
	NoTimeline bool
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
	return &Sampler{opts: opts}
}

var _ evidence.Sampler = (*Sampler)(nil)

// open makes the lab's sources (once per lab).
func (s *Sampler) open(l lab.Lab) error {
	if s.lab == l && s.round != nil {
		return nil
	}
	s.closeLocked()
	set, err := source.FromLab(l, s.opts.Sources)
	if err != nil {
		return fmt.Errorf("opening the sources of lab %s: %w", l.Info().Name, err)
	}
	round, err := evidence.NewRound(set.Readers, evidence.WithTimeouts(s.timeoutOf))
	if err != nil {
		set.Close()
		return err
	}
	s.lab, s.set, s.round = l, set, round
	return nil
}

// timeoutOf is a source's read timeout: longer for the sources that run
// commands over SSH.
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
	w, err := watch.New(s.set.Watch, s.set.Poll, s.opts.Watch)
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

// Sample asks every source every question once and returns the snapshot
// with the timeline's events since the previous Sample.
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
	return snap, events, nil
}

// DiscardEvents drops the timeline's events not yet handed out. A suite
// calls it from Suite.Prepare, after the lab's reset: what the watcher saw
// while the lab was put back (pods gone, nodes restarting) belongs to no
// run, and must not open the next run's timeline.
func (s *Sampler) DiscardEvents() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watcher == nil {
		return 0
	}
	return len(s.watcher.Drain())
}

// Run samples l every interval (DefaultRate when zero) until ctx ends,
// handing each snapshot and its events to fn. A round that runs long delays
// the next one; rounds never overlap.
func (s *Sampler) Run(ctx context.Context, l lab.Lab, every time.Duration, fn func(evidence.Snapshot, []evidence.Event)) error {
	if every <= 0 {
		every = DefaultRate
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		snap, events, err := s.Sample(ctx, l)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		fn(snap, events)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sources lists the sources the sampler asks (empty before first use).
func (s *Sampler) Sources() []evidence.Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.round == nil {
		return nil
	}
	var out []evidence.Source
	for _, r := range s.round.Readers() {
		out = append(out, r.Source())
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
	if s.set != nil {
		errs = append(errs, s.set.Close())
		s.set = nil
	}
	s.round, s.lab = nil, nil
	return errors.Join(errs...)
}
