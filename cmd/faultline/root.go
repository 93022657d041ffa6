package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	// exitUsage: the command line itself was wrong; nothing was done.
	exitUsage = 2
	// exitNoService: lab service was asked about a service the host does
	// not run (what an SSH lab's service command answers then).
	exitNoService = 64
)

// usageError marks an error in the command line rather than in the work.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "faultline: %v\n", err)
	var ns noServiceError
	if errors.As(err, &ns) {
		return exitNoService
	}
	var ue usageError
	if errors.As(err, &ue) {
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitError
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "faultline",
		Short: "Fault experiments on Kubernetes: which guarantees survive when its components disagree",
		Long: `faultline runs fault experiments on Kubernetes and says, with evidence, which
of Kubernetes' guarantees survive when its components disagree.

Scenarios run as Ginkgo suites (ginkgo --focus, --label-filter); this command
manages the labs they run on, turns their run records into rate tables, and
judges recorded runs again with the invariants as they are now.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Without Args and RunE cobra would print help and exit 0 for an
		// unknown command; these make it an error.
		Args: subcommandArgs,
		RunE: showHelp,
	}
	// Shell completion stays available but out of the command list.
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newLabCommand(), newHealCommand(), newReportCommand(), newRejudgeCommand(), newVersionCommand())
	return root
}

// subcommandArgs rejects any positional argument of a command that only
// groups subcommands: it can only be a subcommand that does not exist.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	msg += fmt.Sprintf("; commands: %s", strings.Join(names, ", "))
	return usageError{errors.New(msg)}
}

func showHelp(cmd *cobra.Command, _ []string) error { return cmd.Help() }

// checkArgs wraps cobra's argument checks so their errors are usage errors.
func checkArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
