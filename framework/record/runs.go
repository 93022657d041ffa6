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
	lines, _, err := DecodeRuns(rd, name)
	if err != nil {
		return nil, err
	}
	runs := make([]verdict.Run, 0, len(lines))
	for _, l := range lines {
		if l.RunID == "" || l.Scenario == "" {
			return nil, fmt.Errorf("%s line %d: a run record needs runID and scenario", name, l.Line)
		}
		runs = append(runs, l.Run)
	}
	return runs, nil
}

// Line is one run record with where it was read from, so that what is
// made of it can be traced back to its line.
type Line struct {
	verdict.Run
	File string
	Line int
}

// Where is "file:line".
func (l Line) Where() string { return fmt.Sprintf("%s:%d", l.File, l.Line) }

// DecodeRuns decodes the run records of a verdicts.jsonl read from rd
// (named file in errors and Lines), one JSON value a line; blank lines are
// allowed. Unknown fields are allowed, so that a record written by a newer
// faultline stays readable; verdicts are checked as they decode, so a
// misspelt one is still an error. A last line without a newline is a run
// a crash cut short: it is left out, and cut is its "file:line" ("" when
// there is none). Any other malformed line is an error naming file and
// line. What a record must hold beyond that is its reader's to check.
func DecodeRuns(rd io.Reader, file string) (lines []Line, cut string, err error) {
	br := bufio.NewReaderSize(rd, 1<<20)
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(b)) > 0 {
				return lines, fmt.Sprintf("%s:%d", file, n), nil
			}
			return lines, "", nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("reading %s after line %d: %w", file, n-1, err)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		var r verdict.Run
		if err := dec.Decode(&r); err != nil {
			return nil, "", fmt.Errorf("%s:%d: malformed run record: %w", file, n, err)
		}
		if dec.More() {
			return nil, "", fmt.Errorf("%s:%d: malformed run record: more than one JSON value on the line", file, n)
		}
		lines = append(lines, Line{Run: r, File: file, Line: n})
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
