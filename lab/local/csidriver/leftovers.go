package csidriver

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/faultline/faultline/lab/local/csidriver/loopdev"
)

// Leftovers are what the volumes of an export path still have in the
// kernel: loop devices over its images, and mounts of them or of its
// directory volumes, wherever they are mounted. A lab that is down (or a
// test that is over) has none.
type Leftovers struct {
	LoopDevices []loopdev.Device
	// Mounts are mount points, deepest first, so that unmounting them in
	// order works.
	Mounts []string
}

// Empty says whether nothing is left.
func (l Leftovers) Empty() bool { return len(l.LoopDevices) == 0 && len(l.Mounts) == 0 }

func (l Leftovers) String() string {
	var parts []string
	for _, d := range l.LoopDevices {
		parts = append(parts, fmt.Sprintf("loop device %s over %s", d.Path, d.BackingFile))
	}
	for _, m := range l.Mounts {
		parts = append(parts, "mount at "+m)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

// FindLeftovers lists the export path's leftovers (one kernel serves every
// host of the local lab, so this sees every node's).
func FindLeftovers(st Store) (Leftovers, error) {
	devs, byVolume, err := volumeMounts(st)
	if err != nil {
		return Leftovers{}, err
	}
	l := Leftovers{LoopDevices: devs}
	for _, mps := range byVolume {
		l.Mounts = append(l.Mounts, mps...)
	}
	sort.Slice(l.Mounts, func(i, j int) bool {
		return strings.Count(l.Mounts[i], "/") > strings.Count(l.Mounts[j], "/")
	})
	return l, nil
}

// volumeMounts lists the loop devices over the export path's images, and
// by volume ID the mount points of each volume: mounts of its loop
// devices, and bind mounts of its data directory or below.
func volumeMounts(st Store) ([]loopdev.Device, map[string][]string, error) {
	root := st.VolumesRoot()
	devs, err := loopdev.List(root)
	if err != nil {
		return nil, nil, err
	}
	all, err := mountinfo.GetMounts(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the mount table: %w", err)
	}
	loops := map[string]string{}
	for _, d := range devs {
		loops[d.Path] = filepath.Base(filepath.Dir(strings.TrimSuffix(d.BackingFile, " (deleted)")))
	}
	// A bind mount of a directory volume shows the file system it is on
	// and the directory's path within it: find where root lies in its
	// own file system.
	host := containing(all, root)
	var inFS string
	if host != nil {
		rel, _ := filepath.Rel(host.Mountpoint, root)
		inFS = filepath.Join(host.Root, rel)
	}
	by := map[string][]string{}
	for _, m := range all {
		if id, ok := loops[m.Source]; ok {
			by[id] = append(by[id], m.Mountpoint)
			continue
		}
		if host != nil && m.Major == host.Major && m.Minor == host.Minor && m.Mountpoint != host.Mountpoint {
			if id, ok := volumeDataOf(m.Root, inFS); ok {
				by[id] = append(by[id], m.Mountpoint)
			}
		}
	}
	return devs, by, nil
}

// containing is the mount a path lies on: the longest mount point that is
// the path or above it (the last such, if stacked).
func containing(all []*mountinfo.Info, path string) *mountinfo.Info {
	var best *mountinfo.Info
	for _, m := range all {
		mp := m.Mountpoint
		if path == mp || mp == "/" || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/") {
			if best == nil || len(mp) >= len(best.Mountpoint) {
				best = m
			}
		}
	}
	return best
}

// volumeDataOf says whether a mount's root (a path in its file system) is
// a volume's data directory, or below one, under volumes (that
// directory's path in the same file system), and which volume's.
func volumeDataOf(root, volumes string) (string, bool) {
	rel, err := filepath.Rel(volumes, root)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) >= 2 && volumeIDPattern.MatchString(parts[0]) && parts[1] == dataDir {
		return parts[0], true
	}
	return "", false
}
