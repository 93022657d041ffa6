package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/lab"
)

// defaultLab is the lab used when neither --lab nor $FAULTLINE_LAB names one:
// the local lab, which needs nothing but this machine.
const defaultLab = "lab11"

// openLab opens the lab a --lab argument names, with the timer profile
// overridden when profile is not empty. Tests replace it to drive the
// commands against a lab double.
var openLab = func(arg, profile string) (lab.Lab, error) {
	path, err := lab.ResolveConfigPath(arg)
	if err != nil {
		return nil, err
	}
	c, err := lab.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	if profile != "" {
		c.Kubernetes.TimerProfile = profile
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("lab file %s with --profile %s: %w", path, profile, err)
		}
	}
	l, err := lab.Open(c)
	if err != nil {
		return nil, fmt.Errorf("opening lab: %w", err)
	}
	return l, nil
}

// labFlags are the flags every lab command shares.
type labFlags struct {
	lab, topology string
}

func (f *labFlags) register(cmd *cobra.Command) {
	def := os.Getenv("FAULTLINE_LAB")
	if def == "" {
		def = defaultLab
	}
	cmd.PersistentFlags().StringVar(&f.lab, "lab", def,
		"the lab: a lab file (a relative one is looked up here, then in the parent directories), or a topology name looked up as testdata/labs/<name>.yaml; $FAULTLINE_LAB sets the default")
	cmd.PersistentFlags().StringVar(&f.topology, "topology", "", "the same as --lab")
}

// name is the lab argument after reconciling --lab and --topology.
func (f *labFlags) name(cmd *cobra.Command) (string, error) {
	labSet := cmd.Flags().Changed("lab")
	if f.topology == "" {
		return f.lab, nil
	}
	if labSet && f.lab != f.topology {
		return "", usagef("--lab %q and --topology %q name different labs; give one", f.lab, f.topology)
	}
	return f.topology, nil
}

func newLabCommand() *cobra.Command {
	var flags labFlags
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Bring a lab up or down, reset it, or show its status",
		Long: `Manage the lab scenarios run on.

--lab names a lab file or a topology (testdata/labs/<name>.yaml, looked up in
the current directory and its parents). Only labs faultline builds itself (the
local lab) can be brought up and down; every lab can be reset and asked for
its status.`,
		Args: subcommandArgs,
		RunE: showHelp,
	}
	flags.register(cmd)
	cmd.AddCommand(newLabUpCommand(&flags), newLabDownCommand(&flags), newLabResetCommand(&flags), newLabStatusCommand(&flags), newLabSnapshotCommand(&flags))
	return cmd
}

func newLabUpCommand(flags *labFlags) *cobra.Command {
	var profile string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Build the lab and start its cluster",
		Example: `  faultline lab up --topology lab11
  faultline lab up --lab testdata/labs/pair.yaml --profile kubernetes-defaults`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if profile != "" && profile != lab.ProfileFast && profile != lab.ProfileKubernetesDefaults {
				return usagef("--profile %q is not a timer profile (%s or %s)", profile, lab.ProfileKubernetesDefaults, lab.ProfileFast)
			}
			return withProvisioner(cmd, flags, profile, "up", func(p lab.Provisioner) error {
				if err := p.Up(cmd.Context()); err != nil {
					return fmt.Errorf("bringing lab %s up: %w", p.Info().Name, err)
				}
				info := p.Info()
				fmt.Fprintf(cmd.OutOrStdout(), "lab %s is up (timer profile %s)\n", info.Name, info.TimerProfile)
				var cps []string
				for _, h := range lab.HostsWithRole(p, lab.RoleControlPlane) {
					cps = append(cps, h.Name())
				}
				writeKubeconfigs(cmd.OutOrStdout(), p, cps)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&profile, "profile", "",
		"timer profile, overriding the lab file's kubernetes.timerProfile: kubernetes-defaults (what papers quote) or fast (compressed, for CI)")
	return cmd
}

func newLabDownCommand(flags *labFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the lab's cluster and remove everything the lab built",
		Args:  checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withProvisioner(cmd, flags, "", "down", func(p lab.Provisioner) error {
				if err := p.Down(cmd.Context()); err != nil {
					return fmt.Errorf("bringing lab %s down: %w", p.Info().Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "lab %s is down\n", p.Info().Name)
				return nil
			})
		},
	}
}

func newLabResetCommand(flags *labFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "reset",
		Short: "Put the lab back into its clean state",
		Long: `Put the lab back into its clean state: a cold-snapshot lab restores every
host from its snapshot; a cleanup-only lab removes what faultline created.`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withLab(cmd, flags, "", func(l lab.Lab) error {
				if err := l.Reset(cmd.Context()); err != nil {
					return fmt.Errorf("resetting lab %s: %w", l.Info().Name, err)
				}
				info := l.Info()
				fmt.Fprintf(cmd.OutOrStdout(), "lab %s is reset (%s)\n", info.Name, info.ResetKind)
				return nil
			})
		},
	}
}

