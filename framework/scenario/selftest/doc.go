// Package selftest is a Ginkgo suite of scenarios engineered to produce
// every verdict, run against memlab. It is not meant to be run by itself:
// the scenario package's tests build it and run it as a subprocess, and
// assert on the run folders it writes.
package selftest
