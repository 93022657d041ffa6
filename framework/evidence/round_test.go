package evidence

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedReader is a test double: it answers what it is given after a
// delay, ignoring its context when told to (a source that hangs).
type scriptedReader struct {
	name      Source
	questions []Question
	delay     time.Duration
	ignoreCtx bool
	answers   func() map[Question]Answer
}

func (r *scriptedReader) Source() Source        { return r.name }
func (r *scriptedReader) Questions() []Question { return r.questions }
func (r *scriptedReader) Read(ctx context.Context) map[Question]Answer {
	if r.ignoreCtx {
		time.Sleep(r.delay)
	} else {
		select {
		case <-time.After(r.delay):
		case <-ctx.Done():
			return map[Question]Answer{NodeReady: UnreadableAnswer("timeout: "+ctx.Err().Error(), time.Now())}
		}
	}
	return r.answers()
}

func readyAnswer() map[Question]Answer {
	a, _ := ValueAnswer(NodeReadyValue{Exists: true, Status: "True"}, time.Now().UTC(), "7")
	return map[Question]Answer{NodeReady: a}
}

func TestRoundDoesNotWaitForAHungSource(t *testing.T) {
	fast := &scriptedReader{name: "fast", questions: []Question{NodeReady}, answers: readyAnswer}
	hung := &scriptedReader{name: "hung", questions: []Question{NodeReady}, delay: time.Hour, ignoreCtx: true, answers: readyAnswer}
	slow := &scriptedReader{name: "slow", questions: []Question{NodeReady}, delay: time.Hour, answers: readyAnswer}
	const timeout = 200 * time.Millisecond
	r, err := NewRound([]Reader{fast, hung, slow}, WithTimeouts(func(Reader) time.Duration { return timeout }))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	snap := r.Take(context.Background())
	// A hung source that ignores its context would hold the round for an
	// hour; ten seconds is a bound that only a hang can exceed.
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the round waited %s for a hung source", took)
	}
	if err := snap.Validate(); err != nil {
		t.Fatal(err)
	}
	if a := snap.Get("fast", NodeReady); !a.Readable() || a.ResourceVersion != "7" {
		t.Errorf("fast source: %+v", a)
	}
	if a := snap.Get("hung", NodeReady); a.State != Unreadable || !strings.HasPrefix(a.Reason, "timeout") {
		t.Errorf("hung source: %+v", a)
	}
	if a := snap.Get("slow", NodeReady); a.State != Unreadable || !strings.HasPrefix(a.Reason, "timeout") {
		t.Errorf("slow source: %+v", a)
	}
	if a := snap.Get("fast", PodObject); a.State != NotAsked {
		t.Errorf("a question the source cannot answer is %s, want not-asked", a.State)
	}
	if !snap.Get("fast", NodeReady).ReadAt.Before(start.Add(timeout)) {
		t.Errorf("the fast source's answer is stamped after the others' timeout")
	}
}

func TestRoundFillsWhatAReaderLeftOut(t *testing.T) {
	partial := &scriptedReader{name: "partial", questions: []Question{NodeReady, NodeTaints}, answers: readyAnswer}
	invalid := &scriptedReader{name: "invalid", questions: []Question{NodeReady}, answers: func() map[Question]Answer {
		return map[Question]Answer{NodeReady: {State: Answered}}
	}}
	r, err := NewRound([]Reader{partial, invalid})
	if err != nil {
		t.Fatal(err)
	}
	snap := r.Take(context.Background())
	if err := snap.Validate(); err != nil {
		t.Fatal(err)
	}
	if a := snap.Get("partial", NodeTaints); a.State != Unreadable || a.Reason != "reader gave no answer" {
		t.Errorf("left-out answer: %+v", a)
	}
	if a := snap.Get("invalid", NodeReady); a.State != Unreadable || !strings.Contains(a.Reason, "invalid answer") {
		t.Errorf("invalid answer: %+v", a)
	}
	for _, q := range Questions {
		if _, ok := snap.Answers["partial"][q]; !ok {
			t.Errorf("question %s missing from the snapshot", q)
		}
	}
}

func TestRoundCancelled(t *testing.T) {
	slow := &scriptedReader{name: "slow", questions: []Question{NodeReady}, delay: time.Hour, ignoreCtx: true, answers: readyAnswer}
	r, _ := NewRound([]Reader{slow})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	snap := r.Take(ctx)
	if a := snap.Get("slow", NodeReady); a.State != Unreadable || !strings.Contains(a.Reason, "cancelled") {
		t.Errorf("cancelled round: %+v", a)
	}
}

func TestNewRoundRefusesTwoReadersOfOneSource(t *testing.T) {
	a := &scriptedReader{name: "same"}
	if _, err := NewRound([]Reader{a, a}); err == nil || !strings.Contains(err.Error(), "same") {
		t.Errorf("err = %v", err)
	}
}

