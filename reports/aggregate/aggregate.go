// Package aggregate turns the run records of any number of run folders into
// rate tables: violated / (preserved + violated) per group, with counts, the
// 95% Wilson interval and every verdict that did not count beside it.
//
// Rates are never computed over a mix of roles: findings (scenarios' fault
// arms) have their tables, null arms theirs, and positive controls are
// listed run by run against the VIOLATED they must give.
package aggregate

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/reports"
)

// Dimensions that are fields of a run record or judgement. Any other name
// is a label prefix: "class" groups by the value of each "class:<value>"
// label.
const (
	ByInvariant = "invariant"
	ByScenario  = "scenario"
	ByArm       = "arm"
	BySuite     = "suite"
	ByLab       = "lab"
	ByProfile   = "profile"
	// ByRepetition groups by the run's repetition (1 in records written
	// before repetitions): drift across the rounds of a repeated run.
	ByRepetition = "repetition"
)

var fieldDimensions = []string{ByInvariant, ByScenario, ByArm, BySuite, ByLab, ByProfile, ByRepetition}

// None is the group of runs that have no label with the prefix asked for.
const None = "(none)"

// DefaultGroupings are the tables a report shows when none are asked for.
var DefaultGroupings = [][]string{{ByInvariant}, {ByScenario}}

// ParseGrouping reads one --by value: dimensions separated by commas, one
// table keyed by all of them.
func ParseGrouping(s string) ([]string, error) {
	var dims []string
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		d := strings.TrimSuffix(strings.TrimSpace(part), ":")
		if d == "" {
			return nil, fmt.Errorf("--by %q: empty dimension (give names such as invariant, scenario, class, or invariant,scenario)", s)
		}
		if strings.ContainsAny(d, ": \t") {
			return nil, fmt.Errorf("--by %q: %q is not a dimension name (a label prefix is given without its value: class, not class:gray)", s, d)
		}
		if seen[d] {
			return nil, fmt.Errorf("--by %q: %q is given twice", s, d)
		}
		seen[d] = true
		dims = append(dims, d)
	}
	return dims, nil
}

// Row is one group's counts.
type Row struct {
	// Key holds the arm and then one value per dimension of the table.
	Key   []string
	Tally reports.Tally
	// Excluded counts the verdicts of this group that were set aside
	// because their run was FAULT_INEFFECTIVE or ABORTED.
	Excluded int
	// Runs counts the judged runs that gave this group a verdict.
	Runs int
	// Pool is what the row's counted verdicts pool: where it pools the
	// repetitions of several scenarios its rate gets no interval
	// (reports.Pool.PoolsRepetitions).
	Pool reports.Pool
	// Flaky are the scenario × arm × invariant whose verdicts the row
	// counts and whose judged repetitions gave both VIOLATED and
	// PRESERVED, in order of scenario and invariant.
	Flaky []verdict.Stability
}

// Table is the rows of one grouping over the runs of one role.
type Table struct {
	// Role is verdict.RoleFinding, verdict.RoleApplication or
	// verdict.RoleNull.
	Role string
	// Columns are the key columns: always "arm" first, so that a record
	// whose role and arm disagree still never pools with the others.
	Columns []string
	// ArmAsked says the grouping named the arm; otherwise the arm column
	// is worth showing only when its rows differ in arm.
	ArmAsked bool
	Rows     []Row
	// Notes say how to read the table where pooling could mislead.
	Notes []string
}

// ShowArm says whether the arm column tells the rows anything.
func (t Table) ShowArm() bool {
	if t.ArmAsked || len(t.Columns) == 1 {
		return true
	}
	for _, r := range t.Rows {
		if r.Key[0] != t.Rows[0].Key[0] {
			return true
		}
	}
	return false
}

// FlakyText names a row's flaky verdicts, "scenario invariant k/n",
// leaving out what the row's key names already.
func (t Table) FlakyText(r Row) string {
	return reports.FlakyText(r.Flaky, !slices.Contains(t.Columns, ByScenario), !slices.Contains(t.Columns, ByInvariant))
}

// FlakyField is FlakyText for a CSV field: "scenario invariant:k/n;...",
// both always named.
func (t Table) FlakyField(r Row) string {
	var parts []string
	for _, s := range r.Flaky {
		parts = append(parts, fmt.Sprintf("%s %s:%d/%d", s.Scenario, s.Invariant, s.Rate.Violated, s.Rate.N()))
	}
	return strings.Join(parts, ";")
}

