package record

import (
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline/faultline/framework/verdict"
)

// WriteGinkgoJUnit writes Ginkgo's own JUnit report of the suite. In a
// folder that already holds one (a resumed folder whose earlier suite
// process ended with its report written), the earlier test suites are
// kept and this report's are added after them: the file holds one test
// suite per suite process that finished in the folder, as Ginkgo's own
// merge of parallel reports does. Ginkgo's report cannot be rebuilt from
// the run records, so it is never rewritten from them.
func (f *Folder) WriteGinkgoJUnit(report types.Report) error {
	path := f.Path(GinkgoJUnitFile)
	earlier, err := readJUnit(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := reporters.GenerateJUnitReport(report, path); err != nil {
			return fmt.Errorf("writing %s: %w", GinkgoJUnitFile, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("writing %s: the folder's earlier one is kept as it is, and this suite's is not written: %w", GinkgoJUnitFile, err)
	}
	tmp := path + ".this-run"
	defer os.Remove(tmp)
	if err := reporters.GenerateJUnitReport(report, tmp); err != nil {
		return fmt.Errorf("writing %s: %w", GinkgoJUnitFile, err)
	}
	this, err := readJUnit(tmp)
	if err != nil {
		return fmt.Errorf("writing %s: %w", GinkgoJUnitFile, err)
	}
	merged := earlier
	merged.Tests += this.Tests
	merged.Disabled += this.Disabled
	merged.Errors += this.Errors
	merged.Failures += this.Failures
	merged.Time += this.Time
	merged.TestSuites = append(merged.TestSuites, this.TestSuites...)
	b, err := xml.MarshalIndent(merged, "  ", "    ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", GinkgoJUnitFile, err)
	}
	if err := writeFileSynced(path, append([]byte(xml.Header), append(b, '\n')...)); err != nil {
		return fmt.Errorf("writing %s: %w", GinkgoJUnitFile, err)
	}
	return nil
}

// Properties of every verdict test case, so tools (and tests) read the
// verdict from data rather than from message text. Expected, exercised,
// violation and during are set only where they have a value.
const (
	PropRunID      = "runID"
	PropScenario   = "scenario"
	PropArm        = "arm"
	PropRole       = "role"
	PropInvariant  = "invariant"
	PropPhase      = "phase"
	PropVerdict    = "verdict"
	PropRunVerdict = "runVerdict"
	// PropExpected is the verdict a control (VIOLATED) or a null arm
	// (PRESERVED) must give; a finding expects nothing.
	PropExpected = "expected"
	// PropExpectedViolation, on a control's case, names the violation
	// kinds that count as its hit, "|"-separated, where the control
	// declares them (verdict.Run.ControlKinds); absent, any kind counts.
	PropExpectedViolation = "expectedViolation"
	PropExercised         = "exercised"
	PropViolation         = "violation"
	PropDuring            = "during"
	// PropRepetition is the run's repetition of its scenario × arm, on
	// records that carry one.
	PropRepetition = "repetition"
	// PropStability says, where the scenario × arm ran in several
	// repetitions and the invariant was judged in some, whether its
	// judged repetitions agreed ("stable") or gave both VIOLATED and
	// PRESERVED ("flaky"); PropStabilityCount is "k/n", k VIOLATED of n
	// judged. Neither changes the case's status.
	PropStability      = "stability"
	PropStabilityCount = "violatedOfJudged"
)

// Values of PropStability.
const (
	Stable = "stable"
	Flaky  = verdict.StabilityFlaky
)

// VerdictJUnit builds the verdict JUnit: one test case per run ×
// invariant, each with the run's role. Every case of a run whose run
// verdict is not JUDGED (FAULT_INEFFECTIVE, ABORTED) is skipped with the
// run's reason, since none of its verdicts count; INSUFFICIENT_DATA,
// NOT_APPLICABLE and DETECTOR_INVALID are skipped with their reason in
// every role. Otherwise a case passes when the verdict is what its role
// expects:
//   - finding: PRESERVED passes, VIOLATED fails;
//   - control, of an invariant it must break: VIOLATED (a hit) passes,
//     PRESERVED (a miss) fails, and so does a VIOLATED of a kind other
//     than those the control declares (verdict.Run.ControlKinds): another
//     detector fired, not the one the control tests; its other invariants
//     count nowhere and are skipped;
//   - null arm: PRESERVED passes, VIOLATED (a false alarm) fails.
//
// Where a scenario × arm ran in several repetitions, each case's name ends
// in its repetition, and every case of an invariant judged in some of them
// carries whether its verdict was stable or flaky over them, with k
// VIOLATED of n judged (PropStability, PropStabilityCount): a property,
// not a pass or a failure.
func VerdictJUnit(suite string, runs []verdict.Run) reporters.JUnitTestSuites {
	ts := reporters.JUnitTestSuite{Name: suite, Package: suite}
	stability := verdict.StabilityIndex(runs)
	for _, r := range runs {
		ts.Time += r.Ended.Sub(r.Started).Seconds()
		if ts.Timestamp == "" || r.Started.Format("2006-01-02T15:04:05") < ts.Timestamp {
			ts.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
		}
		role := r.RunRole()
		controlled := ControlledInvariants(r)
		for _, j := range r.Judgements {
			isControlled := role == verdict.RoleControl && slices.Contains(controlled, j.Invariant)
			expected, expectedKinds := "", []string(nil)
			switch {
			case isControlled:
				expected, expectedKinds = string(verdict.Violated), r.ControlKindsOf(j.Invariant)
			case role == verdict.RoleNull:
				expected = string(verdict.Preserved)
			}
			props := []reporters.JUnitProperty{
				{Name: PropRunID, Value: r.RunID},
				{Name: PropScenario, Value: r.Scenario},
				{Name: PropArm, Value: r.Arm},
				{Name: PropRole, Value: role},
				{Name: PropInvariant, Value: j.Invariant},
				{Name: PropPhase, Value: string(j.Phase)},
				{Name: PropVerdict, Value: string(j.Verdict)},
				{Name: PropRunVerdict, Value: string(r.RunVerdict)},
			}
			name := fmt.Sprintf("%s [%s] %s", r.Scenario, r.Arm, j.Invariant)
			var stable, count, repetition string
			if r.Repetition > 0 {
				repetition = strconv.Itoa(r.Repetition)
			}
			s := stability[verdict.StabilityKey{Suite: r.Suite, Scenario: r.Scenario, Arm: r.Arm, Invariant: j.Invariant}]
			if s.Repetitions > 1 {
				name += fmt.Sprintf(" (repetition %d)", r.RepetitionNumber())
				if s.Rate.N() > 0 {
					stable, count = Stable, fmt.Sprintf("%d/%d", s.Rate.Violated, s.Rate.N())
					if s.Flaky() {
						stable = Flaky
					}
				}
			}
			for _, p := range []reporters.JUnitProperty{
				{Name: PropExpected, Value: expected},
				{Name: PropExpectedViolation, Value: strings.Join(expectedKinds, "|")},
				{Name: PropExercised, Value: exercisedProperty(j.Exercised)},
				{Name: PropViolation, Value: j.Violation},
				{Name: PropDuring, Value: j.During},
				{Name: PropRepetition, Value: repetition},
				{Name: PropStability, Value: stable},
				{Name: PropStabilityCount, Value: count},
			} {
				if p.Value != "" {
					props = append(props, p)
				}
			}
			tc := reporters.JUnitTestCase{
				Name:       name,
				Classname:  suite + "." + r.Scenario,
				Time:       r.Ended.Sub(r.Started).Seconds(),
				Properties: &reporters.JUnitProperties{Properties: props},
			}
			ts.Tests++
			skip := func(msg string) {
				tc.Status = "skipped"
				tc.Skipped = &reporters.JUnitSkipped{Message: msg}
				ts.Skipped++
			}
			fail := func(kind, msg string) {
				tc.Status = "failed"
				tc.Failure = &reporters.JUnitFailure{Type: kind, Message: msg, Description: describeJudgement(j)}
				ts.Failures++
			}
			switch {
			case r.RunVerdict != verdict.RunJudged:
				skip(fmt.Sprintf("%s: %s (the invariant's own verdict, not counted: %s: %s)", r.RunVerdict, r.RunReason, j.Verdict, j.Reason))
			case !j.Verdict.Counts():
				skip(fmt.Sprintf("%s: %s", j.Verdict, j.Reason))
			case role == verdict.RoleControl && !isControlled:
				skip(fmt.Sprintf("control run: %s is not among the invariants it must break (%s), so its verdict counts nowhere: %s: %s", j.Invariant, orDash(strings.Join(controlled, ", ")), j.Verdict, j.Reason))
			case isControlled && j.Verdict == verdict.Preserved:
				fail("control-missed", fmt.Sprintf("positive control missed: expected VIOLATED, got PRESERVED: %s", j.Reason))
			case isControlled && verdict.OtherKind(j, expectedKinds) != "":
				fail("control-other-kind", fmt.Sprintf("positive control missed: got %s: %s", verdict.OtherKind(j, expectedKinds), j.Reason))
			case isControlled:
				tc.Status = "passed"
			case role == verdict.RoleNull && j.Verdict == verdict.Violated:
				fail("false-alarm", fmt.Sprintf("null arm (nothing injected) VIOLATED, a false alarm of the detector: %s", j.Reason))
			case j.Verdict == verdict.Violated:
				fail("violated", j.Reason)
			default:
				tc.Status = "passed"
			}
			ts.TestCases = append(ts.TestCases, tc)
		}
	}
	return reporters.JUnitTestSuites{
		Tests: ts.Tests, Failures: ts.Failures, Time: ts.Time,
		TestSuites: []reporters.JUnitTestSuite{ts},
	}
}

func exercisedProperty(e *bool) string {
	if e == nil {
		return ""
	}
	return strconv.FormatBool(*e)
}

func describeJudgement(j verdict.Judgement) string {
	s := fmt.Sprintf("%s (%s): %s", j.Invariant, j.Phase, j.Reason)
	if len(j.Sources) > 0 {
		s += fmt.Sprintf("\nsources: %v", j.Sources)
	}
	if !j.At.IsZero() {
		s += "\nat: " + j.At.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return s
}

// WriteVerdictJUnit writes the verdict JUnit of the runs.
func (f *Folder) WriteVerdictJUnit(suite string, runs []verdict.Run) error {
	b, err := xml.MarshalIndent(VerdictJUnit(suite, runs), "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", VerdictJUnitFile, err)
	}
	if err := writeFileSynced(f.Path(VerdictJUnitFile), append([]byte(xml.Header), append(b, '\n')...)); err != nil {
		return fmt.Errorf("writing %s: %w", VerdictJUnitFile, err)
	}
	return nil
}

// ReadVerdictJUnit reads a verdict JUnit file back.
func ReadVerdictJUnit(path string) (reporters.JUnitTestSuites, error) {
	return readJUnit(path)
}

func readJUnit(path string) (reporters.JUnitTestSuites, error) {
	var s reporters.JUnitTestSuites
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("reading JUnit: %w", err)
	}
	if err := xml.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("parsing JUnit %s: %w", path, err)
	}
	return s, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
