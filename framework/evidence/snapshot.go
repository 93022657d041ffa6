package evidence

import (
	"fmt"
	"sort"
	"time"
)

// Snapshot is the answers of all sources to all questions in one round.
type Snapshot struct {
	// Taken is when the round started; each answer has its own read time.
	Taken   time.Time                      `json:"taken"`
	Answers map[Source]map[Question]Answer `json:"answers"`
}

// NewSnapshot starts an empty snapshot for a round that began at taken.
func NewSnapshot(taken time.Time) Snapshot {
	return Snapshot{Taken: taken, Answers: map[Source]map[Question]Answer{}}
}

// Set records src's answer to q.
func (s *Snapshot) Set(src Source, q Question, a Answer) {
	if s.Answers == nil {
		s.Answers = map[Source]map[Question]Answer{}
	}
	if s.Answers[src] == nil {
		s.Answers[src] = map[Question]Answer{}
	}
	s.Answers[src][q] = a
}

// Get returns src's answer to q; a pair never asked reads as NotAsked.
func (s Snapshot) Get(src Source, q Question) Answer {
	if a, ok := s.Answers[src][q]; ok {
		return a
	}
	return NotAskedAnswer()
}

// Sources lists the snapshot's sources in name order.
func (s Snapshot) Sources() []Source {
	out := make([]Source, 0, len(s.Answers))
	for src := range s.Answers {
		out = append(out, src)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Validate checks every answer of the snapshot.
func (s Snapshot) Validate() error {
	if s.Taken.IsZero() {
		return fmt.Errorf("snapshot has no round start")
	}
	for src, qs := range s.Answers {
		for q, a := range qs {
			if err := a.Validate(); err != nil {
				return fmt.Errorf("snapshot %s, %s asked %s: %w", s.Taken.Format(time.RFC3339Nano), src, q, err)
			}
		}
	}
	return nil
}
