package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// Suite is what the engine needs from a suite besides its table.
type Suite struct {
	// Name names the suite in run folders and records ("disagree").
	Name string
	// OpenLab opens the lab the suite runs against. It must not change
	// the lab: the engine refuses configs without `lab: true` after it.
	// A run over a pool of labs ($FAULTLINE_LABS, $FAULTLINE_POOL) does
	// not call it: each process opens its own lab with OpenLabEntry.
	OpenLab func(ctx context.Context) (lab.Lab, error)
	// OpenLabEntry opens one lab of a pool, from its entry as the pool
	// names it, under the same rule as OpenLab. Default OpenLabArg: an
	// entry is a lab file or a topology name, as FAULTLINE_LAB takes.
	OpenLabEntry func(ctx context.Context, entry string) (lab.Lab, error)
	// Sampler takes the snapshots every invariant is judged from.
	Sampler evidence.Sampler
	// SampleEvery is the interval between the sampler's ticks in the
	// pre-fault window, the window, heal and settle, and between the
	// window's probes of the fault's effect. A Streamer sampler keeps it
	// whatever a source does; another sampler is asked once per tick, a
	// Sample that runs long delaying the next. Default 1s.
	SampleEvery time.Duration
	// Applicability is the table NOT_APPLICABLE comes from. Default
	// invariant.Applicability.
	Applicability invariant.Table
	// Shape is the lab shape every scenario of the suite needs. It is
	// checked when the suite starts, before anything is touched (the heal
	// ledger included): a lab without it is refused, naming what it
	// lacks. A scenario's own Shape is checked before its reset instead,
	// and skips only that scenario. Optional.
	Shape Shape
	// VerifyLab checks, before anything is touched, that the cluster
	// behind the lab is the lab's own (it carries the lab's marker), so a
	// config pointing at someone else's cluster is refused. Optional.
	VerifyLab func(ctx context.Context, l lab.Lab) error
	// Prepare runs after reset and the clean-start check, before the
	// baseline: install the fixtures the scenario needs and wait for
	// them. Optional.
	Prepare func(ctx context.Context, l lab.Lab, sc Scenario) error
	// SelfCheck runs CheckControls over the suite's runs once they are
	// all recorded, and fails the suite on any control that did not come
	// out as it must; the null arms' gaps are printed. For suites whose
	// table holds positive controls and null arms.
	SelfCheck bool
	// ReportsRoot is where run folders are made. Default record.Root().
	ReportsRoot string
	// TableOrder runs the scenarios in the order of the table, whatever
	// the seed, for suites whose scenarios are arms read side by side (a
	// control before its experiment). Ginkgo shuffles top-level containers
	// and orders the specs of one container by where they are declared,
	// which is one place for every scenario; so the scenarios then share
	// one Ordered container named after the suite, Serial as every
	// scenario is (over a pool of labs: not Serial, see Register, but one
	// Ordered container runs on one process, so such a suite gains
	// nothing from a pool), and ContinueOnFailure so that a failed
	// scenario does not skip the next.
	TableOrder bool
}

// suiteState is what one suite process shares across its specs: the
// engine, and the run folder the Ginkgo skin writes.
type suiteState struct {
	*engine
	folder *runFolder
	// resumed are the runs (scenario × arm × repetition) a resumed folder
	// already holds a finished run of (key runKey); nil for a new folder.
	resumed map[string]resumedRun
	// pooled: the run is over a pool of labs, one per Ginkgo process, so
	// its specs are not Serial (decided when the tree is built).
	pooled bool
	// byPair are the table's scenarios by pairKey, to find the scenario
	// of a previewed spec.
	byPair map[string]Scenario
	// table is the suite's table, whose specs RunSuite adds to the tree.
	table []Scenario
	// repeat is how many times each scenario × arm runs (-faultline.repeat);
	// repeatErr, when the setting was malformed, refuses the suite at its
	// start, before anything is touched.
	repeat    int
	repeatErr error
}

// registration is the suite Register registered, whose specs RunSuite
// adds to the tree once the command line is parsed.
var registration struct {
	sync.Mutex
	st *suiteState
	// specsAdded: RunSuite added the table's specs.
	specsAdded bool
}

