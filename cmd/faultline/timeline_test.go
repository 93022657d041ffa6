package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/record"
)

func TestReportTimeline(t *testing.T) {
	root := t.TempDir()
	f, err := record.NewFolder(filepath.Join(root, "runs"), "disagree", time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 1, 10, 0, 5, 0, time.UTC)
	base := evidence.NewSnapshot(t0)
	var window []evidence.Snapshot
	for _, at := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 7 * time.Second} {
		window = append(window, evidence.NewSnapshot(t0.Add(at)))
	}
	rec := evidence.Record{Baseline: &base, Window: window, Timeline: evidence.Timeline{
		// Out of order on purpose: the report sorts by time.
		{At: t0.Add(52 * time.Second), Source: "apiserver/cp1", Subject: "node/worker1", Kind: "ready-unknown", Detail: "True → Unknown (NodeStatusUnknown)"},
		{At: t0, Source: "faultline", Subject: "fault/freeze", Kind: "fault-injected", Detail: "SIGSTOP kubelet on worker1"},
		{At: t0.Add(20 * time.Second), Source: "apiserver/cp1", Subject: "lease/kube-node-lease/worker1", Kind: "lease-renewals-stopped"},
		evidence.Event{At: t0.Add(75 * time.Second), Source: "apiserver/cp1", Subject: "pod/faultline/web-1", Kind: "pod-created", Detail: "uid u1", Replayed: true}.
			WithCluster(t0.Add(5*time.Second), "metadata.creationTimestamp", evidence.Seconds),
		evidence.Event{At: t0.Add(80 * time.Second), Source: "apiserver/cp1", Subject: "lease/kube-node-lease/worker1", Kind: "lease-renewals-resumed"}.
			WithCluster(t0.Add(79*time.Second+250*time.Millisecond), "spec.renewTime", evidence.Microseconds),
	}}
	if err := f.WriteEvidence("s1/fault/1", rec); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteEvidence("s1/null/1", evidence.Record{Baseline: &base}); err != nil {
		t.Fatal(err)
	}
	r := faultline(t, root, "report", "--timeline", f.Dir)
	r.expect(t, exitOK)
	i1 := strings.Index(r.stdout, "fault-injected")
	i2 := strings.Index(r.stdout, "lease-renewals-stopped")
	i3 := strings.Index(r.stdout, "ready-unknown")
	if i1 < 0 || !(i1 < i2 && i2 < i3) {
		t.Errorf("events missing or out of order:\n%s", r.stdout)
	}
	for _, want := range []string{
		"## s1_fault_1: 5 events, 5 snapshots",
		"window     4          1s               4s",
		"10:00:57.000  +52s",
		"apiserver/cp1  node/worker1",
		"10:01:20.000  +1m15s   10:00:10 (-1m10s)",
		"pod-created (replayed)",
		"uid u1 [metadata.creationTimestamp]",
		"10:01:24.250000 (-750ms)",
		"(replayed): delivered by a relisting",
		"## s1_null_1: 0 events, 1 snapshots\n\n(no events recorded)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("timeline lacks %q:\n%s", want, r.stdout)
		}
	}

	// A folder without evidence and a broken evidence file are errors
	// naming what is wrong.
	empty := filepath.Join(root, "empty")
	writeTestFile(t, filepath.Join(empty, "verdicts.jsonl"), "")
	faultline(t, root, "report", "--timeline", empty).expect(t, exitError, "holds no run evidence")
	bad := filepath.Join(root, "bad.jsonl")
	writeTestFile(t, bad, `{"kind":"event","event":{"at":"2026-11-01T10:00:00Z"},"extra":1}`+"\n")
	faultline(t, root, "report", "--timeline", bad).expect(t, exitError, "bad.jsonl", "line 1")
}