// Title is "Findings by invariant, scenario", "Application controls by
// invariant" or "Null arms by class".
func (t Table) Title() string {
	what := "Findings"
	switch t.Role {
	case verdict.RoleNull:
		what = "Null arms"
	case verdict.RoleApplication:
		what = "Application controls"
	}
	if len(t.Columns) == 1 {
		return what + " by arm"
	}
	return what + " by " + strings.Join(t.Columns[1:], ", ")
}

// Control is one control run × one invariant it must break, with where
// its record was read.
type Control struct {
	reports.ControlCheck
	Record Record
}

// Report is the aggregate of a set of run records.
type Report struct {
	Sources  []string
	Records  int
	Judged   int
	Excluded []Record
	// CutShort are records a crash cut short ("file:line"), left out.
	CutShort []string
	// Applicability is the union of the run folders' applicability
	// tables (the source of every NOT_APPLICABLE), sorted; NoApplicability
	// lists the folders that had none.
	Applicability   []verdict.Inapplicable
	NoApplicability []string
	// Findings are the rate tables over finding runs, one per grouping;
	// Applications and NullArms the same groupings over application
	// controls' fault arms and over null-arm runs.
	Findings, Applications, NullArms []Table
	// Controls are the positive controls' checks, run by run.
	Controls []Control
	// ControlOtherVerdicts counts the verdicts control runs gave of
	// invariants they do not control: counted nowhere, listed nowhere.
	ControlOtherVerdicts int
	// Runs are every record read, in order; Roles counts them by role.
	Runs  []Record
	Roles map[string]int
	// What the runs ran on; more than one value in any is worth a warning.
	Labs, Profiles, KubernetesVersions, EtcdVersions, Commits []string
	// Emulations are the faults some runs only emulated, each as
	// "kind: how", for the report's header.
	Emulations []string
	// RejudgedBy are the checkers' commits of the records made by judging
	// a run again (faultline rejudge), for the report's header.
	RejudgedBy []string
	// Warnings say where the rates pool runs that differ in what they ran on.
	Warnings []string
	// Repeated: some scenario × arm ran more than once to an outcome
	// (verdict.Repeated), so the report has a stability to give.
	// Stability is each scenario × arm × invariant over its repetitions.
	Repeated  bool
	Stability []reports.StabilityRow
}

