package components

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/faultline/faultline/internal/binpaths"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/layout"
)

// Images is what every node's containerd gets: the OCI tarballs of the
// program's node images (there is no registry) and the sandbox image the
// runtime pins.
type Images struct {
	Pause    string   // image reference of the pod sandbox image
	Tarballs []string // OCI archives, each holding one or more tagged images
	Refs     []string // every reference the tarballs hold
}

// Images asks the program's node image source (lab.ProvideNodeImages)
// for the images, once per Cluster value, built into the cache next to the
// binaries.
func (c *Cluster) Images() (Images, error) {
	c.imagesOnce.Do(func() {
		imgs, err := lab.BuildNodeImages(context.Background(), binpaths.CacheDir())
		if err != nil {
			c.imagesErr = fmt.Errorf("node images: %w", err)
			return
		}
		c.images = Images{Pause: imgs.Sandbox, Tarballs: imgs.Tarballs, Refs: imgs.Refs}
	})
	return c.images, c.imagesErr
}

// ImportImages imports the node images into a node's containerd, in
// the namespace the CRI uses, unless they are already there.
func (c *Cluster) ImportImages(ctx context.Context, h Host) error {
	imgs, err := c.Images()
	if err != nil {
		return err
	}
	cc, err := c.Env(ctx)
	if err != nil {
		return err
	}
	ctr := func(args ...string) ([]byte, error) {
		full := append([]string{"--net=" + layout.NetnsPath(layout.NetnsName(c.Config.Name, h.Name)), "--", cc.Bins.Ctr,
			"--address=" + c.Dirs.ContainerdSocket(h.Name), "--namespace=k8s.io"}, args...)
		return exec.CommandContext(ctx, "nsenter", full...).CombinedOutput()
	}
	out, err := ctr("images", "ls", "-q")
	if err != nil {
		return fmt.Errorf("host %s: listing images: %v: %s", h.Name, err, out)
	}
	have := map[string]bool{}
	for _, r := range strings.Fields(string(out)) {
		have[r] = true
	}
	missing := false
	for _, r := range imgs.Refs {
		if !have[r] {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	for _, t := range imgs.Tarballs {
		if out, err := ctr("images", "import", "--no-unpack=false", t); err != nil {
			return fmt.Errorf("host %s: importing %s: %v: %s", h.Name, t, err, out)
		}
	}
	return nil
}
