package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/record"
)

// evidenceFiles lists the evidence files of run folders (each run's
// evidence/<run>.jsonl); a path that is itself an evidence file stands for
// its run alone.
func evidenceFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("reading the timeline: %w", err)
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		files, err := filepath.Glob(filepath.Join(a, record.EvidenceDir, "*.jsonl"))
		if err != nil {
			return nil, fmt.Errorf("reading the timeline of %s: %w", a, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s holds no run evidence (no %s/*.jsonl): give a run folder such as reports/runs/<time>-<suite>", a, record.EvidenceDir)
		}
		sort.Strings(files)
		out = append(out, files...)
	}
	return out, nil
}

// writeTimelines prints the timeline of every run of the given run folders:
// one block per run, each event with the time it was seen, its offset from
// the run's first event, the time the cluster recorded it where it did,
// the source that saw it, what it is about and what happened (marked when
// a relisting replayed it).
func writeTimelines(w io.Writer, args []string) error {
	files, err := evidenceFiles(args)
	if err != nil {
		return err
	}
	for i, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("reading the timeline: %w", err)
		}
		rec, err := evidence.ReadJSONL(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("reading the timeline of %s: %w", path, err)
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeTimeline(w, strings.TrimSuffix(filepath.Base(path), ".jsonl"), rec)
	}
	return nil
}

func writeTimeline(w io.Writer, run string, rec evidence.Record) {
	tl := rec.Timeline.Sorted()
	snaps := len(rec.PreFault) + len(rec.Window) + len(rec.Heal) + len(rec.Settle)
	if rec.Baseline != nil {
		snaps++
	}
	if rec.Final != nil {
		snaps++
	}
	fmt.Fprintf(w, "## %s: %d events, %d snapshots\n\n", run, len(tl), snaps)
	writeCadence(w, rec)
	if len(tl) == 0 {
		fmt.Fprintln(w, "(no events recorded)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "time (UTC)\t+offset\tcluster time\tsource\tsubject\tevent\tdetail")
	start := tl[0].At
	replayed, cluster := false, false
	for _, e := range tl {
		kind := e.Kind
		if e.Replayed {
			kind += " (replayed)"
			replayed = true
		}
		detail := e.Detail
		if e.ClusterField != "" {
			detail = strings.TrimSpace(detail + " [" + e.ClusterField + "]")
			cluster = true
		}
		fmt.Fprintf(tw, "%s\t+%s\t%s\t%s\t%s\t%s\t%s\n", e.At.UTC().Format("15:04:05.000"),
			e.At.Sub(start).Round(time.Millisecond), clusterTime(e), e.Source, e.Subject, kind, detail)
	}
	tw.Flush()
	if cluster {
		fmt.Fprintln(w, "\ntime: when faultline saw the event; cluster time: when the cluster recorded it (the field in brackets; whole seconds unless shown finer), and how far from the time seen.")
	}
	if replayed {
		fmt.Fprintln(w, "(replayed): delivered by a relisting after a watch broke, or found by a poll's first list: seen only when the listing came.")
	}
}

// clusterTime is an event's cluster time to its precision, and how long
// before (or after) it was seen; "-" when it has none.
func clusterTime(e evidence.Event) string {
	if e.ClusterAt.IsZero() {
		return "-"
	}
	d := e.ClusterAt.Sub(e.At).Round(time.Millisecond)
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("%s (%s%s)", e.ClusterClock(), sign, d)
}

// writeCadence prints, per phase, how often snapshots were taken (median
// and maximum interval between ticks) and the longest stretch one source
// went without an answer that held a value.
func writeCadence(w io.Writer, rec evidence.Record) {
	if len(rec.PreFault)+len(rec.Window)+len(rec.Heal)+len(rec.Settle) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\tsnapshots\tmedian interval\tmax interval\tlongest without a value (source)")
	for _, ph := range []struct {
		name  string
		snaps []evidence.Snapshot
	}{{"pre-fault", rec.PreFault}, {"window", rec.Window}, {"heal", rec.Heal}, {"settle", rec.Settle}} {
		c := evidence.CadenceOf(ph.snaps)
		if c.Snapshots < 2 {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\n", ph.name, c.Snapshots)
			continue
		}
		slowest := "-"
		if c.SlowestSource != "" {
			slowest = fmt.Sprintf("%s (%s)", c.SourceMax.Round(10*time.Millisecond), c.SlowestSource)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", ph.name, c.Snapshots, c.Median.Round(10*time.Millisecond), c.Max.Round(10*time.Millisecond), slowest)
	}
	tw.Flush()
	fmt.Fprintln(w)
}
