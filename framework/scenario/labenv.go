package scenario

import (
	"context"
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/lab"
)

// EnvLab names the lab a suite runs against: a lab file, or a topology
// name such as lab11 (looked up as testdata/labs/<name>.yaml). A suite run
// over several labs names a pool instead (EnvLabs, EnvPool).
const EnvLab = "FAULTLINE_LAB"

// LabGiven reports whether the environment names a lab or a pool of labs
// for a suite to run against (a suite's test skips when it names none).
func LabGiven() bool {
	return os.Getenv(EnvLab) != "" || poolGiven()
}

// OpenLabFromEnv opens the lab $FAULTLINE_LAB names, for Suite.OpenLab.
// Over a pool ($FAULTLINE_LABS, $FAULTLINE_POOL) it opens the lab this
// Ginkgo process owns, as the engine does. The suite must link the
// backends it can open (a blank import of the backend package).
func OpenLabFromEnv(ctx context.Context) (lab.Lab, error) {
	pool, err := PoolFromEnv()
	if err != nil {
		return nil, err
	}
	if pool != nil {
		suite, _ := GinkgoConfiguration()
		entry, err := pool.Entry(GinkgoParallelProcess(), suite.ParallelTotal)
		if err != nil {
			return nil, err
		}
		return OpenLabArg(ctx, entry)
	}
	arg := os.Getenv(EnvLab)
	if arg == "" {
		return nil, fmt.Errorf("no lab given: set %s to a lab file or a topology name such as lab11 (or %s to several, for ginkgo --procs)", EnvLab, EnvLabs)
	}
	l, err := lab.OpenFile(arg)
	if err != nil {
		return nil, fmt.Errorf("opening the lab %s=%s: %w", EnvLab, arg, err)
	}
	return l, nil
}

// OpenLabArg opens the lab a lab file or topology name names, as
// FAULTLINE_LAB is opened: the default Suite.OpenLabEntry.
func OpenLabArg(_ context.Context, arg string) (lab.Lab, error) {
	l, err := lab.OpenFile(arg)
	if err != nil {
		return nil, fmt.Errorf("opening the lab %s: %w", arg, err)
	}
	return l, nil
}

// LabFileFromEnv is the lab file a suite sizes its table from: the one
// $FAULTLINE_LAB names or, over a pool, the first of the pool (the engine
// refuses, before it runs anything, a pool whose labs run other timer
// profiles, and each suite's VerifyLab checks every lab's timers against
// the table's). "" when the environment names neither; the config's
// path when it does.
func LabFileFromEnv() (path, how string, err error) {
	pool, err := PoolFromEnv()
	if err != nil {
		return "", "", err
	}
	arg, how := os.Getenv(EnvLab), "$"+EnvLab
	if pool != nil {
		arg, how = pool.Entries[0], "the first lab of the pool ("+pool.From+")"
	}
	if arg == "" {
		return "", "", nil
	}
	path, err = lab.ResolveConfigPath(arg)
	if err != nil {
		return "", how, fmt.Errorf("finding the lab file %s (%s): %w", arg, how, err)
	}
	return path, how, nil
}
