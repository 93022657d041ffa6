package local

// sharedClock says why the local lab cannot skew one host's clock.
const sharedClock = "every host of the local lab is a network namespace on one kernel, which has one CLOCK_REALTIME; " +
	"time namespaces offset only CLOCK_MONOTONIC and CLOCK_BOOTTIME, and Go programs (etcd, kubelet, the API server) read the " +
	"wall clock through the vDSO, so LD_PRELOAD tools such as libfaketime never reach them; stepping the machine's clock would " +
	"skew every host and the test runner alike"

// SharesWallClock reports that every host reads the machine's one wall
// clock (lab.SharedWallClock).
func (l *Lab) SharesWallClock() (bool, string) { return true, sharedClock }
