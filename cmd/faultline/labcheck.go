package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/labcheck"
)

func newLabCheckCommand(flags *labFlags) *cobra.Command {
	var asJSON, list bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Say, per fault and per evidence source, whether the lab's cluster has what it needs",
		Long: `Read the lab's cluster and say, per requirement (root or sudo, tools and
sockets on the hosts, API-server flags, the Kubernetes version, what the lab
offers), whether it is met, not met or unknown, and then, per fault kind and
per evidence source, whether it can run on this lab and what it lacks. It
touches nothing: it runs commands that change nothing on the hosts, opens
connections it closes at once, and asks the API servers and the history store
what they are. Check a fleet's lab file with it before the first run.

With --requirements it prints the tables of what each fault and source needs,
as lab/README.md has them, without opening any lab.`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if list {
				_, err := fmt.Fprint(cmd.OutOrStdout(), labcheck.Markdown())
				return err
			}
			return withLab(cmd, flags, "", changes, func(l lab.Lab) error {
				r := labcheck.Check(cmd.Context(), l)
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), r)
				}
				return r.Write(cmd.OutOrStdout())
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	cmd.Flags().BoolVar(&list, "requirements", false, "print what each fault and source needs, without checking a lab")
	return cmd
}
