package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/verdict"
)

func newRejudgeCommand() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "rejudge RUNDIR...",
		Short: "Judge recorded runs again with the invariants as they are now, beside the recorded verdicts",
		Long: `Judge every run of the given run folders again from its evidence, with the
invariants and the engine's judging as they are in this program, and print,
verdict by verdict, what changed and why: the new verdict and reason beside
the recorded ones.

Each run's evidence (its baseline, pre-fault window, window, heal and settle
samples and its timeline) is handed to the engine's own judging, step by step
as the run judged it: every invariant over the pre-fault window
(DETECTOR_INVALID), NOT_APPLICABLE from the applicability table, the settle
samples in order until each convergence invariant settles, the convergence
invariants on the sample each settled in, the safety invariants over the
window, heal and settle, each handed the timeline as it stood when the run
judged it; the run verdict from the effect probes the timeline holds
(FAULT_INEFFECTIVE). Nothing is sampled, so what a run did not record is not
judged: the command names each such verdict and says why (an invariant built
with bounds in a record written before runs kept them; a pre-fault window
shorter than a changed bound needs; a convergence invariant that settles in
none of the samples of a run whose settling stopped early). An invariant is
re-created from the record by its name, which the package holding it
registers; a record of an invariant this program does not link is an error.

The new verdicts are written beside the recorded ones, never over them:
RUNDIR/rejudged/<UTC time>/, a run folder of the same runs (its evidence/ a
link to the run's) with verdicts.jsonl (each record's "rejudged" says by which
checker, when, and what it could not judge again), verdicts-junit.xml,
applicability.json, summary.md and rejudge.txt (what this command prints).
Give that folder to faultline report, or use faultline report --rejudged.

Every folder is read and judged before anything is written; a folder that is
missing or not a run folder, a malformed record or evidence file, or an
unknown invariant is an error naming it, and nothing is written. Progress goes
to standard error.`,
		Example: `  faultline rejudge reports/runs/20261101T100000Z-disagree
  faultline rejudge --dry-run reports/runs/*-agents
  faultline report --rejudged reports/runs/20261101T100000Z-disagree`,
		Args: checkArgs(func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("no run folders given (such as reports/runs/<time>-<suite>)")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rejudge(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, dryRun, time.Now())
		},
	}
	cmd.Flags().BoolVarP(&dryRun, "dry-run", "n", false, "judge and print what changed, write nothing")
	return cmd
}

// folderRejudging is one run folder judged again, not yet written.
type folderRejudging struct {
	dir     string
	suite   string
	table   []verdict.Inapplicable
	pairs   []rejudgedPair
	cut     string
	changes bytes.Buffer
}

type rejudgedPair struct {
	recorded, again verdict.Run
}