func TestRoundDoesNotAskASourceWhoseReadIsOutstanding(t *testing.T) {
	var reads atomic.Int32
	hung := &scriptedReader{name: "hung", questions: []Question{NodeReady}, delay: 700 * time.Millisecond, ignoreCtx: true, answers: func() map[Question]Answer {
		return readyAnswer()
	}}
	counting := &countingReader{Reader: hung, n: &reads}
	r, err := NewRound([]Reader{counting}, WithTimeouts(func(Reader) time.Duration { return 100 * time.Millisecond }), WithMaxOutstanding(1))
	if err != nil {
		t.Fatal(err)
	}
	first := r.Take(context.Background())
	second := r.Take(context.Background())
	if a := first.Get("hung", NodeReady); !strings.HasPrefix(a.Reason, "timeout: no answer within") {
		t.Errorf("first tick: %+v", a)
	}
	if a := second.Get("hung", NodeReady); !strings.Contains(a.Reason, "1 reads unreturned, the first begun at") || a.Refused() {
		t.Errorf("second tick: %+v, want a timeout naming the outstanding read", a)
	}
	if reads.Load() != 1 {
		t.Errorf("asked %d times while its first read was outstanding", reads.Load())
	}
	time.Sleep(800 * time.Millisecond)
	third := r.Take(context.Background())
	if reads.Load() != 2 || third.Get("hung", NodeReady).Reason == second.Get("hung", NodeReady).Reason {
		t.Errorf("after the read returned the source was not asked again (%d reads): %+v", reads.Load(), third.Get("hung", NodeReady))
	}
}

type countingReader struct {
	Reader
	n *atomic.Int32
}

func (c *countingReader) Read(ctx context.Context) map[Question]Answer {
	c.n.Add(1)
	return c.Reader.Read(ctx)
}

func TestRoundAsksASlowSourceAgainWhileItsReadIsOutstanding(t *testing.T) {
	var reads atomic.Int32
	slow := &countingReader{Reader: &scriptedReader{name: "slow", questions: []Question{NodeReady}, delay: 300 * time.Millisecond, answers: readyAnswer}, n: &reads}
	r, err := NewRound([]Reader{slow}, WithTimeouts(func(Reader) time.Duration { return time.Second }))
	if err != nil {
		t.Fatal(err)
	}
	first := r.Begin(context.Background())
	time.Sleep(50 * time.Millisecond)
	second := r.Begin(context.Background())
	for i, p := range []*Pending{first, second} {
		if a := p.Snapshot().Get("slow", NodeReady); !a.Readable() {
			t.Errorf("tick %d: %+v, want the slow source's value", i, a)
		}
	}
	if reads.Load() != 2 {
		t.Errorf("asked %d times in two ticks", reads.Load())
	}
}

// A reader that asks its questions in turn keeps the time it began each;
// one before the round, or after its own answer, is the round's.
func TestRoundKeepsAReadersLaterAskedAt(t *testing.T) {
	var second, bogus time.Time
	rd := &scriptedReader{name: "seq", questions: []Question{NodeReady, NodeTaints, NodeLease}, answers: func() map[Question]Answer {
		first, _ := ValueAnswer(NodeReadyValue{Exists: true, Status: "True"}, time.Now().UTC(), "")
		second = time.Now().UTC()
		time.Sleep(2 * time.Millisecond)
		taints, _ := ValueAnswer([]string{}, time.Now().UTC(), "")
		taints.AskedAt = second
		lease, _ := ValueAnswer(map[string]any{}, time.Now().UTC(), "")
		bogus = lease.ReadAt.Add(time.Hour)
		lease.AskedAt = bogus
		return map[Question]Answer{NodeReady: first, NodeTaints: taints, NodeLease: lease}
	}}
	r, err := NewRound([]Reader{rd})
	if err != nil {
		t.Fatal(err)
	}
	snap := r.Take(context.Background())
	ready, taints, lease := snap.Get("seq", NodeReady), snap.Get("seq", NodeTaints), snap.Get("seq", NodeLease)
	if ready.AskedAt.IsZero() || !ready.AskedAt.Before(second) {
		t.Errorf("first answer asked at %s, want the round's start, before %s", ready.AskedAt, second)
	}
	if !taints.AskedAt.Equal(second) {
		t.Errorf("second answer asked at %s, want the reader's %s", taints.AskedAt, second)
	}
	if lease.AskedAt.Equal(bogus) || !lease.AskedAt.Equal(ready.AskedAt) {
		t.Errorf("an asked time after the answer was kept: %s (round began %s)", lease.AskedAt, ready.AskedAt)
	}
}
