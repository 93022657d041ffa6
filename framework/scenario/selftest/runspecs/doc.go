// Package runspecs is a suite that registers its table but calls Ginkgo's
// RunSpecs instead of scenario.RunSuite, as a suite written before
// RunSuite added the specs would: the scenario package's tests run it and
// check that it fails, naming the fix, instead of running no spec.
package runspecs
