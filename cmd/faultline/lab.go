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

// defaultLab is the lab `lab up` brings up when neither --lab nor
// $FAULTLINE_LAB names one: the local lab, which needs nothing but this
// machine.
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

// openUpLab opens a lab that is up from the config it recorded when it was
// brought up. Tests replace it, as openLab.
var openUpLab = func(u lab.UpLab) (lab.Lab, error) {
	l, err := lab.Open(u.Config)
	if err != nil {
		return nil, fmt.Errorf("opening lab %s from its record in %s: %w", u.Name, u.StateDir, err)
	}
	return l, nil
}

// labHelp is the --lab flag's help, shared by every command that takes it.
const labHelp = "the lab: a lab file (a relative one is looked up here, then in the parent directories), or a topology name looked up as testdata/labs/<name>.yaml; default $FAULTLINE_LAB, else for lab up " + defaultLab + " and for every other command the one lab that is up (see faultline lab --help)"

// labFlags are the flags every lab command shares.
type labFlags struct {
	lab, topology string
}

func (f *labFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&f.lab, "lab", "", labHelp)
	cmd.PersistentFlags().StringVar(&f.topology, "topology", "", "the same as --lab")
}

// named is the lab the command line or $FAULTLINE_LAB names, after
// reconciling --lab and --topology; "" when neither names one.
func (f *labFlags) named(cmd *cobra.Command) (string, error) {
	if f.lab != "" && f.topology != "" && f.lab != f.topology {
		return "", usagef("--lab %q and --topology %q name different labs; give one", f.lab, f.topology)
	}
	if f.topology != "" {
		return f.topology, nil
	}
	if f.lab != "" {
		return f.lab, nil
	}
	return os.Getenv(envLab), nil
}

// envLab names the lab every command acts on when --lab does not.
const envLab = "FAULTLINE_LAB"

// upLabs lists the labs that are up on this machine.
func upLabs() ([]lab.UpLab, error) { return lab.UpLabs(lab.StateRoot()) }

// labTarget is the lab a command acts on: one named (by --lab, --topology
// or $FAULTLINE_LAB), or the one lab that is up.
type labTarget struct {
	named string
	up    *lab.UpLab
}

// chooseLab picks the lab a command that changes a lab acts on. A lab
// named on the command line or in $FAULTLINE_LAB is that lab. Otherwise
// it is the one lab that is up: with none, or more than one, it refuses,
// naming those that are, since acting on a guess has taken down a lab
// another run was using. A lab whose record cannot be read is up too, and
// is refused with why.
func chooseLab(named string, up []lab.UpLab, root string) (labTarget, error) {
	if named != "" {
		return labTarget{named: named}, nil
	}
	switch len(up) {
	case 0:
		return labTarget{}, usagef("no lab named and no lab is up (no lab record under %s); name the lab with --lab or $%s", root, envLab)
	case 1:
		if up[0].Err != nil {
			return labTarget{}, usagef("no lab named, and the one lab that is up cannot be opened from its state dir %s: %v; name the lab with --lab or $%s", up[0].StateDir, up[0].Err, envLab)
		}
		return labTarget{up: &up[0]}, nil
	}
	names := make([]string, len(up))
	for i, u := range up {
		names[i] = u.Name
	}
	return labTarget{}, usagef("no lab named and %d labs are up (%s); name the one to act on with --lab or $%s", len(up), strings.Join(names, ", "), envLab)
}

func newLabCommand() *cobra.Command {
	var flags labFlags
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Bring a lab up or down, reset it, show its status, or check what it offers",
		Long: `Manage the lab scenarios run on.

--lab names a lab file or a topology (testdata/labs/<name>.yaml, looked up in
the current directory and its parents); $FAULTLINE_LAB is its default. Only
labs faultline builds itself (the local lab) can be brought up and down;
every lab can be reset and asked for its status.

With no lab named, a command never guesses: lab up brings up ` + defaultLab + `; lab
down, reset and snapshot (and faultline heal) act on the one lab that is up on
this machine and refuse, naming the labs that are up, when there is none or
more than one; lab status shows every lab that is up. A local lab is up from
its lab up until its lab down, while its state dir holds its record
(lab.json); those are found under $FAULTLINE_STATE_DIR (default
/var/lib/faultline), where a lab file with no stateDir keeps its state. A lab
with its stateDir elsewhere, or a lab faultline does not build, is never found
up: name it.`,
		Args: subcommandArgs,
		RunE: showHelp,
	}
	flags.register(cmd)
	cmd.AddCommand(newLabUpCommand(&flags), newLabDownCommand(&flags), newLabResetCommand(&flags), newLabStatusCommand(&flags), newLabSnapshotCommand(&flags),
		newLabCheckCommand(&flags), newLabSudoUserCommand(&flags), newLabServiceCommand(&flags))
	return cmd
}

