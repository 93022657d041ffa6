package checker

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// e2fsck's exit status bits (e2fsck(8)).
const (
	fsckCorrected   = 1
	fsckReboot      = 2
	fsckUncorrected = 4
	fsckOperational = 8
	fsckUsage       = 16
	fsckCanceled    = 32
	fsckLibrary     = 128
)

// FilesystemCommand is the check run on a block volume's image file: a
// forced (-f, even when the file system says it is clean), read-only (-n:
// no question answered yes, nothing written) e2fsck. It works on a regular
// file and needs no root.
func FilesystemCommand(image string) []string { return []string{"e2fsck", "-fn", image} }

// Filesystem is what e2fsck said of one image.
type Filesystem struct {
	Image    string `json:"image"`
	ExitCode int    `json:"exitCode"`
	// Damaged: e2fsck found errors it would have corrected (exit status
	// bit 4 under -n), or no file system it can read (a bad superblock).
	Damaged bool `json:"damaged,omitempty"`
	// Unchecked: e2fsck could not check for another reason (an
	// operational error other than the file system's, a usage error, a
	// cancellation): the image proves nothing either way.
	Unchecked bool `json:"unchecked,omitempty"`
	// NeedsRecovery: the journal holds transactions not yet replayed
	// (the file system was not unmounted cleanly: the superblock's
	// needs_recovery flag is set); under -n e2fsck does not replay them,
	// so what it reports may be metadata the journal would have repaired.
	NeedsRecovery bool `json:"needsRecovery,omitempty"`
	// JournalDiscarded: the journal holds data while the superblock's
	// needs_recovery flag is clear (e2fsck: "needs_recovery flag is
	// clear, but journal has data"), which two mounts writing one
	// superblock over the other's journal leave. The kernel's next mount
	// does not replay such a journal, it wipes it (fs/ext4/super.c,
	// ext4_load_journal), so what e2fsck finds is what that mount finds:
	// no journal would repair it.
	JournalDiscarded bool `json:"journalDiscarded,omitempty"`
	// Problems are e2fsck's lines that name what it found.
	Problems []string `json:"problems,omitempty"`
	// Output is e2fsck's output, as it printed it.
	Output string `json:"output,omitempty"`
}

// Clean reports whether e2fsck checked the image and found nothing.
func (r Filesystem) Clean() bool { return !r.Damaged && !r.Unchecked }

// String says what was checked and what was found.
func (r Filesystem) String() string {
	s := fmt.Sprintf("e2fsck -fn on %s exited %d", r.Image, r.ExitCode)
	switch {
	case r.NeedsRecovery:
		s += " with the journal not replayed"
	case r.JournalDiscarded:
		s += " with a journal the next mount discards (data in it, the needs_recovery flag clear): what it found is what that mount finds"
	}
	switch {
	case r.Unchecked:
		return s + ": it could not check the image: " + firstLines(r.Output, 2)
	case r.Damaged:
		p, more := r.Problems, ""
		if len(p) > 3 {
			p, more = p[:3], fmt.Sprintf(" (%d lines in all)", len(r.Problems))
		}
		if len(p) == 0 {
			p = []string{firstLines(r.Output, 2)}
		}
		return s + ": the file system is damaged: " + strings.Join(p, "; ") + more
	}
	return s + ": clean"
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}

// ParseFilesystemCheck reads e2fsck -fn's exit status and output, however
// it was run (here, or on the storage host over SSH).
func ParseFilesystemCheck(image string, exitCode int, output string) Filesystem {
	r := Filesystem{Image: image, ExitCode: exitCode, Output: output}
	lower := strings.ToLower(output)
	// Only these two say a journal waits for the replay a mount makes;
	// "needs_recovery flag is clear, but journal has data" says the
	// opposite: the mount discards it.
	r.NeedsRecovery = strings.Contains(lower, "skipping journal recovery") || strings.Contains(lower, "won't do journal recovery")
	r.JournalDiscarded = strings.Contains(lower, "needs_recovery flag is clear, but journal has data")
	badSuper := strings.Contains(lower, "bad magic number in super-block") ||
		strings.Contains(lower, "superblock could not be read or does not describe a valid") ||
		strings.Contains(lower, "corrupt in superblock") || strings.Contains(lower, "superblock has an invalid journal")
	for _, l := range strings.Split(output, "\n") {
		l = strings.TrimSpace(l)
		if isFsckProblem(l) {
			r.Problems = append(r.Problems, l)
		}
	}
	switch {
	case exitCode&(fsckUsage|fsckCanceled|fsckLibrary) != 0:
		r.Unchecked = true
	case exitCode&(fsckUncorrected|fsckCorrected|fsckReboot) != 0:
		// Errors found (an abort after them sets the operational bit too).
		r.Damaged = true
	case exitCode&fsckOperational != 0:
		// An operational error alone is the file system's own when e2fsck
		// found no superblock it can read; else (no such file, no
		// permission) it says nothing of the file system.
		if badSuper {
			r.Damaged = true
		} else {
			r.Unchecked = true
		}
	case exitCode != 0:
		r.Unchecked = true
	}
	return r
}

// isFsckProblem picks e2fsck's lines that report a finding rather than a
// pass's name or the summary.
func isFsckProblem(l string) bool {
	if l == "" || strings.HasPrefix(l, "Pass ") || strings.HasPrefix(l, "e2fsck ") || strings.Contains(l, " files, ") {
		return false
	}
	low := strings.ToLower(l)
	for _, w := range []string{"error", "wrong", "invalid", "bad ", "corrupt", "differences", "fix? no", "clear? no", "unattached", "deleted/unused", "has zero dtime", "illegal", "duplicate", "not set"} {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// e2fsckPath finds e2fsck on PATH, else where Debian's e2fsprogs puts it
// (/usr/sbin is not on every user's PATH).
func e2fsckPath() (string, error) {
	if p, err := exec.LookPath("e2fsck"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/e2fsck", "/sbin/e2fsck"} {
		if _, err := exec.LookPath(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("e2fsck not found on PATH nor in /usr/sbin or /sbin: install e2fsprogs")
}

// CheckFilesystemImage runs FilesystemCommand on an image file here.
// The error is for an e2fsck that could not be run at all; whatever
// e2fsck itself said is in the result.
func CheckFilesystemImage(ctx context.Context, image string) (Filesystem, error) {
	argv := FilesystemCommand(image)
	bin, err := e2fsckPath()
	if err != nil {
		return Filesystem{}, err
	}
	cmd := exec.CommandContext(ctx, bin, argv[1:]...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return ParseFilesystemCheck(image, 0, string(out)), nil
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return ParseFilesystemCheck(image, exit.ExitCode(), string(out)), nil
	}
	return Filesystem{}, fmt.Errorf("running %s: %w", strings.Join(argv, " "), err)
}