// Build aggregates what was read into one table per grouping.
func Build(in *Input, groupings [][]string) (*Report, error) {
	if len(groupings) == 0 {
		groupings = DefaultGroupings
	}
	recs := in.Records
	rep := &Report{Records: len(recs), CutShort: in.CutShort, Runs: recs, Roles: map[string]int{}}
	labs, profiles, kube, etcd, commits, sources, emulations := set{}, set{}, set{}, set{}, set{}, set{}, set{}
	labelPrefixes := set{}
	rejudgedBy, notRejudged := set{}, map[string]int{}
	rejudged := 0
	for _, r := range recs {
		if rj := r.Rejudged; rj != nil {
			rejudged++
			rejudgedBy.add(orNotRecorded(rj.GitCommit))
			for _, n := range rj.NotRejudged {
				notRejudged[n.Invariant]++
			}
		}
		sources.add(r.File)
		// A missing value is a value of its own: runs that did not record
		// their profile must not pass for runs of the one that did.
		lab := notRecorded
		if r.Lab.Name != "" {
			lab = r.Lab.Name + " (" + r.Lab.Kind + ")"
		}
		labs.add(lab)
		profiles.add(orNotRecorded(r.Lab.TimerProfile))
		kube.add(orNotRecorded(r.Lab.KubernetesVersion))
		etcd.add(orNotRecorded(r.Lab.EtcdVersion))
		commits.add(orNotRecorded(r.GitCommit))
		if r.Emulation != "" {
			emulations.add(r.FaultKind + ": " + r.Emulation)
		}
		for _, l := range r.Labels {
			if p, _, ok := strings.Cut(l, ":"); ok {
				labelPrefixes.add(p)
			}
		}
		rep.Roles[r.RunRole()]++
		if r.RunRole() == verdict.RoleControl {
			rep.addControl(r)
		}
		if r.Counted() {
			rep.Judged++
			if len(r.Judgements) == 0 {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("run %s (scenario %s, %s) is JUDGED but records no verdicts, so it is in no row", r.RunID, r.Scenario, r.Where()))
			}
		} else {
			rep.Excluded = append(rep.Excluded, r)
		}
	}
	for _, c := range in.CutShort {
		sources.add(c[:strings.LastIndex(c, ":")])
	}
	rep.Sources = sources.sorted()
	rep.mergeApplicability(in.Applicability)
	rep.Labs, rep.Profiles, rep.KubernetesVersions, rep.EtcdVersions, rep.Commits = labs.sorted(), profiles.sorted(), kube.sorted(), etcd.sorted(), commits.sorted()
	rep.Emulations = emulations.sorted()
	rep.RejudgedBy = rejudgedBy.sorted()
	if rejudged > 0 && rejudged < len(recs) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d of these %d runs were judged again (faultline rejudge) and the others were not: the rates pool the verdicts of two checkers", rejudged, len(recs)))
	}
	if len(notRejudged) > 0 {
		var parts []string
		for _, inv := range slices.Sorted(maps.Keys(notRejudged)) {
			parts = append(parts, fmt.Sprintf("%s in %s", inv, count(notRejudged[inv], "run")))
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("some verdicts of the runs judged again could not be judged again and are in no row (%s): each folder's %s says why", strings.Join(parts, ", "), record.RejudgeFile))
	}
	for _, w := range []struct {
		what string
		vals []string
		by   string
	}{
		{"timer profiles", rep.Profiles, ByProfile},
		{"labs", rep.Labs, ByLab},
		{"Kubernetes versions", rep.KubernetesVersions, ""},
		{"etcd versions", rep.EtcdVersions, ""},
	} {
		if len(w.vals) > 1 {
			msg := fmt.Sprintf("these runs span %d %s (%s) and the rates below pool them", len(w.vals), w.what, strings.Join(w.vals, ", "))
			if w.by != "" {
				msg += fmt.Sprintf("; add --by %s to split them", w.by)
			}
			rep.Warnings = append(rep.Warnings, msg)
		}
	}

	runs := make([]verdict.Run, len(recs))
	for i, r := range recs {
		runs[i] = r.Run
	}
	rep.Repeated, rep.Stability = verdict.Repeated(runs), reports.Stability(runs)
	stability := map[verdict.StabilityKey]verdict.Stability{}
	for _, s := range rep.Stability {
		stability[s.StabilityKey] = s.Stability
	}
	for _, dims := range groupings {
		for _, d := range dims {
			if !isField(d) && !labelPrefixes.has(d) {
				return nil, fmt.Errorf("--by %s: no run has a %s:<value> label, and it is not one of %s (label prefixes in these runs: %s)",
					d, d, strings.Join(fieldDimensions, ", "), orNone(labelPrefixes.sorted()))
			}
		}
		rep.Findings = append(rep.Findings, buildTable(recs, dims, verdict.RoleFinding, stability))
		if rep.Roles[verdict.RoleApplication] > 0 {
			rep.Applications = append(rep.Applications, buildTable(recs, dims, verdict.RoleApplication, stability))
		}
		rep.NullArms = append(rep.NullArms, buildTable(recs, dims, verdict.RoleNull, stability))
	}
	return rep, nil
}

// addControl records a control run's checks of the invariants it must
// break, and counts the verdicts it gave of the others.
func (rep *Report) addControl(r Record) {
	checks := reports.ControlChecks(r.Run)
	if len(checks) == 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("control run %s (scenario %s, %s) names no invariant it must break (no controlOf, no control:<invariant> label), so none of its verdicts count anywhere", r.RunID, r.Scenario, r.Where()))
	}
	for _, c := range checks {
		rep.Controls = append(rep.Controls, Control{ControlCheck: c, Record: r})
	}
	rep.ControlOtherVerdicts += len(r.Judgements)
	for _, c := range checks {
		if c.Judgement != nil {
			rep.ControlOtherVerdicts--
		}
	}
}

