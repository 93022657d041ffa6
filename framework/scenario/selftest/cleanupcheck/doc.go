// Package cleanupcheck is a one-spec Ginkgo suite that checks what the
// scenario engine relies on: after SIGINT, Ginkgo runs a DeferCleanup
// registered in JustBeforeEach even when no AfterEach heals. The scenario
// package's tests run it as a subprocess.
package cleanupcheck
