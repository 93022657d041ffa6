package disagree

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// scriptedSampler returns one event per sample, or fails when told to.
type scriptedSampler struct {
	fail      bool
	discarded int
}

func (s *scriptedSampler) Sample(context.Context, lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
	if s.fail {
		return evidence.Snapshot{}, nil, errors.New("no source answered")
	}
	return evidence.NewSnapshot(time.Now()), []evidence.Event{{Kind: "watched"}}, nil
}

func (s *scriptedSampler) DiscardEvents() int { s.discarded++; return 2 }

func kinds(events []evidence.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Kind)
	}
	return out
}

func TestNotingSamplerAddsNotesToTheNextSampleOnly(t *testing.T) {
	inner := &scriptedSampler{}
	s := NewNotingSampler(inner)
	s.Note(evidence.Event{Kind: "force-deleted"})

	inner.fail = true
	if _, events, err := s.Sample(context.Background(), nil); err == nil || len(events) != 0 {
		t.Fatalf("failed sample: events %v, err %v", events, err)
	}
	inner.fail = false
	_, events, err := s.Sample(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(events); len(got) != 2 || got[0] != "watched" || got[1] != "force-deleted" {
		t.Errorf("events %v: want the watched one and the note kept through the failed sample", got)
	}
	_, events, _ = s.Sample(context.Background(), nil)
	if got := kinds(events); len(got) != 1 || got[0] != "watched" {
		t.Errorf("second sample %v: the note came back", got)
	}
}

func TestNotingSamplerDiscardsNotesAndTheInnerTimeline(t *testing.T) {
	inner := &scriptedSampler{}
	s := NewNotingSampler(inner)
	s.Note(evidence.Event{Kind: "force-deleted"})
	if n := s.DiscardEvents(); n != 3 || inner.discarded != 1 {
		t.Errorf("discarded %d (inner called %d times), want the note and the inner's two", n, inner.discarded)
	}
	_, events, _ := s.Sample(context.Background(), nil)
	if got := kinds(events); len(got) != 1 {
		t.Errorf("after discard: %v", got)
	}
}
