package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/lab"
)

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