// mergeApplicability unions the folders' tables. Folders that disagree on
// a row's reason, or that hold different rows, are judged by different
// tables: the report says so.
func (rep *Report) mergeApplicability(byFolder map[string][]verdict.Inapplicable) {
	folders := make([]string, 0, len(byFolder))
	for f := range byFolder {
		folders = append(folders, f)
	}
	sort.Strings(folders)
	rows := map[[2]string]verdict.Inapplicable{}
	from := map[[2]string]string{}
	shapes := set{}
	for _, f := range folders {
		var keys []string
		for _, r := range byFolder[f] {
			k := [2]string{r.FaultClass, r.Invariant}
			keys = append(keys, k[0]+"\x00"+k[1])
			if prev, ok := rows[k]; ok && prev.Reason != r.Reason {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("the applicability tables of %s and %s give different reasons for fault class %s × invariant %s", from[k], f, r.FaultClass, r.Invariant))
				continue
			}
			if _, ok := rows[k]; !ok {
				rows[k], from[k] = r, f
			}
		}
		sort.Strings(keys)
		shapes.add("\x01" + strings.Join(keys, "\x01"))
	}
	if len(shapes) > 1 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the %d run folders were judged with %d different applicability tables; the table below is their union", len(folders), len(shapes)))
	}
	for _, r := range rows {
		rep.Applicability = append(rep.Applicability, r)
	}
	sort.Slice(rep.Applicability, func(i, j int) bool {
		a, b := rep.Applicability[i], rep.Applicability[j]
		if a.FaultClass != b.FaultClass {
			return a.FaultClass < b.FaultClass
		}
		return a.Invariant < b.Invariant
	})
	for _, src := range rep.Sources {
		dir := filepath.Dir(src)
		if _, ok := byFolder[dir]; !ok {
			rep.NoApplicability = append(rep.NoApplicability, dir)
		}
	}
}

func buildTable(recs []Record, dims []string, role string, stability map[verdict.StabilityKey]verdict.Stability) Table {
	cols := []string{ByArm}
	armAsked := false
	for _, d := range dims {
		if d != ByArm {
			cols = append(cols, d)
		} else {
			armAsked = true
		}
	}
	rows := map[string]*Row{}
	runsOf := map[string]map[int]bool{}
	scenariosOf, suitesOf := map[string]set{}, map[string]set{}
	multiLabel := map[string]bool{}
	invariants := set{}
	contributors := map[string]map[verdict.StabilityKey]bool{}
	for i, r := range recs {
		if r.RunRole() != role {
			continue
		}
		for _, j := range r.Judgements {
			invariants.add(j.Invariant)
			keys := [][]string{{}}
			for _, c := range cols {
				vals := dimensionValues(r.Run, j, c)
				if len(vals) > 1 {
					multiLabel[c] = true
				}
				keys = cross(keys, vals)
			}
			for _, k := range keys {
				id := strings.Join(k, "\x00")
				row := rows[id]
				if row == nil {
					row = &Row{Key: k}
					rows[id] = row
					runsOf[id] = map[int]bool{}
					scenariosOf[id], suitesOf[id] = set{}, set{}
					contributors[id] = map[verdict.StabilityKey]bool{}
				}
				if !r.Counted() {
					row.Excluded++
					continue
				}
				row.Tally.Add(j)
				if j.Verdict.Counts() {
					row.Pool.Add(verdict.PairOf(r.Run), i)
					contributors[id][verdict.StabilityKey{Suite: r.Suite, Scenario: r.Scenario, Arm: r.Arm, Invariant: j.Invariant}] = true
				}
				runsOf[id][i] = true
				scenariosOf[id].add(r.Scenario)
				suitesOf[id].add(orNone1(r.Suite))
			}
		}
	}
	t := Table{Role: role, Columns: cols, ArmAsked: armAsked}
	mostScenarios, mostSuites := 0, 0
	pooledRepetitions := false
	for id, row := range rows {
		row.Runs = len(runsOf[id])
		for k := range contributors[id] {
			if s := stability[k]; s.Flaky() {
				row.Flaky = append(row.Flaky, s)
			}
		}
		sort.Slice(row.Flaky, func(a, b int) bool {
			x, y := row.Flaky[a], row.Flaky[b]
			return x.Suite+"\x00"+x.Scenario+"\x00"+x.Invariant < y.Suite+"\x00"+y.Scenario+"\x00"+y.Invariant
		})
		pooledRepetitions = pooledRepetitions || row.Pool.PoolsRepetitions()
		t.Rows = append(t.Rows, *row)
		mostScenarios = max(mostScenarios, len(scenariosOf[id]))
		mostSuites = max(mostSuites, len(suitesOf[id]))
	}
	sort.Slice(t.Rows, func(a, b int) bool { return keyLess(t.Rows[a].Key, t.Rows[b].Key) })

	if !slices.Contains(cols, ByInvariant) && len(invariants) > 1 {
		t.Notes = append(t.Notes, "Each row pools the verdicts of several invariants: counts are verdicts, not runs, and the interval treats them as independent, which verdicts of one run need not be.")
	}
	if !slices.Contains(cols, ByScenario) && mostScenarios > 1 {
		t.Notes = append(t.Notes, fmt.Sprintf("A row pools the runs of several scenarios (up to %d in one row); add scenario to --by to split them.", mostScenarios))
	}
	if !slices.Contains(cols, BySuite) && mostSuites > 1 {
		t.Notes = append(t.Notes, fmt.Sprintf("A row pools the runs of several suites (up to %d in one row); add suite to --by to split them.", mostSuites))
	}
	if pooledRepetitions {
		t.Notes = append(t.Notes, PooledRepetitionsNote)
	}
	for _, c := range cols {
		if multiLabel[c] {
			t.Notes = append(t.Notes, fmt.Sprintf("Some runs carry more than one %s: label; such a run counts in the row of each.", c))
		}
	}
	return t
}

