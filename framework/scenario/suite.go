package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/ledger"
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
	OpenLab func(ctx context.Context) (lab.Lab, error)
	// Sampler takes the snapshots every invariant is judged from.
	Sampler evidence.Sampler
	// SampleEvery is the pause between snapshots in the window and while
	// settling. Default 1s.
	SampleEvery time.Duration
	// Applicability is the table NOT_APPLICABLE comes from. Default
	// invariant.Applicability.
	Applicability invariant.Table
	// VerifyLab checks, before anything is touched, that the cluster
	// behind the lab is the lab's own (it carries the lab's marker), so a
	// config pointing at someone else's cluster is refused. Optional.
	VerifyLab func(ctx context.Context, l lab.Lab) error
	// Prepare runs after reset and the clean-start check, before the
	// baseline: install fixtures and wait for them. Optional.
	Prepare func(ctx context.Context, l lab.Lab) error
	// ReportsRoot is where run folders are made. Default record.Root().
	ReportsRoot string
	// TableOrder runs the scenarios in the order of the table, whatever
	// the seed, for suites whose scenarios are arms read side by side (a
	// control before its experiment). Ginkgo shuffles top-level containers
	// and orders the specs of one container by where they are declared,
	// which is one place for every scenario; so the scenarios then share
	// one Ordered container named after the suite, Serial as every
	// scenario is, and ContinueOnFailure so that a failed scenario does
	// not skip the next.
	TableOrder bool
}

// suiteState is what one suite process shares across its specs.
type suiteState struct {
	name       string
	cfg        Suite
	lab        lab.Lab
	labInfo    verdict.LabInfo
	commit     string
	configHash string
	folder     *record.Folder
}

var (
	registerMu sync.Mutex
	registered bool
)

// Register adds the table's specs and the suite-level nodes to the Ginkgo
// tree. Call it once per suite, at the top level:
//
//	var _ = scenario.Register(suite, table)
//
// It panics on a malformed table or Suite, since the tree cannot be built.
func Register(s Suite, table []Scenario) bool {
	registerMu.Lock()
	defer registerMu.Unlock()
	if registered {
		panic("scenario.Register called twice: a suite registers all its scenarios in one table")
	}
	registered = true
	if err := validateSuite(s); err != nil {
		panic(err.Error())
	}
	if err := ValidateTable(table); err != nil {
		panic(err.Error())
	}
	if s.SampleEvery <= 0 {
		s.SampleEvery = time.Second
	}
	if s.Applicability == nil {
		s.Applicability = invariant.Applicability
	}
	if err := s.Applicability.Validate(); err != nil {
		panic(fmt.Sprintf("suite %s: applicability table: %v", s.Name, err))
	}
	st := &suiteState{name: s.Name, cfg: s}
	registerSuiteNodes(st)
	scenarios := func() {
		for _, sc := range table {
			registerScenario(st, sc)
		}
	}
	if s.TableOrder {
		Describe(s.Name, Ordered, ContinueOnFailure, Serial, scenarios)
	} else {
		scenarios()
	}
	return true
}

func validateSuite(s Suite) error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("no name"))
	}
	if s.OpenLab == nil {
		errs = append(errs, errors.New("no OpenLab"))
	}
	if s.Sampler == nil {
		errs = append(errs, errors.New("no Sampler"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("suite %q: %w", s.Name, err)
	}
	return nil
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
}

func registerSuiteNodes(st *suiteState) {
	SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
		l := st.open(ctx)
		rep, err := ledger.HealAll(ctx, l)
		if !rep.Empty() {
			fmt.Fprintf(GinkgoWriter, "%s\n", rep)
			AddReportEntry("heal ledger on start", rep.String())
		}
		if err != nil {
			Fail(fmt.Sprintf("healing what the heal ledger of lab %s holds before the suite: %v\n%s", l.Info().Name, err, rep))
		}
		if len(rep.Busy) > 0 {
			Fail(fmt.Sprintf("lab %s has faults held by another running process; two runs on one lab would judge each other's faults:\n%s", l.Info().Name, rep))
		}
		root := st.cfg.ReportsRoot
		if root == "" {
			if root, err = record.Root(); err != nil {
				Fail(err.Error())
			}
		}
		folder, err := record.NewFolder(root, st.name, time.Now())
		if err != nil {
			Fail(err.Error())
		}
		b, _ := json.Marshal(suiteStart{Folder: folder.Dir})
		return b
	}, func(ctx SpecContext, data []byte) {
		var start suiteStart
		if err := json.Unmarshal(data, &start); err != nil {
			Fail(fmt.Sprintf("suite start: %v", err))
		}
		st.open(ctx)
		st.folder = &record.Folder{Dir: start.Folder}
		fmt.Fprintf(GinkgoWriter, "run folder: %s\n", start.Folder)
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
		runs, err := st.folder.Finish(st.name, report, st.cfg.Applicability)
		if err != nil {
			Fail(fmt.Sprintf("writing the run folder %s: %v", st.folder.Dir, err))
		}
		fmt.Printf("faultline: %d runs; reports in %s\n", len(runs), st.folder.Dir)
	})
}

// open opens the lab once per process and refuses a config that is not a
// lab before anything else touches it.
func (st *suiteState) open(ctx context.Context) lab.Lab {
	if st.lab != nil {
		return st.lab
	}
	l, err := st.cfg.OpenLab(ctx)
	if err != nil {
		Fail(fmt.Sprintf("opening the lab: %v", err))
	}
	if err := RefuseNonLab(l); err != nil {
		l.Close()
		Fail(err.Error())
	}
	if st.cfg.VerifyLab != nil {
		if err := st.cfg.VerifyLab(ctx, l); err != nil {
			l.Close()
			Fail(fmt.Sprintf("lab %s: refusing to run: %v (nothing was touched)", l.Info().Name, err))
		}
	}
	st.lab = l
	info := l.Info()
	st.labInfo = verdict.LabInfo{
		Name: info.Name, Kind: info.Kind, Topology: info.Topology, ResetKind: string(info.ResetKind),
		KubernetesVersion: info.KubernetesVersion, EtcdVersion: info.EtcdVersion,
		TimerProfile: info.TimerProfile, Timers: info.Timers,
	}
	st.commit = record.GitCommit(ctx)
	if st.configHash, err = record.ConfigHash(l.Config()); err != nil {
		Fail(err.Error())
	}
	return l
}
