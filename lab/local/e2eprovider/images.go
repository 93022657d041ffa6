package e2eprovider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// imageSavers are the tools LoadImage saves an image with, in the order
// it looks for them on PATH: each writes a docker-archive with `save -o`.
var imageSavers = []string{"docker", "podman"}

// LoadImageArchive imports an image archive into the container runtime
// of every node, or of the hosts args name, as the lab imports its node
// images (local.Lab.ImportImageArchive): a tar as `docker save` writes it
// or an OCI image layout, plain or gzip. Pods run its images with
// imagePullPolicy Never or IfNotPresent; the lab pulls from no registry.
// The images survive StopNode and StartNode.
func (p *Provider) LoadImageArchive(ctx context.Context, archivePath string, args ...string) error {
	l, err := p.created("LoadImageArchive")
	if err != nil {
		return err
	}
	if archivePath == "" {
		return errors.New("local lab provider: LoadImageArchive: no archive given")
	}
	if err := l.ImportImageArchive(ctx, archivePath, args...); err != nil {
		return fmt.Errorf("local lab provider: LoadImageArchive: %w", err)
	}
	return nil
}

// LoadImage loads an image from this machine's image store, as kind's
// `load docker-image` does: it saves the image with docker (or podman,
// the first on PATH) to an archive and imports that into every node, or
// into the hosts args name. The lab has no image store of its own, and
// its nodes pull from no registry: without docker or podman, save the
// image to an archive yourself and use LoadImageArchive.
func (p *Provider) LoadImage(ctx context.Context, image string, args ...string) error {
	if _, err := p.created("LoadImage"); err != nil {
		return err
	}
	if image == "" {
		return errors.New("local lab provider: LoadImage: no image given")
	}
	dir, err := os.MkdirTemp("", "faultline-e2e-image-")
	if err != nil {
		return fmt.Errorf("local lab provider: LoadImage %s: %w", image, err)
	}
	defer os.RemoveAll(dir)
	archive := filepath.Join(dir, "image.tar")
	if err := saveImage(ctx, image, archive); err != nil {
		return fmt.Errorf("local lab provider: LoadImage: %w", err)
	}
	return p.LoadImageArchive(ctx, archive, args...)
}

// saveImage writes image to archive with the first image saver on PATH.
func saveImage(ctx context.Context, image, archive string) error {
	tool := ""
	for _, name := range imageSavers {
		if path, err := exec.LookPath(name); err == nil {
			tool = path
			break
		}
	}
	if tool == "" {
		return fmt.Errorf("saving %s: neither %s is on PATH, and the local lab has no image store to load from (its nodes pull from no registry): save the image to an archive and use LoadImageArchive",
			image, strings.Join(imageSavers, " nor "))
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, "save", "-o", archive, image)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("saving %s with %s: %v: %s", image, tool, err, strings.TrimSpace(out.String()))
	}
	if st, err := os.Stat(archive); err != nil || st.Size() == 0 {
		return fmt.Errorf("saving %s with %s: it wrote no archive to %s", image, tool, archive)
	}
	return nil
}