func newLabSnapshotCommand(flags *labFlags) *cobra.Command {
	var cold, replace bool
	cmd := &cobra.Command{
		Use:   "snapshot --cold",
		Short: "Power the fleet off and take the cold snapshot every reset returns to",
		Long: `Power the whole fleet off and take, on every host, the one cold snapshot
that 'lab reset' reverts to (the lab file's vsphere.coldSnapshot). Place the lab
marker in the cluster before this, so every reset comes back marked.
Only labs that keep snapshots themselves (vsphere) can do this.`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cold {
				return usageError{fmt.Errorf("lab snapshot: only --cold snapshots are taken; say --cold")}
			}
			return withLab(cmd, flags, "", func(l lab.Lab) error {
				s, ok := l.(lab.ColdSnapshotter)
				if !ok {
					info := l.Info()
					return fmt.Errorf("lab %s: a %s lab does not take cold snapshots with faultline", info.Name, info.Kind)
				}
				if err := s.ColdSnapshot(cmd.Context(), replace); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "lab %s: cold snapshot taken on every host\n", l.Info().Name)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&cold, "cold", false, "take the cold snapshot (required)")
	cmd.Flags().BoolVar(&replace, "replace", false, "replace an existing snapshot of the same name")
	return cmd
}

func newLabStatusCommand(flags *labFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the lab's hosts, their power and their services",
		Args:  checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withLab(cmd, flags, "", func(l lab.Lab) error {
				st, err := l.Status(cmd.Context())
				if err != nil {
					return fmt.Errorf("reading the status of lab %s: %w", l.Info().Name, err)
				}
				if asJSON {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					return enc.Encode(st)
				}
				if err := writeStatus(cmd.OutOrStdout(), st); err != nil {
					return err
				}
				if st.Up {
					var cps []string
					for _, h := range st.Hosts {
						if slices.Contains(h.Roles, lab.RoleControlPlane) {
							cps = append(cps, h.Name)
						}
					}
					fmt.Fprintln(cmd.OutOrStdout())
					writeKubeconfigs(cmd.OutOrStdout(), l, cps)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

func withLab(cmd *cobra.Command, flags *labFlags, profile string, do func(lab.Lab) error) (err error) {
	name, err := flags.name(cmd)
	if err != nil {
		return err
	}
	l, err := openLab(name, profile)
	if err != nil {
		return err
	}
	if pr, ok := l.(lab.ProgressReporter); ok {
		pr.SetProgress(cmd.ErrOrStderr())
	}
	defer func() {
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing lab %s: %w", l.Info().Name, cerr))
		}
	}()
	return do(l)
}

func withProvisioner(cmd *cobra.Command, flags *labFlags, profile, op string, do func(lab.Provisioner) error) error {
	return withLab(cmd, flags, profile, func(l lab.Lab) error {
		p, ok := l.(lab.Provisioner)
		if !ok {
			info := l.Info()
			return fmt.Errorf("lab %s: a %s lab is not provisioned by faultline, so it cannot be brought %s here (bring it %s with the tooling that built it; faultline can reset it and show its status)",
				info.Name, info.Kind, op, op)
		}
		return do(p)
	})
}

func writeStatus(w io.Writer, st lab.Status) error {
	info := st.Info
	state := "down"
	if st.Up {
		state = "up"
	}
	fmt.Fprintf(w, "lab %s: %s\n", info.Name, state)
	fmt.Fprintf(w, "  kind %s, topology %s, reset %s, timer profile %s\n",
		orDash(info.Kind), orDash(info.Topology), orDash(string(info.ResetKind)), orDash(info.TimerProfile))
	fmt.Fprintf(w, "  Kubernetes %s, etcd %s\n\n", orDash(info.KubernetesVersion), orDash(info.EtcdVersion))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tROLES\tADDRESS\tPOWER\tSERVICES\tDETAIL")
	for _, h := range st.Hosts {
		roles := make([]string, len(h.Roles))
		for i, r := range h.Roles {
			roles[i] = string(r)
		}
		var svcs []string
		for _, s := range h.Services {
			state := s.Name + "=" + s.State
			if s.Restarts > 0 {
				state += fmt.Sprintf("(restarted %dx)", s.Restarts)
			}
			svcs = append(svcs, state)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Name, strings.Join(roles, ","), h.Address, orDash(h.Power), orDash(strings.Join(svcs, " ")), h.Detail)
	}
	return tw.Flush()
}

// writeKubeconfigs prints the admin kubeconfig a user's kubectl should use
// (the virtual address's, where the lab has one) and each control-plane
// host's, which reaches that API server alone.
func writeKubeconfigs(w io.Writer, l lab.Lab, controlPlanes []string) {
	if path, err := l.Kubeconfig(""); err == nil && path != "" {
		fmt.Fprintf(w, "export KUBECONFIG=%s   # for kubectl: the cluster's address\n", path)
	} else if err != nil {
		fmt.Fprintf(w, "no kubeconfig for the cluster's address: %v\n", err)
	}
	for _, cp := range controlPlanes {
		if path, err := l.Kubeconfig(cp); err == nil && path != "" {
			fmt.Fprintf(w, "  %s's API server alone: %s\n", cp, path)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
