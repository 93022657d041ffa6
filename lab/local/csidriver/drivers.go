package csidriver

import (
	"fmt"
	"strings"
)

// Kind is the kind of volume a driver serves.
type Kind string

const (
	// KindDirectory is a shared directory (attachRequired: false).
	KindDirectory Kind = "directory"
	// KindBlock is an ext4 image, a loop device per node
	// (attachRequired: true).
	KindBlock Kind = "block"
)

// Kinds are both kinds, in the order the program serves them.
var Kinds = []Kind{KindDirectory, KindBlock}

// The driver names, as the CSIDriver objects, the StorageClasses'
// provisioner and the PersistentVolumes' spec.csi.driver name them.
const (
	DirectoryDriverName = "directory.csi.faultline.local"
	BlockDriverName     = "block.csi.faultline.local"
)

// VendorVersion is what GetPluginInfo reports.
const VendorVersion = "1.0.0"

// DriverName is the CSI driver name of the kind.
func (k Kind) DriverName() string {
	switch k {
	case KindDirectory:
		return DirectoryDriverName
	case KindBlock:
		return BlockDriverName
	}
	return ""
}

// AttachRequired is the kind's CSIDriver spec.attachRequired.
func (k Kind) AttachRequired() bool { return k == KindBlock }

// ParseKind reads a kind by name ("directory", "block").
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown volume kind %q (known: %s)", s, kindList())
}

// ParseKinds reads a comma-separated list of kinds; empty means both.
func ParseKinds(s string) ([]Kind, error) {
	if strings.TrimSpace(s) == "" {
		return Kinds, nil
	}
	var out []Kind
	seen := map[Kind]bool{}
	for _, f := range strings.Split(s, ",") {
		k, err := ParseKind(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, nil
}

func kindList() string {
	var s []string
	for _, k := range Kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}
