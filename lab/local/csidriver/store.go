package csidriver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Store is the export path of the storage host, as every host reaches
// it:
//
//	<root>/nodes/<node-id>                    a node that reached the storage, and where its mounts lie (written by the node driver at start)
//	<root>/volumes/<volume-id>/volume.json    the volume's record
//	<root>/volumes/<volume-id>/data/          a directory volume's contents
//	<root>/volumes/<volume-id>/image          a block volume's ext4 image
//	<root>/volumes/<volume-id>/attachments/<node-id>.json   a block volume published to a node
//	<root>/.lock                              held by the controller while it changes anything
//
// A volume appears by the rename of a finished directory and goes away by
// a rename before its removal, so a crash never leaves a half-made volume
// under its ID.
type Store struct {
	Root string
}

// Volume is a volume's record.
type Volume struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Kind          Kind              `json:"kind"`
	CapacityBytes int64             `json:"capacityBytes"`
	Parameters    map[string]string `json:"parameters,omitempty"`
	Created       time.Time         `json:"created"`
}

// Attachment is a block volume published to a node.
type Attachment struct {
	Node       string    `json:"node"`
	ReadOnly   bool      `json:"readOnly"`
	AccessMode string    `json:"accessMode"`
	Published  time.Time `json:"published"`
}

// ErrNotFound says there is no such volume.
var ErrNotFound = errors.New("no such volume")

const (
	volumesDir     = "volumes"
	nodesDir       = "nodes"
	recordFile     = "volume.json"
	dataDir        = "data"
	imageFile      = "image"
	attachmentsDir = "attachments"
	lockFile       = ".lock"
	creatingPrefix = ".creating-"
	deletingPrefix = ".deleting-"
)

var volumeIDPattern = regexp.MustCompile(`^(directory|block)-[0-9a-f]{32}$`)

// VolumeID is the ID of the volume of kind k named name: the same name
// always gives the same ID, which is what makes CreateVolume idempotent.
func VolumeID(k Kind, name string) string {
	sum := sha256.Sum256([]byte(string(k) + "\x00" + name))
	return string(k) + "-" + hex.EncodeToString(sum[:16])
}

// ParseVolumeID checks a volume ID's form and returns its kind.
func ParseVolumeID(id string) (Kind, error) {
	if !volumeIDPattern.MatchString(id) {
		return "", fmt.Errorf("volume ID %q is not of this driver's form (<kind>-<32 hex digits>)", id)
	}
	k, _, _ := strings.Cut(id, "-")
	return Kind(k), nil
}

// CheckNodeID says whether a node ID can be one: a DNS-1123 subdomain,
// as Kubernetes node names are.
func CheckNodeID(id string) error {
	if id == "" {
		return errors.New("node ID is empty")
	}
	if errs := validation.IsDNS1123Subdomain(id); len(errs) > 0 {
		return fmt.Errorf("node ID %q: %s", id, strings.Join(errs, "; "))
	}
	return nil
}

// VolumeDir is where the volume lives.
func (s Store) VolumeDir(id string) string { return filepath.Join(s.Root, volumesDir, id) }

// DataDir is a directory volume's contents.
func (s Store) DataDir(id string) string { return filepath.Join(s.VolumeDir(id), dataDir) }

// ImagePath is a block volume's image.
func (s Store) ImagePath(id string) string { return filepath.Join(s.VolumeDir(id), imageFile) }

// VolumesRoot holds every volume.
func (s Store) VolumesRoot() string { return filepath.Join(s.Root, volumesDir) }

func (s Store) attachmentPath(id, node string) string {
	return filepath.Join(s.VolumeDir(id), attachmentsDir, node+".json")
}

