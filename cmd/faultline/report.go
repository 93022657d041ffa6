package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/reports/aggregate"
	"github.com/faultline/faultline/reports/html"
	"github.com/faultline/faultline/reports/suitereports"
	// The drills' reports register themselves (suitereports.Register).
	_ "github.com/faultline/faultline/suites/drills/report"
)

func newReportCommand() *cobra.Command {
	var (
		by       []string
		format   string
		output   string
		timeline bool
		rejudged bool
	)
	cmd := &cobra.Command{
		Use:   "report RUNDIR...",
		Short: "Aggregate run folders into violation-rate tables with 95% Wilson intervals, findings apart from controls and null arms",
		Long: `Aggregate the verdicts.jsonl of any number of run folders into rate tables.

Rates are never computed over a mix of roles. Findings (the scenarios' fault
arms) get the rate tables. Positive controls, built to break the invariants
they name (controlOf, or control:<invariant> labels on older records), get a
table of their own, one row per control run and invariant, with the expected
VIOLATED, the verdict got and hit or missed; their verdicts of other
invariants count nowhere. Application controls (a finding's fault against
a workload built not to rely on the guarantee it tests, label
application-control) get tables of their own, with nothing expected. Null
arms (the fault replaced by one that does nothing) get their own tables:
expected PRESERVED, a VIOLATED is a false alarm of the detector.

Only PRESERVED and VIOLATED count. Every findings row shows violated,
PRESERVED split by whether the run exercised the guarantee (exercised, not
exercised, not recorded), and two rates, each with its count and 95% Wilson
score interval:
  rate (all counted) = violated / (violated + PRESERVED)
  rate (exercised)   = violated / (violated + exercised PRESERVED), unknown
                       where some PRESERVED did not record whether it was
                       exercised
Beside them: the kinds of violation where any is named (lost-write,
stale-read), and the verdicts that do not count (INSUFFICIENT_DATA,
NOT_APPLICABLE, DETECTOR_INVALID). Runs whose fault was ineffective
(FAULT_INEFFECTIVE) or that did not reach a judgement (ABORTED) count nowhere;
they are listed with why. A table whose rows pool several invariants,
scenarios or suites says so.

Repetitions: where a scenario × arm ran more than once (a suite run with
-faultline.repeat=N, or several folders of the same scenarios), the report
says how stable each verdict is. A section "Stability over repetitions"
gives, per scenario × arm × invariant (findings, positive controls and
null arms apart), k VIOLATED of n judged with the 95% Wilson interval of
that scenario's rate (its repetitions are trials of one experiment), the
verdict the judged repetitions agree on or "flaky" where they gave both
VIOLATED and PRESERVED, the outcomes that did not count apart
(INSUFFICIENT_DATA and the other verdicts; FAULT_INEFFECTIVE and ABORTED
runs), and each quantity a verdict measured as median [range] (count),
also divided by the quantities it scales with where it names them. The
findings and null-arm tables gain a column naming each row's flaky
verdicts with their count, and a rate that pools the repetitions of
several scenarios is given without an interval, saying so: each scenario
has a rate of its own, so such a count is not k of n trials of one thing.
CSV adds a row per scenario × arm × invariant (by = stability) and the
columns flaky, pooled_scenarios, stability, fault_ineffective, aborted and
quantities; LaTeX adds the findings' stability tabular.

--by picks the tables; give it several times for several tables. A value is
one or more dimensions separated by commas, each one of invariant, scenario,
arm, suite, lab, profile, repetition (the rounds of a repeated run side by
side), or a label prefix (class groups by class:<value>). Without --by: one
table by invariant and one by scenario, for findings and for null arms
alike.

The report also prints the applicability table the runs were judged with and
every run with its role, the machine's load average at its start and end
(1/5/15 min) and the effect probe's coverage of the window against the share
the scenario requires. --format csv writes one CSV with a role column:
findings and null-arm rows with their counts, and a row per control run and
invariant (by = control) with the expected and the got verdict and the
outcome; excluded runs go to standard error.

--format latex writes the findings' rate tables as LaTeX tabulars in the
booktabs style (\usepackage{booktabs}): key columns, violated, counted, rate
and 95% interval.

--format html -o DIR writes a static site into DIR that works offline (no
script but porcupine's on its own page, nothing fetched, style inline): index.html over every run given
(findings, positive controls and null arms in tables of their own, each rate
with its Wilson interval drawn as a bar, the applicability table, a link to
every run's page), and runs/<folder>--<run>.html for each run (provenance:
versions, timer profile, commit, lab config hash, host load at start and
end, role; the verdict table with reasons and exercised; a timeline drawn as
SVG with one lane per source and question, unreadable stretches hatched with
their reason on hover, the injection and heal, the window and settle, the
timeline's events, each VIOLATED verdict's moment, and every verdict in a
row under the lanes; each phase's cadence; where the run has a register
writer's history, porcupine's check of it and a link to porcupine's own
drawing, runs/<folder>--<run>--register.html). For a folder holding both
arms of the pair drill, folders/<folder>/drill-pair.html: 6.C2 against 6.C1
side by side (the moments with their labels stacked, the timer behind each
interval, the API's listing of the drill's pods and the worker's runtime,
the divergence), over the pair report, with drill-pair.png and
drill-pair.svg beside it. Beside them: rates.svg and
rates.png (the findings' rate per invariant with its interval),
rates-by-scenario.svg and rates-by-scenario.png (per scenario, pooled over
its invariants), both also inline on index.html, rates.tex and rates.csv.
Over repeated runs also: the index's stability tables, a page per scenario
(stability/<suite>--<scenario>.html: each arm's runs as rows and its
invariants as columns, every cell the run's verdict linked to its page,
each invariant's k of n, interval, stable or flaky and quantities under
them), and stability.svg and stability.png (each finding scenario ×
invariant's rate with the interval of its repetitions, flaky ones marked),
also inline on index.html. DIR may
exist (files of an earlier site are overwritten, other files left) but must
not be a file; every folder is read before anything is written.

--rejudged reports each run folder's latest re-judging (faultline rejudge:
RUNDIR/rejudged/<time>/, the verdicts judged again by a later checker)
instead of the verdicts its runs recorded; giving that folder itself does the
same. A report says which checker judged again, and names the verdicts it
could not judge again, which are in no row.

A malformed or incomplete record is an error that names its file and line; a
last line cut short by a crash is left out, and the report names it.`,
		Example: `  faultline report reports/runs/*
  faultline report --by class --by fault reports/runs/20261101T100000Z-disagree
  faultline report --by invariant,scenario --format csv -o rates.csv reports/runs/*
  faultline report --format latex -o rates.tex reports/runs/*
  faultline report --format html -o site reports/runs/20261101T100000Z-disagree
  faultline report --timeline reports/runs/20261101T100000Z-disagree
  faultline report --rejudged reports/runs/20261101T100000Z-disagree`,
		Args: checkArgs(func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("no run folders given (such as reports/runs/<time>-<suite>)")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if rejudged {
				var err error
				if args, err = latestRejudged(args); err != nil {
					return err
				}
			}
			if timeline {
				if err := writeTimelines(cmd.OutOrStdout(), args); err != nil {
					return err
				}
				return writeDrillReports(cmd.OutOrStdout(), args)
			}
			switch format {
			case "markdown", "csv", "latex":
			case "html":
				if len(by) > 0 {
					return usagef("--by does not apply to --format html: its page shows the tables by invariant and by scenario")
				}
				if output == "" {
					return usagef("--format html writes a site into a directory: give it with -o DIR")
				}
				var opts []html.Option
				for _, r := range suitereports.All() {
					if r.FolderPages != nil {
						opts = append(opts, html.WithFolderPages(r.FolderPages))
					}
				}
				return html.WriteSite(output, args, opts...)
			default:
				return usagef("--format %q: give markdown, csv, latex or html", format)
			}
			var groupings [][]string
			for _, b := range by {
				dims, err := aggregate.ParseGrouping(b)
				if err != nil {
					return usageError{err}
				}
				groupings = append(groupings, dims)
			}
			in, err := aggregate.ReadRunFolders(args)
			if err != nil {
				return err
			}
			rep, err := aggregate.Build(in, groupings)
			if err != nil {
				return err
			}
			return writeReport(cmd, rep, format, output)
		},
	}
	cmd.Flags().StringArrayVar(&by, "by", nil, "group rows by these dimensions (repeatable; comma-separated dimensions make one table)")
	cmd.Flags().StringVar(&format, "format", "markdown", "output format: markdown, csv, latex, or html (a site written into the directory -o names)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the report to this file instead of standard output (with --format html: the site's directory)")
	cmd.Flags().BoolVar(&rejudged, "rejudged", false, "report each run folder's latest re-judging (faultline rejudge) instead of its recorded verdicts")
	cmd.Flags().BoolVar(&timeline, "timeline", false, "print each run's timeline (from its evidence: when faultline saw each event, when the cluster recorded it where the object says, replayed ones marked) instead of rates, after a table of each phase's snapshot cadence (median and maximum interval between ticks, and the longest any source went without a value); for a folder of drill runs also write and print the drill reports (drill-pair.md with its plot, drill-racks.md)")
	return cmd
}

// latestRejudged is each run folder's latest re-judging.
func latestRejudged(dirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		latest, err := record.LatestRejudged(d)
		if err != nil {
			return nil, err
		}
		out = append(out, latest)
	}
	return out, nil
}

func writeReport(cmd *cobra.Command, rep *aggregate.Report, format, output string) (err error) {
	var w io.Writer = cmd.OutOrStdout()
	if output != "" {
		f, err := os.Create(output)
		if err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		defer func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("writing report %s: %w", output, cerr)
			}
		}()
		w = f
	}
	switch format {
	case "latex":
		if err := aggregate.WriteLaTeX(w, rep); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		return aggregate.WriteExcludedSummary(cmd.ErrOrStderr(), rep)
	case "csv":
		if err := aggregate.WriteCSV(w, rep); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		// A CSV stream holds only the rate table; the runs it leaves out
		// must still be seen.
		return aggregate.WriteExcludedSummary(cmd.ErrOrStderr(), rep)
	default:
		if err := aggregate.WriteMarkdown(w, rep); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		return nil
	}
}
