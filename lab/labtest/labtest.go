// Package labtest runs commands on this machine as a lab host's Run
// reports them, for the tests of code that runs commands on hosts (fake
// hosts backed by this machine's shell).
package labtest

import (
	"context"
	"errors"
	"os/exec"
	"strings"

	"github.com/faultline/faultline/lab"
)

// Run runs c on this machine and reports it as a lab host's Run does: its
// output, with a non-zero exit as the Result's ExitCode rather than an
// error; an error is a command that could not run. It sets c's Stdout
// and Stderr.
func Run(c *exec.Cmd) (lab.Result, error) {
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return lab.Result{Stdout: out.String(), Stderr: errb.String(), ExitCode: exit.ExitCode()}, nil
	}
	return lab.Result{Stdout: out.String(), Stderr: errb.String()}, err
}

// Sh runs cmd with this machine's sh, as an SSH session on a lab host
// would.
func Sh(ctx context.Context, cmd string) (lab.Result, error) {
	return Run(exec.CommandContext(ctx, "sh", "-c", cmd))
}
