package local

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/faultline/faultline/internal/binpaths"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/layout"
)

// imageSet is what every node's containerd gets: the OCI tarballs of the
// program's node images (there is no registry) and the sandbox image the
// runtime pins.
type imageSet struct {
	pause    string   // image reference of the pod sandbox image
	tarballs []string // OCI archives, each holding one or more tagged images
	refs     []string // every reference the tarballs hold
}

// images asks the program's node image source (lab.ProvideNodeImages)
// for the images, once per Lab value, built into the cache next to the
// binaries.
func (l *Lab) images() (imageSet, error) {
	l.imagesOnce.Do(func() {
		imgs, err := lab.BuildNodeImages(context.Background(), binpaths.CacheDir())
		if err != nil {
			l.imagesErr = fmt.Errorf("node images: %w", err)
			return
		}
		l.imageSet = imageSet{pause: imgs.Sandbox, tarballs: imgs.Tarballs, refs: imgs.Refs}
	})
	return l.imageSet, l.imagesErr
}

// importImages imports the node images into a node's containerd, in
// the namespace the CRI uses, unless they are already there.
func (l *Lab) importImages(ctx context.Context, h *Host) error {
	imgs, err := l.images()
	if err != nil {
		return err
	}
	cc := l.cc
	ctr := func(args ...string) ([]byte, error) {
		full := append([]string{"--net=" + layout.NetnsPath(h.netns()), "--", cc.bins.Ctr,
			"--address=" + l.dirs.ContainerdSocket(h.cfg.Name), "--namespace=k8s.io"}, args...)
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
