// Package recorded is a suite run on memlab whose run folder is kept as
// test data for re-judging (testdata/runs/ at the module root): the
// invariants of the three papers with their bounds, in a scenario with
// its null arm, one whose pod runs twice in the window, one whose pod runs
// twice before the fault and one whose fault no probe can see. It is not
// run by the package's tests; it is run by hand to record a folder:
//
//	FAULTLINE_SELFTEST_STATE=$(mktemp -d) FAULTLINE_REPORTS_DIR=DIR \
//	  go test ./framework/scenario/selftest/recorded
//
// It exits non-zero by design: second-copy is a finding whose single-copy
// is VIOLATED, and a suite's spec fails on a finding's violation.
package recorded
