// Package record owns the run record: the run folder a suite run writes,
// reports/runs/<UTC start>-<suite>/, and how it is read back. A folder
// holds verdicts.jsonl (one run record a line, appended and synced as each
// run ends), the evidence of every run (evidence/<run>.jsonl), Ginkgo's
// JUnit, the verdict JUnit, the applicability table the runs were judged
// with and, written by the renderers linked into the suite (package
// reports links summary.md), its human-readable renderings. Each run
// record carries its provenance: the git commit and the lab file's hash.
//
// The engine (framework/scenario) writes through this package; reports and
// the papers' own reports read through it.
package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// EnvReportsDir overrides where run folders are made.
const EnvReportsDir = "FAULTLINE_REPORTS_DIR"

// File names inside a run folder.
const (
	VerdictsFile      = "verdicts.jsonl"
	GinkgoJUnitFile   = "junit.xml"
	VerdictJUnitFile  = "verdicts-junit.xml"
	SummaryFile       = "summary.md"
	EvidenceDir       = "evidence"
	ApplicabilityFile = "applicability.json"
)

// Root is where run folders go: $FAULTLINE_REPORTS_DIR, else reports/runs
// under the module root (the nearest directory above the working directory
// holding go.mod; a suite's test binary runs in its package directory),
// else reports/runs under the working directory.
func Root() (string, error) {
	if d := os.Getenv(EnvReportsDir); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the reports directory: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "reports", "runs"), nil
		}
		if filepath.Dir(dir) == dir {
			return filepath.Join(wd, "reports", "runs"), nil
		}
	}
}

// Folder is one suite run's report folder.
type Folder struct {
	Dir string
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// SafeName turns a suite, scenario or run name into a file name part.
func SafeName(s string) string {
	s = unsafeName.ReplaceAllString(s, "_")
	if s == "" {
		return "_"
	}
	return s
}

// NewFolder makes <root>/<UTC start>-<suite>/ (with a numeric suffix if a
// folder of that name exists) and its evidence directory.
func NewFolder(root, suite string, started time.Time) (*Folder, error) {
	base := filepath.Join(root, started.UTC().Format("20060102T150405Z")+"-"+SafeName(suite))
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("making the reports directory: %w", err)
	}
	dir := base
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return nil, fmt.Errorf("making the run folder: %w", err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Mkdir(filepath.Join(dir, EvidenceDir), 0o755); err != nil {
		return nil, fmt.Errorf("making the run folder: %w", err)
	}
	return &Folder{Dir: dir}, nil
}

// Path is the path of a file in the folder.
func (f *Folder) Path(name string) string { return filepath.Join(f.Dir, name) }

// EvidencePath is where a run's evidence is written.
func (f *Folder) EvidencePath(runID string) string {
	return filepath.Join(f.Dir, EvidenceDir, SafeName(runID)+".jsonl")
}

// WriteFile writes a whole file of the folder (a rendering, say) through
// a temporary name, synced, so that a reader never sees half of it.
func (f *Folder) WriteFile(name string, data []byte) error {
	return writeFileSynced(f.Path(name), data)
}

// writeFileSynced writes a whole file through a temporary name so a reader
// never sees half of it.
func writeFileSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	file, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := file.Write(data); err != nil {
		file.Close()
		return err
	}
	if err := file.Sync(); err != nil {
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
