package reports

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/faultline/faultline/framework/verdict"
)

// Summary renders the runs of a suite run as Markdown: a verdict table per
// run, the rates of the runs that count, and the applicability table the
// runs were judged with.
func Summary(suite string, runs []verdict.Run, table []verdict.Inapplicable) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# faultline: %s\n\n", suite)
	if len(runs) > 0 {
		r := runs[0]
		fmt.Fprintf(&b, "- lab: %s (%s, topology %s, reset %s)\n", r.Lab.Name, r.Lab.Kind, orDash(r.Lab.Topology), orDash(r.Lab.ResetKind))
		fmt.Fprintf(&b, "- kubernetes %s, etcd %s, timer profile %s\n", orDash(r.Lab.KubernetesVersion), orDash(r.Lab.EtcdVersion), orDash(r.Lab.TimerProfile))
		fmt.Fprintf(&b, "- commit %s, lab config %s\n", orDash(r.GitCommit), orDash(r.ConfigHash))
	}
	counted := 0
	for _, r := range runs {
		if r.Counted() {
			counted++
		}
	}
	fmt.Fprintf(&b, "- %d runs, %d of them counted (run verdict JUDGED)\n\n", len(runs), counted)

	b.WriteString("## Runs\n\n| run | scenario | arm | run verdict | spec | seconds |\n|---|---|---|---|---|---|\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.1f |\n", cell(r.RunID), cell(r.Scenario), r.Arm, runVerdictCell(r), orDash(r.SpecState), r.Ended.Sub(r.Started).Seconds())
	}
	for _, r := range runs {
		fmt.Fprintf(&b, "\n### %s [%s]: %s\n\n", r.Scenario, r.Arm, r.RunVerdict)
		if r.RunReason != "" {
			fmt.Fprintf(&b, "%s\n\n", cell(r.RunReason))
		}
		b.WriteString("| invariant | phase | verdict | reason |\n|---|---|---|---|\n")
		for _, j := range r.Judgements {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(j.Invariant), j.Phase, j.Verdict, cell(j.Reason))
		}
	}

	// Arms are never pooled: the null arm is the control the fault arm is
	// read against.
	type rateKey struct{ invariant, arm string }
	rates := map[rateKey]*verdict.Rate{}
	for _, r := range runs {
		if !r.Counted() {
			continue
		}
		for _, j := range r.Judgements {
			k := rateKey{j.Invariant, r.Arm}
			if rates[k] == nil {
				rates[k] = &verdict.Rate{}
			}
			rates[k].Add(j.Verdict)
		}
	}
	b.WriteString("\n## Violation rates (counted runs, by arm; 95% Wilson interval)\n\n")
	if len(rates) == 0 {
		b.WriteString("No run counted.\n")
	} else {
		b.WriteString("| invariant | arm | violated / counted | not counted |\n|---|---|---|---|\n")
		keys := make([]rateKey, 0, len(rates))
		for k := range rates {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].invariant != keys[j].invariant {
				return keys[i].invariant < keys[j].invariant
			}
			return keys[i].arm < keys[j].arm
		})
		for _, k := range keys {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(k.invariant), k.arm, rates[k].String(), otherCounts(rates[k].Other))
		}
	}

	b.WriteString("\n## Applicability table\n\n")
	if len(table) == 0 {
		b.WriteString("Empty: every invariant was judged under every fault class.\n")
	} else {
		b.WriteString("| fault class | invariant | why not applicable |\n|---|---|---|\n")
		for _, row := range table {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(row.FaultClass), cell(row.Invariant), cell(row.Reason))
		}
	}
	return b.String()
}

func runVerdictCell(r verdict.Run) string {
	if r.RunReason == "" {
		return string(r.RunVerdict)
	}
	return fmt.Sprintf("%s: %s", r.RunVerdict, cell(r.RunReason))
}

func otherCounts(m map[verdict.Verdict]int) string {
	var parts []string
	for _, v := range verdict.All {
		if m[v] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, m[v]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\r", "")
	return strings.ReplaceAll(s, "\n", "<br>")
}

// WriteSummary writes summary.md and the applicability table as JSON.
func (f *Folder) WriteSummary(suite string, runs []verdict.Run, table []verdict.Inapplicable) error {
	if err := writeFileSynced(f.Path(SummaryFile), []byte(Summary(suite, runs, table))); err != nil {
		return fmt.Errorf("writing %s: %w", SummaryFile, err)
	}
	if table == nil {
		table = []verdict.Inapplicable{}
	}
	b, err := json.MarshalIndent(table, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", ApplicabilityFile, err)
	}
	if err := writeFileSynced(f.Path(ApplicabilityFile), append(b, '\n')); err != nil {
		return fmt.Errorf("writing %s: %w", ApplicabilityFile, err)
	}
	return nil
}
