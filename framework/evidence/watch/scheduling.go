package watch

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
)

// KindFailedScheduling is the timeline kind of a FailedScheduling event:
// the scheduler saying why a pod found no node.
const KindFailedScheduling = "failed-scheduling"

// SchedulingFailures turns the FailedScheduling events of one namespace,
// listed through one API server, into timeline moments: one for each event
// first seen, and again each time the event's count grows. Each is stamped
// at the list that found it, its cluster time the Event's own record of
// the failure's last report; those the first list finds were there before
// the poll began and are marked replayed.
type SchedulingFailures struct {
	src       evidence.Source
	client    kubernetes.Interface
	namespace string

	mu     sync.Mutex
	seen   map[string]int32
	listed bool // a list has returned
}

// eventTime is when the scheduler last reported the failure, from the
// first of the Event's fields that holds a time: series.lastObservedTime,
// lastTimestamp, eventTime.
func eventTime(e corev1.Event) (time.Time, string, evidence.Precision) {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time, "series.lastObservedTime", evidence.Microseconds
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time, "lastTimestamp", evidence.Seconds
	case !e.EventTime.IsZero():
		return e.EventTime.Time, "eventTime", evidence.Microseconds
	}
	return time.Time{}, "", ""
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
		out = append(out, evidence.Event{At: at, Source: s.src, Subject: "pod/" + s.namespace + "/" + e.InvolvedObject.Name,
			Kind: KindFailedScheduling, Detail: fmt.Sprintf("%s (uid %s, seen %d times)", e.Message, e.InvolvedObject.UID, count),
			Replayed: !s.listed}.WithCluster(eventTime(e)))
	}
	s.listed = true
	return out, nil
}
