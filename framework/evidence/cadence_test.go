package evidence

import (
	"testing"
	"time"
)

func TestCadenceOf(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	snap := func(at time.Duration, readable map[Source]bool) Snapshot {
		s := NewSnapshot(t0.Add(at))
		for src, ok := range readable {
			if ok {
				a, _ := ValueAnswer(true, t0.Add(at+100*time.Millisecond), "")
				s.Set(src, NodeReady, a)
			} else {
				s.Set(src, NodeReady, UnreadableAnswer("timeout: x", t0.Add(at+2*time.Second)))
			}
		}
		return s
	}
	both := map[Source]bool{"a": true, "b": true}
	onlyA := map[Source]bool{"a": true, "b": false}
	// Out of order on purpose: the ticks are sorted.
	snaps := []Snapshot{snap(0, both), snap(2*time.Second, onlyA), snap(time.Second, onlyA), snap(3*time.Second, onlyA), snap(6*time.Second, both)}
	c := CadenceOf(snaps)
	if c.Snapshots != 5 || c.Median != time.Second || c.Max != 3*time.Second {
		t.Errorf("cadence %+v, want 5 snapshots, median 1 s, max 3 s", c)
	}
	if c.SlowestSource != "b" || c.SourceMax != 6*time.Second {
		t.Errorf("slowest source %s %s, want b 6 s (unreadable between)", c.SlowestSource, c.SourceMax)
	}
	// A source that never answered went the whole stretch without; one
	// that is not deployed is not measured.
	dead := []Snapshot{snap(0, map[Source]bool{"a": true, "c": false}), snap(time.Second, map[Source]bool{"a": true, "c": false}), snap(4*time.Second, map[Source]bool{"a": true, "c": false})}
	for i := range dead {
		dead[i].Set("vip", NodeReady, UnreadableAnswer("not deployed: no virtual address", dead[i].Taken))
	}
	if c := CadenceOf(dead); c.SlowestSource != "c" || c.SourceMax != 4*time.Second {
		t.Errorf("a dead source: %s %s, want c over the whole 4 s", c.SlowestSource, c.SourceMax)
	}
	if one := CadenceOf(snaps[:1]); one.Median != 0 || one.Max != 0 || one.Snapshots != 1 {
		t.Errorf("one snapshot: %+v", one)
	}
}
