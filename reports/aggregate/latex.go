package aggregate

import (
	"fmt"
	"io"
	"strings"

	"github.com/faultline/faultline/framework/verdict"
)

// WriteLaTeX writes the findings' rate tables as LaTeX tabulars in the
// booktabs style (\toprule, \midrule, \bottomrule; the document needs
// \usepackage{booktabs}), one per grouping: the key columns, violated,
// counted, the rate and its 95% Wilson interval. Controls and null arms
// are not findings and are not in these tables; the CSV holds them.
func WriteLaTeX(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString("% faultline report: findings' violation rates (95% Wilson score interval).\n% Needs \\usepackage{booktabs}.\n")
	for _, t := range rep.Findings {
		first := 1
		if t.ShowArm() {
			first = 0
		}
		cols := t.Columns[first:]
		fmt.Fprintf(&b, "\n%% %s\n", t.Title())
		fmt.Fprintf(&b, "\\begin{tabular}{%srrrr}\n\\toprule\n", strings.Repeat("l", len(cols)))
		for _, c := range cols {
			b.WriteString(texEscape(c) + " & ")
		}
		b.WriteString("violated & counted & rate & 95\\% CI \\\\\n\\midrule\n")
		if len(t.Rows) == 0 {
			fmt.Fprintf(&b, "\\multicolumn{%d}{l}{no finding run counted} \\\\\n", len(cols)+4)
		}
		for _, r := range t.Rows {
			for _, k := range r.Key[first:] {
				b.WriteString(texEscape(k) + " & ")
			}
			fmt.Fprintf(&b, "%d & %d & %s \\\\\n", r.Tally.Violated, r.Tally.N(), texRate(r.Tally.Rate))
		}
		b.WriteString("\\bottomrule\n\\end{tabular}\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// texRate is "rate & [lo, hi]" in percent, "-- & --" when nothing counts.
func texRate(r verdict.Rate) string {
	v, ok := r.Value()
	if !ok {
		return "-- & --"
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
