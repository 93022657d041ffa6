package source

import (
	"context"
	"fmt"
	"sync"

	"github.com/faultline/faultline/framework/evidence"
)

// Combined is several readers of one place answering as one source: a
// round takes one reader per source, and the invariants find an API
// server's answers under its one name whichever reader asked.
type Combined struct {
	name      evidence.Source
	parts     []evidence.Reader
	questions []evidence.Question
}

// Combine joins readers that share a source name and ask distinct
// questions; it is an error when names differ or a question repeats (two
// answers to one question would leave the snapshot to pick one).
func Combine(parts ...evidence.Reader) (*Combined, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("combining readers: none given")
	}
	c := &Combined{name: parts[0].Source(), parts: parts}
	seen := map[evidence.Question]bool{}
	for _, p := range parts {
		if p.Source() != c.name {
			return nil, fmt.Errorf("combining readers: %s and %s are different sources", c.name, p.Source())
		}
		for _, q := range p.Questions() {
			if seen[q] {
				return nil, fmt.Errorf("combining readers of %s: question %s is asked twice", c.name, q)
			}
			seen[q] = true
			c.questions = append(c.questions, q)
		}
	}
	return c, nil
}

func (c *Combined) Source() evidence.Source { return c.name }

func (c *Combined) Questions() []evidence.Question { return c.questions }

// Parts returns the combined readers.
func (c *Combined) Parts() []evidence.Reader { return c.parts }

// Read runs the parts at once; each answers only its own questions.
func (c *Combined) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range c.parts {
		wg.Go(func() {
			got := p.Read(ctx)
			mu.Lock()
			defer mu.Unlock()
			for _, q := range p.Questions() {
				if a, ok := got[q]; ok {
					out[q] = a
				}
			}
		})
	}
	wg.Wait()
	return out
}
