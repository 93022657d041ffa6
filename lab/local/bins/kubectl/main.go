// Command kubectl is upstream kubectl built from the k8s.io/kubectl module,
// which ships the command's packages but no main package of its own.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	cli.Run(cmd.NewDefaultKubectlCommand())
}