// Register adds the suite-level nodes to the Ginkgo tree and keeps the
// table, whose specs the suite's test function adds with RunSuite. Call it
// once per suite, at the top level:
//
//	var _ = scenario.Register(suite, table)
//
// The specs are added by RunSuite, not here, because how many of them
// there are (-faultline.repeat) is known only once the test binary's
// command line is parsed, after package initialisation. A suite whose test
// calls Ginkgo's RunSpecs instead fails as its tree is built, saying so.
//
// It panics on a malformed table or Suite, since the tree cannot be built.
func Register(s Suite, table []Scenario) bool {
	registration.Lock()
	defer registration.Unlock()
	if registration.st != nil {
		panic("scenario.Register called twice: a suite registers all its scenarios in one table")
	}
	registerResumeFlag()
	registerRepeatFlag()
	s, err := s.withDefaults()
	if err != nil {
		panic(err.Error())
	}
	if err := ValidateTable(table); err != nil {
		panic(err.Error())
	}
	st := &suiteState{engine: &engine{name: s.Name, cfg: s, out: GinkgoWriter}, pooled: poolGiven(), byPair: map[string]Scenario{}, table: table, repeat: 1}
	for _, sc := range table {
		st.byPair[pairKey(sc.ID, string(sc.arm()))] = sc
	}
	registration.st = st
	registerSuiteNodes(st)
	// Entered when the tree is built, after RunSuite had its chance to add
	// the specs.
	Describe(s.Name+" (scenario.RunSuite adds the table's specs)", func() {
		registration.Lock()
		added := registration.specsAdded
		registration.Unlock()
		if !added {
			panic(errNoRunSuite)
		}
	})
	return true
}

// addRegisteredSpecs adds the specs of the suite Register registered, once;
// nothing when no suite was registered.
func addRegisteredSpecs() {
	registration.Lock()
	defer registration.Unlock()
	if registration.st == nil || registration.specsAdded {
		return
	}
	registration.specsAdded = true
	registration.st.registerSpecs()
}

// registerSpecs adds a spec per scenario × arm × repetition to the tree,
// as top-level containers (Ginkgo shuffles those by its seed, and runs the
// specs inside one in the order they are declared).
//
// Without repetitions it is one container per scenario × arm, named by
// its pairKey (under TableOrder, one Ordered container of them all).
//
// With N repetitions the suite runs in rounds: each round runs every
// selected scenario × arm once, and the next round starts after it,
// so that drift over hours (the machine's load, a lab that ages) falls on
// every scenario alike instead of lining up with one. Ginkgo repeats no
// spec by itself (its --repeat reruns the whole suite, into a new run
// folder each time) and orders nothing across containers but by its
// shuffle, so the rounds are containers of their own: each scenario's
// arms in one container per round (fault, then null, as the table gives
// them: one container runs its specs in order), labelled
// repetition:<round>, and each round's containers given SpecPriority
// -round, which Ginkgo schedules before every lower priority whatever its
// shuffle. Within a round the scenarios are shuffled by Ginkgo's seed as
// without repetitions. Under TableOrder each round is one Ordered
// container in the order of the table, so that over a pool of labs each
// round can go to a lab of its own.
func (st *suiteState) registerSpecs() {
	n, err := repeatCount()
	if err != nil {
		st.repeatErr = err
	}
	st.repeat = n
	if n == 1 {
		scenarios := func() {
			for _, sc := range st.table {
				registerScenario(st, sc, 1)
			}
		}
		if st.cfg.TableOrder {
			Describe(st.name, st.serial(Ordered, ContinueOnFailure, scenarios)...)
		} else {
			scenarios()
		}
		return
	}
	for rep := 1; rep <= n; rep++ {
		round := []any{SpecPriority(-rep), Label(repetitionLabel(rep))}
		if st.cfg.TableOrder {
			Describe(st.name+", "+repetitionText(rep, n), st.serial(append(round, Ordered, ContinueOnFailure, func() {
				for _, sc := range st.table {
					registerScenario(st, sc, rep)
				}
			})...)...)
			continue
		}
		for _, arms := range armsByScenario(st.table) {
			Describe(repetitionText(rep, n), st.serial(append(round, func() {
				for _, sc := range arms {
					registerScenario(st, sc, rep)
				}
			})...)...)
		}
	}
}

// armsByScenario groups the table's rows by scenario ID, in the order
// each ID first appears, each ID's arms in the table's order.
func armsByScenario(table []Scenario) [][]Scenario {
	var out [][]Scenario
	at := map[string]int{}
	for _, sc := range table {
		i, ok := at[sc.ID]
		if !ok {
			i = len(out)
			at[sc.ID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], sc)
	}
	return out
}

// serial adds to a container's arguments the decorator that keeps the
// suite's specs one at a time.
// On one lab, every spec is Serial: under `ginkgo -p` Ginkgo then runs
// them all on process 1, after any parallel specs, and never two at once
// on the one lab. Over a pool of labs each Ginkgo process owns a lab of
// its own and runs its specs one after another on it, so the specs are
// not Serial: Serial would send them all to process 1 and its lab, and
// leave the other labs idle.
func (st *suiteState) serial(args ...any) []any {
	if st.pooled {
		return args
	}
	return append([]any{Serial}, args...)
}

