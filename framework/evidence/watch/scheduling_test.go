package watch

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/framework/evidence"
)

func TestSchedulingFailuresStampsEachNewCountOnce(t *testing.T) {
	last := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "c1", Name: "web-x.1", UID: "e1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "c1", Name: "web-x", UID: "p1"},
		Reason:         "FailedScheduling", Message: "0/2 nodes are available", Count: 1, LastTimestamp: metav1.NewTime(last),
	}
	cs := fake.NewClientset(ev)
	s := NewSchedulingFailures(cs, "apiserver/cp1", "c1")
	got, err := s.Poll(context.Background())
	if err != nil || len(got) != 1 {
		t.Fatalf("first poll: %+v, %v", got, err)
	}
	e := got[0]
	if e.Kind != KindFailedScheduling || e.Subject != "pod/c1/web-x" || !strings.Contains(e.Detail, "0/2 nodes are available (uid p1, seen 1 times)") {
		t.Errorf("event %+v", e)
	}
	// Seen at the poll; recorded by the cluster at its lastTimestamp; and
	// found by the first list, so there before the poll began.
	if !e.At.After(last) || !e.ClusterAt.Equal(last) || e.ClusterField != "lastTimestamp" || e.ClusterPrecision != evidence.Seconds || !e.Replayed {
		t.Errorf("times of the first list's event: %+v", e)
	}
	if again, _ := s.Poll(context.Background()); len(again) != 0 {
		t.Errorf("the same count stamped again: %+v", again)
	}
	ev.Count = 3
	if _, err := cs.CoreV1().Events("c1").Update(context.Background(), ev, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if grown, _ := s.Poll(context.Background()); len(grown) != 1 || !strings.Contains(grown[0].Detail, "seen 3 times") || grown[0].Replayed {
		t.Errorf("a grown count (not replayed: a later list found it): %+v", grown)
	}
	series := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "c1", Name: "web-y.1", UID: "e2"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "c1", Name: "web-y", UID: "p2"},
		Reason:         "FailedScheduling", Message: "0/2 nodes are available",
		EventTime: metav1.NewMicroTime(last.Add(1500 * time.Microsecond)),
		Series:    &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(last.Add(2*time.Second + 1234567*time.Nanosecond))},
	}
	if _, err := cs.CoreV1().Events("c1").Create(context.Background(), series, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Poll(context.Background())
	if len(got) != 1 || got[0].ClusterField != "series.lastObservedTime" || got[0].ClusterPrecision != evidence.Microseconds ||
		!got[0].ClusterAt.Equal(last.Add(2*time.Second+1234*time.Microsecond)) || got[0].Replayed {
		t.Errorf("a series' cluster time (microseconds, truncated): %+v", got)
	}
}
