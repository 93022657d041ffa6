package components

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/binpaths"
	"github.com/faultline/faultline/lab/local/internal/layout"
)

// Images is what every node's containerd gets: the OCI tarballs of the
// program's node images (there is no registry) and the sandbox image the
// runtime pins.
type Images struct {
	Pause    string   // image reference of the pod sandbox image
	Tarballs []string // OCI archives, each holding one or more tagged images
	Refs     []string // every reference the tarballs hold
	// Agents are the node agents' images, loaded only where the lab runs
	// them as pods.
	Agents map[string]lab.NodeImage
}

// Images are the node images: those the lab's up built (BuildImages)
// as its state dir records them, else built now into the cache next to
// the binaries by the program's node image source
// (lab.ProvideNodeImages), once per Cluster value. After the up, the
// nodes' runtimes hold the images and a reset restores them with the
// runtimes' data, so a later process (a reset, a power-on, a heal) only
// needs their names: building them again took 15–20 s of every
// `faultline lab reset`.
func (c *Cluster) Images() (Images, error) {
	c.imagesOnce.Do(func() {
		if imgs, ok := c.recordedImages(); ok {
			c.images = imgs
			return
		}
		c.images, c.imagesErr = c.buildImages()
	})
	return c.images, c.imagesErr
}

// BuildImages builds the node images whatever the state dir records:
// lab up calls it, so that a lab brought up again holds what the program
// builds now. RecordImages records them once the state dir is made.
func (c *Cluster) BuildImages() (Images, error) {
	imgs, err := c.buildImages()
	if err != nil {
		return Images{}, err
	}
	c.imagesOnce.Do(func() {})
	c.images, c.imagesErr = imgs, nil
	return imgs, nil
}

// RecordImages records in the state dir the images this Cluster value
// holds (built by BuildImages), for every later process of the lab.
func (c *Cluster) RecordImages() error {
	imgs, err := c.Images()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(imgs, "", "  ")
	if err == nil {
		err = writeFile(c.Dirs.Images(), string(b)+"\n")
	}
	if err != nil {
		return fmt.Errorf("node images: recording them: %w", err)
	}
	return nil
}

func (c *Cluster) buildImages() (Images, error) {
	imgs, err := lab.BuildNodeImages(context.Background(), binpaths.CacheDir())
	if err != nil {
		return Images{}, fmt.Errorf("node images: %w", err)
	}
	return Images{Pause: imgs.Sandbox, Tarballs: imgs.Tarballs, Refs: imgs.Refs, Agents: imgs.Agents}, nil
}

// recordedImages are the images the state dir records, when it records
// some and every archive they name is still there (a runtime that lost
// them imports them again from those archives).
func (c *Cluster) recordedImages() (Images, bool) {
	b, err := os.ReadFile(c.Dirs.Images())
	if err != nil {
		return Images{}, false
	}
	var imgs Images
	if json.Unmarshal(b, &imgs) != nil || imgs.Pause == "" || len(imgs.Refs) == 0 {
		return Images{}, false
	}
	files := slices.Clone(imgs.Tarballs)
	for _, a := range imgs.Agents {
		files = append(files, a.Tarball)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return Images{}, false
		}
	}
	return imgs, true
}

// ImportImages imports the node images into a node's containerd, in
// the namespace the CRI uses, unless they are already there; where the
// node agents run as pods, the images of those the node runs too.
func (c *Cluster) ImportImages(ctx context.Context, h Host) error {
	imgs, err := c.Images()
	if err != nil {
		return err
	}
	out, err := c.ctr(ctx, h, "images", "ls", "-q")
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
	if missing {
		for _, t := range imgs.Tarballs {
			if err := c.ImportArchive(ctx, h, t); err != nil {
				return err
			}
		}
	}
	if !c.AgentsAsPods() {
		return nil
	}
	for _, a := range Agents {
		im, ok := imgs.Agents[a]
		if !ok {
			return fmt.Errorf("host %s: no %s image to import", h.Name, a)
		}
		if !RunsAgent(h, a) || have[im.Ref] {
			continue
		}
		if err := c.ImportArchive(ctx, h, im.Tarball); err != nil {
			return err
		}
	}
	return nil
}

// ImportArchive imports one image archive (a docker-archive or OCI-layout
// tar on this machine) into a node's containerd, in the namespace the CRI
// uses, unpacked, so that its kubelet finds the images as pulled ones.
func (c *Cluster) ImportArchive(ctx context.Context, h Host, archive string) error {
	if out, err := c.ctr(ctx, h, "images", "import", "--no-unpack=false", archive); err != nil {
		return fmt.Errorf("host %s: importing %s: %v: %s", h.Name, archive, err, out)
	}
	return nil
}

// ctr runs containerd's ctr against a node's containerd, from inside the
// node's network namespace, and returns its combined output.
func (c *Cluster) ctr(ctx context.Context, h Host, args ...string) ([]byte, error) {
	cc, err := c.Env(ctx)
	if err != nil {
		return nil, err
	}
	full := append([]string{"--net=" + layout.NetnsPath(layout.NetnsName(c.Config.Name, h.Name)), "--", cc.Bins.Ctr,
		"--address=" + c.Dirs.ContainerdSocket(h.Name), "--namespace=k8s.io"}, args...)
	return exec.CommandContext(ctx, "nsenter", full...).CombinedOutput()
}