// withDefaults checks s and fills in its defaults.
func (s Suite) withDefaults() (Suite, error) {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("no name"))
	}
	if s.OpenLab == nil {
		errs = append(errs, errors.New("no OpenLab"))
	}
	if s.OpenLabEntry == nil {
		s.OpenLabEntry = OpenLabArg
	}
	if s.Sampler == nil {
		errs = append(errs, errors.New("no Sampler"))
	}
	if err := s.Shape.validate(); err != nil {
		errs = append(errs, err)
	}
	if s.SampleEvery <= 0 {
		s.SampleEvery = defaultSampleEvery
	}
	if s.Applicability == nil {
		s.Applicability = invariant.Applicability
	}
	if err := s.Applicability.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("applicability table: %v", err))
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("suite %q: %w", s.Name, err)
	}
	return s, nil
}

// RefuseNonLab returns an error unless l's config declares a disposable lab.
func RefuseNonLab(l lab.Lab) error {
	c := l.Config()
	if c == nil {
		return fmt.Errorf("lab %s has no config, so it cannot say it is a lab; refusing to run destructive scenarios against it (nothing was touched)", l.Info().Name)
	}
	if !c.Lab {
		where := c.Path()
		if where == "" {
			where = "its config"
		}
		return fmt.Errorf("lab %s: %s does not say `lab: true`; faultline runs destructive scenarios only against a config that declares a disposable lab, so it refused (nothing was touched)", c.Name, where)
	}
	return nil
}

// suiteStart is what process 1 hands the other parallel processes.
type suiteStart struct {
	Folder string `json:"folder"`
	// Resumed are the runs (runKey) a resumed folder held a finished run
	// of when the suite started, read once by process 1 before any run
	// appended.
	Resumed map[string]resumedRun `json:"resumed,omitempty"`
	// Pool are the labs of a run over a pool, as process 1 read and
	// checked them: process N opens Pool[N-1].
	Pool []string `json:"pool,omitempty"`
}

// labLogName is the file the lab's own steps go to: lab.log, or over a
// pool lab-<name>.log, one per lab, so that each lab's steps read in
// order.
func (st *suiteState) labLogName() string {
	if st.entry == "" {
		return LabLogName
	}
	return "lab-" + record.SafeName(st.labInfo.Name) + ".log"
}

