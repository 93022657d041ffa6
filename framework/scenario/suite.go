package scenario

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
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
