// Package controls holds the faults that break a guarantee on purpose, for
// the positive controls of the suites: each wraps a cut from the fault
// library and then does what an operator would do to a machine that looks
// dead (force-delete its pod, delete its Node object). They are registered
// like every other fault, so `faultline heal` heals them from a ledger
// entry written by another process; the entry carries the cut's own kind
// and parameters, so the heal removes exactly the rules the inject added.
package controls
