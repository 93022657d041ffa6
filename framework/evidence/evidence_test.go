package evidence

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRecordJSONLRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ready, err := ValueAnswer(map[string]string{"status": "True"}, t0.Add(3*time.Millisecond), "1234")
	if err != nil {
		t.Fatal(err)
	}
	base := NewSnapshot(t0)
	base.Set("apiserver/cp1", "worker1/ready", ready)
	base.Set("apiserver/cp2", "worker1/ready", UnreadableAnswer("connection refused", t0.Add(time.Second)))
	base.Set("dns", "service/answer", NotAskedAnswer())
	win := NewSnapshot(t0.Add(2 * time.Second))
	win.Set("apiserver/cp1", "worker1/ready", ready)
	settled := NewSnapshot(t0.Add(6 * time.Second))
	settled.Set("apiserver/cp2", "worker1/ready", ready)
	final := NewSnapshot(t0.Add(10 * time.Second))
	final.Set("apiserver/cp1", "worker1/ready", ready)
	in := Record{
		Baseline: &base,
		Window:   []Snapshot{win, win},
		Settle:   []Snapshot{settled},
		Final:    &final,
		Timeline: Timeline{{At: t0.Add(time.Second), Source: "apiserver/cp1", Subject: "node/worker1", Kind: "ready-unknown", Detail: "NodeStatusUnknown"}},
	}
	var buf bytes.Buffer
	if err := in.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 6 {
		t.Fatalf("%d lines, want 6 (baseline, 2 window, 1 settle, final, 1 event):\n%s", lines, buf.String())
	}
	out, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(in)
	b, _ := json.Marshal(out)
	if !bytes.Equal(a, b) {
		t.Fatalf("round trip changed the record:\n%s\n%s", a, b)
	}
	got := out.Baseline.Get("apiserver/cp2", "worker1/ready")
	if got.Readable() || got.Reason != "connection refused" {
		t.Errorf("unreadable answer came back as %+v", got)
	}
	var v map[string]string
	if err := out.Window[1].Get("apiserver/cp1", "worker1/ready").Decode(&v); err != nil || v["status"] != "True" {
		t.Errorf("decoded %v, %v", v, err)
	}
	if err := got.Decode(&v); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("decoding an unreadable answer: %v", err)
	}
	if len(out.Settle) != 1 || !out.Settle[0].Get("apiserver/cp2", "worker1/ready").Readable() {
		t.Errorf("settle snapshots came back as %+v", out.Settle)
	}
	if a := out.Final.Get("nowhere", "nothing"); a.State != NotAsked {
		t.Errorf("a pair never asked reads as %q, want not-asked", a.State)
	}
	if !reflect.DeepEqual(out.Baseline.Sources(), []Source{"apiserver/cp1", "apiserver/cp2", "dns"}) {
		t.Errorf("sources %v", out.Baseline.Sources())
	}
}

// The pre-fault window and the heal samples have lines of their own, in
// the order they were taken, and a record without them (written before
// they were taken) still reads.
func TestRecordJSONLKeepsPreFaultAndHealSamples(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	snap := func(at time.Duration) Snapshot {
		s := NewSnapshot(t0.Add(at))
		a, err := ValueAnswer(true, t0.Add(at+time.Millisecond), "")
		if err != nil {
			t.Fatal(err)
		}
		s.Set("apiserver/cp1", "worker1/ready", a)
		return s
	}
	base, final := snap(0), snap(9*time.Second)
	in := Record{
		Baseline: &base,
		PreFault: []Snapshot{snap(time.Second), snap(2 * time.Second)},
		Window:   []Snapshot{snap(4 * time.Second)},
		Heal:     []Snapshot{snap(6 * time.Second), snap(7 * time.Second)},
		Settle:   []Snapshot{snap(8 * time.Second)},
		Final:    &final,
	}
	var buf bytes.Buffer
	if err := in.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var l struct{ Kind string }
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, l.Kind)
	}
	if want := []string{"baseline", "pre-fault", "pre-fault", "window", "heal", "heal", "settle", "final"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("line kinds %v, want %v", kinds, want)
	}
	out, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, in), mustJSON(t, out); !bytes.Equal(a, b) {
		t.Errorf("round trip changed the record:\n%s\n%s", a, b)
	}

	old := `{"kind":"baseline","snapshot":{"taken":"2026-11-01T10:00:00Z"}}` + "\n" +
		`{"kind":"window","snapshot":{"taken":"2026-11-01T10:00:02Z"}}` + "\n" +
		`{"kind":"final","snapshot":{"taken":"2026-11-01T10:00:09Z"}}`
	rec, err := ReadJSONL(strings.NewReader(old))
	if err != nil || rec.Baseline == nil || len(rec.PreFault) != 0 || len(rec.Heal) != 0 || len(rec.Window) != 1 || rec.Final == nil {
		t.Errorf("an older record read as %+v, %v", rec, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadJSONLRejectsBadEvidence(t *testing.T) {
	for name, text := range map[string]string{
		"unknown kind":              `{"kind":"guess"}`,
		"unknown field":             `{"kind":"event","event":{"at":"2026-11-01T10:00:00Z"},"extra":1}`,
		"value without read time":   `{"kind":"window","snapshot":{"taken":"2026-11-01T10:00:00Z","answers":{"a":{"q":{"state":"value","value":true}}}}}`,
		"unreadable without reason": `{"kind":"window","snapshot":{"taken":"2026-11-01T10:00:00Z","answers":{"a":{"q":{"state":"unreadable"}}}}}`,
		"unknown answer state":      `{"kind":"final","snapshot":{"taken":"2026-11-01T10:00:00Z","answers":{"a":{"q":{"state":"maybe"}}}}}`,
		"two baselines":             `{"kind":"baseline","snapshot":{"taken":"2026-11-01T10:00:00Z"}}` + "\n" + `{"kind":"baseline","snapshot":{"taken":"2026-11-01T10:00:00Z"}}`,
		"not json":                  `{"kind":`,
		"empty":                     ``,
	} {
		if _, err := ReadJSONL(strings.NewReader(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRecorderOrdersEvents(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var r Recorder
	r.Add(Event{At: t0.Add(2 * time.Second), Kind: "b"})
	r.Add(Event{At: t0, Kind: "a"})
	r.Add(Event{At: t0.Add(2 * time.Second), Kind: "c"})
	tl := r.Timeline()
	if tl[0].Kind != "a" || tl[1].Kind != "b" || tl[2].Kind != "c" {
		t.Errorf("order %v", tl)
	}
	if n := len(tl.OfKind("b")); n != 1 {
		t.Errorf("OfKind found %d", n)
	}
}
