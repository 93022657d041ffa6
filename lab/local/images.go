package local

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// imageSet is what every node's containerd gets: OCI tarballs built from
// the project's own programs (there is no registry) and the sandbox image
// the runtime pins.
type imageSet struct {
	pause    string   // image reference of the pod sandbox image
	tarballs []string // OCI archives, each holding one or more tagged images
	refs     []string // every reference the tarballs hold
}

// importImages imports the fixture images into a node's containerd, in
// the namespace the CRI uses, unless they are already there.
func (l *Lab) importImages(ctx context.Context, h *Host) error {
	imgs, err := l.images()
	if err != nil {
		return err
	}
	cc := l.cc
	ctr := func(args ...string) ([]byte, error) {
		full := append([]string{"--net=" + netnsPath(h.netns()), "--", cc.bins.Ctr,
			"--address=" + l.containerdSocket(h.cfg.Name), "--namespace=k8s.io"}, args...)
		return exec.CommandContext(ctx, "nsenter", full...).CombinedOutput()
	}
	out, err := ctr("images", "ls", "-q")
	if err != nil {
		return fmt.Errorf("host %s: listing images: %v: %s", h.cfg.Name, err, out)
	}
	have := map[string]bool{}
	for _, r := range strings.Fields(string(out)) {
		have[r] = true
	}
	missing := false
	for _, r := range imgs.refs {
		if !have[r] {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	for _, t := range imgs.tarballs {
		if out, err := ctr("images", "import", "--no-unpack=false", t); err != nil {
			return fmt.Errorf("host %s: importing %s: %v: %s", h.cfg.Name, t, err, out)
		}
	}
	return nil
}
