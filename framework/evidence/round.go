package evidence

import (
	"context"
	"errors"
	"fmt"
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

// Round asks a fixed set of readers every question, all at once, each
// bounded by its own timeout, so a slow or dead source never delays the
// others by more than its own timeout.
type Round struct {
	readers []Reader
	timeout func(Reader) time.Duration
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
	r := &Round{readers: readers, timeout: func(Reader) time.Duration { return DefaultReadTimeout }}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// Readers returns the round's readers.
func (r *Round) Readers() []Reader { return r.readers }

type readResult struct {
	reader  Reader
	answers map[Question]Answer
}

// graceAfterTimeout is how long a round waits past a source's timeout for
// a reader that ignores its context, before recording it as timed out and
// moving on without it.
const graceAfterTimeout = 50 * time.Millisecond

// Take asks every reader once, in parallel, and returns the snapshot. It
// returns after the slowest source's timeout at the latest.
func (r *Round) Take(ctx context.Context) Snapshot {
	taken := time.Now().UTC()
	snap := NewSnapshot(taken)
	results := make(chan readResult, len(r.readers))
	deadlines := map[Source]time.Duration{}
	for _, rd := range r.readers {
		to := r.timeout(rd)
		deadlines[rd.Source()] = to
		go func() {
			rctx, cancel := context.WithTimeout(ctx, to)
			defer cancel()
			results <- readResult{reader: rd, answers: rd.Read(rctx)}
		}()
	}
	var longest time.Duration
	for _, to := range deadlines {
		longest = max(longest, to)
	}
	done := map[Source]bool{}
	timer := time.NewTimer(longest + graceAfterTimeout)
	defer timer.Stop()
collect:
	for len(done) < len(r.readers) {
		select {
		case res := <-results:
			done[res.reader.Source()] = true
			record(&snap, res.reader, res.answers, time.Now().UTC(), "")
		case <-timer.C:
			break collect
		case <-ctx.Done():
			break collect
		}
	}
	for _, rd := range r.readers {
		if done[rd.Source()] {
			continue
		}
		why := fmt.Sprintf("timeout: no answer within %s", deadlines[rd.Source()])
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "snapshot cancelled: " + ctx.Err().Error()
		}
		record(&snap, rd, nil, time.Now().UTC(), why)
	}
	return snap
}

// record puts a reader's answers into the snapshot: every question it can
// answer gets an answer (unreadable with why, or "no answer given", when
// missing), every other question is NotAsked.
func record(snap *Snapshot, rd Reader, answers map[Question]Answer, now time.Time, why string) {
	asked := map[Question]bool{}
	for _, q := range rd.Questions() {
		asked[q] = true
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
		snap.Set(rd.Source(), q, a)
	}
	for _, q := range Questions {
		if !asked[q] {
			snap.Set(rd.Source(), q, NotAskedAnswer())
		}
	}
}