// Check says whether the export path is there and a directory.
func (s Store) Check() error {
	if !filepath.IsAbs(s.Root) {
		return fmt.Errorf("export path %q is not absolute", s.Root)
	}
	fi, err := os.Stat(s.Root)
	if err != nil {
		return fmt.Errorf("export path: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("export path %s is not a directory", s.Root)
	}
	return nil
}

// Lock takes the store's exclusive lock (a flock, so controllers in other
// processes wait too) and returns its release.
func (s Store) Lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.Root, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the export path: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// Get reads a volume's record; ErrNotFound (wrapped) when there is none.
func (s Store) Get(id string) (*Volume, error) {
	b, err := os.ReadFile(filepath.Join(s.VolumeDir(id), recordFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("volume %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("volume %s: %w", id, err)
	}
	var v Volume
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("volume %s: reading %s: %w", id, recordFile, err)
	}
	if v.ID != id {
		return nil, fmt.Errorf("volume %s: its record names %q", id, v.ID)
	}
	return &v, nil
}

// List reads every volume's record, by ID.
func (s Store) List() ([]*Volume, error) {
	entries, err := os.ReadDir(s.VolumesRoot())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Volume
	for _, e := range entries {
		if !volumeIDPattern.MatchString(e.Name()) {
			continue
		}
		v, err := s.Get(e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Create makes a volume: prepare fills a fresh directory (the image or the
// data directory), then the record is written and the directory renamed
// into place. The caller holds the lock.
func (s Store) Create(v *Volume, prepare func(dir string) error) error {
	root := s.VolumesRoot()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(root, creatingPrefix+v.ID+"-")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := prepare(tmp); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(tmp, recordFile), b); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.VolumeDir(v.ID)); err != nil {
		return fmt.Errorf("volume %s: putting it in place: %w", v.ID, err)
	}
	ok = true
	return syncDir(root)
}

// Remove deletes a volume and everything in it. The caller holds the
// lock. A volume that is not there is no error.
func (s Store) Remove(id string) error {
	dir := s.VolumeDir(id)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	gone := filepath.Join(s.VolumesRoot(), fmt.Sprintf("%s%s-%d", deletingPrefix, id, time.Now().UnixNano()))
	if err := os.Rename(dir, gone); err != nil {
		return fmt.Errorf("volume %s: %w", id, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("volume %s: removing %s: %w", id, gone, err)
	}
	return syncDir(s.VolumesRoot())
}

// SweepUnfinished removes what a crashed Create or Remove left (the
// caller holds the lock).
func (s Store) SweepUnfinished() error {
	entries, err := os.ReadDir(s.VolumesRoot())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), creatingPrefix) || strings.HasPrefix(e.Name(), deletingPrefix) {
			if err := os.RemoveAll(filepath.Join(s.VolumesRoot(), e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// Attachments lists the nodes a block volume is published to, by node.
func (s Store) Attachments(id string) ([]Attachment, error) {
	dir := filepath.Join(s.VolumeDir(id), attachmentsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Attachment
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var a Attachment
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, fmt.Errorf("volume %s: attachment %s: %w", id, e.Name(), err)
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}

// Attach records a block volume published to a node (the caller holds the
// lock).
func (s Store) Attach(id string, a Attachment) error {
	dir := filepath.Join(s.VolumeDir(id), attachmentsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(s.attachmentPath(id, a.Node), b)
}

// Detach removes the record of a block volume published to a node (the
// caller holds the lock); a record that is not there is no error.
func (s Store) Detach(id, node string) error {
	err := os.Remove(s.attachmentPath(id, node))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// nodeRecord is what a node driver writes about its node at start.
type nodeRecord struct {
	Node       string    `json:"node"`
	Registered time.Time `json:"registered"`
	// MountRoot is the directory every mount the node's driver makes
	// lies under (the kubelet's root), as the mount table names it; ""
	// when the node driver was given none.
	MountRoot string `json:"mountRoot,omitempty"`
}

// ErrNodeUnknown says a node never reached the storage.
var ErrNodeUnknown = errors.New("the node has not reached the storage")

// RegisterNode records that a node reaches the storage, and under which
// directory its mounts lie ("" for none known).
func (s Store) RegisterNode(node, mountRoot string) error {
	if err := CheckNodeID(node); err != nil {
		return err
	}
	if mountRoot != "" && (!filepath.IsAbs(mountRoot) || filepath.Clean(mountRoot) != mountRoot) {
		return fmt.Errorf("node %s: mount root %q is not a clean absolute path", node, mountRoot)
	}
	dir := filepath.Join(s.Root, nodesDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(nodeRecord{Node: node, Registered: time.Now().UTC(), MountRoot: mountRoot})
	return writeAtomic(filepath.Join(dir, node), b)
}

// NodeMountRoot is the directory a node's mounts lie under, as its
// driver recorded it ("" when it recorded none); ErrNodeUnknown (wrapped)
// when the node never reached the storage.
func (s Store) NodeMountRoot(node string) (string, error) {
	if CheckNodeID(node) != nil {
		return "", fmt.Errorf("node %q: %w", node, ErrNodeUnknown)
	}
	b, err := os.ReadFile(filepath.Join(s.Root, nodesDir, node))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("node %s: %w", node, ErrNodeUnknown)
	}
	if err != nil {
		return "", fmt.Errorf("node %s: %w", node, err)
	}
	var r nodeRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return "", fmt.Errorf("node %s: reading its record: %w", node, err)
	}
	return r.MountRoot, nil
}

// NodeKnown says whether a node has reached the storage.
func (s Store) NodeKnown(node string) bool {
	if CheckNodeID(node) != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(s.Root, nodesDir, node))
	return err == nil
}

// writeAtomic writes a file by a synced temporary file renamed over it.
func writeAtomic(path string, b []byte) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := writeSynced(tmp, b); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
