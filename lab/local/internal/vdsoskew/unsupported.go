//go:build !(linux && amd64)

package vdsoskew

import (
	"fmt"
	"runtime"
	"time"
)

func unsupported() error {
	return fmt.Errorf("%w on %s/%s: the stub is x86-64 code for the Linux vDSO", ErrUnsupported, runtime.GOOS, runtime.GOARCH)
}

func run(_ op, pids []int, _ time.Duration) []Result { return each(pids, unsupported()) }

func patched(int) (time.Duration, bool, error) { return 0, false, unsupported() }
