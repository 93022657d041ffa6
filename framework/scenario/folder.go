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
// record.Root()) and returns its path.
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
	return folder.Dir, nil
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
