// Package scenario turns a table of scenarios, declared as data, into
// Ginkgo specs of one shape, and decides what each run may claim.
//
// A suite file registers its table once, at the top level:
//
//	var _ = scenario.Register(scenario.Suite{
//		Name:    "disagree",
//		OpenLab: scenario.OpenLabFromEnv,
//		Sampler: sampler,
//	}, scenario.WithNullArms(table...))
//
// Register also adds the suite-level nodes, so a suite defines no
// BeforeSuite or ReportAfterSuite of its own. On start it opens the lab,
// refuses a config without `lab: true` (and, with Suite.VerifyLab, a
// cluster without the lab's marker) before touching anything, heals
// whatever the lab's heal ledger holds (and refuses to run if it cannot, or
// if another live process holds a fault on the lab), and makes the run
// folder (package reports).
//
// Each scenario is one Serial spec labelled arm:, fault:, class: and
// topology: besides its own labels:
//
//	BeforeEach      reset the lab; check it starts clean (empty ledger, up);
//	                Suite.Prepare; baseline snapshot; every invariant the
//	                applicability table excludes is NOT_APPLICABLE, every one
//	                the baseline already violates is DETECTOR_INVALID
//	JustBeforeEach  write the fault to the heal ledger (synced), register
//	                the heal with DeferCleanup, inject
//	It              sample and probe for the window; judge the safety
//	                invariants with matchers.Preserve, collecting every
//	                failure, and fail once listing them all
//	AfterEach       heal (removing the ledger entry); sample until every
//	                convergence invariant has held with full evidence in
//	                some sample, or the settle timeout ends; judge each over
//	                the first sample in which it held, or over the final
//	                snapshot when it never did; release a lingering
//	                fault (fault.Lingering), whose damage had to last
//	                through settling; write the evidence
//	ReportAfterEach append the run record to verdicts.jsonl, synced
//
// What a run may claim:
//   - Every invariant of the scenario gets a verdict in every run. One that
//     was never judged (the run aborted or was interrupted first) is
//     INSUFFICIENT_DATA with the reason it was not judged.
//   - invariant.Judge holds each invariant to its evidence: PRESERVED or
//     VIOLATED with no readable answer to anything it reads becomes
//     INSUFFICIENT_DATA.
//   - The run verdict follows the rule in runVerdict: ABORTED when a phase
//     failed or the run was interrupted; FAULT_INEFFECTIVE when the fault
//     arm's probe never saw the effect; for the null arm, a probe that sees
//     nothing is the control working (JUDGED), and a probe that sees the
//     effect with nothing injected makes the run ABORTED (contaminated).
//     Only JUDGED runs count towards rates.
//
// SIGINT or SIGTERM during a run: Ginkgo cancels the spec's context and
// runs AfterEach and DeferCleanup, which heal; the run is ABORTED. After
// kill -9 the ledger entry remains and the next start heals it.
package scenario
