package aggregate

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/reports"
)

// TestReadsWhatTheReportersWrite writes run records with the record's
// own writer and checks that this package reads exactly the runs that
// record.ReadRuns reads, and counts them as expected.
func TestReadsWhatTheReportersWrite(t *testing.T) {
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	folder, err := record.NewFolder(t.TempDir(), "disagree", start)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := []verdict.Verdict{verdict.Violated, verdict.Preserved, verdict.Preserved, verdict.InsufficientData}
	for i, v := range verdicts {
		run := verdict.Run{
			RunID: fmt.Sprintf("run-%d", i), Suite: "disagree", Scenario: "worker-power-off", Arm: "fault",
			FaultClass: "power", FaultKind: "power-off", Labels: []string{"class:crash-stop", "arm:fault"},
			Started: start.Add(time.Duration(i) * time.Minute), Ended: start.Add(time.Duration(i)*time.Minute + 30*time.Second),
			RunVerdict: verdict.RunJudged,
			Judgements: []verdict.Judgement{{Invariant: "single-copy", Phase: verdict.Safety, Verdict: v, Reason: "written by the reporter", Sources: []string{"cri/worker1"}, At: start}},
			Timings:    map[string]float64{"window": 30},
			Lab:        verdict.LabInfo{Name: "lab11", Kind: "local", TimerProfile: "fast"},
			GitCommit:  "abc", ConfigHash: "sha256:00", SpecState: "passed",
		}
		if err := folder.AppendRun(run); err != nil {
			t.Fatal(err)
		}
	}
	if err := folder.AppendRun(verdict.Run{RunID: "ineffective", Suite: "disagree", Scenario: "worker-power-off", Arm: "fault",
		Started: start.Add(time.Hour), RunVerdict: verdict.FaultIneffective, RunReason: "probe saw nothing",
		Judgements: []verdict.Judgement{{Invariant: "single-copy", Phase: verdict.Safety, Verdict: verdict.Violated}},
		Lab:        verdict.LabInfo{Name: "lab11", Kind: "local"}}); err != nil {
		t.Fatal(err)
	}

	theirs, err := record.ReadRuns(folder.Dir)
	if err != nil {
		t.Fatal(err)
	}
	table := []verdict.Inapplicable{{FaultClass: "power", Invariant: "clock-monotonic", Reason: "power-off does not touch clocks"}}
	if err := folder.WriteApplicability(table); err != nil {
		t.Fatal(err)
	}
	in, err := ReadRunFolders([]string{folder.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Records) != len(theirs) || len(in.CutShort) != 0 {
		t.Fatalf("read %d records (%v cut short), record.ReadRuns read %d", len(in.Records), in.CutShort, len(theirs))
	}
	for i := range theirs {
		if !reflect.DeepEqual(in.Records[i].Run, theirs[i]) {
			t.Errorf("record %d differs:\n ours   %+v\n theirs %+v", i, in.Records[i].Run, theirs[i])
		}
		if in.Records[i].Line != i+1 {
			t.Errorf("record %d: line %d", i, in.Records[i].Line)
		}
	}
	if got := in.Applicability[folder.Dir]; !reflect.DeepEqual(got, table) {
		t.Errorf("applicability table read back as %+v", got)
	}
	rep, err := Build(in, [][]string{{ByInvariant}})
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, rep.Findings[0], "fault", "single-copy")
	if r.Tally.Violated != 1 || r.Tally.Preserved != 2 || r.Tally.Other[verdict.InsufficientData] != 1 || r.Excluded != 1 || r.Runs != 4 {
		t.Errorf("row %+v, want 1/3 with 1 insufficient data, 1 excluded, 4 runs", r)
	}
}

