package local

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/supervise"
)

// ImportImageArchive imports an image archive into the container runtime
// of every node (every host that runs a kubelet), or of the named hosts
// only, the way the node images are imported at boot: into the
// namespace the CRI uses, unpacked, so a pod with imagePullPolicy Never
// or IfNotPresent runs it without a registry.
//
// The archive is a tar as `docker save` writes it (manifest.json) or an
// OCI image layout (index.json), plain or gzip-compressed; anything else
// is refused before any node is touched, as is a host that runs no
// runtime or whose runtime is not running (powered off, stopped,
// frozen). The images live in each node's data, so they survive a power
// cycle; they are not in the cold snapshot, so Reset forgets them.
func (l *Lab) ImportImageArchive(ctx context.Context, archive string, hosts ...string) error {
	targets, err := l.importTargets(hosts)
	if err != nil {
		return fmt.Errorf("lab %s: importing %s: %w", l.cfg.Name, archive, err)
	}
	gz, err := checkImageArchive(archive)
	if err != nil {
		return fmt.Errorf("lab %s: %w", l.cfg.Name, err)
	}
	var notRunning []string
	for _, h := range targets {
		if _, st := l.sup.Lookup(h.cfg.Name, lab.ServiceContainerd); st != supervise.StateRunning {
			notRunning = append(notRunning, fmt.Sprintf("%s (containerd %s, power %s)", h.cfg.Name, st, h.Power()))
		}
	}
	if len(notRunning) > 0 {
		return fmt.Errorf("lab %s: importing %s: the runtime does not run on %s: power the host on (or start its containerd) first",
			l.cfg.Name, archive, strings.Join(notRunning, ", "))
	}
	if gz {
		// ctr reads a plain tar only.
		plain, err := gunzipToTemp(archive)
		if err != nil {
			return fmt.Errorf("lab %s: %w", l.cfg.Name, err)
		}
		defer os.Remove(plain)
		archive = plain
	}
	var errs []error
	for _, h := range targets {
		errs = append(errs, l.comp.ImportArchive(ctx, h.component(), archive))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab %s: %w", l.cfg.Name, err)
	}
	return nil
}

// importTargets are the named hosts, each of which must run a kubelet, or
// every such host when none is named.
func (l *Lab) importTargets(names []string) ([]*Host, error) {
	var nodes, out []*Host
	var nodeNames []string
	for _, h := range l.hosts {
		if h.node != nil {
			nodes = append(nodes, h)
			nodeNames = append(nodeNames, h.cfg.Name)
		}
	}
	if len(names) == 0 {
		if len(nodes) == 0 {
			return nil, errors.New("the lab has no node (no host runs a kubelet)")
		}
		return nodes, nil
	}
	seen := map[string]bool{}
	for _, n := range names {
		h, ok := l.byName[n]
		switch {
		case !ok:
			_, err := l.Host(n)
			return nil, err
		case h.node == nil:
			return nil, fmt.Errorf("host %s runs no container runtime (the nodes are %v)", n, nodeNames)
		case seen[n]:
			return nil, fmt.Errorf("host %s is named twice", n)
		}
		seen[n] = true
		out = append(out, h)
	}
	return out, nil
}

// checkImageArchive says whether the file is an image archive ctr can
// import, and whether it is gzip-compressed: a tar whose top level holds
// manifest.json (docker save) or index.json (an OCI image layout).
func checkImageArchive(file string) (gzipped bool, err error) {
	f, err := os.Open(file)
	if err != nil {
		return false, fmt.Errorf("image archive: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return false, fmt.Errorf("image archive: %w", err)
	} else if !st.Mode().IsRegular() {
		return false, fmt.Errorf("image archive %s is not a regular file", file)
	}
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return false, fmt.Errorf("image archive %s: %w", file, err)
		}
		defer zr.Close()
		r, gzipped = zr, true
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return false, fmt.Errorf("image archive %s holds neither manifest.json (docker save) nor index.json (an OCI image layout)", file)
		}
		if err != nil {
			return false, fmt.Errorf("image archive %s is not a tar (plain or gzip): %w", file, err)
		}
		switch path.Clean(hdr.Name) {
		case "manifest.json", "index.json":
			return gzipped, nil
		}
	}
}

// gunzipToTemp writes the decompressed archive to a temporary file and
// returns its path.
func gunzipToTemp(file string) (string, error) {
	in, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("image archive: %w", err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return "", fmt.Errorf("image archive %s: %w", file, err)
	}
	out, err := os.CreateTemp("", "faultline-image-*.tar")
	if err != nil {
		return "", fmt.Errorf("decompressing image archive %s: %w", file, err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		out.Close()
		os.Remove(out.Name())
		return "", fmt.Errorf("decompressing image archive %s: %w", file, err)
	}
	if err := out.Close(); err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("decompressing image archive %s: %w", file, err)
	}
	return out.Name(), nil
}
