package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/faultline/faultline/lab"
)

// noServiceError is a service the host does not run.
type noServiceError struct{ err error }

func (e noServiceError) Error() string { return e.err.Error() }
func (e noServiceError) Unwrap() error { return e.err }

func newLabServiceCommand(flags *labFlags) *cobra.Command {
	var host string
	cmd := &cobra.Command{
		Use:   "service --host HOST (stop SERVICE | start SERVICE | signal SIGNAL SERVICE | list)",
		Short: "Stop, start, signal or list one host's services, as an SSH lab's service command",
		Long: `Stop, start or signal a service of one host of the lab, or list the host's
services (one line each: name, state, pid), through the lab's own service
management. A static lab file whose hosts run no systemd names it as its
ssh.serviceCommand ("faultline lab service --lab L --host {host}"), so that
the faults that stop, kill, freeze or restart a service run through SSH on a
local lab's hosts as they would through systemctl on a fleet's. A service
the host does not run exits 64. With --lab naming a lab that is up by its
name, the lab is opened from its record, wherever the command runs.`,
		Args: checkArgs(func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && args[0] == "list":
			case len(args) == 2 && (args[0] == "stop" || args[0] == "start"):
			case len(args) == 3 && args[0] == "signal":
			default:
				return usagef("want stop SERVICE, start SERVICE, signal SIGNAL SERVICE or list, got %q", strings.Join(args, " "))
			}
			if host == "" {
				return usagef("--host is required")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withLabUpByName(cmd, flags, func(l lab.Lab) error {
				h, err := l.Host(host)
				if err != nil {
					return err
				}
				ctx := cmd.Context()
				if args[0] == "list" {
					states, err := h.Services(ctx)
					if err != nil {
						return err
					}
					for _, s := range states {
						fmt.Fprintf(cmd.OutOrStdout(), "%s %s %d\n", s.Name, s.State, s.PID)
					}
					return nil
				}
				name := args[len(args)-1]
				states, err := h.Services(ctx)
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(states, func(s lab.ServiceState) bool { return s.Name == name }) {
					return noServiceError{lab.Unsupported(l.Info().Kind, args[0]+" "+name+" on "+host, "the host runs no such service")}
				}
				switch args[0] {
				case "stop":
					err = h.StopService(ctx, args[1])
				case "start":
					err = h.StartService(ctx, args[1])
				case "signal":
					sig := unix.SignalNum("SIG" + strings.TrimPrefix(strings.ToUpper(args[1]), "SIG"))
					if sig == 0 {
						return usagef("%q is not a signal", args[1])
					}
					err = h.Signal(ctx, args[2], syscall.Signal(sig))
				}
				if errors.Is(err, lab.ErrUnsupported) {
					return noServiceError{err}
				}
				return err
			})
		},
	}
	cmd.Flags().StringVar(&host, "host", "", "the host whose services to manage")
	return cmd
}

// withLabUpByName opens a lab that is up under the name --lab gives from
// its record (a service command runs wherever the host's shell is, with no
// lab file at hand), and any other lab as withLab does.
func withLabUpByName(cmd *cobra.Command, flags *labFlags, do func(lab.Lab) error) error {
	named, err := flags.named(cmd)
	if err != nil {
		return err
	}
	if named != "" {
		if up, err := upLabs(); err == nil {
			for _, u := range up {
				if u.Name == named && u.Err == nil {
					return withOpened(cmd, func() (lab.Lab, error) { return openUpLab(u) }, do)
				}
			}
		}
	}
	return withLab(cmd, flags, "", changes, do)
}
