package scenario

import (
	"context"
	"fmt"
	"os"

	"github.com/faultline/faultline/lab"
)

// EnvLab names the lab a suite runs against: a lab file, or a topology
// name such as lab11 (looked up as testdata/labs/<name>.yaml).
const EnvLab = "FAULTLINE_LAB"

// OpenLabFromEnv opens the lab $FAULTLINE_LAB names, for Suite.OpenLab.
// The suite must link the backends it can open (a blank import of the
// backend package).
func OpenLabFromEnv(ctx context.Context) (lab.Lab, error) {
	arg := os.Getenv(EnvLab)
	if arg == "" {
		return nil, fmt.Errorf("no lab given: set %s to a lab file or a topology name such as lab11", EnvLab)
	}
	l, err := lab.OpenFile(arg)
	if err != nil {
		return nil, fmt.Errorf("opening the lab %s=%s: %w", EnvLab, arg, err)
	}
	return l, nil
}
