package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// AppendRun appends one run record to verdicts.jsonl and syncs it before
// returning, so a crash later in the suite keeps it. Parallel suite
// processes append to the same file; an flock keeps their lines whole.
func (f *Folder) AppendRun(r verdict.Run) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding run %s: %w", r.RunID, err)
	}
	line = append(line, '\n')
	file, err := os.OpenFile(f.Path(VerdictsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("appending run %s: %w", r.RunID, err)
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("appending run %s: locking %s: %w", r.RunID, VerdictsFile, err)
	}
	if _, err := file.Write(line); err != nil {
		return fmt.Errorf("appending run %s: %w", r.RunID, err)
	}
	if err := file.Sync(); err != nil {
		return fmt.Errorf("appending run %s: syncing: %w", r.RunID, err)
	}
	return nil
}

// WriteEvidence writes a run's evidence record as JSONL, synced.
func (f *Folder) WriteEvidence(runID string, rec evidence.Record) error {
	var buf bytes.Buffer
	if err := rec.WriteJSONL(&buf); err != nil {
		return fmt.Errorf("writing evidence of run %s: %w", runID, err)
	}
	if err := writeFileSynced(f.EvidencePath(runID), buf.Bytes()); err != nil {
		return fmt.Errorf("writing evidence of run %s: %w", runID, err)
	}
	return nil
}

// ReadRuns reads the run records of one run folder (its verdicts.jsonl).
// A last line without a newline is a record a crash cut short: that run
// never finished writing, and it is left out. Any other malformed line is
// an error naming the file and line.
func ReadRuns(dir string) ([]verdict.Run, error) {
	path := dir + string(os.PathSeparator) + VerdictsFile
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	defer file.Close()
	return readRuns(file, path)
}

func readRuns(rd io.Reader, name string) ([]verdict.Run, error) {
	br := bufio.NewReaderSize(rd, 1<<20)
	var runs []verdict.Run
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// An unterminated last line: cut short by a crash.
			return runs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		// Unknown fields are allowed: records written by a newer faultline
		// stay readable. Verdicts are still checked as they decode.
		var r verdict.Run
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, n, err)
		}
		if r.RunID == "" || r.Scenario == "" {
			return nil, fmt.Errorf("%s line %d: a run record needs runID and scenario", name, n)
		}
		runs = append(runs, r)
	}
}

// ReadEvidence reads the evidence record of one run of a run folder.
func ReadEvidence(dir, runID string) (evidence.Record, error) {
	f := &Folder{Dir: dir}
	file, err := os.Open(f.EvidencePath(runID))
	if err != nil {
		return evidence.Record{}, fmt.Errorf("reading evidence of run %s: %w", runID, err)
	}
	defer file.Close()
	rec, err := evidence.ReadJSONL(file)
	if err != nil {
		return evidence.Record{}, fmt.Errorf("reading evidence of run %s: %w", runID, err)
	}
	return rec, nil
}