// rejudge judges every run of the folders again, prints what changed and,
// unless dryRun, writes each folder's re-judging once all are judged.
func rejudge(stdout, stderr io.Writer, dirs []string, dryRun bool, at time.Time) error {
	checker := checkerCommit()
	var folders []*folderRejudging
	total := 0
	for _, dir := range dirs {
		f, err := rejudgeFolder(stderr, dir, checker, at)
		if err != nil {
			return fmt.Errorf("%v (nothing was written)", err)
		}
		folders = append(folders, f)
		total += len(f.pairs)
	}
	var sum changeCounts
	for _, f := range folders {
		fmt.Fprintf(&f.changes, "re-judging %s (%s) with the checker at %s\n", f.dir, plural(len(f.pairs), "run"), checker)
		if f.cut != "" {
			fmt.Fprintf(&f.changes, "(the last record, %s, was cut short by a crash and is left out)\n", f.cut)
		}
		for _, p := range f.pairs {
			sum.add(writeRunChanges(&f.changes, p.recorded, p.again))
		}
		writeNotes(&f.changes, f.pairs)
		if _, err := stdout.Write(f.changes.Bytes()); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\n%s in %s: %s\n", plural(total, "run"), plural(len(folders), "folder"), sum)
	if dryRun {
		fmt.Fprintln(stdout, "dry run: nothing was written")
		return nil
	}
	for i, f := range folders {
		runs := make([]verdict.Run, len(f.pairs))
		for k, p := range f.pairs {
			runs[k] = p.again
		}
		out, err := record.WriteRejudged(f.dir, at, record.Rejudging{Suite: f.suite, Runs: runs, Table: f.table, Changes: f.changes.Bytes()})
		if err != nil && !(out != "" && errors.Is(err, record.ErrNoRenderer)) {
			var written []string
			for _, g := range folders[:i] {
				written = append(written, g.dir)
			}
			if len(written) > 0 {
				return fmt.Errorf("%v (the re-judgings of %s were written)", err, strings.Join(written, ", "))
			}
			return fmt.Errorf("%v (nothing was written)", err)
		}
		fmt.Fprintf(stdout, "written to %s (faultline report %s)\n", out, out)
	}
	return nil
}

// rejudgeFolder reads one run folder and judges each of its runs again,
// saying on progress which.
func rejudgeFolder(progress io.Writer, dir, checker string, at time.Time) (*folderRejudging, error) {
	lines, cut, err := record.OpenToRejudge(dir)
	if err != nil {
		return nil, err
	}
	table, _, err := record.ReadApplicability(dir)
	if err != nil {
		return nil, err
	}
	f := &folderRejudging{dir: dir, cut: cut}
	opts := scenario.RejudgeOptions{At: at, Checker: checker, FolderApplicability: table}
	for i, l := range lines {
		if f.suite == "" {
			f.suite = l.Suite
		}
		fmt.Fprintf(progress, "[%d/%d] %s: judging run %s again\n", i+1, len(lines), dir, l.RunID)
		var ev *evidence.Record
		rec, err := record.ReadEvidence(dir, l.RunID)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("%s: %w", l.Where(), err)
		default:
			ev = &rec
		}
		again, err := scenario.Rejudge(l.Run, ev, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.Where(), err)
		}
		f.pairs = append(f.pairs, rejudgedPair{recorded: l.Run, again: again})
	}
	f.table = tableUsed(f.pairs)
	return f, nil
}

// tableUsed is the applicability table the runs were judged again with:
// the framework's, and the rows of a suite's own that a run was judged
// with.
func tableUsed(pairs []rejudgedPair) []verdict.Inapplicable {
	out := append([]verdict.Inapplicable(nil), invariant.Applicability...)
	for _, p := range pairs {
		if jg := p.again.Judging; jg != nil && jg.OwnApplicability {
			for _, row := range jg.NotApplicable {
				if !slices.Contains(out, row) {
					out = append(out, row)
				}
			}
		}
	}
	return out
}

// changeCounts counts what judging again changed.
type changeCounts struct {
	verdicts, changed, reasonOnly, notRejudged, runVerdicts int
}

func (c *changeCounts) add(d changeCounts) {
	c.verdicts += d.verdicts
	c.changed += d.changed
	c.reasonOnly += d.reasonOnly
	c.notRejudged += d.notRejudged
	c.runVerdicts += d.runVerdicts
}

func (c changeCounts) String() string {
	return fmt.Sprintf("%d verdicts judged again, %d of them changed, %d with another reason only; %d not judged again; %d run verdicts changed",
		c.verdicts, c.changed, c.reasonOnly, c.notRejudged, c.runVerdicts)
}

