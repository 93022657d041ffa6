package aggregate

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/faultline/faultline/framework/verdict"
)

// otherColumns are the verdicts that never count, in report order.
var otherColumns = []struct {
	v            verdict.Verdict
	title, field string
}{
	{verdict.InsufficientData, "insufficient data", "insufficient_data"},
	{verdict.NotApplicable, "not applicable", "not_applicable"},
	{verdict.DetectorInvalid, "detector invalid", "detector_invalid"},
}

// WriteMarkdown renders the report as Markdown.
func WriteMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString("# faultline report\n\n")
	fmt.Fprintf(&b, "%s from %s: %d judged, %d excluded (FAULT_INEFFECTIVE or ABORTED, listed at the end).\n\n",
		count(rep.Records, "run record"), count(len(rep.Sources), "run folder"), rep.Judged, len(rep.Excluded))
	for _, l := range []struct {
		what string
		vals []string
	}{
		{"Labs", rep.Labs},
		{"Timer profiles", rep.Profiles},
		{"Kubernetes", rep.KubernetesVersions},
		{"etcd", rep.EtcdVersions},
		{"Commits", rep.Commits},
		{"Records", rep.Sources},
	} {
		fmt.Fprintf(&b, "- %s: %s\n", l.what, mdEscape(orUnrecorded(l.vals)))
	}
	b.WriteString("\nRate = violated / (preserved + violated), with its 95% Wilson score interval. " +
		"Only PRESERVED and VIOLATED count; the other verdicts are shown beside them. " +
		"The verdicts of excluded runs count nowhere: the `excluded` column says how many were set aside. " +
		"`runs` is the number of judged runs that gave the row a verdict.\n")
	for _, warn := range rep.Warnings {
		fmt.Fprintf(&b, "\n> **Warning:** %s.\n", mdEscape(warn))
	}

	for _, t := range rep.Tables {
		fmt.Fprintf(&b, "\n## %s\n\n", t.Title())
		head := append([]string(nil), t.Columns...)
		head = append(head, "violated", "preserved", "rate", "95% CI")
		for _, o := range otherColumns {
			head = append(head, o.title)
		}
		head = append(head, "excluded", "runs")
		b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
		for i := range head {
			if i < len(t.Columns) {
				b.WriteString("---|")
			} else {
				b.WriteString("---:|")
			}
		}
		b.WriteString("\n")
		if len(t.Rows) == 0 {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(append([]string{"(no verdicts)"}, make([]string, len(head)-1)...), " | "))
		}
		for _, r := range t.Rows {
			cells := make([]string, 0, len(head))
			for _, k := range r.Key {
				cells = append(cells, mdEscape(k))
			}
			rate, ci := "–", "–"
			if v, ok := r.Rate.Value(); ok {
				lo, hi, _ := r.Rate.Wilson()
				rate = fmt.Sprintf("%.1f%%", 100*v)
				ci = fmt.Sprintf("[%.1f%%, %.1f%%]", 100*lo, 100*hi)
			}
			cells = append(cells, strconv.Itoa(r.Rate.Violated), strconv.Itoa(r.Rate.Preserved), rate, ci)
			for _, o := range otherColumns {
				cells = append(cells, strconv.Itoa(r.Rate.Other[o.v]))
			}
			cells = append(cells, strconv.Itoa(r.Excluded), strconv.Itoa(r.Runs))
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "\n%s\n", n)
		}
	}

	b.WriteString("\n## Applicability table\n\n" +
		"A fault class that cannot reach what an invariant reads makes that invariant NOT_APPLICABLE.\n\n")
	if len(rep.Applicability) == 0 {
		b.WriteString("No rows.\n")
	} else {
		b.WriteString("| fault class | invariant | why not applicable |\n|---|---|---|\n")
		for _, r := range rep.Applicability {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", mdEscape(r.FaultClass), mdEscape(r.Invariant), mdEscape(r.Reason))
		}
	}
	if len(rep.NoApplicability) > 0 {
		fmt.Fprintf(&b, "\nNo applicability table recorded for: %s.\n", mdEscape(strings.Join(rep.NoApplicability, ", ")))
	}

	b.WriteString("\n## Excluded runs\n\n")
	if len(rep.Excluded) == 0 && len(rep.CutShort) == 0 {
		b.WriteString("None.\n")
	}
	if len(rep.CutShort) > 0 {
		fmt.Fprintf(&b, "%s cut short by a crash (no final newline) and left out: %s\n\n", count(len(rep.CutShort), "last line"), mdEscape(strings.Join(rep.CutShort, ", ")))
	}
	if len(rep.Excluded) > 0 {
		b.WriteString("| run | scenario | arm | run verdict | why | record |\n|---|---|---|---|---|---|\n")
		for _, r := range rep.Excluded {
			why := r.RunReason
			if why == "" {
				why = "(no reason recorded)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
				mdEscape(r.RunID), mdEscape(r.Scenario), mdEscape(r.Arm), r.RunVerdict, mdEscape(why), mdEscape(r.Where()))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCSV renders the rate tables as one CSV: a "by" column names the
// table, then one column per dimension used by any table (empty where a
// table does not use it), then the counts. Rates and bounds are fractions.
// Excluded runs are not rows of this table; see WriteExcludedSummary.
func WriteCSV(w io.Writer, rep *Report) error {
	var dimCols []string
	seen := set{}
	for _, t := range rep.Tables {
		for _, c := range t.Columns {
			if !seen.has(c) {
				seen.add(c)
				dimCols = append(dimCols, c)
			}
		}
	}
	cw := csv.NewWriter(w)
	head := append([]string{"by"}, dimCols...)
	head = append(head, "violated", "preserved", "counted", "rate", "ci95_low", "ci95_high")
	for _, o := range otherColumns {
		head = append(head, o.field)
	}
	head = append(head, "excluded", "runs")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, t := range rep.Tables {
		by := strings.Join(t.Columns[1:], ",")
		if by == "" {
			by = ByArm
		}
		for _, r := range t.Rows {
			rec := []string{by}
			for _, c := range dimCols {
				val := ""
				for i, tc := range t.Columns {
					if tc == c {
						val = r.Key[i]
					}
				}
				rec = append(rec, val)
			}
			rate, lo, hi := "", "", ""
			if v, ok := r.Rate.Value(); ok {
				l, h, _ := r.Rate.Wilson()
				rate, lo, hi = frac(v), frac(l), frac(h)
			}
			rec = append(rec, strconv.Itoa(r.Rate.Violated), strconv.Itoa(r.Rate.Preserved), strconv.Itoa(r.Rate.N()), rate, lo, hi)
			for _, o := range otherColumns {
				rec = append(rec, strconv.Itoa(r.Rate.Other[o.v]))
			}
			rec = append(rec, strconv.Itoa(r.Excluded), strconv.Itoa(r.Runs))
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteExcludedSummary lists the excluded runs as plain lines, for output
// formats (CSV) whose main stream is a table.
func WriteExcludedSummary(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d run records excluded from every rate\n", len(rep.Excluded), rep.Records)
	for _, c := range rep.CutShort {
		fmt.Fprintf(&b, "  left out: %s: a last line cut short by a crash (no final newline)\n", c)
	}
	for _, r := range rep.Excluded {
		why := r.RunReason
		if why == "" {
			why = "(no reason recorded)"
		}
		fmt.Fprintf(&b, "  excluded: run %s scenario %s arm %s: %s: %s (%s)\n", r.RunID, r.Scenario, r.Arm, r.RunVerdict, oneLine(why), r.Where())
	}
	for _, warn := range rep.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func frac(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }

func orUnrecorded(vals []string) string {
	if len(vals) == 0 {
		return "(not recorded)"
	}
	return strings.Join(vals, ", ")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// mdEscape keeps a value inside its table cell.
func mdEscape(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}
