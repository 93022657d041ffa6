package e2eprovider

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// createArgs are Create's arguments: the flags of `faultline lab up` that
// choose what comes up.
type createArgs struct {
	lab, profile string
}

// parseCreateArgs reads --lab (or --topology, its synonym) and --profile,
// each as --flag value or --flag=value.
func parseCreateArgs(args []string) (createArgs, error) {
	var a createArgs
	var topology string
	fs := pflag.NewFlagSet("Create", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.lab, "lab", "", "a lab file, or a topology name looked up as testdata/labs/<name>.yaml")
	fs.StringVar(&topology, "topology", "", "the same as --lab")
	fs.StringVar(&a.profile, "profile", "", "timer profile: kubernetes-defaults or fast")
	if err := fs.Parse(args); err != nil {
		return createArgs{}, fmt.Errorf("Create's arguments %q: %w (it takes --lab, --topology and --profile)", args, err)
	}
	if fs.NArg() > 0 {
		return createArgs{}, fmt.Errorf("Create's arguments: unexpected %q (it takes --lab, --topology and --profile)", fs.Args())
	}
	for _, f := range []struct{ name, val string }{{"lab", a.lab}, {"topology", topology}, {"profile", a.profile}} {
		if fs.Changed(f.name) && f.val == "" {
			return createArgs{}, fmt.Errorf("Create's arguments: --%s is empty", f.name)
		}
	}
	if topology != "" {
		if a.lab != "" && a.lab != topology {
			return createArgs{}, fmt.Errorf("Create's arguments: --lab %q and --topology %q name different labs; give one", a.lab, topology)
		}
		a.lab = topology
	}
	return a, nil
}
