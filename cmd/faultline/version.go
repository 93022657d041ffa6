package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time by the Makefile:
//
//	-ldflags "-X main.version=... -X main.gitCommit=..."
//
// Without them, the build information Go embeds is used where it has them.
var (
	version   = ""
	gitCommit = ""
)

// The Kubernetes and etcd versions the local lab builds and the topologies
// in testdata/labs pin; a test keeps them in step with those files.
const (
	pinnedKubernetesVersion = "v1.36.3"
	pinnedEtcdVersion       = "v3.6.8"
)

type buildVersion struct {
	Module, Version, Commit, Go string
	Modified                    bool
	// Revision is the commit alone, "" when not known.
	Revision string
}

func currentVersion() buildVersion {
	v := buildVersion{Module: "github.com/faultline/faultline", Version: version, Commit: gitCommit, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path != "" {
			v.Module = bi.Main.Path
		}
		if v.Version == "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	v.Revision = v.Commit
	if v.Commit == "" {
		v.Commit = "unknown (built without VCS information; build with make bins)"
	} else if v.Modified {
		v.Commit += " (with uncommitted changes)"
	}
	return v
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print faultline's version, commit and the Kubernetes and etcd versions it pins",
		Args:  checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "faultline %s\n", v.Version)
			fmt.Fprintf(w, "  module:     %s\n", v.Module)
			fmt.Fprintf(w, "  commit:     %s\n", v.Commit)
			fmt.Fprintf(w, "  go:         %s\n", v.Go)
			fmt.Fprintf(w, "  kubernetes: %s (pinned)\n", pinnedKubernetesVersion)
			fmt.Fprintf(w, "  etcd:       %s (pinned)\n", pinnedEtcdVersion)
			return nil
		},
	}
}
