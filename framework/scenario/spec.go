package scenario

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// registerScenario is the Ginkgo skin over one repetition of one
// scenario's run: a spec (Serial on one lab, see suiteState.serial) with
// the scenario's labels whose nodes call the runner's phases (runner.go)
// in the shape DESIGN.md gives: BeforeEach reset and pre-fault,
// JustBeforeEach ledger-then-inject with the last-resort heal as a
// DeferCleanup, It the window, AfterEach heal, settle, judge and release,
// ReportAfterEach the run record. rep is the repetition (1 in a suite run
// without repetitions); its container, and the round's label, are its
// caller's (registerSpecs).
func registerScenario(st *suiteState, sc Scenario, rep int) {
	Describe(pairKey(sc.ID, string(sc.arm())), st.serial(Label(sc.AllLabels()...), func() {
		var r *run

		BeforeEach(func(ctx SpecContext) {
			r = nil
			if done, ok := st.resumed[runKey(sc.ID, string(sc.arm()), rep)]; ok {
				Skip(done.skipNote(st.folder.dir()))
			}
			if err := st.fits(sc); err != nil {
				Skip(err.Error())
			}
			r = newRepetition(sc, st.engine, time.Now(), rep, st.repeat)
			if err := r.start(ctx); err != nil {
				Fail(err.Error())
			}
		})

		JustBeforeEach(func(ctx SpecContext) {
			this := r
			err := r.inject(ctx, func() {
				// Registered before inject so a partial inject is healed
				// too. AfterEach heals first in the normal course; this is
				// the net for when it cannot.
				DeferCleanup(func(ctx SpecContext) {
					if err := this.cleanup(ctx); err != nil {
						Fail(err.Error())
					}
				})
			})
			var se *stepError
			switch {
			case errors.As(err, &se) && se.unsupported:
				// Not a verdict and not a failure of the run: a skip with
				// the reason.
				Skip(se.msg)
			case err != nil:
				Fail(err.Error())
			}
		})

		It(sc.Title, func(ctx SpecContext) {
			r.window(ctx)
		})

		AfterEach(func(ctx SpecContext) {
			if r == nil {
				return
			}
			spec := CurrentSpecReport()
			if spec.State.Is(types.SpecStateInterrupted | types.SpecStateTimedout | types.SpecStateAborted) {
				r.interrupt("the run was " + spec.State.String())
			}
			// Injected, not interrupted, yet the It never reached the end
			// of its window: something in the window failed or panicked.
			o := r.end(ctx, fmt.Errorf("the It ended before its window did (%s: %s)", spec.State, spec.Failure.Message))
			out := r.finish(spec.State.String())
			for _, j := range out.Judgements {
				AddReportEntry("verdict "+j.Invariant, string(j.Verdict), ReportEntryVisibilityNever)
			}
			AddReportEntry("run verdict", string(out.RunVerdict), ReportEntryVisibilityNever)
			st.writeEvidence(r)
			fmt.Fprintf(GinkgoWriter, "%s\n", verdictLine(r.id, out))
			if msg := o.failure(); msg != "" {
				Fail(msg)
			}
		})

		ReportAfterEach(func(report SpecReport) {
			if r == nil {
				return
			}
			r.mu.Lock()
			cut := r.st.finished == nil
			r.mu.Unlock()
			if cut {
				// AfterEach did not get to the end: its judgement is incomplete.
				r.abort("heal and settle", fmt.Errorf("AfterEach ended early (%s: %s)", report.State, report.Failure.Message))
			}
			st.appendRun(r.finish(report.State.String()))
			r = nil
		})
	})...)
}
