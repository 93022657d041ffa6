package sampler

import (
	"context"
	"sync"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

var _ evidence.Streamer = (*Sampler)(nil)

// tick is one tick of a stream: the framework's reads and the extras'
// reads, begun together.
type tick struct {
	main, extra *evidence.Pending
	watcher     interface{ Drain() []evidence.Event }
	err         error
	at          time.Time // when a tick that failed began
}

// Stream asks every source at every tick of every (DefaultRate when
// zero), each under its own timeout; a source whose read of an earlier
// tick is still outstanding is not asked again, and its answers for the
// tick are unreadable (timeout), so it delays no other source. The
// extras' readers are asked at the same ticks; their watches are taken
// beside the ticks, never holding one. Snapshots reach fn in tick order,
// each once its last read has returned or timed out, with the timeline's
// events since the previous one. When ctx ends or fn returns false no new
// tick begins; the reads outstanding get one interval more and are then
// cancelled. A tick at which the lab's sources could not be opened reaches
// fn as its error, with a snapshot that holds nothing but the tick's time,
// and the next tick tries again.
func (s *Sampler) Stream(ctx context.Context, l lab.Lab, every time.Duration, fn func(evidence.Snapshot, []evidence.Event, error) bool) {
	if every <= 0 {
		every = DefaultRate
	}
	s.mu.Lock()
	defer s.mu.Unlock()

	// Reads outlive ctx by one interval: they are cancelled once the
	// stream has stopped ticking and the grace has passed.
	readCtx, cancelReads := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReads()
	stopped := make(chan struct{}) // closed when fn has returned false
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { close(stopped) }) }

	ticks := make(chan tick, 256)
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		live := true
		for t := range ticks {
			if !live {
				continue
			}
			if t.err != nil {
				if !fn(evidence.NewSnapshot(t.at), nil, t.err) {
					live = false
					stop()
				}
				continue
			}
			snap := t.main.Snapshot()
			if t.extra != nil {
				s.extras.merge(&snap, t.extra.Snapshot())
			}
			var events []evidence.Event
			if t.watcher != nil {
				events = append(events, t.watcher.Drain()...)
			}
			events = append(events, s.pump.take()...)
			events = append(events, s.takeNotes()...)
			if !fn(snap, events, nil) {
				live = false
				stop()
			}
		}
	}()

	t := time.NewTicker(every)
	defer t.Stop()
	var pumping sync.WaitGroup
ticking:
	for {
		if err := s.open(l); err != nil {
			ticks <- tick{err: err, at: time.Now()}
		} else {
			first := s.startWatcher(ctx)
			for _, e := range first {
				s.Note(e)
			}
			tk := tick{main: s.round.Begin(readCtx)}
			if s.watcher != nil {
				tk.watcher = s.watcher
			}
			if s.extras.round != nil {
				tk.extra = s.extras.round.Begin(readCtx)
			}
			if len(s.extras.watches) > 0 {
				s.pump.pump(readCtx, &pumping, s.extras.watches, s.opts.ExtraReadTimeout)
			}
			ticks <- tk
		}
		select {
		case <-ctx.Done():
			break ticking
		case <-stopped:
			break ticking
		case <-t.C:
		}
	}
	close(ticks)
	grace := time.NewTimer(every)
	defer grace.Stop()
	select {
	case <-delivered:
	case <-grace.C:
		cancelReads()
		<-delivered
	}
	cancelReads()
	pumping.Wait()
}

// watchPump takes the extras' watches' events beside a stream's ticks: at
// a tick it starts a take unless one is still running, and keeps what it
// got for the next snapshot handed out (by a stream or Sample).
type watchPump struct {
	mu      sync.Mutex
	running bool
	events  []evidence.Event
}

func (p *watchPump) pump(ctx context.Context, wg *sync.WaitGroup, ws []Watch, timeout time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return
	}
	p.running = true
	wg.Add(1)
	go func() {
		defer wg.Done()
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var out []evidence.Event
		for _, w := range ws {
			out = append(out, w.Events(wctx)...)
		}
		p.mu.Lock()
		p.events = append(p.events, out...)
		p.running = false
		p.mu.Unlock()
	}()
}

func (p *watchPump) take() []evidence.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.events
	p.events = nil
	return out
}