// writeRunChanges writes what judging a run again changed, verdict by
// verdict: a changed verdict or reason with the recorded one beside it,
// the unchanged ones on one line, those not judged again with why.
func writeRunChanges(w io.Writer, recorded, again verdict.Run) changeCounts {
	var c changeCounts
	fmt.Fprintf(w, "\nrun %s (%s, %s arm), recorded at commit %s\n", recorded.RunID, recorded.Scenario, recorded.Arm, orUnknown(recorded.GitCommit))
	if again.RunVerdict != recorded.RunVerdict || again.RunReason != recorded.RunReason {
		c.runVerdicts++
		fmt.Fprintf(w, "  run verdict: %s -> %s\n", recorded.RunVerdict, again.RunVerdict)
		writeBeside(w, recorded.RunReason, again.RunReason)
	}
	old := map[string]verdict.Judgement{}
	for _, j := range recorded.Judgements {
		old[j.Invariant] = j
	}
	var same []string
	for _, j := range again.Judgements {
		c.verdicts++
		o, had := old[j.Invariant]
		switch {
		case !had:
			c.changed++
			fmt.Fprintf(w, "  %s: not recorded -> %s\n", j.Invariant, j.Verdict)
			writeBeside(w, "", j.Reason)
		case o.Verdict != j.Verdict:
			c.changed++
			fmt.Fprintf(w, "  %s: %s -> %s%s\n", j.Invariant, o.Verdict, j.Verdict, alsoChanged(o, j))
			writeBeside(w, o.Reason, j.Reason)
		case o.Reason != j.Reason || alsoChanged(o, j) != "":
			c.reasonOnly++
			fmt.Fprintf(w, "  %s: %s, another reason%s\n", j.Invariant, j.Verdict, alsoChanged(o, j))
			writeBeside(w, o.Reason, j.Reason)
		default:
			same = append(same, fmt.Sprintf("%s (%s)", j.Invariant, j.Verdict))
		}
	}
	if len(same) > 0 {
		fmt.Fprintf(w, "  unchanged: %s\n", strings.Join(same, ", "))
	}
	for _, n := range again.Rejudged.NotRejudged {
		c.notRejudged++
		fmt.Fprintf(w, "  %s: %s as recorded, not judged again: %s\n", n.Invariant, old[n.Invariant].Verdict, n.Why)
	}
	return c
}

// writeNotes writes, once per folder, what judging its runs again took
// from the records other than as the engine recorded it, with how many
// runs each note is of.
func writeNotes(w io.Writer, pairs []rejudgedPair) {
	var order []string
	runs := map[string]int{}
	for _, p := range pairs {
		for _, n := range p.again.Rejudged.Notes {
			if runs[n] == 0 {
				order = append(order, n)
			}
			runs[n]++
		}
	}
	if len(order) > 0 {
		fmt.Fprintln(w)
	}
	for _, n := range order {
		fmt.Fprintf(w, "note (%s of %d): %s\n", plural(runs[n], "run"), len(pairs), n)
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// alsoChanged names what else of a judgement changed: the part of the run
// its evidence fell in, whether it was exercised, the kind of violation.
func alsoChanged(o, j verdict.Judgement) string {
	var parts []string
	if o.During != j.During {
		parts = append(parts, fmt.Sprintf("part of the run %s -> %s", orNone(o.During), orNone(j.During)))
	}
	if ex := func(b *bool) string {
		if b == nil {
			return "not recorded"
		}
		return map[bool]string{true: "exercised", false: "not exercised"}[*b]
	}; ex(o.Exercised) != ex(j.Exercised) {
		parts = append(parts, ex(o.Exercised)+" -> "+ex(j.Exercised))
	}
	if o.Violation != j.Violation {
		parts = append(parts, fmt.Sprintf("violation %s -> %s", orNone(o.Violation), orNone(j.Violation)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func writeBeside(w io.Writer, was, now string) {
	fmt.Fprintf(w, "      was: %s\n      now: %s\n", orNone(was), orNone(now))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}

// checkerCommit is the commit this program was built from, "+dirty" with
// uncommitted changes, as a run record names its suite's; "unknown" for a
// program built without it.
func checkerCommit() string {
	v := currentVersion()
	if v.Revision == "" {
		return "unknown"
	}
	if v.Modified || strings.HasSuffix(v.Version, "-dirty") {
		return v.Revision + "+dirty"
	}
	return v.Revision
}
