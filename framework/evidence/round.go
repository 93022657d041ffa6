package evidence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Reader is one source: it reads the cluster from one place and answers the
// questions it can.
type Reader interface {
	// Source names the reader ("apiserver/cp1", "cri/worker2").
	Source() Source
	// Questions lists what the reader can answer; every other question
	// is NotAsked for it.
	Questions() []Question
	// Read answers its questions once. It must return when ctx ends; an
	// answer it leaves out is recorded as unreadable. It never guesses:
	// what it could not read is an UnreadableAnswer with the reason.
	Read(ctx context.Context) map[Question]Answer
}

// Round asks a fixed set of readers every question, each bounded by its own
// timeout, so a slow or dead source never delays the others.
//
// A Round is one tick of a schedule (Begin) or a whole snapshot (Take).
// A reader whose read of an earlier tick has not returned yet is asked
// again all the same, each read under its own deadline: a source slower
// than the interval between ticks still answers at every tick, and one
// that hangs makes each of its own reads time out and holds nothing else.
// Only when a reader has MaxOutstanding reads unreturned (it hangs and
// ignores its context) is it not asked; its answers for the tick are then
// unreadable with a timeout reason that says since when its reads have
// been outstanding.
type Round struct {
	readers []Reader
	timeout func(Reader) time.Duration

	maxOutstanding int

	mu sync.Mutex
	// busy holds, per reader, when each of its unreturned reads began, in
	// order.
	busy map[int][]time.Time
}

// DefaultMaxOutstanding is how many unreturned reads a reader may have
// before a tick skips it.
const DefaultMaxOutstanding = 8

// WithMaxOutstanding sets how many unreturned reads a reader may have
// before a tick skips it (at least 1).
func WithMaxOutstanding(n int) RoundOption {
	return func(r *Round) { r.maxOutstanding = max(n, 1) }
}

// DefaultReadTimeout bounds one source's read in a round.
const DefaultReadTimeout = 2 * time.Second

// RoundOption configures a Round.
type RoundOption func(*Round)

// WithTimeouts sets the per-source timeout (the default is
// DefaultReadTimeout for every source).
func WithTimeouts(f func(Reader) time.Duration) RoundOption {
	return func(r *Round) { r.timeout = f }
}

