package splitbrain_test

import (
	"context"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
)

// storageLab is a lab with storage whose fence is emulated, as the local
// lab's is; nothing else of it is used.
type storageLab struct {
	lab.Lab
	info lab.StorageInfo
}

func (s storageLab) StorageInfo() (lab.StorageInfo, error) { return s.info, nil }
func (s storageLab) ReadVolumeFile(context.Context, string, string) (lab.VolumeFile, error) {
	return lab.VolumeFile{}, nil
}

const emulatedFence = "the storage host's ext4 shutdown of the node's own mount at detach, which one kernel reaches for every node"

var emulatingLab = storageLab{info: lab.StorageInfo{
	Emulated:       []string{"shared directory volumes are one directory of the machine's file system", "fencing (faultline-block-fenced, at detach) is " + emulatedFence},
	FenceEmulation: emulatedFence,
}}

// The fenced block class's run says first that its fence is the
// emulation's, not a storage array's; the other runs make no such claim.
func TestTheFencedRunSaysItsFenceIsTheEmulations(t *testing.T) {
	found := 0
	for _, s := range table() {
		if s.Emulation == nil {
			t.Errorf("%s says nothing of the emulated storage", s.ID)
			continue
		}
		e := s.Emulation(emulatingLab)
		fenced := hasLabel(s.Labels, "volume:block-fenced")
		says := strings.HasPrefix(e, "fence emulated: this run's fence is the emulation's, not a storage array's revocation of the node's access: "+emulatedFence)
		switch {
		case fenced && !says:
			t.Errorf("%s (fenced) emulation: %q", s.ID, e)
		case !fenced && strings.Contains(e, "this run's fence"):
			t.Errorf("%s (not fenced) claims a fence: %q", s.ID, e)
		}
		if fenced {
			found++
		}
		if !strings.Contains(e, "storage emulated: shared directory volumes") {
			t.Errorf("%s: the storage's emulation is not said: %q", s.ID, e)
		}
	}
	if found == 0 {
		t.Error("no fenced scenario in the table")
	}
}
