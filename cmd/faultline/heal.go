package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/lab"
)

func newHealCommand() *cobra.Command {
	var flags labFlags
	cmd := &cobra.Command{
		Use:   "heal",
		Short: "Heal every fault the lab's heal ledger still holds",
		Long: `Heal every fault left in the lab's heal ledger.

A fault is written to the ledger (in the lab's state directory) before it is
injected and removed once it is healed, so a run that was interrupted,
crashed or was killed leaves it behind. Every suite heals the ledger when it
starts; this command does the same by hand. A fault still held by a running
suite is left to that suite.

For each entry it prints what the heal found of the fault in the lab and
what it removed (a run killed before its inject leaves an entry whose heal
finds nothing). An entry whose heal fails stays in the ledger for the next
heal. Exits non-zero, naming them, if any fault could not be healed or is
still held.

With no lab named (--lab, $FAULTLINE_LAB), the lab is the one lab that is up
on this machine; with none or several up it refuses, naming them.`,
		Example: "  faultline heal --lab lab11",
		Args:    checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withLab(cmd, &flags, "", changes, func(l lab.Lab) error {
				rep, err := ledger.HealAll(cmd.Context(), l)
				fmt.Fprintln(cmd.OutOrStdout(), rep.String())
				if names := rep.FailedNames(); len(names) > 0 {
					return fmt.Errorf("healing lab %s: %d fault(s) not healed, kept in the ledger for the next heal: %s: %w", l.Info().Name, len(names), strings.Join(names, ", "), err)
				}
				if err != nil {
					return fmt.Errorf("healing lab %s: %w", l.Info().Name, err)
				}
				if n := len(rep.Busy); n > 0 {
					return fmt.Errorf("healing lab %s: %d fault(s) still held by a running process were left to it", l.Info().Name, n)
				}
				return nil
			})
		},
	}
	flags.register(cmd)
	return cmd
}
