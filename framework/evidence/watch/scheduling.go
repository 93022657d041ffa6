package watch

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
)

// KindFailedScheduling is the timeline kind of a FailedScheduling event:
// the scheduler saying why a pod found no node.
const KindFailedScheduling = "failed-scheduling"

// SchedulingFailures turns the FailedScheduling events of one namespace,
// listed through one API server, into timeline moments: one for each event
// first seen, and again each time the event's count grows.
type SchedulingFailures struct {
	src       evidence.Source
	client    kubernetes.Interface
	namespace string

	mu   sync.Mutex
	seen map[string]int32
}

// NewSchedulingFailures lists namespace's events through cs, as src.
func NewSchedulingFailures(cs kubernetes.Interface, src evidence.Source, namespace string) *SchedulingFailures {
	return &SchedulingFailures{src: src, client: cs, namespace: namespace, seen: map[string]int32{}}
}

// Poll lists the events and returns the moments not returned before. A
// failed list returns its error and no moment; the next Poll catches up.
func (s *SchedulingFailures) Poll(ctx context.Context) ([]evidence.Event, error) {
	evs, err := s.client.CoreV1().Events(s.namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
	if err != nil {
		return nil, fmt.Errorf("listing the FailedScheduling events of %s: %w", s.namespace, err)
	}
	at := time.Now().UTC()
	var out []evidence.Event
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range evs.Items {
		count := max(e.Count, 1)
		if e.Series != nil {
			count = max(count, e.Series.Count)
		}
		key := string(e.UID)
		if s.seen[key] >= count {
			continue
		}
		s.seen[key] = count
		when := e.LastTimestamp.Time
		if e.Series != nil && !e.Series.LastObservedTime.IsZero() {
			when = e.Series.LastObservedTime.Time
		}
		if when.IsZero() {
			when = e.EventTime.Time
		}
		if when.IsZero() {
			when = at
		}
		out = append(out, evidence.Event{At: when.UTC(), Source: s.src, Subject: "pod/" + s.namespace + "/" + e.InvolvedObject.Name,
			Kind: KindFailedScheduling, Detail: fmt.Sprintf("%s (uid %s, seen %d times)", e.Message, e.InvolvedObject.UID, count)})
	}
	return out, nil
}