// NewRound makes a round over readers; their sources must be distinct.
func NewRound(readers []Reader, opts ...RoundOption) (*Round, error) {
	seen := map[Source]bool{}
	for _, rd := range readers {
		if seen[rd.Source()] {
			return nil, fmt.Errorf("two readers for source %s", rd.Source())
		}
		seen[rd.Source()] = true
	}
	r := &Round{readers: readers, timeout: func(Reader) time.Duration { return DefaultReadTimeout },
		maxOutstanding: DefaultMaxOutstanding, busy: map[int][]time.Time{}}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// Readers returns the round's readers.
func (r *Round) Readers() []Reader { return r.readers }

// Timeout is the read timeout the round gives rd.
func (r *Round) Timeout(rd Reader) time.Duration { return r.timeout(rd) }

// graceAfterTimeout is how long a round waits past a source's timeout for
// a reader that ignores its context, before recording it as timed out and
// moving on without it.
const graceAfterTimeout = 50 * time.Millisecond

// Pending is one tick's snapshot while its reads are outstanding.
type Pending struct {
	taken time.Time
	done  chan struct{}
	snap  Snapshot
}

// Taken is when the tick began: every read of the tick began then or
// later.
func (p *Pending) Taken() time.Time { return p.taken }

// Done is closed once every reader of the tick has answered, passed its
// timeout, or was found busy.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Snapshot returns the tick's snapshot; it waits for Done.
func (p *Pending) Snapshot() Snapshot {
	<-p.done
	return p.snap
}

type tickResult struct {
	index   int
	answers map[Question]Answer
	asked   time.Time
	why     string
}

// Begin starts one tick: every reader without a read outstanding is asked
// now, under its own timeout; every other reader's answers are unreadable
// at once. It returns without waiting; the Pending completes when the last
// read asked returns or passes its timeout (plus a short grace for a
// reader that ignores its context), at the latest when ctx ends.
func (r *Round) Begin(ctx context.Context) *Pending {
	taken := time.Now().UTC()
	p := &Pending{taken: taken, done: make(chan struct{}), snap: NewSnapshot(taken)}
	results := make(chan tickResult, len(r.readers))
	var asked []int
	var longest time.Duration
	r.mu.Lock()
	for i, rd := range r.readers {
		if out := r.busy[i]; len(out) >= r.maxOutstanding {
			since := out[0]
			results <- tickResult{index: i, asked: taken, why: fmt.Sprintf("timeout: %d reads unreturned, the first begun at %s (%s before this round); not asked again until one returns",
				len(out), since.Format("15:04:05.000"), taken.Sub(since).Round(time.Millisecond))}
			continue
		}
		r.busy[i] = append(r.busy[i], taken)
		asked = append(asked, i)
		to := r.timeout(rd)
		longest = max(longest, to)
		go func() {
			rctx, cancel := context.WithTimeout(ctx, to)
			defer cancel()
			start := time.Now().UTC()
			answers := rd.Read(rctx)
			r.mu.Lock()
			if k := slices.IndexFunc(r.busy[i], func(t time.Time) bool { return t.Equal(taken) }); k >= 0 {
				r.busy[i] = slices.Delete(r.busy[i], k, k+1)
			}
			if len(r.busy[i]) == 0 {
				delete(r.busy, i)
			}
			r.mu.Unlock()
			results <- tickResult{index: i, answers: answers, asked: start}
		}()
	}
	r.mu.Unlock()
	go r.collect(ctx, p, results, len(r.readers), longest, asked)
	return p
}

// collect fills p from results until every reader has reported, the
// longest timeout (and grace) has passed, or ctx ends; readers that have
// not answered by then are recorded as timed out or cancelled.
func (r *Round) collect(ctx context.Context, p *Pending, results <-chan tickResult, want int, longest time.Duration, asked []int) {
	defer close(p.done)
	done := map[int]bool{}
	timer := time.NewTimer(time.Until(p.taken.Add(longest + graceAfterTimeout)))
	defer timer.Stop()
collect:
	for len(done) < want {
		select {
		case res := <-results:
			if done[res.index] {
				continue
			}
			done[res.index] = true
			record(&p.snap, r.readers[res.index], res.answers, res.asked, time.Now().UTC(), res.why)
		case <-timer.C:
			break collect
		case <-ctx.Done():
			break collect
		}
	}
	for _, i := range asked {
		if done[i] {
			continue
		}
		rd := r.readers[i]
		why := fmt.Sprintf("timeout: no answer within %s", r.timeout(rd))
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "snapshot cancelled: " + ctx.Err().Error()
		}
		record(&p.snap, rd, nil, p.taken, time.Now().UTC(), why)
	}
}

// Take asks every reader once, in parallel, and returns the snapshot. It
// returns after the slowest source's timeout at the latest.
func (r *Round) Take(ctx context.Context) Snapshot {
	return r.Begin(ctx).Snapshot()
}

// record puts a reader's answers into the snapshot: every question it can
// answer gets an answer (unreadable with why, or "no answer given", when
// missing), each stamped with when it was asked; every other question is
// NotAsked.
func record(snap *Snapshot, rd Reader, answers map[Question]Answer, asked, now time.Time, why string) {
	can := map[Question]bool{}
	for _, q := range rd.Questions() {
		can[q] = true
		a, ok := answers[q]
		if !ok || a.Validate() != nil {
			reason := why
			switch {
			case reason != "":
			case !ok:
				reason = "reader gave no answer"
			default:
				reason = "reader gave an invalid answer: " + a.Validate().Error()
			}
			a = UnreadableAnswer(reason, now)
		}
		// A reader that asks its questions one after another may say
		// when it began each (a later time than the round's, never after
		// the answer); otherwise the read began with the round.
		if a.AskedAt.Before(asked) || (!a.ReadAt.IsZero() && a.AskedAt.After(a.ReadAt)) {
			a.AskedAt = asked
		}
		snap.Set(rd.Source(), q, a)
	}
	for _, q := range Questions {
		if !can[q] {
			snap.Set(rd.Source(), q, NotAskedAnswer())
		}
	}
}
