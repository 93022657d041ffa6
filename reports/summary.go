package reports

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
)

// Summary renders the runs of a suite run as Markdown: the runs with the
// machine's load and the effect probe's coverage, a verdict table per run,
// the rates of the judged finding runs, the positive controls and the null
// arms apart from them, and the applicability table the runs were judged
// with.
func Summary(suite string, runs []verdict.Run, table []verdict.Inapplicable) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# faultline: %s\n\n", suite)
	labs := labsOf(runs)
	switch {
	case len(labs) == 1:
		r := labs[0]
		fmt.Fprintf(&b, "- lab: %s (%s, topology %s, reset %s)\n", r.Lab.Name, r.Lab.Kind, orDash(r.Lab.Topology), orDash(r.Lab.ResetKind))
		fmt.Fprintf(&b, "- kubernetes %s, etcd %s, timer profile %s\n", orDash(r.Lab.KubernetesVersion), orDash(r.Lab.EtcdVersion), orDash(r.Lab.TimerProfile))
		fmt.Fprintf(&b, "- commit %s, lab config %s\n", orDash(r.GitCommit), orDash(r.ConfigHash))
	case len(labs) > 1:
		fmt.Fprintf(&b, "- %d labs (a suite run over a pool of labs; each run ran on the lab its row names):\n", len(labs))
		for _, r := range labs {
			fmt.Fprintf(&b, "  - lab: %s (%s, topology %s, reset %s); kubernetes %s, etcd %s, timer profile %s; commit %s, lab config %s\n",
				r.Lab.Name, r.Lab.Kind, orDash(r.Lab.Topology), orDash(r.Lab.ResetKind),
				orDash(r.Lab.KubernetesVersion), orDash(r.Lab.EtcdVersion), orDash(r.Lab.TimerProfile), orDash(r.GitCommit), orDash(r.ConfigHash))
		}
	}
	counted := 0
	byRole := map[string]int{}
	for _, r := range runs {
		if r.Counted() {
			counted++
		}
		byRole[r.RunRole()]++
	}
	fmt.Fprintf(&b, "- %d runs, %d of them counted (run verdict JUDGED)\n", len(runs), counted)
	apps := ""
	if n := byRole[verdict.RoleApplication]; n > 0 {
		apps = fmt.Sprintf(", %d application control", n)
	}
	fmt.Fprintf(&b, "- roles: %d finding, %d control%s, %d null arm\n\n", byRole[verdict.RoleFinding], byRole[verdict.RoleControl], apps, byRole[verdict.RoleNull])

	// The lab of each run, in a column of its own where the runs ran on
	// several.
	labCol, labSep := "", ""
	if len(labs) > 1 {
		labCol, labSep = " lab |", "---|"
	}
	b.WriteString("## Runs\n\n| run | scenario | arm | role |" + labCol + " run verdict | spec | seconds | load 1/5/15 min (start → end) | effect seen (required share) |\n|---|---|---|---|" + labSep + "---|---|---|---|---|\n")
	for _, r := range runs {
		labCell := ""
		if len(labs) > 1 {
			labCell = " " + cell(orDash(r.Lab.Name)) + " |"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |%s %s | %s | %.1f | %s | %s |\n", cell(r.RunID), cell(r.Scenario), r.Arm, r.RunRole(), labCell, runVerdictCell(r), orDash(r.SpecState), r.Ended.Sub(r.Started).Seconds(), LoadText(r.Load), EffectText(r.Effect))
	}
	repeated := verdict.Repeated(runs)
	for _, r := range runs {
		rep := ""
		if repeated {
			rep = fmt.Sprintf(", repetition %d", r.RepetitionNumber())
		}
		fmt.Fprintf(&b, "\n### %s [%s, %s%s]: %s\n\n", r.Scenario, r.Arm, r.RunRole(), rep, r.RunVerdict)
		if r.RunReason != "" {
			fmt.Fprintf(&b, "%s\n\n", cell(r.RunReason))
		}
		if r.Emulation != "" {
			fmt.Fprintf(&b, "Fault %s, %s.\n\n", r.FaultKind, cell(r.Emulation))
		}
		if rj := r.Rejudged; rj != nil {
			fmt.Fprintf(&b, "Judged again at %s by the checker at %s (faultline rejudge): the verdicts below are its, the run's own are in the run folder's record.\n\n", rj.At.UTC().Format(time.RFC3339), orDash(rj.GitCommit))
			for _, n := range rj.NotRejudged {
				fmt.Fprintf(&b, "- %s: not judged again: %s\n", cell(n.Invariant), cell(n.Why))
			}
			if len(rj.NotRejudged) > 0 {
				b.WriteString("\n")
			}
		}
		if r.RunRole() == verdict.RoleControl {
			if ctl := record.ControlledInvariants(r); len(ctl) > 0 {
				fmt.Fprintf(&b, "Positive control of %s: expected VIOLATED.\n\n", ControlledText(r))
			} else {
				b.WriteString("A positive control that names no invariant it must break: none of its verdicts count anywhere.\n\n")
			}
		}
		b.WriteString("| invariant | phase | verdict | exercised | during | reason |\n|---|---|---|---|---|---|\n")
		for _, j := range r.Judgements {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(j.Invariant), j.Phase, VerdictText(j), cell(ExercisedText(j)), orDash(j.During), cell(j.Reason))
		}
	}

	findings, nulls, applications := map[string]*Tally{}, map[string]*Tally{}, map[string]*Tally{}
	findingPools, nullPools, applicationPools := map[string]*Pool{}, map[string]*Pool{}, map[string]*Pool{}
	var controls []ControlCheck
	for i, r := range runs {
		switch r.RunRole() {
		case verdict.RoleControl:
			controls = append(controls, ControlChecks(r)...)
			continue
		case verdict.RoleNull:
			addTallies(nulls, nullPools, i, r)
		case verdict.RoleApplication:
			addTallies(applications, applicationPools, i, r)
		default:
			addTallies(findings, findingPools, i, r)
		}
	}
	stability := Stability(runs)
	flaky := func(role, inv string) string {
		var out []verdict.Stability
		for _, st := range stability {
			if st.Role == role && st.Invariant == inv && st.Flaky() {
				out = append(out, st.Stability)
			}
		}
		return orDash(FlakyText(out, true, false))
	}
	flakyHead, flakySep := "", ""
	if repeated {
		flakyHead, flakySep = " flaky (VIOLATED of judged) |", "---|"
	}

	b.WriteString("\n## Findings: violation rates (judged finding runs; 95% Wilson interval)\n\n")
	b.WriteString("Findings are the scenarios' fault arms; positive controls and null arms are below, never in these rates. " +
		"rate (all counted) = violated / (violated + every PRESERVED); " +
		"rate (exercised) = violated / (violated + exercised PRESERVED), leaving out the PRESERVED verdicts whose run never challenged the guarantee; it is unknown where some PRESERVED did not record whether it was exercised.\n\n")
	if len(findings) == 0 {
		b.WriteString("No finding run counted.\n")
	} else {
		b.WriteString("| invariant | violated | preserved (exercised) | preserved (not exercised) | preserved (not recorded) | rate (all counted) | rate (exercised) | violation kinds |" + flakyHead + " not counted |\n|---|---|---|---|---|---|---|---|" + flakySep + "---|\n")
		for _, inv := range sortedKeys(findings) {
			t, pool := findings[inv], *findingPools[inv]
			flakyCell := ""
			if repeated {
				flakyCell = " " + cell(flaky(verdict.RoleFinding, inv)) + " |"
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %s | %s |%s %s |\n", cell(inv), t.Violated, t.PreservedExercised, t.PreservedNotExercised, t.PreservedNotRecorded,
				PooledRateText(t.Rate, pool), pooledExercisedText(*t, pool), orDash(t.ViolationKinds()), flakyCell, otherCounts(t.Other))
		}
		if pooled := scenariosPerInvariant(runs, verdict.RoleFinding); pooled != "" {
			fmt.Fprintf(&b, "\nEach row pools the finding runs of every scenario that judged the invariant (%s).\n", pooled)
		}
		if repeated {
			b.WriteString("\n" + pooledRepetitionsNote + "\n")
		}
	}

	b.WriteString("\n## Positive controls\n\n" +
		"A control is built to break the invariants it names: expected VIOLATED, a hit when it was, a miss when the invariant came out PRESERVED. " +
		"Where the control names the violation kinds it is built to make, only a VIOLATED of one of them is a hit; one of another kind is \"other kind\", no hit; \"any kind\" where it names none. " +
		"Its verdicts of other invariants count nowhere (they are in its run's table above).\n\n")
	if len(controls) == 0 {
		b.WriteString("No control runs.\n")
	} else {
		b.WriteString("| run | scenario | invariant | expected | verdict | outcome | reason |\n|---|---|---|---|---|---|---|\n")
		for _, c := range controls {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", cell(c.Run.RunID), cell(c.Run.Scenario), cell(c.Invariant), cell(c.ExpectedText()), c.VerdictText(), c.Outcome, cell(c.Reason()))
		}
	}

	if len(applications) > 0 {
		b.WriteString("\n## Application controls\n\n" +
			"The fault of a finding against a workload built not to rely on the guarantee the finding tests (a correct application): " +
			"what that application kept under the same fault, so a violation can be told apart as the platform's or the application's. " +
			"Nothing is expected of them, and they are never in the findings' rates.\n\n")
		b.WriteString("| invariant | violated | preserved | rate (all counted) | not counted |\n|---|---|---|---|---|\n")
		for _, inv := range sortedKeys(applications) {
			t := applications[inv]
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %s |\n", cell(inv), t.Violated, t.Preserved, PooledRateText(t.Rate, *applicationPools[inv]), otherCounts(t.Other))
		}
	}

	b.WriteString("\n## Null arms (expected PRESERVED; a VIOLATED is a false alarm of the detector)\n\n")
	if len(nulls) == 0 {
		b.WriteString("No null-arm run counted.\n")
	} else {
		b.WriteString("| invariant | false alarms (VIOLATED) | preserved | false-alarm rate |" + flakyHead + " not counted |\n|---|---|---|---|" + flakySep + "---|\n")
		for _, inv := range sortedKeys(nulls) {
			t := nulls[inv]
			flakyCell := ""
			if repeated {
				flakyCell = " " + cell(flaky(verdict.RoleNull, inv)) + " |"
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %s |%s %s |\n", cell(inv), t.Violated, t.Preserved, PooledRateText(t.Rate, *nullPools[inv]), flakyCell, otherCounts(t.Other))
		}
	}

	if repeated {
		b.WriteString("\n" + StabilityMarkdown(stability))
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

// addTallies counts a judged run's verdicts by invariant, and the runs
// each invariant's counted verdicts pool (run i of the runs).
func addTallies(by map[string]*Tally, pools map[string]*Pool, i int, r verdict.Run) {
	if !r.Counted() {
		return
	}
	for _, j := range r.Judgements {
		if by[j.Invariant] == nil {
			by[j.Invariant], pools[j.Invariant] = &Tally{}, &Pool{}
		}
		by[j.Invariant].Add(j)
		if j.Verdict.Counts() {
			pools[j.Invariant].Add(verdict.PairOf(r), i)
		}
	}
}

// pooledExercisedText is ExercisedRateText, without an interval where the
// rate pools the repetitions of several scenarios.
func pooledExercisedText(t Tally, p Pool) string {
	if r, ok := t.ExercisedRate(); ok {
		return PooledRateText(r, p)
	}
	return t.ExercisedRateText()
}

// pooledRepetitionsNote explains the rates given without an interval.
const pooledRepetitionsNote = "A rate that pools the repetitions of several scenarios is given without an interval: each scenario has a rate of its own and its repetitions are trials of it, so their pooled count is not k of n trials of one thing. " +
	"The stability table below gives each scenario's rate with its interval; flaky names the scenarios whose judged repetitions gave both VIOLATED and PRESERVED, with k VIOLATED of n judged."

// StabilityMarkdown is the stability section of summary.md and of `faultline
// report`: per scenario × arm × invariant, k VIOLATED of n judged with the
// Wilson interval of that scenario's rate, stable or flaky, the outcomes
// that did not count, and the quantities' median and range; a table per
// role, with a suite column where the rows span several suites.
func StabilityMarkdown(rows []StabilityRow) string {
	var b strings.Builder
	suites := map[string]bool{}
	for _, r := range rows {
		suites[r.Suite] = true
	}
	suiteHead, suiteSep := "", ""
	if len(suites) > 1 {
		suiteHead, suiteSep = " suite |", "---|"
	}
	b.WriteString("## Stability over repetitions\n\n" +
		"Each scenario × arm ran in several repetitions; per invariant: k VIOLATED of n judged (PRESERVED or VIOLATED in a JUDGED run) with the 95% Wilson interval of that scenario's rate, " +
		"**flaky** where the judged repetitions gave both VIOLATED and PRESERVED, and apart the outcomes that did not count " +
		"(INSUFFICIENT_DATA and the other verdicts of judged runs; FAULT_INEFFECTIVE and ABORTED runs, an ABORTED run counted even where it was run again); runs counts them all. " +
		"Quantities are the median [range] (how many) over the judged repetitions that measured them, and where a quantity scales with others, the same of it divided by their product.\n")
	for _, role := range []struct{ role, title string }{{verdict.RoleFinding, "Findings"}, {verdict.RoleControl, "Positive controls (expected VIOLATED every time)"}, {verdict.RoleApplication, "Application controls (nothing expected)"}, {verdict.RoleNull, "Null arms (expected PRESERVED every time)"}} {
		var these []StabilityRow
		for _, r := range rows {
			if r.Role == role.role {
				these = append(these, r)
			}
		}
		if len(these) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n|%s scenario | invariant | VIOLATED of judged | rate | verdict | not counted | runs | quantities |\n|%s---|---|---|---|---|---|---|---|\n", role.title, suiteHead, suiteSep)
		for _, r := range these {
			outcome := r.OutcomeText()
			if r.Flaky() {
				outcome = "**flaky**"
			}
			suiteCell := ""
			if len(suites) > 1 {
				suiteCell = " " + cell(orDash(r.Suite)) + " |"
			}
			fmt.Fprintf(&b, "|%s %s | %s | %d of %d | %s | %s | %s | %d | %s |\n", suiteCell, cell(r.Scenario), cell(r.Invariant), r.Rate.Violated, r.Rate.N(), r.RateText(), outcome,
				orDash(r.OtherText()), r.Runs, cell(r.QuantitiesText()))
		}
	}
	return b.String()
}

func sortedKeys(m map[string]*Tally) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// scenariosPerInvariant names the invariants whose rate pools the judged
// runs of more than one scenario of the role, with how many; empty when
// none does.
func scenariosPerInvariant(runs []verdict.Run, role string) string {
	scenarios := map[string]map[string]bool{}
	for _, r := range runs {
		if !r.Counted() || r.RunRole() != role {
			continue
		}
		for _, j := range r.Judgements {
			if scenarios[j.Invariant] == nil {
				scenarios[j.Invariant] = map[string]bool{}
			}
			scenarios[j.Invariant][r.Scenario] = true
		}
	}
	var parts []string
	for inv, sc := range scenarios {
		if len(sc) > 1 {
			parts = append(parts, fmt.Sprintf("%s: %d scenarios", inv, len(sc)))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// VerdictText is a verdict with its violation kind, "VIOLATED (lost-write)".
func VerdictText(j verdict.Judgement) string {
	if j.Violation != "" {
		return fmt.Sprintf("%s (%s)", j.Verdict, j.Violation)
	}
	return string(j.Verdict)
}

// ExercisedText says whether a verdict was exercised and by what, "yes: a
// pod moved"; its Exercise text alone, or "-", where it was not recorded.
func ExercisedText(j verdict.Judgement) string {
	if j.Exercised == nil {
		return orDash(j.Exercise)
	}
	s := "no"
	if *j.Exercised {
		s = "yes"
	}
	if j.Exercise != "" {
		s += ": " + j.Exercise
	}
	return s
}

// ControlOutcome is what a control's run says of one invariant it must
// break.
type ControlOutcome string

const (
	// ControlHit: the invariant came out VIOLATED, as the control expects.
	ControlHit ControlOutcome = "hit"
	// ControlMissed: the invariant came out PRESERVED; the detector, or the
	// control's fault, failed.
	ControlMissed ControlOutcome = "missed"
	// ControlOtherKind: the invariant came out VIOLATED, but of a kind
	// other than those the control declares (verdict.Run.ControlKinds):
	// another detector fired, not the one the control tests. No hit.
	ControlOtherKind ControlOutcome = "other kind"
	// ControlUndecided: a verdict that is neither (INSUFFICIENT_DATA,
	// NOT_APPLICABLE, DETECTOR_INVALID) shows neither a hit nor a miss.
	ControlUndecided ControlOutcome = "undecided"
	// ControlNotJudged: the run records no verdict of the invariant.
	ControlNotJudged ControlOutcome = "not judged"
	// ControlNotCounted: the run was FAULT_INEFFECTIVE or ABORTED.
	ControlNotCounted ControlOutcome = "not counted"
)

// ControlCheck is one control run × one invariant it must break.
type ControlCheck struct {
	Run       verdict.Run
	Invariant string
	// Judgement is the run's verdict of the invariant; nil if none.
	Judgement *verdict.Judgement
	// Kinds are the violation kinds that count as a hit; nil where any
	// does.
	Kinds   []string
	Outcome ControlOutcome
}

// ControlChecks is a control run's check of each invariant it controls.
func ControlChecks(r verdict.Run) []ControlCheck {
	var out []ControlCheck
	for _, inv := range record.ControlledInvariants(r) {
		c := ControlCheck{Run: r, Invariant: inv, Kinds: r.ControlKindsOf(inv), Outcome: ControlNotJudged}
		for i := range r.Judgements {
			if r.Judgements[i].Invariant == inv {
				c.Judgement = &r.Judgements[i]
			}
		}
		switch {
		case !r.Counted():
			c.Outcome = ControlNotCounted
		case c.Judgement == nil:
		case c.Judgement.Verdict == verdict.Violated && verdict.OtherKind(*c.Judgement, c.Kinds) != "":
			c.Outcome = ControlOtherKind
		case c.Judgement.Verdict == verdict.Violated:
			c.Outcome = ControlHit
		case c.Judgement.Verdict == verdict.Preserved:
			c.Outcome = ControlMissed
		default:
			c.Outcome = ControlUndecided
		}
		out = append(out, c)
	}
	return out
}

// VerdictText is the verdict got, with its violation kind; "-" if none.
func (c ControlCheck) VerdictText() string {
	if c.Judgement == nil {
		return "-"
	}
	return VerdictText(*c.Judgement)
}

// ExpectedText is what the control expects of the invariant: VIOLATED,
// with the kinds that count as a hit, or "any kind".
func (c ControlCheck) ExpectedText() string {
	return ControlExpectedText(c.Kinds)
}

// ControlExpectedText is what a control expects of an invariant whose
// hits are the violation kinds kinds (nil: any).
func ControlExpectedText(kinds []string) string {
	return fmt.Sprintf("%s, %s", verdict.Violated, verdict.KindsText(kinds))
}

// ControlledText names the invariants a control run must break, each
// with the violation kinds that count as its hit ("any kind" where the
// run declares none).
func ControlledText(r verdict.Run) string {
	var parts []string
	for _, inv := range record.ControlledInvariants(r) {
		parts = append(parts, fmt.Sprintf("%s (%s)", inv, verdict.KindsText(r.ControlKindsOf(inv))))
	}
	return strings.Join(parts, ", ")
}

// Reason is the verdict's reason, or the run's when its verdicts do not
// count; for a VIOLATED of another kind than the control's, it first
// says which kind it got and which it needed.
func (c ControlCheck) Reason() string {
	switch {
	case !c.Run.Counted():
		return fmt.Sprintf("%s: %s", c.Run.RunVerdict, orDash(c.Run.RunReason))
	case c.Judgement == nil:
		return "the run records no verdict of " + c.Invariant
	case c.Outcome == ControlOtherKind:
		return verdict.OtherKind(*c.Judgement, c.Kinds) + ": " + c.Judgement.Reason
	}
	return c.Judgement.Reason
}

// Tally counts verdicts towards a rate and keeps apart what one rate
// cannot show: whether each PRESERVED was exercised, and the kinds of the
// VIOLATED verdicts.
type Tally struct {
	verdict.Rate
	PreservedExercised    int
	PreservedNotExercised int
	// PreservedNotRecorded are PRESERVED verdicts of records that did not
	// say whether the guarantee was challenged.
	PreservedNotRecorded int
	// Violations counts VIOLATED verdicts by kind; "" for those that name
	// none.
	Violations map[string]int
	// Anomalies counts what verdicts saw but did not count
	// (Judgement.Anomalies), by kind.
	Anomalies map[string]int
}

// Add counts one verdict.
func (t *Tally) Add(j verdict.Judgement) {
	t.Rate.Add(j.Verdict)
	for _, a := range j.Anomalies {
		if t.Anomalies == nil {
			t.Anomalies = map[string]int{}
		}
		t.Anomalies[a]++
	}
	switch j.Verdict {
	case verdict.Preserved:
		switch {
		case j.Exercised == nil:
			t.PreservedNotRecorded++
		case *j.Exercised:
			t.PreservedExercised++
		default:
			t.PreservedNotExercised++
		}
	case verdict.Violated:
		if t.Violations == nil {
			t.Violations = map[string]int{}
		}
		t.Violations[j.Violation]++
	}
}

// ExercisedRate is violated / (violated + exercised PRESERVED): a
// violation always challenged the guarantee, an unexercised PRESERVED
// never did. ok is false when some PRESERVED did not record whether it
// was exercised: leaving those out would count only the violations of
// older records and overstate the rate.
func (t Tally) ExercisedRate() (r verdict.Rate, ok bool) {
	return verdict.Rate{Violated: t.Violated, Preserved: t.PreservedExercised}, t.PreservedNotRecorded == 0
}

// ExercisedRateText is the exercised rate as "k/n = p% [lo%, hi%]", or
// why it is unknown.
func (t Tally) ExercisedRateText() string {
	r, ok := t.ExercisedRate()
	if !ok {
		return fmt.Sprintf("unknown: %d PRESERVED not recorded", t.PreservedNotRecorded)
	}
	return r.String()
}

// ViolationKinds is "lost-write 1, stale-read (seen, not counted) 2":
// the kinds VIOLATED verdicts name (unnamed ones as "not named"), then
// the anomalies verdicts saw without counting them; empty when there is
// neither.
func (t Tally) ViolationKinds() string {
	return t.violationKinds(" ", ", ")
}

// ViolationKindsField is ViolationKinds for a CSV field:
// "lost-write:1;stale-read (seen, not counted):2".
func (t Tally) ViolationKindsField() string {
	return t.violationKinds(":", ";")
}

func (t Tally) violationKinds(countSep, sep string) string {
	named := false
	kinds := make([]string, 0, len(t.Violations))
	for k := range t.Violations {
		named = named || k != ""
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	if named {
		for _, k := range kinds {
			if k != "" {
				parts = append(parts, fmt.Sprintf("%s%s%d", k, countSep, t.Violations[k]))
			}
		}
		if n := t.Violations[""]; n > 0 {
			parts = append(parts, fmt.Sprintf("not named%s%d", countSep, n))
		}
	}
	anomalies := make([]string, 0, len(t.Anomalies))
	for a := range t.Anomalies {
		anomalies = append(anomalies, a)
	}
	sort.Strings(anomalies)
	for _, a := range anomalies {
		parts = append(parts, fmt.Sprintf("%s (seen, not counted)%s%d", a, countSep, t.Anomalies[a]))
	}
	return strings.Join(parts, sep)
}

// LoadText is the machine's load average at the start and end of a run,
// "1/5/15 → 1/5/15"; "(not recorded)" for records without it.
func LoadText(loads []verdict.Load) string {
	if len(loads) == 0 {
		return "(not recorded)"
	}
	parts := make([]string, len(loads))
	for i, l := range loads {
		parts[i] = fmt.Sprintf("%.2f/%.2f/%.2f", l.One, l.Five, l.Fifteen)
	}
	return strings.Join(parts, " → ")
}

// EffectText is the effect probe's coverage of the window against the
// share the scenario requires; "(not recorded)" for records without it.
// A record that measured coverage in time gives the share of the window
// the looks that saw the effect attest; an older one, the share of
// probes it was judged on.
func EffectText(e *verdict.EffectCoverage) string {
	if e == nil {
		return "(not recorded)"
	}
	s := fmt.Sprintf("%d/%d probes = %.0f%%", e.Observed, e.Probes, 100*e.Share())
	if e.Failed > 0 {
		s += fmt.Sprintf(" (%d failed)", e.Failed)
	}
	if e.InTime() {
		s += fmt.Sprintf("; %.0f%% of the %s window attested (%s either side of what each look saw)", 100*e.Covered, time.Duration(e.Window).Round(100*time.Millisecond), time.Duration(e.Resolution))
	}
	return s + fmt.Sprintf("; required %.0f%%", 100*e.Required)
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

func init() { record.RegisterRenderer(record.SummaryFile, WriteSummary) }

// WriteSummary writes the Summary of a run folder's runs as its
// summary.md. Linking this package registers it as a renderer of every
// run folder a suite finishes.
func WriteSummary(f *record.Folder, suite string, runs []verdict.Run, table []verdict.Inapplicable) error {
	if err := f.WriteFile(record.SummaryFile, []byte(Summary(suite, runs, table))); err != nil {
		return fmt.Errorf("writing %s: %w", record.SummaryFile, err)
	}
	return nil
}

// labsOf is the first run on each lab the runs ran on (by name and config
// hash), in the order they first appear: a suite run over a pool of labs
// holds runs of several.
func labsOf(runs []verdict.Run) []verdict.Run {
	var out []verdict.Run
	seen := map[string]bool{}
	for _, r := range runs {
		key := r.Lab.Name + "\x00" + r.ConfigHash
		if !seen[key] {
			seen[key] = true
			out = append(out, r)
		}
	}
	return out
}
