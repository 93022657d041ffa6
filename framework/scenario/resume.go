package scenario

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
)

// EnvResume names a run folder for a suite to resume, as the
// -faultline.resume flag of the suite's test binary does (the flag wins):
// the scenario × arm pairs (with repetitions, each repetition of them) that
// folder already holds a finished run of are skipped, and the others run
// and append their records to it.
const EnvResume = "FAULTLINE_RESUME"

// ResumeFlag is the suite flag that names a run folder to resume:
// `ginkgo ./suites/disagree -- -faultline.resume=DIR`, or
// `go test ./suites/disagree -args -faultline.resume=DIR`.
const ResumeFlag = "faultline.resume"

// resumeFlagValue is the flag's value; registerResumeFlag binds it.
var resumeFlagValue string

// registerResumeFlag adds -faultline.resume to the test binary's flags.
// Register calls it at package initialisation, before the testing package
// parses the command line, so only binaries that register a suite take
// the flag.
func registerResumeFlag() {
	if flag.Lookup(ResumeFlag) != nil {
		return
	}
	flag.StringVar(&resumeFlagValue, ResumeFlag, "",
		"a run folder of this suite to resume: the scenario × arm pairs (each repetition of them) it holds a finished run of (JUDGED or FAULT_INEFFECTIVE) are skipped, the rest run and append to it (default $"+EnvResume+")")
}

// resumeArg is the run folder to resume as the flag, else $FAULTLINE_RESUME,
// names it, with how it was named; "" when the suite starts a new folder.
func resumeArg() (arg, how string) {
	if resumeFlagValue != "" {
		return resumeFlagValue, "-" + ResumeFlag
	}
	if v := os.Getenv(EnvResume); v != "" {
		return v, "$" + EnvResume
	}
	return "", ""
}

// pairKey names a scenario × arm pair as its spec is named.
func pairKey(scenario, arm string) string { return fmt.Sprintf("%s [%s]", scenario, arm) }

// runKey names one repetition of a scenario × arm pair: what a resumed
// folder holds a finished run of, or not.
func runKey(scenario, arm string, rep int) string {
	return fmt.Sprintf("%s [%s] repetition %d", scenario, arm, rep)
}

// runKeyOf is the runKey of a record; a record written before repetitions
// were recorded is repetition 1.
func runKeyOf(r verdict.Run) string { return runKey(r.Scenario, r.Arm, r.RepetitionNumber()) }

// resumedRun is a finished run a resumed folder already holds, which the
// resumed suite does not run again.
type resumedRun struct {
	Where      string             `json:"where"`
	RunID      string             `json:"runID"`
	RunVerdict verdict.RunVerdict `json:"runVerdict"`
	SpecState  string             `json:"specState,omitempty"`
}

// finished reports whether a run record closes its repetition of its
// scenario × arm pair for a resume. A run is finished when it reached its run verdict from its
// evidence: JUDGED, or FAULT_INEFFECTIVE (the fault's probes saw too
// little: that is the experiment's outcome, and running it again until
// the fault takes would pick which runs count). An ABORTED run reached no
// judgement (its reset, inject or heal failed, or it was interrupted)
// and runs again; so does a run with no record (killed, or cut short
// while its record was written).
func finished(r verdict.Run) bool {
	return r.RunVerdict == verdict.RunJudged || r.RunVerdict == verdict.FaultIneffective
}

// finishedRuns maps every repetition of a scenario × arm pair the records
// hold a finished run of (runKey) to the first such record. Repetitions
// are told apart by their numbers, not counted: over a pool of labs, or
// after an ABORTED run, they finish in any order, and a resume must run
// exactly those that have no finished run.
func finishedRuns(lines []record.Line) map[string]resumedRun {
	done := map[string]resumedRun{}
	for _, l := range lines {
		key := runKeyOf(l.Run)
		if _, ok := done[key]; ok || !finished(l.Run) {
			continue
		}
		done[key] = resumedRun{Where: l.Where(), RunID: l.RunID, RunVerdict: l.RunVerdict, SpecState: l.SpecState}
	}
	return done
}

// skipNote is the message of a resumed suite's skip of a finished pair.
func (r resumedRun) skipNote(folder string) string {
	where := strings.TrimPrefix(r.Where, strings.TrimSuffix(folder, "/")+"/")
	s := fmt.Sprintf("already run in the resumed run folder %s: %s is its record (run %s, %s", folder, where, r.RunID, r.RunVerdict)
	if r.SpecState != "" {
		s += ", spec " + r.SpecState
	}
	return s + ")"
}

// checkResumedProfile refuses to resume, on a lab running another timer
// profile, a folder whose runs ran with one: a paper's runs share one
// profile, and the windows were sized from it.
func checkResumedProfile(lines []record.Line, lab verdict.LabInfo) error {
	var other []string
	seen := map[string]bool{}
	for _, l := range lines {
		p := l.Lab.TimerProfile
		if p != lab.TimerProfile && !seen[p] {
			seen[p] = true
			other = append(other, fmt.Sprintf("%q (%s)", p, l.Where()))
		}
	}
	if len(other) == 0 {
		return nil
	}
	sort.Strings(other)
	return fmt.Errorf("its runs ran with timer profile %s, and lab %s runs %q: one folder's runs share one profile; resume on a lab with that profile or start a new folder", strings.Join(other, ", "), lab.Name, lab.TimerProfile)
}

// checkResumedRepetitions refuses to resume, with fewer repetitions, a
// folder that holds runs of a later one: the resumed suite would leave
// those repetitions unfinished and say nothing of them.
func checkResumedRepetitions(lines []record.Line, repeat int) error {
	most, where := 1, ""
	for _, l := range lines {
		if n := l.RepetitionNumber(); n > most {
			most, where = n, l.Where()
		}
	}
	if most <= repeat {
		return nil
	}
	return fmt.Errorf("it holds runs of repetition %d (%s) and this suite runs %d repetitions of each scenario × arm: resume it with -%s=%d (or $%s), or more (finished repetitions are skipped)", most, where, repeat, RepeatFlag, most, EnvRepeat)
}

// latestOfEachRun keeps, of the runs of one folder, the last of each
// repetition of each scenario × arm pair, in the order of the records: in
// a resumed folder a repetition's ABORTED run is followed by the run that
// replaced it, and the self-check judges the controls by the run that
// stands, in every repetition.
func latestOfEachRun(runs []verdict.Run) (latest []verdict.Run, superseded int) {
	last := map[string]int{}
	for i, r := range runs {
		last[runKeyOf(r)] = i
	}
	for i, r := range runs {
		if last[runKeyOf(r)] == i {
			latest = append(latest, r)
		}
	}
	return latest, len(runs) - len(latest)
}
