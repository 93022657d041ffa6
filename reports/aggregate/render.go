package aggregate

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/reports"
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

// WriteMarkdown renders the report as Markdown: the findings tables, the
// positive controls, the null-arm tables, the applicability table, every
// run with its machine load and effect coverage, and the excluded runs.
func WriteMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString("# faultline report\n\n")
	fmt.Fprintf(&b, "%s from %s: %d judged, %d excluded (FAULT_INEFFECTIVE or ABORTED, listed at the end).\n",
		count(rep.Records, "run record"), count(len(rep.Sources), "run folder"), rep.Judged, len(rep.Excluded))
	apps := ""
	if n := rep.Roles[verdict.RoleApplication]; n > 0 {
		apps = ", " + count(n, "application-control run")
	}
	fmt.Fprintf(&b, "Roles: %s, %s%s, %s.\n\n", count(rep.Roles[verdict.RoleFinding], "finding run"), count(rep.Roles[verdict.RoleControl], "control run"), apps, count(rep.Roles[verdict.RoleNull], "null-arm run"))
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
	for _, e := range rep.Emulations {
		fmt.Fprintf(&b, "- Emulated: %s\n", mdEscape(e))
	}
	if len(rep.RejudgedBy) > 0 {
		fmt.Fprintf(&b, "- Judged again by the checker at: %s (the commits above are the runs')\n", mdEscape(strings.Join(rep.RejudgedBy, ", ")))
	}
	b.WriteString("\nFindings are the scenarios' fault arms, the only runs a rate is computed over. " +
		"Positive controls (built to break the invariants they name) and null arms (the fault replaced by one that does nothing) test the detector: " +
		"each has a section of its own and never enters a findings rate.\n\n" +
		"rate (all counted) = violated / (violated + PRESERVED); " +
		"rate (exercised) = violated / (violated + exercised PRESERVED), leaving out the PRESERVED verdicts whose run never challenged the guarantee (not exercised); " +
		"it is unknown in a row where some PRESERVED did not record whether it was exercised (not recorded: records written before the field), since leaving those out would overstate it. " +
		"Each is given as violated/counted = rate [95% Wilson score interval]. " +
		"Only PRESERVED and VIOLATED count; the other verdicts are shown beside them. " +
		"The verdicts of excluded runs count nowhere: the `excluded` column says how many were set aside. " +
		"`runs` is the number of judged runs that gave the row a verdict.\n")
	for _, warn := range rep.Warnings {
		fmt.Fprintf(&b, "\n> **Warning:** %s.\n", mdEscape(warn))
	}

	for _, t := range rep.Findings {
		writeMarkdownTable(&b, t, rep.Repeated)
	}
	writeMarkdownControls(&b, rep)
	for _, t := range rep.Applications {
		writeMarkdownTable(&b, t, rep.Repeated)
	}
	if rep.Roles[verdict.RoleNull] == 0 {
		b.WriteString("\n## Null arms\n\nNo null-arm runs in these records.\n")
	} else {
		for _, t := range rep.NullArms {
			writeMarkdownTable(&b, t, rep.Repeated)
		}
	}

	if rep.Repeated {
		b.WriteString("\n" + reports.StabilityMarkdown(rep.Stability))
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

	b.WriteString("\n## Runs\n\n" +
		"The load average of the machine faultline ran on, at the run's start and end, shows a loaded run; " +
		"the effect probe's coverage is the share of its probes that saw the fault's effect and the share of the window those looks attest (each what it saw and half a tick either side), against the share the scenario requires.\n\n")
	if len(rep.Runs) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("| run | scenario | arm | role | run verdict | load 1/5/15 min (start → end) | effect seen (required share) | record |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range rep.Runs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(r.RunID), mdEscape(r.Scenario), mdEscape(r.Arm), r.RunRole(), r.RunVerdict,
				reports.LoadText(r.Load), reports.EffectText(r.Effect), mdEscape(r.Where()))
		}
	}

	b.WriteString("\n## Excluded runs\n\n")
	if len(rep.Excluded) == 0 && len(rep.CutShort) == 0 {
		b.WriteString("None.\n")
	}
	if len(rep.CutShort) > 0 {
		fmt.Fprintf(&b, "%s cut short by a crash (no final newline) and left out: %s\n\n", count(len(rep.CutShort), "last line"), mdEscape(strings.Join(rep.CutShort, ", ")))
	}
	if len(rep.Excluded) > 0 {
		b.WriteString("| run | scenario | arm | role | run verdict | why | record |\n|---|---|---|---|---|---|---|\n")
		for _, r := range rep.Excluded {
			why := r.RunReason
			if why == "" {
				why = "(no reason recorded)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
				mdEscape(r.RunID), mdEscape(r.Scenario), mdEscape(r.Arm), r.RunRole(), r.RunVerdict, mdEscape(why), mdEscape(r.Where()))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMarkdownTable renders one findings or null-arm table. A null arm
// expects PRESERVED everywhere, so its VIOLATED are false alarms and its
// rate is a false-alarm rate; whether a PRESERVED was exercised says
// nothing there, since nothing was injected. Over repeated runs a column
// names the flaky verdicts each row counts, and a rate that pools the
// repetitions of several scenarios is given without an interval.
func writeMarkdownTable(b *strings.Builder, t Table, repeated bool) {
	null := t.Role == verdict.RoleNull
	fmt.Fprintf(b, "\n## %s\n\n", t.Title())
	switch {
	case null:
		b.WriteString("Expected PRESERVED: nothing was injected, so a VIOLATED is a false alarm of the detector.\n\n")
	case t.Role == verdict.RoleApplication:
		b.WriteString("The fault arms of application controls: a finding's fault against a workload built not to rely on the guarantee it tests (a correct application). " +
			"What that application kept tells a violation of the platform from one of the application's assumption; nothing is expected of them, and they are never pooled with the findings.\n\n")
	}
	showArm := t.ShowArm()
	kinds := false
	for _, r := range t.Rows {
		kinds = kinds || r.Tally.ViolationKinds() != ""
	}
	var head []string
	keyCols := 0
	for i, c := range t.Columns {
		if i == 0 && !showArm {
			continue
		}
		head = append(head, c)
		keyCols++
	}
	if null {
		head = append(head, "false alarms (VIOLATED)", "preserved", "false-alarm rate")
	} else {
		head = append(head, "violated", "preserved (exercised)", "preserved (not exercised)", "preserved (not recorded)", "rate (all counted)", "rate (exercised)")
	}
	if kinds {
		head = append(head, "violation kinds")
	}
	if repeated {
		head = append(head, "flaky (VIOLATED of judged)")
	}
	for _, o := range otherColumns {
		head = append(head, o.title)
	}
	head = append(head, "excluded", "runs")
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for i := range head {
		if i < keyCols {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	if len(t.Rows) == 0 {
		fmt.Fprintf(b, "| %s |\n", strings.Join(append([]string{"(no verdicts)"}, make([]string, len(head)-1)...), " | "))
	}
	for _, r := range t.Rows {
		cells := make([]string, 0, len(head))
		for i, k := range r.Key {
			if i == 0 && !showArm {
				continue
			}
			cells = append(cells, mdEscape(k))
		}
		tl := r.Tally
		if null {
			cells = append(cells, strconv.Itoa(tl.Violated), strconv.Itoa(tl.Preserved), pooledRateText(tl.Rate, r.Pool))
		} else {
			cells = append(cells, strconv.Itoa(tl.Violated), strconv.Itoa(tl.PreservedExercised), strconv.Itoa(tl.PreservedNotExercised), strconv.Itoa(tl.PreservedNotRecorded),
				pooledRateText(tl.Rate, r.Pool), exercisedRateText(tl, r.Pool))
		}
		if kinds {
			cells = append(cells, orDash(mdEscape(tl.ViolationKinds())))
		}
		if repeated {
			cells = append(cells, orDash(mdEscape(t.FlakyText(r))))
		}
		for _, o := range otherColumns {
			cells = append(cells, strconv.Itoa(tl.Other[o.v]))
		}
		cells = append(cells, strconv.Itoa(r.Excluded), strconv.Itoa(r.Runs))
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	for _, n := range t.Notes {
		fmt.Fprintf(b, "\n%s\n", n)
	}
}

func writeMarkdownControls(b *strings.Builder, rep *Report) {
	b.WriteString("\n## Positive controls\n\n" +
		"Each control is built to break the invariants it names (its controlOf, or for older records its control:<invariant> labels): " +
		"expected VIOLATED. A hit is a VIOLATED, a miss a PRESERVED; any other verdict is undecided. " +
		"Where the control names the violation kinds it is built to make (its controlKinds), a VIOLATED of another kind is no hit (\"other kind\"); where it names none, any kind counts. " +
		"A control is the detector's self-test, never a finding.\n\n")
	if len(rep.Controls) == 0 {
		b.WriteString("No control runs in these records.\n")
	} else {
		b.WriteString("| run | scenario | invariant | expected | verdict | outcome | reason | record |\n|---|---|---|---|---|---|---|---|\n")
		outcomes := map[reports.ControlOutcome]int{}
		for _, c := range rep.Controls {
			outcomes[c.Outcome]++
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(c.Run.RunID), mdEscape(c.Run.Scenario), mdEscape(c.Invariant),
				mdEscape(c.ExpectedText()), c.VerdictText(), c.Outcome, mdEscape(c.Reason()), mdEscape(c.Record.Where()))
		}
		fmt.Fprintf(b, "\nOf %s: %d hit, %d missed, %d VIOLATED of another kind, %d undecided, %d not judged, %d in excluded runs.\n", count(len(rep.Controls), "controlled invariant"),
			outcomes[reports.ControlHit], outcomes[reports.ControlMissed], outcomes[reports.ControlOtherKind], outcomes[reports.ControlUndecided], outcomes[reports.ControlNotJudged], outcomes[reports.ControlNotCounted])
	}
	if rep.ControlOtherVerdicts > 0 {
		fmt.Fprintf(b, "\n%s of control runs on invariants they do not control count nowhere and are not listed here; each run folder's summary.md lists them.\n", count(rep.ControlOtherVerdicts, "verdict"))
	}
}

func exercisedRateText(t reports.Tally, p reports.Pool) string {
	if ex, ok := t.ExercisedRate(); ok {
		return pooledRateText(ex, p)
	}
	return t.ExercisedRateText()
}

// pooledRateText is the rate with its interval, or without one where it
// pools the repetitions of several scenarios; "–" when nothing counts.
func pooledRateText(r verdict.Rate, p reports.Pool) string {
	if r.N() == 0 {
		return "–"
	}
	return reports.PooledRateText(r, p)
}

// WriteCSV renders the report as one CSV. Every row has a role. Findings,
// application-control and null-arm rows (by = the table's dimensions)
// carry a group's counts:
// a "by" column names the table, then one column per dimension used by any
// table (empty where a table does not use it), then the counts; rates and
// bounds are fractions. Control rows (by = control) are one per control run
// × invariant it controls, with the run, the expected and the got verdict
// and the outcome, and no counts. Excluded runs are not rows of this table;
// see WriteExcludedSummary.
func WriteCSV(w io.Writer, rep *Report) error {
	dimCols := []string{}
	seen := set{ByArm: true}
	tables := append(append(append([]Table(nil), rep.Findings...), rep.Applications...), rep.NullArms...)
	for _, t := range tables {
		for _, c := range t.Columns {
			if !seen.has(c) {
				seen.add(c)
				dimCols = append(dimCols, c)
			}
		}
	}
	if len(rep.Controls) > 0 || rep.Repeated {
		for _, c := range []string{ByScenario, ByInvariant} {
			if !seen.has(c) {
				seen.add(c)
				dimCols = append(dimCols, c)
			}
		}
	}
	cw := csv.NewWriter(w)
	head := append([]string{"by", "role", ByArm}, dimCols...)
	head = append(head, "violated", "preserved", "preserved_exercised", "preserved_not_exercised", "preserved_not_recorded",
		"counted", "rate", "ci95_low", "ci95_high", "exercised_counted", "exercised_rate", "exercised_ci95_low", "exercised_ci95_high", "violation_kinds")
	for _, o := range otherColumns {
		head = append(head, o.field)
	}
	head = append(head, "excluded", "runs", "run_id", "expected", "verdict", "outcome")
	head = append(head, stabilityColumns...)
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, t := range tables {
		by := strings.Join(t.Columns[1:], ",")
		if by == "" {
			by = ByArm
		}
		for _, r := range t.Rows {
			rec := []string{by, t.Role, r.Key[0]}
			for _, c := range dimCols {
				val := ""
				for i, tc := range t.Columns {
					if tc == c {
						val = r.Key[i]
					}
				}
				rec = append(rec, val)
			}
			tl := r.Tally
			pooled := r.Pool.PoolsRepetitions()
			rec = append(rec, strconv.Itoa(tl.Violated), strconv.Itoa(tl.Preserved), strconv.Itoa(tl.PreservedExercised), strconv.Itoa(tl.PreservedNotExercised), strconv.Itoa(tl.PreservedNotRecorded))
			rec = append(rec, rateFields(tl.Rate, pooled)...)
			if ex, ok := tl.ExercisedRate(); ok {
				rec = append(rec, rateFields(ex, pooled)...)
			} else {
				rec = append(rec, "", "", "", "")
			}
			rec = append(rec, tl.ViolationKindsField())
			for _, o := range otherColumns {
				rec = append(rec, strconv.Itoa(tl.Other[o.v]))
			}
			rec = append(rec, strconv.Itoa(r.Excluded), strconv.Itoa(r.Runs), "", "", "", "")
			pooledScenarios := ""
			if pooled {
				pooledScenarios = strconv.Itoa(r.Pool.Scenarios())
			}
			rec = append(rec, t.FlakyField(r), pooledScenarios)
			rec = append(rec, make([]string, len(stabilityColumns)-2)...)
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	for _, c := range rep.Controls {
		rec := []string{"control", verdict.RoleControl, c.Run.Arm}
		for _, d := range dimCols {
			val := ""
			switch d {
			case ByScenario:
				val = c.Run.Scenario
			case ByInvariant:
				val = c.Invariant
			}
			rec = append(rec, val)
		}
		got := ""
		if c.Judgement != nil {
			got = string(c.Judgement.Verdict)
		}
		rec = append(rec, make([]string, len(head)-len(rec)-4-len(stabilityColumns))...)
		rec = append(rec, c.Run.RunID, string(verdict.Violated), got, string(c.Outcome))
		rec = append(rec, make([]string, len(stabilityColumns))...)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	if rep.Repeated {
		for _, s := range rep.Stability {
			rec := []string{"stability", s.Role, s.Arm}
			for _, d := range dimCols {
				val := ""
				switch d {
				case ByScenario:
					val = s.Scenario
				case ByInvariant:
					val = s.Invariant
				case BySuite:
					val = orNone1(s.Suite)
				}
				rec = append(rec, val)
			}
			rec = append(rec, strconv.Itoa(s.Rate.Violated), strconv.Itoa(s.Rate.Preserved), "", "", "")
			rec = append(rec, rateFields(s.Rate, false)...)
			rec = append(rec, "", "", "", "", "")
			for _, o := range otherColumns {
				rec = append(rec, strconv.Itoa(s.Rate.Other[o.v]))
			}
			rec = append(rec, "", strconv.Itoa(s.Runs), "", "", "", "")
			var qs []string
			for _, q := range s.Quantities {
				qs = append(qs, q.Text())
			}
			rec = append(rec, "", "", s.Outcome(), strconv.Itoa(s.FaultIneffective), strconv.Itoa(s.Aborted), strings.Join(qs, "; "))
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// stabilityColumns end every CSV row. On findings and null-arm rows:
// flaky (the row's flaky verdicts, "scenario invariant:k/n;...") and
// pooled_scenarios (where the rate pools the repetitions of several
// scenarios, how many; its interval is then empty). On stability rows
// (by = stability, one per scenario × arm × invariant of repeated runs,
// whose counts and interval are that scenario's over its repetitions):
// stability (VIOLATED, PRESERVED, flaky or "not judged"), the runs that
// were FAULT_INEFFECTIVE and ABORTED (runs counts them all), and each
// quantity's median [range] (count).
var stabilityColumns = []string{"flaky", "pooled_scenarios", "stability", "fault_ineffective", "aborted", "quantities"}

// rateFields are counted, rate, low and high bounds; the last three empty
// when nothing counts, the bounds empty when the count pools the
// repetitions of several scenarios.
func rateFields(r verdict.Rate, pooled bool) []string {
	rate, lo, hi := "", "", ""
	if v, ok := r.Value(); ok {
		rate = frac(v)
		if !pooled {
			l, h, _ := r.Wilson()
			lo, hi = frac(l), frac(h)
		}
	}
	return []string{strconv.Itoa(r.N()), rate, lo, hi}
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
		fmt.Fprintf(&b, "  excluded: run %s scenario %s arm %s role %s: %s: %s (%s)\n", r.RunID, r.Scenario, r.Arm, r.RunRole(), r.RunVerdict, oneLine(why), r.Where())
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