func registerSuiteNodes(st *suiteState) {
	SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
		// A suite that links no renderer would run every scenario and only
		// then fail for want of summary.md: refuse before the lab is opened.
		if len(record.RendererNames()) == 0 {
			Fail(record.ErrNoRenderer.Error())
		}
		// Opening and checking the lab and healing the ledger are a
		// client's work, but a refused lab must leave no run folder: the
		// client's lines are held until there is one.
		if err := holdClientLogs(); err != nil {
			Fail(err.Error())
		}
		fail := func(msg string) {
			spillClientLogs(GinkgoWriter)
			Fail(msg)
		}
		if st.repeatErr != nil {
			fail(st.repeatErr.Error())
		}
		pool, err := PoolFromEnv()
		if err != nil {
			fail(err.Error() + " (nothing was touched)")
		}
		var toRun []plannedRun
		if pool != nil {
			var ok bool
			if toRun, ok = st.previewedRuns(); !ok {
				fail(errNoPreview.Error() + " (nothing was touched)")
			}
		}
		// A folder to resume is checked, and taken, before the lab is
		// opened: a bad one touches nothing.
		resumed, err := openResumed(st.name)
		if err != nil {
			fail(err.Error())
		}
		var done map[string]resumedRun
		if resumed != nil {
			if err := checkResumedRepetitions(resumed.Lines, st.repeat); err != nil {
				fail(fmt.Sprintf("resuming run folder %s: %v (nothing was touched)", resumed.Folder.Dir, err))
			}
			done = finishedRuns(resumed.Lines)
		}
		start := suiteStart{Resumed: done}
		engines := []*engine{st.engine}
		if pool != nil {
			suite, _ := GinkgoConfiguration()
			var note string
			engines, note, err = st.poolEngines(ctx, pool, suite.ParallelTotal, withoutFinished(toRun, done))
			if err != nil {
				fail(err.Error())
			}
			start.Pool = pool.InUse(suite.ParallelTotal)
			fmt.Fprintf(GinkgoWriter, "%s\n", note)
			AddReportEntry("lab pool", note)
		} else if err := st.open(ctx); err != nil {
			fail(err.Error())
		}
		if resumed != nil {
			for _, e := range engines {
				if err := checkResumedProfile(resumed.Lines, e.labInfo); err != nil {
					fail(fmt.Sprintf("resuming run folder %s: %v (nothing was touched)", resumed.Folder.Dir, err))
				}
			}
		}
		// Each lab's own heal ledger (in its state dir), healed before any
		// process runs a spec on it.
		for _, e := range engines {
			rep, err := e.healLedger(ctx)
			if !rep.Empty() {
				fmt.Fprintf(GinkgoWriter, "%s\n", rep)
				AddReportEntry("heal ledger on start", rep.String())
			}
			if err != nil {
				fail(err.Error())
			}
		}
		// The other processes open their own labs; this one keeps its own.
		for _, e := range engines[1:] {
			if err := e.lab.Close(); err != nil {
				fmt.Fprintf(GinkgoWriter, "closing lab %s: %v\n", e.labInfo.Name, err)
			}
		}
		if resumed != nil {
			start.Folder = resumed.Folder.Dir
			note, err := resumeFolder(resumed, start.Resumed)
			if err != nil {
				fail(err.Error())
			}
			fmt.Fprintf(GinkgoWriter, "%s\n", note)
			AddReportEntry("resumed run folder", note)
		} else {
			dir, err := newRunFolder(st.cfg.ReportsRoot, st.name)
			if err != nil {
				fail(err.Error())
			}
			start.Folder = dir
		}
		if err := captureClientLogs(filepath.Join(start.Folder, ClientLogName)); err != nil {
			Fail(err.Error())
		}
		b, _ := json.Marshal(start)
		return b
	}, func(ctx SpecContext, data []byte) {
		var start suiteStart
		if err := json.Unmarshal(data, &start); err != nil {
			Fail(fmt.Sprintf("suite start: %v", err))
		}
		// client-go's lines go to the run folder before this process opens
		// the lab: opening it is already a client's work.
		st.folder = openRunFolder(start.Folder)
		st.resumed = start.Resumed
		if err := captureClientLogs(st.folder.f.Path(ClientLogName)); err != nil {
			Fail(err.Error())
		}
		if len(start.Pool) > 0 {
			p := GinkgoParallelProcess()
			if p > len(start.Pool) {
				Fail(fmt.Sprintf("ginkgo process %d has no lab: the pool process 1 checked has %d in use (%s)", p, len(start.Pool), strings.Join(start.Pool, ", ")))
			}
			if st.lab == nil {
				st.entry = start.Pool[p-1]
			} else if st.entry != start.Pool[p-1] {
				Fail(fmt.Sprintf("ginkgo process %d opened lab %s, not %s, its entry of the pool", p, st.entry, start.Pool[p-1]))
			}
		}
		if err := st.open(ctx); err != nil {
			Fail(err.Error())
		}
		if pr, ok := st.lab.(lab.ProgressReporter); ok {
			f, err := os.OpenFile(st.folder.f.Path(st.labLogName()), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				Fail(fmt.Sprintf("the lab's log file: %v", err))
			}
			DeferCleanup(f.Close)
			pr.SetProgress(f)
		}
		on := ""
		if st.entry != "" {
			on = fmt.Sprintf(" on lab %s (ginkgo process %d of the pool)", st.labInfo.Name, GinkgoParallelProcess())
		}
		fmt.Fprintf(GinkgoWriter, "run folder: %s%s (client-go's log lines in %s, the lab's steps in %s)\n", start.Folder, on, ClientLogName, st.labLogName())
	})

	SynchronizedAfterSuite(func() {
		if st.lab != nil {
			if err := st.lab.Close(); err != nil {
				fmt.Fprintf(GinkgoWriter, "closing lab: %v\n", err)
			}
		}
	}, func() {})

	ReportAfterSuite("faultline run folder", func(report Report) {
		if st.folder == nil {
			return
		}
		runs, err := st.finishFolder(report)
		if err != nil {
			Fail(err.Error())
		}
		latest, superseded := latestOfEachRun(runs)
		repeated := ""
		if st.repeat > 1 {
			repeated = fmt.Sprintf(", %d repetitions of each scenario × arm", st.repeat)
		}
		if superseded > 0 {
			fmt.Printf("faultline: %d runs (%d of them ABORTED and run again after)%s; reports in %s\n", len(runs), superseded, repeated, st.folder.dir())
		} else {
			fmt.Printf("faultline: %d runs%s; reports in %s\n", len(runs), repeated, st.folder.dir())
		}
		if !st.cfg.SelfCheck {
			return
		}
		lines, failure := selfCheck(latest)
		fmt.Print(lines)
		if failure != "" {
			Fail(failure)
		}
	})
}

// selfCheck is Suite.SelfCheck over the runs of a suite run: the lines to
// print (the null arms' gaps), and the suite's failure, "" when every
// control came out as it must.
func selfCheck(runs []verdict.Run) (report, failure string) {
	var b strings.Builder
	for _, gap := range Gaps(runs) {
		fmt.Fprintf(&b, "self-check: no negative control for %s\n", gap)
	}
	if problems := CheckControls(runs); len(problems) > 0 {
		failure = fmt.Sprintf("self-check: positive and negative controls: %d did not come out as they must:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	return b.String(), failure
}

// defaultSampleEvery is the engine's tick when a suite sets none.
const defaultSampleEvery = time.Second
