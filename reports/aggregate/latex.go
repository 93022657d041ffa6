package aggregate

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/reports"
)

// WriteLaTeX writes the findings' rate tables as LaTeX tabulars in the
// booktabs style (\toprule, \midrule, \bottomrule; the document needs
// \usepackage{booktabs}), one per grouping: the key columns, violated,
// counted, the rate and its 95% Wilson interval. Controls and null arms
// are not findings and are not in these tables; the CSV holds them.
//
// Over repeated runs each table gains a column naming its rows' flaky
// verdicts, a rate that pools the repetitions of several scenarios is
// given without an interval, and a last tabular gives each finding
// scenario × invariant over its repetitions: k VIOLATED of n judged, the
// rate with its interval, stable or flaky, what did not count, and the
// quantities' median and range.
func WriteLaTeX(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString("% faultline report: findings' violation rates (95% Wilson score interval).\n% Needs \\usepackage{booktabs}.\n")
	for _, t := range rep.Findings {
		first := 1
		if t.ShowArm() {
			first = 0
		}
		cols := t.Columns[first:]
		flaky := ""
		if rep.Repeated {
			flaky = "l"
		}
		fmt.Fprintf(&b, "\n%% %s\n", t.Title())
		fmt.Fprintf(&b, "\\begin{tabular}{%srrrr%s}\n\\toprule\n", strings.Repeat("l", len(cols)), flaky)
		for _, c := range cols {
			b.WriteString(texEscape(c) + " & ")
		}
		b.WriteString("violated & counted & rate & 95\\% CI")
		if rep.Repeated {
			b.WriteString(" & flaky (violated of judged)")
		}
		b.WriteString(" \\\\\n\\midrule\n")
		if len(t.Rows) == 0 {
			fmt.Fprintf(&b, "\\multicolumn{%d}{l}{no finding run counted} \\\\\n", len(cols)+4+len(flaky))
		}
		for _, r := range t.Rows {
			for _, k := range r.Key[first:] {
				b.WriteString(texEscape(k) + " & ")
			}
			fmt.Fprintf(&b, "%d & %d & %s", r.Tally.Violated, r.Tally.N(), texRate(r.Tally.Rate, r.Pool.PoolsRepetitions()))
			if rep.Repeated {
				b.WriteString(" & " + texEscape(orDash(t.FlakyText(r))))
			}
			b.WriteString(" \\\\\n")
		}
		b.WriteString("\\bottomrule\n\\end{tabular}\n")
		if rep.Repeated && slices.ContainsFunc(t.Rows, func(r Row) bool { return r.Pool.PoolsRepetitions() }) {
			b.WriteString("% pooled: " + PooledRepetitionsNote + "\n")
		}
	}
	if rep.Repeated {
		writeLaTeXStability(&b, rep.Stability)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeLaTeXStability is the findings' stability over repetitions as one
// tabular.
func writeLaTeXStability(b *strings.Builder, rows []reports.StabilityRow) {
	b.WriteString("\n% Findings' stability over repetitions: per scenario x invariant, k violated of n judged with the 95% Wilson interval of that scenario's rate; flaky where its judged repetitions gave both VIOLATED and PRESERVED; quantities as median [range] (count).\n")
	b.WriteString("\\begin{tabular}{llrrrrlll}\n\\toprule\nscenario & invariant & violated & judged & rate & 95\\% CI & verdict & not counted & quantities \\\\\n\\midrule\n")
	n := 0
	for _, r := range rows {
		if r.Role != verdict.RoleFinding {
			continue
		}
		n++
		fmt.Fprintf(b, "%s & %s & %d & %d & %s & %s & %s & %s \\\\\n", texEscape(r.Scenario), texEscape(r.Invariant), r.Rate.Violated, r.Rate.N(),
			texRate(r.Rate, false), texEscape(r.OutcomeText()), texEscape(orDash(r.OtherText())), texEscape(r.QuantitiesText()))
	}
	if n == 0 {
		b.WriteString("\\multicolumn{9}{l}{no finding run} \\\\\n")
	}
	b.WriteString("\\bottomrule\n\\end{tabular}\n")
}

// texRate is "rate & [lo, hi]" in percent, "-- & --" when nothing counts,
// and "rate & pooled, no interval" for a count that pools the repetitions
// of several scenarios.
func texRate(r verdict.Rate, pooled bool) string {
	v, ok := r.Value()
	if !ok {
		return "-- & --"
	}
	if pooled {
		return fmt.Sprintf("%.1f\\%% & pooled, no interval", 100*v)
	}
	lo, hi, _ := r.Wilson()
	return fmt.Sprintf("%.1f\\%% & [%.1f\\%%, %.1f\\%%]", 100*v, 100*lo, 100*hi)
}

var texReplacer = strings.NewReplacer(
	`\`, `\textbackslash{}`, `&`, `\&`, `%`, `\%`, `$`, `\$`, `#`, `\#`, `_`, `\_`,
	`{`, `\{`, `}`, `\}`, `~`, `\textasciitilde{}`, `^`, `\textasciicircum{}`,
)

// texEscape makes text safe in a LaTeX table cell.
func texEscape(s string) string { return texReplacer.Replace(s) }