func newLabUpCommand(flags *labFlags) *cobra.Command {
	var profile string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Build the lab and start its cluster",
		Long: `Build the lab and start its cluster. The lab is the one --lab (or
$FAULTLINE_LAB) names, else ` + defaultLab + `, whatever other labs are up.`,
		Example: `  faultline lab up --topology lab11
  faultline lab up --lab testdata/labs/pair.yaml --profile kubernetes-defaults`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if profile != "" && profile != lab.ProfileFast && profile != lab.ProfileKubernetesDefaults {
				return usagef("--profile %q is not a timer profile (%s or %s)", profile, lab.ProfileKubernetesDefaults, lab.ProfileFast)
			}
			return withProvisioner(cmd, flags, profile, bringsUp, "up", func(p lab.Provisioner) error {
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
		Long: `Stop the lab's cluster and remove everything the lab built. With no lab
named (--lab, $FAULTLINE_LAB), the lab is the one lab that is up; with none
or several up it refuses, naming them.`,
		Example: `  faultline lab down --lab pair
  faultline lab down              # the one lab that is up`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withProvisioner(cmd, flags, "", changes, "down", func(p lab.Provisioner) error {
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
host from its snapshot; a cleanup-only lab removes what faultline created.
With no lab named (--lab, $FAULTLINE_LAB), the lab is the one lab that is up;
with none or several up it refuses, naming them.`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withLab(cmd, flags, "", changes, func(l lab.Lab) error {
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
Only labs that keep snapshots themselves (vsphere) can do this, and none of
them is ever found up on this machine: name the lab (--lab, $FAULTLINE_LAB).`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cold {
				return usageError{fmt.Errorf("lab snapshot: only --cold snapshots are taken; say --cold")}
			}
			return withLab(cmd, flags, "", changes, func(l lab.Lab) error {
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
		Long: `Show the lab's hosts, their power and their services. With no lab named
(--lab, $FAULTLINE_LAB), show every lab that is up on this machine, one after
the other (with --json, a JSON array of their statuses), or say that none is.`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			named, err := flags.named(cmd)
			if err != nil {
				return err
			}
			if named == "" {
				return statusOfUpLabs(cmd, asJSON)
			}
			return withNamedLab(cmd, named, "", func(l lab.Lab) error {
				st, err := l.Status(cmd.Context())
				if err != nil {
					return fmt.Errorf("reading the status of lab %s: %w", l.Info().Name, err)
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), st)
				}
				return writeStatusAndKubeconfigs(cmd.OutOrStdout(), l, st)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// statusOfUpLabs shows every lab that is up, for lab status with no lab
// named. A lab that is up but cannot be opened or read is shown with why,
// and makes the command fail once the others are shown.
func statusOfUpLabs(cmd *cobra.Command, asJSON bool) error {
	up, err := upLabs()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if len(up) == 0 && !asJSON {
		fmt.Fprintf(out, "no lab is up (no lab record under %s); name a lab with --lab to see its hosts\n", lab.StateRoot())
		return nil
	}
	statuses := []lab.Status{}
	var errs []error
	for i, u := range up {
		if i > 0 && !asJSON {
			fmt.Fprintln(out)
		}
		if u.Err != nil {
			errs = append(errs, fmt.Errorf("lab %s is up but cannot be opened from its state dir %s: %w", u.Name, u.StateDir, u.Err))
			if !asJSON {
				fmt.Fprintf(out, "lab %s: up, but its record in %s cannot be read: %v\n", u.Name, u.StateDir, u.Err)
			}
			continue
		}
		err := withOpened(cmd, func() (lab.Lab, error) { return openUpLab(u) }, func(l lab.Lab) error {
			st, err := l.Status(cmd.Context())
			if err != nil {
				return fmt.Errorf("reading the status of lab %s: %w", l.Info().Name, err)
			}
			if asJSON {
				statuses = append(statuses, st)
				return nil
			}
			return writeStatusAndKubeconfigs(out, l, st)
		})
		if err != nil {
			errs = append(errs, err)
			if !asJSON {
				fmt.Fprintf(out, "lab %s: %v\n", u.Name, err)
			}
		}
	}
	if asJSON {
		if err := writeJSON(out, statuses); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeStatusAndKubeconfigs(w io.Writer, l lab.Lab, st lab.Status) error {
	if err := writeStatus(w, st); err != nil {
		return err
	}
	if st.Up {
		var cps []string
		for _, h := range st.Hosts {
			if slices.Contains(h.Roles, lab.RoleControlPlane) {
				cps = append(cps, h.Name)
			}
		}
		fmt.Fprintln(w)
		writeKubeconfigs(w, l, cps)
	}
	return nil
}

// labUse is how a command picks its lab when none is named.
type labUse int

const (
	// bringsUp: lab up, which brings up the default lab.
	bringsUp labUse = iota
	// changes: a command that changes a lab acts on the one lab that is
	// up, or refuses.
	changes
)

// withLab opens the lab the command acts on (see chooseLab), runs do on it
// and closes it.
func withLab(cmd *cobra.Command, flags *labFlags, profile string, use labUse, do func(lab.Lab) error) error {
	named, err := flags.named(cmd)
	if err != nil {
		return err
	}
	if named == "" && use == bringsUp {
		named = defaultLab
	}
	var up []lab.UpLab
	if named == "" {
		if up, err = upLabs(); err != nil {
			return fmt.Errorf("no lab named, and the labs that are up could not be listed: %w", err)
		}
	}
	target, err := chooseLab(named, up, lab.StateRoot())
	if err != nil {
		return err
	}
	if target.up == nil {
		return withNamedLab(cmd, target.named, profile, do)
	}
	u := *target.up
	fmt.Fprintf(cmd.ErrOrStderr(), "faultline: no lab named: acting on lab %s, the one lab that is up (state dir %s)\n", u.Name, u.StateDir)
	return withOpened(cmd, func() (lab.Lab, error) { return openUpLab(u) }, do)
}

func withNamedLab(cmd *cobra.Command, named, profile string, do func(lab.Lab) error) error {
	return withOpened(cmd, func() (lab.Lab, error) { return openLab(named, profile) }, do)
}

func withOpened(cmd *cobra.Command, open func() (lab.Lab, error), do func(lab.Lab) error) (err error) {
	l, err := open()
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

func withProvisioner(cmd *cobra.Command, flags *labFlags, profile string, use labUse, op string, do func(lab.Provisioner) error) error {
	return withLab(cmd, flags, profile, use, func(l lab.Lab) error {
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
