package sampler

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
)

// timedReader answers NodeReady after delay; hang makes it ignore its
// context (a source that hangs).
type timedReader struct {
	name  evidence.Source
	delay time.Duration
	hang  bool
	reads atomic.Int32
}

func (r *timedReader) Source() evidence.Source        { return r.name }
func (r *timedReader) Questions() []evidence.Question { return []evidence.Question{evidence.NodeReady} }
func (r *timedReader) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	r.reads.Add(1)
	if r.hang {
		time.Sleep(r.delay)
	} else {
		select {
		case <-time.After(r.delay):
		case <-ctx.Done():
			return map[evidence.Question]evidence.Answer{evidence.NodeReady: evidence.UnreadableAnswer("timeout: "+ctx.Err().Error(), time.Now())}
		}
	}
	a, _ := evidence.ValueAnswer(evidence.NodeReadyValue{Exists: true, Status: "True"}, time.Now().UTC(), "1")
	return map[evidence.Question]evidence.Answer{evidence.NodeReady: a}
}

// streamingSampler is a Sampler already open over readers (no lab, no
// timeline), each read bounded by timeout.
func streamingSampler(t *testing.T, timeout time.Duration, readers ...evidence.Reader) *Sampler {
	t.Helper()
	round, err := evidence.NewRound(readers, evidence.WithTimeouts(func(evidence.Reader) time.Duration { return timeout }))
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{NoTimeline: true})
	s.round, s.extras = round, &opened{}
	return s
}

func TestStreamKeepsItsCadenceWhileASourceHangs(t *testing.T) {
	fast := &timedReader{name: "fast", delay: 5 * time.Millisecond}
	hung := &timedReader{name: "hung", delay: 1500 * time.Millisecond, hang: true}
	const every = 100 * time.Millisecond
	s := streamingSampler(t, 250*time.Millisecond, fast, hung)
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	var snaps []evidence.Snapshot
	start := time.Now()
	s.Stream(ctx, nil, every, func(snap evidence.Snapshot, _ []evidence.Event, err error) bool {
		if err != nil {
			t.Errorf("tick error: %v", err)
		}
		snaps = append(snaps, snap)
		return true
	})
	// The stream returns within one interval of grace after its context
	// ends, whatever the hung source does.
	if took := time.Since(start); took > 1200*time.Millisecond+every+time.Second {
		t.Errorf("the stream took %s to stop", took)
	}
	if len(snaps) < 8 {
		t.Fatalf("%d snapshots in 1.2 s at 100 ms: the hung source held the ticks", len(snaps))
	}
	// The fast source answers beside the hung one: in most rounds (a
	// loaded machine may hold a 5 ms read past its 250 ms timeout now and
	// then; a hung source that held it would leave it unread in every
	// round).
	fastRead := 0
	defer func() {
		if fastRead < len(snaps)/2+1 {
			t.Errorf("the fast source was read in %d of %d snapshots", fastRead, len(snaps))
		}
	}()
	for i, snap := range snaps {
		if err := snap.Validate(); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			gap := snap.Taken.Sub(snaps[i-1].Taken)
			if gap <= 0 {
				t.Errorf("snapshot %d taken at or before the previous one", i)
			}
			if gap > 4*every {
				t.Errorf("snapshot %d came %s after the previous one (interval %s)", i, gap, every)
			}
		}
		if a := snap.Get("fast", evidence.NodeReady); a.Readable() {
			fastRead++
		} else {
			t.Logf("snapshot %d: the fast source is %+v", i, a)
		}
		a := snap.Get("hung", evidence.NodeReady)
		if a.Readable() || !strings.HasPrefix(a.Reason, "timeout") && !strings.HasPrefix(a.Reason, "snapshot cancelled") {
			t.Errorf("snapshot %d: the hung source is %+v, want a timeout", i, a)
		}
		if a.AskedAt.Before(snap.Taken) {
			t.Errorf("snapshot %d: asked at %s, before the tick %s", i, a.AskedAt, snap.Taken)
		}
	}
	// A hung source is asked at every tick until it has the most
	// unreturned reads a round allows, then skipped with a reason naming
	// them.
	if n := hung.reads.Load(); n != evidence.DefaultMaxOutstanding {
		t.Errorf("the hung source was asked %d times, want %d (the cap on unreturned reads)", n, evidence.DefaultMaxOutstanding)
	}
	if a := snaps[len(snaps)-2].Get("hung", evidence.NodeReady); !strings.Contains(a.Reason, "reads unreturned") {
		t.Errorf("a late tick's answer for the hung source: %q, want the unreturned reads named", a.Reason)
	}
}

func TestStreamStopsWhenTheConsumerSaysSo(t *testing.T) {
	fast := &timedReader{name: "fast", delay: time.Millisecond}
	s := streamingSampler(t, 100*time.Millisecond, fast)
	n := 0
	s.Stream(context.Background(), nil, 20*time.Millisecond, func(evidence.Snapshot, []evidence.Event, error) bool {
		n++
		return n < 3
	})
	if n != 3 {
		t.Errorf("fn was called %d times after returning false at the third", n)
	}
}

func TestStreamCarriesNotesInOrder(t *testing.T) {
	fast := &timedReader{name: "fast", delay: time.Millisecond}
	s := streamingSampler(t, 100*time.Millisecond, fast)
	s.Note(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "x", Kind: "noted"})
	var got []evidence.Event
	var taken []time.Time
	s.Stream(context.Background(), nil, 20*time.Millisecond, func(snap evidence.Snapshot, events []evidence.Event, _ error) bool {
		got = append(got, events...)
		taken = append(taken, snap.Taken)
		return len(taken) < 4
	})
	if len(got) != 1 || got[0].Kind != "noted" {
		t.Errorf("events %+v, want the one note once", got)
	}
	for i := 1; i < len(taken); i++ {
		if !taken[i].After(taken[i-1]) {
			t.Errorf("snapshots out of tick order: %v", taken)
		}
	}
}
