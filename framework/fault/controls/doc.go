// Package controls holds the faults that break a guarantee on purpose, for
// the positive controls of the suites.
//
// Most wrap a cut from the fault library and then do what an operator
// would do to a machine that looks dead (force-delete its pod, delete its
// Node object); the ledger entry carries the cut's own kind and
// parameters, so a heal removes exactly the rules the inject added.
//
// The operator-action controls (QuotaThenDelete, FinalizerThenDelete)
// fail no component at all: they do, through the API, what an operator or
// a dead controller leaves behind, and that breakage is meant to outlast
// heal, since it is what the invariant is judged on after heal. They are
// fault.Lingering: the run releases them once the verdicts are in, and
// `faultline heal` releases one a run left behind.
//
// All are registered like every other fault, so `faultline heal` heals
// them from a ledger entry written by another process.
package controls