// PooledRepetitionsNote explains the rates a table gives without an
// interval.
const PooledRepetitionsNote = "A rate marked as pooling the repetitions of several scenarios has no interval: each scenario has a rate of its own and its repetitions are trials of it, so their pooled count is not k of n trials of one thing; the stability tables give each scenario's rate with its interval."

func isField(d string) bool {
	for _, f := range fieldDimensions {
		if d == f {
			return true
		}
	}
	return false
}

// dimensionValues is the value(s) of one dimension for one verdict.
func dimensionValues(r verdict.Run, j verdict.Judgement, d string) []string {
	switch d {
	case ByInvariant:
		return []string{j.Invariant}
	case ByScenario:
		return []string{r.Scenario}
	case ByArm:
		return []string{r.Arm}
	case BySuite:
		return []string{orNone1(r.Suite)}
	case ByLab:
		return []string{orNone1(r.Lab.Name)}
	case ByProfile:
		return []string{orNone1(r.Lab.TimerProfile)}
	case ByRepetition:
		return []string{strconv.Itoa(r.RepetitionNumber())}
	}
	var vals []string
	seen := set{}
	for _, l := range r.Labels {
		if p, v, ok := strings.Cut(l, ":"); ok && p == d && !seen.has(v) {
			seen.add(v)
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return []string{None}
	}
	sort.Strings(vals)
	return vals
}

func cross(keys [][]string, vals []string) [][]string {
	out := make([][]string, 0, len(keys)*len(vals))
	for _, k := range keys {
		for _, v := range vals {
			nk := append(append([]string(nil), k...), v)
			out = append(out, nk)
		}
	}
	return out
}

// keyLess orders rows by arm (fault, then null, then any other) and then
// by each key value, with (none) last.
func keyLess(a, b []string) bool {
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		if i == 0 {
			if ra, rb := armRank(a[0]), armRank(b[0]); ra != rb {
				return ra < rb
			}
		}
		if a[i] == None || b[i] == None {
			return b[i] == None
		}
		return a[i] < b[i]
	}
	return false
}

func armRank(arm string) int {
	switch arm {
	case "fault":
		return 0
	case "null":
		return 1
	}
	return 2
}

type set map[string]bool

func (s set) add(v string) {
	if v != "" {
		s[v] = true
	}
}
func (s set) has(v string) bool { return s[v] }
func (s set) sorted() []string {
	out := make([]string, 0, len(s))
	for v := range s {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func orNone(vals []string) string {
	if len(vals) == 0 {
		return "none"
	}
	return strings.Join(vals, ", ")
}

const notRecorded = "(not recorded)"

func orNotRecorded(v string) string {
	if v == "" {
		return notRecorded
	}
	return v
}

func orNone1(v string) string {
	if v == "" {
		return None
	}
	return v
}
