package evidence

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The cluster time, its field and precision, and the replay mark come
// back from a record's JSON lines; an event without them is written as
// before they existed.
func TestEventTimesRoundTrip(t *testing.T) {
	seen := time.Date(2026, 11, 29, 12, 1, 10, 123456789, time.UTC)
	replayed := Event{At: seen, Source: "apiserver/cp1", Subject: "pod/c1/web-1", Kind: "pod-created", Detail: "uid u1", Replayed: true}.
		WithCluster(seen.Add(-70*time.Second+400*time.Millisecond), "metadata.creationTimestamp", Seconds)
	plain := Event{At: seen, Source: "faultline", Subject: "scenario/x", Kind: "fault-injected"}
	var buf bytes.Buffer
	if err := (Record{Timeline: Timeline{replayed, plain}}).WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if want := `"clusterAt":"2026-11-29T12:00:00Z","clusterField":"metadata.creationTimestamp","clusterPrecision":"second","replayed":true`; !strings.Contains(lines[0], want) {
		t.Errorf("replayed event line %s lacks %s", lines[0], want)
	}
	if want := `{"kind":"event","event":{"at":"2026-11-29T12:01:10.123456789Z","source":"faultline","subject":"scenario/x","kind":"fault-injected"}}`; lines[1] != want {
		t.Errorf("plain event line\n%s\nwant\n%s", lines[1], want)
	}
	out, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Timeline, Timeline{replayed, plain}) {
		t.Errorf("round trip: %+v", out.Timeline)
	}
	var old Event
	if err := json.Unmarshal([]byte(`{"at":"2026-11-29T12:01:10Z","source":"s","subject":"x","kind":"k"}`), &old); err != nil || !old.ClusterAt.IsZero() || old.Replayed {
		t.Errorf("an event recorded before the cluster time: %+v, %v", old, err)
	}
}

func TestWithClusterTruncatesToItsPrecision(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC)
	if e := (Event{}).WithCluster(at, "f", Seconds); !e.ClusterAt.Equal(at.Truncate(time.Second)) {
		t.Errorf("seconds: %v", e.ClusterAt)
	}
	if e := (Event{}).WithCluster(at, "f", Microseconds); e.ClusterAt.Nanosecond() != 678901000 {
		t.Errorf("microseconds: %v", e.ClusterAt)
	}
	if e := (Event{Kind: "k"}).WithCluster(time.Time{}, "f", Seconds); e.ClusterField != "" || e.ClusterPrecision != "" {
		t.Errorf("no time sets no field: %+v", e)
	}
}

// A live event happened when it was seen; a replayed one when the cluster
// says, to its precision; a replayed one without a cluster time has only
// its seen time.
func TestEventWithin(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	seen := t0.Add(70 * time.Second)
	live := Event{At: seen}.WithCluster(t0, "metadata.creationTimestamp", Seconds)
	replayed := live
	replayed.Replayed = true
	bare := Event{At: seen, Replayed: true}
	for _, c := range []struct {
		name     string
		e        Event
		from, to time.Duration
		want     bool
	}{
		{"live, seen inside", live, 60 * time.Second, 80 * time.Second, true},
		{"live, created inside but seen after", live, -time.Second, time.Second, false},
		{"replayed, created inside", replayed, -time.Second, time.Second, true},
		{"replayed, seen inside but created before", replayed, 60 * time.Second, 80 * time.Second, false},
		{"replayed, within the second after its whole-second time", replayed, 500 * time.Millisecond, 2 * time.Second, true},
		{"replayed, a second after", replayed, time.Second + time.Millisecond, 2 * time.Second, false},
		{"replayed without a cluster time, seen inside", bare, 60 * time.Second, 80 * time.Second, true},
		{"replayed without a cluster time, seen after", bare, 0, time.Second, false},
	} {
		if got := c.e.Within(t0.Add(c.from), t0.Add(c.to)); got != c.want {
			from, to := c.e.Happened()
			t.Errorf("%s: Within = %v, want %v (happened %v … %v)", c.name, got, c.want, from, to)
		}
	}
}