// TestReadsTheRoleFieldsTheReportersWrite writes a control run and a
// finding with every field added for honest rates through the record's
// writer: they read back whole, the control is a control row and no
// finding row, and the finding's exercised flag and violation kind reach
// its row.
func TestReadsTheRoleFieldsTheReportersWrite(t *testing.T) {
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	folder, err := record.NewFolder(t.TempDir(), "disagree", start)
	if err != nil {
		t.Fatal(err)
	}
	base := verdict.Run{Suite: "disagree", Arm: "fault", Started: start, Ended: start.Add(time.Minute), RunVerdict: verdict.RunJudged,
		Lab:  verdict.LabInfo{Name: "lab11", Kind: "local", TimerProfile: "fast"},
		Load: []verdict.Load{{At: start, One: 1.5, Five: 1, Fifteen: 0.5}, {At: start.Add(time.Minute), One: 2.5, Five: 1.5, Fifteen: 0.75}}}
	finding := base
	finding.RunID, finding.Scenario, finding.Role = "f", "writer-cut", verdict.RoleFinding
	finding.Effect = &verdict.EffectCoverage{Probes: 4, Observed: 4, Required: 0.5}
	finding.Judgements = []verdict.Judgement{
		{Invariant: "acknowledged-writes-survive", Phase: verdict.Convergence, Verdict: verdict.Violated, Reason: "lost 1 of 42", Exercised: verdict.Exercised(), Exercise: "42 acknowledged writes", Violation: "lost-write", During: "settle"},
		{Invariant: "single-copy", Phase: verdict.Safety, Verdict: verdict.Preserved, Reason: "never moved", Exercised: verdict.NotExercised(), Exercise: "the pod never moved", During: "window"},
	}
	control := base
	control.RunID, control.Scenario, control.Role, control.ControlOf = "c", "control-single-copy", verdict.RoleControl, []string{"single-copy"}
	control.Judgements = []verdict.Judgement{{Invariant: "single-copy", Phase: verdict.Safety, Verdict: verdict.Violated, Reason: "two copies", Exercised: verdict.Exercised(), During: "window"}}
	for _, r := range []verdict.Run{finding, control} {
		if err := folder.AppendRun(r); err != nil {
			t.Fatal(err)
		}
	}
	in, err := ReadRunFolders([]string{folder.Dir})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []verdict.Run{finding, control} {
		if !reflect.DeepEqual(in.Records[i].Run, want) {
			t.Errorf("record %d read back as\n %+v\nwant\n %+v", i, in.Records[i].Run, want)
		}
	}
	rep, err := Build(in, [][]string{{ByInvariant}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Findings[0].Rows {
		if r.Key[1] == "single-copy" && r.Tally.Violated != 0 {
			t.Errorf("the control's VIOLATED is in a finding row: %+v", r)
		}
	}
	if r := row(t, rep.Findings[0], "fault", "single-copy"); r.Tally.PreservedNotExercised != 1 {
		t.Errorf("single-copy row %+v", r)
	}
	if r := row(t, rep.Findings[0], "fault", "acknowledged-writes-survive"); r.Tally.Violations["lost-write"] != 1 {
		t.Errorf("writer row %+v", r)
	}
	if len(rep.Controls) != 1 || rep.Controls[0].Outcome != reports.ControlHit || rep.Controls[0].Record.Line != 2 {
		t.Errorf("controls %+v", rep.Controls)
	}
}

// TestReadsTheRepetitionFieldsTheReportersWrite writes runs of a repeated
// suite through the record's own writer, with the repetition and a
// verdict's quantities, beside a record without them as an older
// faultline wrote it: all read back whole, the older one as repetition 1,
// and the stability counts every run.
func TestReadsTheRepetitionFieldsTheReportersWrite(t *testing.T) {
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	folder, err := record.NewFolder(t.TempDir(), "splitbrain", start)
	if err != nil {
		t.Fatal(err)
	}
	old := verdict.Run{RunID: "old", Suite: "splitbrain", Scenario: "forced-delete", Arm: "fault", Started: start, Ended: start.Add(time.Minute),
		RunVerdict: verdict.RunJudged, Lab: verdict.LabInfo{Name: "lab11s", Kind: "local", TimerProfile: "fast"},
		Judgements: []verdict.Judgement{{Invariant: "acknowledged-data-survives", Phase: verdict.Convergence, Verdict: verdict.Violated, Reason: "lost 12"}}}
	repeated := old
	repeated.RunID, repeated.Repetition = "rep2", 2
	repeated.Judgements = []verdict.Judgement{{Invariant: "acknowledged-data-survives", Phase: verdict.Convergence, Verdict: verdict.Violated, Reason: "lost 6",
		Quantities: map[string]verdict.Quantity{"appends-lost": {Value: 6, Unit: "appends", Per: []string{"overlap"}}, "overlap": {Value: 2, Unit: "s"}}}}
	for _, r := range []verdict.Run{old, repeated} {
		if err := folder.AppendRun(r); err != nil {
			t.Fatal(err)
		}
	}
	in, err := ReadRunFolders([]string{folder.Dir})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []verdict.Run{old, repeated} {
		if !reflect.DeepEqual(in.Records[i].Run, want) {
			t.Errorf("record %d read back as\n %+v\nwant\n %+v", i, in.Records[i].Run, want)
		}
	}
	if in.Records[0].RepetitionNumber() != 1 {
		t.Errorf("a record without a repetition reads as repetition %d", in.Records[0].RepetitionNumber())
	}
	rep, err := Build(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Stability) != 1 || rep.Stability[0].Rate.Violated != 2 || rep.Stability[0].Repetitions != 2 || rep.Stability[0].QuantitiesText() != "appends-lost: 6 appends (1); per overlap: 3 appends/s (1); overlap: 2 s (1)" {
		t.Errorf("stability %+v (%s)", rep.Stability, rep.Stability[0].QuantitiesText())
	}
}
