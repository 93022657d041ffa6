package scenario

// Everything the engine writes to or reads from a run folder is in this
// file: the folder's layout and formats belong to the record package it
// calls, and the engine touches them nowhere else.

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// runFolder is the run folder of one suite run.
type runFolder struct {
	f *record.Folder
}

func (rf *runFolder) dir() string { return rf.f.Dir }

// newRunFolder makes the run folder of a suite run under root (default
// record.Root()), takes it for this process (no resume may write into it
// while the suite runs) and returns its path.
func newRunFolder(root, suite string) (string, error) {
	if root == "" {
		var err error
		if root, err = record.Root(); err != nil {
			return "", err
		}
	}
	folder, err := record.NewFolder(root, suite, time.Now())
	if err != nil {
		return "", err
	}
	if err := folder.Lock(); err != nil {
		return "", err
	}
	return folder.Dir, nil
}

// openResumed checks and takes the run folder the suite is asked to
// resume (resumeArg), reading its records and touching nothing else; nil
// when the suite starts a new folder.
func openResumed(suite string) (*record.Resumed, error) {
	arg, how := resumeArg()
	if arg == "" {
		return nil, nil
	}
	dir, err := record.ResolveRunFolder(arg)
	if err != nil {
		return nil, fmt.Errorf("resuming %s=%s: %v (nothing was touched)", how, arg, err)
	}
	resumed, err := record.OpenToResume(dir, suite)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %v (nothing was touched)", how, arg, err)
	}
	if err := resumed.Folder.Lock(); err != nil {
		return nil, fmt.Errorf("%s=%s: resuming: %v (nothing was touched)", how, arg, err)
	}
	return resumed, nil
}

// resumeFolder readies a resumed folder for the runs to come (a record a
// crash cut short is removed: its run runs again) and says what the suite
// resumes.
func resumeFolder(resumed *record.Resumed, done map[string]resumedRun) (string, error) {
	dropped, err := resumed.Folder.DropCutRecord()
	if err != nil {
		return "", fmt.Errorf("resuming run folder %s: %v", resumed.Folder.Dir, err)
	}
	note := fmt.Sprintf("resuming run folder %s: %d run records, %d runs (scenario × arm × repetition) finished there are skipped, the others run and append to it",
		resumed.Folder.Dir, len(resumed.Lines), len(done))
	if dropped > 0 {
		note += fmt.Sprintf("; the record cut short at %s (%d bytes, no newline) was removed, its run runs again", resumed.Cut, dropped)
	}
	return note, nil
}

// openRunFolder opens the run folder process 1 made.
func openRunFolder(dir string) *runFolder {
	return &runFolder{f: &record.Folder{Dir: dir}}
}

// provenance is the commit and config hash every record carries.
func provenance(ctx context.Context, l lab.Lab) (commit, configHash string, err error) {
	commit = record.GitCommit(ctx)
	configHash, err = record.ConfigHash(l.Config())
	return commit, configHash, err
}

// writeEvidence writes the run's evidence file; a failure is logged, as
// the run's verdicts are still recorded.
func (st *suiteState) writeEvidence(r *run) {
	r.mu.Lock()
	rec := r.record
	r.mu.Unlock()
	if err := st.folder.f.WriteEvidence(r.id, rec); err != nil {
		fmt.Fprintf(GinkgoWriter, "%v\n", err)
	}
}

// appendRun appends the run's record to verdicts.jsonl, synced; a run
// that cannot be recorded aborts the suite.
func (st *suiteState) appendRun(out verdict.Run) {
	if err := st.folder.f.AppendRun(out); err != nil {
		fmt.Fprintf(GinkgoWriter, "%v\n", err)
		// The run is lost from verdicts.jsonl; say so loudly.
		AbortSuite(fmt.Sprintf("could not record run %s: %v", out.RunID, err))
	}
}

// finishFolder writes what the folder holds once every spec ran (Ginkgo's
// JUnit, the verdict JUnit, the applicability table and what the linked
// renderers write) and returns the runs recorded.
func (st *suiteState) finishFolder(report Report) ([]verdict.Run, error) {
	f := st.folder.f
	runs, err := f.Finish(st.name, report, st.cfg.Applicability)
	if err != nil {
		return runs, fmt.Errorf("writing the run folder %s: %v", f.Dir, err)
	}
	return runs, nil
}
