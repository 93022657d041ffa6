package local

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// dockerArchive writes a one-image archive as `docker save` lays it out.
func dockerArchive(t *testing.T, dir string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("faultline.example/archive-test:v1")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "image.tar")
	if err := tarball.WriteToFile(p, tag, img); err != nil {
		t.Fatal(err)
	}
	return p
}

func gzipFile(t *testing.T, src, dst string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// tarOf writes a tar holding empty files of the given names.
func tarOf(t *testing.T, p string, names ...string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckImageArchiveTellsArchivesFromOtherFiles(t *testing.T) {
	dir := t.TempDir()
	docker := dockerArchive(t, dir)
	notTar := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notTar, []byte(strings.Repeat("not an archive\n", 64)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file string
		gzipped    bool
		wantErr    string
	}{
		{"docker save", docker, false, ""},
		{"docker save, gzip", gzipFile(t, docker, filepath.Join(dir, "image.tar.gz")), true, ""},
		{"OCI layout", tarOf(t, filepath.Join(dir, "oci.tar"), "oci-layout", "./index.json", "blobs/sha256/0123"), false, ""},
		{"a tar of something else", tarOf(t, filepath.Join(dir, "other.tar"), "etc/hosts", "nested/manifest.json"), false, "holds neither manifest.json"},
		{"gzip of something else", gzipFile(t, notTar, filepath.Join(dir, "notes.gz")), false, "is not a tar"},
		{"not a tar", notTar, false, "is not a tar"},
		{"a directory", dir, false, "is not a regular file"},
		{"missing", filepath.Join(dir, "absent.tar"), false, "no such file"},
	} {
		gz, err := checkImageArchive(c.file)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr == "" && gz != c.gzipped:
			t.Errorf("%s: gzipped = %v, want %v", c.name, gz, c.gzipped)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.wantErr)
		}
	}
}

func TestGunzipToTempGivesThePlainArchive(t *testing.T) {
	dir := t.TempDir()
	plain := dockerArchive(t, dir)
	out, err := gunzipToTemp(gzipFile(t, plain, filepath.Join(dir, "image.tar.gz")))
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(out)
	want, _ := os.ReadFile(plain)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("decompressed archive differs from the original (%d bytes, want %d)", len(got), len(want))
	}
}

// unitLab opens a topology under a name no running lab has, so that the
// checks below read the links and records of nothing real.
func unitLab(t *testing.T, topology string) *Lab {
	t.Helper()
	c := loadTopology(t, topology)
	c.Name = "flunit-" + topology
	c.StateDir = filepath.Join(t.TempDir(), "state")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// An import is refused, naming why, before any node is touched: unknown
// hosts, hosts without a runtime, a bad archive, and nodes whose runtime
// does not run (here: a lab that is not up).
func TestImportImageArchiveRefusesBeforeTouchingANode(t *testing.T) {
	archive := dockerArchive(t, t.TempDir())
	l := unitLab(t, "lab11")
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		archive string
		hosts   []string
		want    []string
	}{
		{"unknown host", archive, []string{"worker9"}, []string{`no host "worker9"`, "worker1"}},
		{"etcd-only host", archive, []string{"etcd1"}, []string{"etcd1 runs no container runtime", "cp1", "worker3"}},
		{"host named twice", archive, []string{"worker1", "worker1"}, []string{"worker1 is named twice"}},
		{"bad archive", filepath.Join(t.TempDir(), "absent.tar"), nil, []string{"image archive", "absent.tar"}},
		{"lab not up", archive, []string{"worker2"}, []string{"does not run on worker2 (containerd stopped, power absent)"}},
		{"every node of a lab not up", archive, nil, []string{"cp1 (containerd", "worker3 (containerd"}},
	} {
		err := l.ImportImageArchive(ctx, c.archive, c.hosts...)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "etcd1 (containerd") {
			t.Errorf("%s: an etcd-only host was taken for a node: %v", c.name, err)
		}
	}
}
