package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local"
)

func newLabSudoUserCommand(flags *labFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "sudo-user",
		Short: "Give a local lab's hosts a non-root login with passwordless sudo, for a static lab file",
		Long: `Make the local lab's sudo user (fl-<lab>, a user of this machine with
passwordless sudo and a key of its own that every host's sshd takes) and print
what a static lab file needs to reach the lab through SSH as it would a fleet:
the user, its key and the known_hosts file that pins every host's key. lab
down removes the user. testdata/labs/lab11s-ssh.yaml is such a file.`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withLab(cmd, flags, "", changes, func(l lab.Lab) error {
				ll, ok := l.(*local.Lab)
				if !ok {
					return fmt.Errorf("lab %s is a %s lab: only a local lab makes its hosts' users", l.Info().Name, l.Info().Kind)
				}
				u, err := ll.AddSudoUser(cmd.Context())
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "user:         %s\nidentityFile: %s\nknownHosts:   %s\n", u.Name, u.KeyFile, u.KnownHosts)
				return err
			})
		},
	}
}
