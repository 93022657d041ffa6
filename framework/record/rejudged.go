package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/faultline/faultline/framework/verdict"
)

// A run folder judged again (faultline rejudge) keeps each re-judging
// beside its records, never over them: <run folder>/rejudged/<UTC time>/,
// itself a run folder of the same runs. Its verdicts.jsonl holds the
// records with the new checker's verdicts (verdict.Run.Rejudged says by
// which checker and what it could not judge again), beside the verdict
// JUnit, the applicability table, the renderings and RejudgeFile; its
// evidence/ is a link to the run folder's own, so every report reads it
// as it reads the run folder.

// Names in a run folder's re-judgings.
const (
	RejudgedDir = "rejudged"
	// RejudgeFile says, verdict by verdict, what changed and why.
	RejudgeFile = "rejudge.txt"
)

// OpenToRejudge checks that dir is a run folder whose records can be
// judged again, touching nothing: it exists and is a directory, it is a
// run folder (evidence/ and verdicts.jsonl), every record decodes and has
// its run ID and scenario, and it is not itself a re-judging. It returns
// the records and the "file:line" of a last record a crash cut short ("",
// none), which is left out. Each problem is an error naming the folder.
func OpenToRejudge(dir string) (lines []Line, cut string, err error) {
	fail := func(format string, args ...any) ([]Line, string, error) {
		return nil, "", fmt.Errorf("run folder %s: %s", dir, fmt.Sprintf(format, args...))
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
		if inner, _ := filepath.Glob(filepath.Join(dir, "*", VerdictsFile)); len(inner) > 0 {
			return fail("it is not a run folder but holds %d of them: give them one by one", len(inner))
		}
		return fail("it is not a run folder: it has no %s/ directory", EvidenceDir)
	}
	path := filepath.Join(dir, VerdictsFile)
	file, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fail("it holds no run record (%s): no run of it ended", VerdictsFile)
	}
	if err != nil {
		return fail("%v", err)
	}
	defer file.Close()
	lines, cut, err = DecodeRuns(file, path)
	if err != nil {
		return nil, "", err
	}
	for _, l := range lines {
		switch {
		case l.RunID == "" || l.Scenario == "":
			return fail("%s: a run record needs runID and scenario", l.Where())
		case l.Rejudged != nil:
			return fail("%s: it is a re-judging of %s, not a run folder's own record: judge that folder again", l.Where(), filepath.Dir(filepath.Dir(dir)))
		}
	}
	return lines, cut, nil
}

// Rejudging is what one re-judging of a run folder writes.
type Rejudging struct {
	Suite string
	Runs  []verdict.Run
	// Table is the applicability table the runs were judged again with.
	Table []verdict.Inapplicable
	// Changes says, verdict by verdict, what changed (RejudgeFile).
	Changes []byte
}

// WriteRejudged writes a re-judging of the run folder runDir as
// runDir/rejudged/<UTC at>/ (with a numeric suffix when that exists) and
// returns its path. It is made whole under a temporary name and renamed,
// so that a reader never sees half of one and a failure leaves none; the
// run folder's own files are not touched. The renderings are those of the
// renderers linked into the program (Render): with none, the folder is
// written and the error is ErrNoRenderer.
func WriteRejudged(runDir string, at time.Time, rj Rejudging) (string, error) {
	parent := filepath.Join(runDir, RejudgedDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("writing the re-judging of %s: %w", runDir, err)
	}
	stamp := at.UTC().Format("20060102T150405Z")
	tmp, err := os.MkdirTemp(parent, "."+stamp+"-")
	if err != nil {
		os.Remove(parent) // only if empty: an earlier re-judging stays
		return "", fmt.Errorf("writing the re-judging of %s: %w", runDir, err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
			os.Remove(parent)
		}
	}()
	// Not MkdirTemp's 0700: as NewFolder makes a run folder.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("writing the re-judging of %s: %w", runDir, err)
	}
	// rejudged/<stamp>/evidence -> the run folder's evidence/: the same
	// depth under the temporary name as under the final one.
	if err := os.Symlink(filepath.Join("..", "..", EvidenceDir), filepath.Join(tmp, EvidenceDir)); err != nil {
		return "", fmt.Errorf("writing the re-judging of %s: linking the evidence: %w", runDir, err)
	}
	f := &Folder{Dir: tmp}
	for _, r := range rj.Runs {
		if err := f.AppendRun(r); err != nil {
			return "", err
		}
	}
	if err := f.WriteVerdictJUnit(rj.Suite, rj.Runs); err != nil {
		return "", err
	}
	if err := f.WriteApplicability(rj.Table); err != nil {
		return "", err
	}
	if err := f.WriteFile(RejudgeFile, rj.Changes); err != nil {
		return "", fmt.Errorf("writing %s: %w", RejudgeFile, err)
	}
	renderErr := f.Render(rj.Suite, rj.Runs, rj.Table)
	if renderErr != nil && !errors.Is(renderErr, ErrNoRenderer) {
		return "", renderErr
	}
	final := filepath.Join(parent, stamp)
	for i := 2; ; i++ {
		if _, err := os.Lstat(final); errors.Is(err, os.ErrNotExist) {
			break
		}
		if i > 1000 {
			return "", fmt.Errorf("writing the re-judging of %s: %s and its numbered names are taken", runDir, final)
		}
		final = fmt.Sprintf("%s-%d", filepath.Join(parent, stamp), i)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("writing the re-judging of %s: %w", runDir, err)
	}
	done = true
	if err := syncDir(parent); err != nil {
		return final, fmt.Errorf("writing the re-judging of %s: %w", runDir, err)
	}
	return final, renderErr
}

// LatestRejudged is the newest re-judging of the run folder runDir; an
// error when it has none.
func LatestRejudged(runDir string) (string, error) {
	des, err := os.ReadDir(filepath.Join(runDir, RejudgedDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var names []string
	for _, de := range des {
		if de.IsDir() && folderStamp.MatchString(de.Name()) {
			names = append(names, de.Name())
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("run folder %s has not been judged again (no %s/<time>/): run faultline rejudge %s first", runDir, RejudgedDir, runDir)
	}
	sort.Slice(names, func(i, j int) bool { return stampOrder(names[i]) < stampOrder(names[j]) })
	return filepath.Join(runDir, RejudgedDir, names[len(names)-1]), nil
}

// folderStamp is a re-judging's name: its UTC time, and a numeric suffix
// where that was taken.
var folderStamp = regexp.MustCompile(`^([0-9]{8}T[0-9]{6}Z)(?:-([0-9]+))?$`)

// stampOrder orders re-judgings' names by time, then suffix.
func stampOrder(name string) string {
	m := folderStamp.FindStringSubmatch(name)
	n, _ := strconv.Atoi(m[2])
	return fmt.Sprintf("%s-%06d", m[1], n)
}

// syncDir syncs a directory, so that a rename in it lasts a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
