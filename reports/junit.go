package reports

import (
	"encoding/xml"
	"fmt"
	"os"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline/faultline/framework/verdict"
)

// WriteGinkgoJUnit writes Ginkgo's own JUnit report of the suite.
func (f *Folder) WriteGinkgoJUnit(report types.Report) error {
	if err := reporters.GenerateJUnitReport(report, f.Path(GinkgoJUnitFile)); err != nil {
		return fmt.Errorf("writing %s: %w", GinkgoJUnitFile, err)
	}
	return nil
}

// Properties of every verdict test case, so tools (and tests) read the
// verdict from data rather than from message text.
const (
	PropRunID      = "runID"
	PropScenario   = "scenario"
	PropArm        = "arm"
	PropInvariant  = "invariant"
	PropPhase      = "phase"
	PropVerdict    = "verdict"
	PropRunVerdict = "runVerdict"
)

// VerdictJUnit builds the verdict JUnit: one test case per run ×
// invariant. VIOLATED is a failure; PRESERVED passes; INSUFFICIENT_DATA,
// NOT_APPLICABLE and DETECTOR_INVALID are skipped with the reason; every
// case of a run whose run verdict is not JUDGED (FAULT_INEFFECTIVE,
// ABORTED) is skipped with the run's reason, since none of its verdicts
// count.
func VerdictJUnit(suite string, runs []verdict.Run) reporters.JUnitTestSuites {
	ts := reporters.JUnitTestSuite{Name: suite, Package: suite}
	for _, r := range runs {
		ts.Time += r.Ended.Sub(r.Started).Seconds()
		if ts.Timestamp == "" || r.Started.Format("2006-01-02T15:04:05") < ts.Timestamp {
			ts.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
		}
		for _, j := range r.Judgements {
			tc := reporters.JUnitTestCase{
				Name:      fmt.Sprintf("%s [%s] %s", r.Scenario, r.Arm, j.Invariant),
				Classname: suite + "." + r.Scenario,
				Time:      r.Ended.Sub(r.Started).Seconds(),
				Properties: &reporters.JUnitProperties{Properties: []reporters.JUnitProperty{
					{Name: PropRunID, Value: r.RunID},
					{Name: PropScenario, Value: r.Scenario},
					{Name: PropArm, Value: r.Arm},
					{Name: PropInvariant, Value: j.Invariant},
					{Name: PropPhase, Value: string(j.Phase)},
					{Name: PropVerdict, Value: string(j.Verdict)},
					{Name: PropRunVerdict, Value: string(r.RunVerdict)},
				}},
			}
			ts.Tests++
			switch {
			case r.RunVerdict != verdict.RunJudged:
				tc.Status = "skipped"
				tc.Skipped = &reporters.JUnitSkipped{Message: fmt.Sprintf("%s: %s (the invariant's own verdict, not counted: %s: %s)", r.RunVerdict, r.RunReason, j.Verdict, j.Reason)}
				ts.Skipped++
			case j.Verdict == verdict.Violated:
				tc.Status = "failed"
				tc.Failure = &reporters.JUnitFailure{Type: "violated", Message: j.Reason, Description: describeJudgement(j)}
				ts.Failures++
			case j.Verdict == verdict.Preserved:
				tc.Status = "passed"
			default:
				tc.Status = "skipped"
				tc.Skipped = &reporters.JUnitSkipped{Message: fmt.Sprintf("%s: %s", j.Verdict, j.Reason)}
				ts.Skipped++
			}
			ts.TestCases = append(ts.TestCases, tc)
		}
	}
	return reporters.JUnitTestSuites{
		Tests: ts.Tests, Failures: ts.Failures, Time: ts.Time,
		TestSuites: []reporters.JUnitTestSuite{ts},
	}
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
