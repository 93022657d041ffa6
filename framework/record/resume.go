package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
)

// ResolveRunFolder turns the folder a resume names into a path: an
// existing directory as it is given; a relative path that does not exist
// here is looked up in the parent directories (ginkgo runs a suite in its
// package directory, so reports/runs/<folder> given at the module's root
// is found from suites/disagree), then under Root() (so the folder's name
// alone will do). It only reads.
func ResolveRunFolder(arg string) (string, error) {
	if arg == "" {
		return "", errors.New("no run folder given")
	}
	if _, err := os.Stat(arg); err == nil || filepath.IsAbs(arg) {
		return arg, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := filepath.Dir(wd); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, arg)); err == nil {
			return filepath.Join(dir, arg), nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if root, err := Root(); err == nil {
		if _, err := os.Stat(filepath.Join(root, arg)); err == nil {
			return filepath.Join(root, arg), nil
		}
	}
	// Not found anywhere: the path as given, which the checks name.
	return arg, nil
}

// Resumed is a run folder opened to be resumed: the run records it holds.
type Resumed struct {
	Folder *Folder
	// Lines are the complete run records of verdicts.jsonl, in order.
	Lines []Line
	// Cut is the "file:line" of a last record a crash cut short, "" when
	// there is none: its run never finished.
	Cut string
}

// folderName is a run folder's name as NewFolder makes it: the UTC start,
// the suite's safe name, and a numeric suffix where the name was taken.
var folderName = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-(.+)$`)

// OpenToResume checks that dir is a run folder of suite and reads its run
// records, touching nothing. It is an error naming the problem when dir
// does not exist or is no directory; when it is not a run folder (it has
// no evidence/ directory, which NewFolder makes every run folder with);
// when a record is malformed or lacks its run ID or scenario; when a
// record is of another suite; and, for a folder that holds no record yet
// (a suite killed before its first run ended), when its name is not
// <UTC start>-<suite>.
func OpenToResume(dir, suite string) (*Resumed, error) {
	fail := func(format string, args ...any) (*Resumed, error) {
		return nil, fmt.Errorf("resuming run folder %s: %s", dir, fmt.Sprintf(format, args...))
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fail("it does not exist")
	case err != nil:
		return fail("%v", err)
	case !st.IsDir():
		return fail("it is not a directory")
	}
	if st, err := os.Stat(filepath.Join(dir, EvidenceDir)); err != nil || !st.IsDir() {
		return fail("it is not a run folder: it has no %s/ directory, which every run folder is made with", EvidenceDir)
	}
	path := filepath.Join(dir, VerdictsFile)
	file, err := os.Open(path)
	var lines []Line
	var cut string
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fail("%v", err)
	default:
		lines, cut, err = DecodeRuns(file, path)
		file.Close()
		if err != nil {
			return fail("%v", err)
		}
	}
	for _, l := range lines {
		switch {
		case l.RunID == "" || l.Scenario == "":
			return fail("%s: a run record needs runID and scenario", l.Where())
		case l.Suite != suite:
			return fail("it is a run folder of suite %q (%s holds a run of it), not of %q", l.Suite, l.Where(), suite)
		}
	}
	if len(lines) == 0 {
		m := folderName.FindStringSubmatch(filepath.Base(filepath.Clean(dir)))
		if m == nil {
			return fail("it holds no run record and its name is not <UTC start>-<suite>, so nothing says it is a run folder of suite %q", suite)
		}
		own := SafeName(suite)
		if m[1] != own && !regexp.MustCompile(`^`+regexp.QuoteMeta(own)+`-[0-9]+$`).MatchString(m[1]) {
			return fail("it holds no run record and its name says it is a run folder of suite %q, not of %q", m[1], suite)
		}
	}
	return &Resumed{Folder: &Folder{Dir: dir}, Lines: lines, Cut: cut}, nil
}

// DropCutRecord removes from verdicts.jsonl a last record a crash cut
// short (one without its newline), so that the records appended after it
// each start a line of their own; its run never finished and runs again.
// It returns how many bytes it removed (0 when the file ends with a whole
// record, or does not exist).
func (f *Folder) DropCutRecord() (int, error) {
	file, err := os.OpenFile(f.Path(VerdictsFile), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("removing a cut record: %w", err)
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("removing a cut record: locking %s: %w", VerdictsFile, err)
	}
	b, err := io.ReadAll(file)
	if err != nil {
		return 0, fmt.Errorf("removing a cut record: %w", err)
	}
	keep := bytes.LastIndexByte(b, '\n') + 1
	if len(bytes.TrimSpace(b[keep:])) == 0 {
		return 0, nil
	}
	if err := file.Truncate(int64(keep)); err != nil {
		return 0, fmt.Errorf("removing a cut record: %w", err)
	}
	if err := file.Sync(); err != nil {
		return 0, fmt.Errorf("removing a cut record: syncing: %w", err)
	}
	return len(b) - keep, nil
}

// ErrFolderInUse is wrapped by Lock's error when another process holds
// the folder.
var ErrFolderInUse = errors.New("the run folder is in use by another running suite")

// Lock takes the folder for this process, until it exits, so that no
// second suite run writes into it (a resume of a folder whose suite still
// runs would run its scenarios twice). The lock is an flock on the folder
// itself, released by the kernel however the process ends, kill -9
// included.
func (f *Folder) Lock() error {
	d, err := os.Open(f.Dir)
	if err != nil {
		return fmt.Errorf("locking run folder %s: %w", f.Dir, err)
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		d.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("run folder %s: %w", f.Dir, ErrFolderInUse)
		}
		return fmt.Errorf("locking run folder %s: %w", f.Dir, err)
	}
	// The descriptor stays open, holding the lock, for the process's life.
	heldLocks = append(heldLocks, d)
	return nil
}

// heldLocks keeps the descriptors that hold folder locks reachable, so
// that no finalizer closes them.
var heldLocks []*os.File
