// Package scenario turns a table of scenarios, declared as data, into
// Ginkgo specs of one shape, and decides what each run may claim.
//
// The phase algorithm is plain Go, one file per phase: a run moves
// forward through reset (reset.go), pre-fault (prefault.go), inject
// (inject.go), window (window.go), heal (heal.go), settle (settle.go),
// judge (judge.go), release (release.go) and done (done.go, the run's
// record), with one phase state (phase.go). runner.go takes the phases in
// order, and Runner runs scenarios through them without Ginkgo. The
// Ginkgo layer (spec.go, suite.go, suitenodes.go for the suite's start
// and finish) is a skin that calls those phases from its nodes: specs
// (Serial on one lab), labels, DeferCleanup and report entries. The run
// folder is written in folder.go alone. A table's labels and checks are
// in validate.go; judging a record again in rejudge.go and
// rejudge_window.go.
//
// A suite file registers its table once, at the top level:
//
//	var _ = scenario.Register(scenario.Suite{
//		Name:    "disagree",
//		OpenLab: scenario.OpenLabFromEnv,
//		Sampler: sampler,
//	}, scenario.WithNullArms(table...))
//
// and its test function runs it with RunSuite in Ginkgo's RunSpecs' place
// (RunSuite adds the table's specs, once the command line says how many:
// see Repetitions below). Register also adds the suite-level nodes, so a
// suite defines no BeforeSuite or ReportAfterSuite of its own. On start it opens the lab,
// refuses a config without `lab: true` (and, with Suite.Shape, a lab
// without the hosts and roles the suite needs, naming what is missing;
// with Suite.VerifyLab, a cluster without the lab's marker) before
// touching anything, heals whatever the lab's heal ledger holds (and
// refuses to run if it cannot, or if another live process holds a fault
// on the lab), and makes the run folder (package framework/record; its
// summary.md comes from the renderers the suite links, package reports
// among them). After the suite, with Suite.SelfCheck, it runs CheckControls over the run records
// and fails the suite on a positive control not VIOLATED or a null arm
// that fired.
//
// Each scenario is one spec, Serial on one lab, with the labels generated from its
// fields (AutoLabels: arm:, fault:, class:, topology: from Topology or
// Shape, ci from CI, control: from ControlOf, application-control from
// ApplicationControl, writer: from Writer)
// besides its own:
//
//	BeforeEach      skip when the lab lacks the scenario's Topology or
//	                Shape, naming what is missing (nothing is touched);
//	                heal what an earlier run left in the heal ledger
//	                (before the reset, and again after it if any is
//	                left; each on the run's timeline, leftover-*);
//	                reset the lab; check it starts clean (empty ledger, up);
//	                Suite.Prepare (handed the scenario); baseline
//	                snapshot; a pre-fault window
//	                sampled after it, long enough for every invariant to
//	                be able to fire (three rounds, and for an
//	                invariant.Bounded more than its bound plus two sampling
//	                intervals); every invariant the applicability table
//	                excludes is NOT_APPLICABLE, every one the baseline and
//	                pre-fault window already violate is DETECTOR_INVALID
//	JustBeforeEach  write the fault to the heal ledger (synced), register
//	                the heal with DeferCleanup, inject
//	It              sample and probe for the window
//	AfterEach       heal (removing the ledger entry), sampling while it
//	                runs; sample until every convergence invariant has held
//	                with full evidence in some sample, or the settle
//	                timeout ends; judge each over the first sample in which
//	                it held, or over the final snapshot when it never did;
//	                judge the safety invariants over the window, heal and
//	                settle samples (a hazard can fall at heal: a frozen
//	                process thawed, a stopped kubelet restarted); fail once,
//	                listing every invariant that failed; release a lingering
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
//   - Each judged verdict says, in During, the part of the run its
//     deciding moment fell in: pre-fault (before inject began), window
//     (from inject to heal), heal (while the fault's Heal ran) or settle.
//     A verdict with no deciding moment over several parts names none.
//   - A positive control (Scenario.ControlOf) passes its spec only when
//     each invariant it names is VIOLATED; one that is anything else,
//     including NOT_APPLICABLE or DETECTOR_INVALID, fails it. Where it
//     names the violation kinds it is built to make
//     (Scenario.ControlKinds), a VIOLATED of another kind fails it too,
//     naming the kind got and the kinds needed; where it names none, any
//     kind counts.
//   - The run verdict follows the rule in runVerdict: ABORTED when a phase
//     failed or the run was interrupted; FAULT_INEFFECTIVE when the fault
//     arm's looks that saw the effect attest a smaller share of the
//     window than required (each what it saw and half a tick either
//     side, cut halfway to a look that did not see it or could not look;
//     Scenario.MinEffectShare, else the fault's fault.EffectShareOf); for the null arm, a probe that sees nothing is
//     the control working (JUDGED), and a probe that sees the effect with
//     nothing injected makes the run ABORTED (contaminated). Only JUDGED
//     runs count towards rates.
//   - The run record says its role (finding, control, application-control
//     or null), the invariants a control must break, the effect probes'
//     coverage, and the machine's load average at the start and the end.
//
// Resuming: with -faultline.resume=DIR (a flag of the suite's test
// binary; Register adds it) or $FAULTLINE_RESUME=DIR, the suite runs into
// that run folder instead of a new one. Process 1 checks it before the
// lab is opened (record.OpenToResume: a folder that is missing, is no run
// folder, is another suite's, holds a malformed record or runs of another
// timer profile, or is locked by a running suite is refused, and nothing
// is touched), heals the ledger as always, and removes a record a crash
// cut short. A scenario × arm pair (each repetition of it) the folder
// holds a finished run of (JUDGED or FAULT_INEFFECTIVE) is skipped in
// BeforeEach with a note naming the folder and the record; the others (no
// record, or ABORTED) run and append. The self-check judges each pair (each
// repetition of it) by its last run.
//
// Several labs: with $FAULTLINE_LABS (lab files or topology names,
// comma-separated) or $FAULTLINE_POOL (a pool file) the suite runs over a
// pool of labs, Ginkgo process N owning the N-th for the whole run
// (`ginkgo --procs=N`), and its specs are not Serial, since Ginkgo runs
// Serial specs on process 1 alone. The suite's test calls RunSuite, whose
// preview of the tree tells process 1 which specs will run; before it
// touches anything, process 1 checks every lab of the pool as it would one
// and refuses a pool whose labs are not distinct, run other timer
// profiles, cannot be up at once, or differ in a topology or shape a spec
// that will run needs. It heals each lab's ledger and makes the one run
// folder, which every process appends its records to, each naming its
// own lab; the folder's JUnits and summary are written once every process
// has exited.
//
// Repetitions: with -faultline.repeat=N (a flag of the suite's test
// binary; Register adds it) or $FAULTLINE_REPEAT=N, every selected
// scenario × arm runs N times into the one run folder, in rounds: a round
// runs each once (a scenario's arms one after the other, fault then null;
// the scenarios in Ginkgo's shuffled order, or the table's under
// TableOrder), and the next round starts after it (SpecPriority), so that
// drift over hours falls on every scenario alike. A round's specs are
// labelled repetition:<k> and sit in a container "repetition k of N"; each
// record carries its repetition (verdict.Run.Repetition, from 1) and its
// run ID names it. A resume skips each repetition the folder holds a
// finished run of, by its number; with a larger N it adds rounds to a
// folder, and with a smaller N than the folder holds it is refused. Over a
// pool, Ginkgo hands the repetitions to whichever process asks next (a
// TableOrder suite's rounds, one Ordered container each, to a process
// each). The self-check judges every repetition of every pair.
//
// SIGINT or SIGTERM during a run: Ginkgo cancels the spec's context and
// runs AfterEach and DeferCleanup, which heal; the run is ABORTED. After
// kill -9 the ledger entry remains and the next start heals it.
package scenario
