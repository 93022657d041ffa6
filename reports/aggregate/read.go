package aggregate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
)

// VerdictsFile is the name of the run record file in a run folder.
const VerdictsFile = record.VerdictsFile

// Record is one run record together with where it was read from, so that an
// excluded run or a duplicate can be traced back to its line.
type Record = record.Line

// Input is what was read from a set of run folders.
type Input struct {
	Records []Record
	// CutShort are the "file:line"s of last lines a crash cut short
	// (no final newline): those runs never finished writing their record,
	// so they are left out, and the report says so.
	CutShort []string
	// Applicability is each run folder's applicability table, by folder,
	// for the folders that have one.
	Applicability map[string][]verdict.Inapplicable
}

// ReadRunFolders reads the verdicts.jsonl of every folder (a path that is a
// file is read as a verdicts file itself). Any malformed or incomplete
// record is an error naming its file and line: a figure computed while
// silently skipping records would not be one a paper can quote.
//
// It decodes records with record.DecodeRuns, as record.ReadRuns does
// (unknown fields are ignored; an unterminated last line is a record cut
// short), and checks more: every verdict present, no invariant judged
// twice, no run read twice. It keeps each record's line.
func ReadRunFolders(paths []string) (*Input, error) {
	if len(paths) == 0 {
		return nil, errors.New("no run folders given")
	}
	in := &Input{Applicability: map[string][]verdict.Inapplicable{}}
	seen := map[string]string{}
	for _, p := range paths {
		file, err := verdictsFileOf(p)
		if err != nil {
			return nil, err
		}
		table, ok, err := record.ReadApplicability(filepath.Dir(file))
		if err != nil {
			return nil, err
		}
		if ok {
			in.Applicability[filepath.Dir(file)] = table
		}
		recs, cut, err := ReadVerdictsFile(file)
		if err != nil {
			return nil, err
		}
		if cut != "" {
			in.CutShort = append(in.CutShort, cut)
		}
		for _, r := range recs {
			// The same run read twice (a folder given twice, a copied
			// folder) would double its weight in every rate.
			key := r.RunID + "\x00" + r.Scenario + "\x00" + r.Arm + "\x00" + r.Started.String()
			if prev, dup := seen[key]; dup {
				return nil, fmt.Errorf("%s: run %q (scenario %s, arm %s) was already read at %s; give each run folder once", r.Where(), r.RunID, r.Scenario, r.Arm, prev)
			}
			seen[key] = r.Where()
			in.Records = append(in.Records, r)
		}
	}
	return in, nil
}

func verdictsFileOf(p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("run folder %s: %w", p, err)
	}
	if !st.IsDir() {
		return p, nil
	}
	file := filepath.Join(p, VerdictsFile)
	if _, err := os.Stat(file); err != nil {
		// A parent of run folders given by mistake must not read as a
		// folder with no runs.
		if inner, _ := filepath.Glob(filepath.Join(p, "*", VerdictsFile)); len(inner) > 0 {
			return "", fmt.Errorf("%s is not a run folder but holds %d of them: give them one by one, such as %s/*", p, len(inner), strings.TrimSuffix(p, "/"))
		}
		return "", fmt.Errorf("run folder %s has no %s (give folders such as reports/runs/<time>-<suite>): %w", p, VerdictsFile, err)
	}
	return file, nil
}

// ReadVerdictsFile reads one verdicts.jsonl. Blank lines are allowed. cut
// is the "file:line" of an unterminated last line, which is left out.
func ReadVerdictsFile(file string) (recs []Record, cut string, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, "", fmt.Errorf("reading run records: %w", err)
	}
	defer f.Close()
	return decodeRecords(f, file)
}

func decodeRecords(rd io.Reader, file string) ([]Record, string, error) {
	lines, cut, err := record.DecodeRuns(rd, file)
	if err != nil {
		return nil, "", err
	}
	out := make([]Record, 0, len(lines))
	for _, l := range lines {
		if err := checkRecord(l.Run); err != nil {
			return nil, "", fmt.Errorf("%s: incomplete run record: %w", l.Where(), err)
		}
		out = append(out, l)
	}
	return out, cut, nil
}

// checkRecord rejects records whose missing fields would otherwise decode
// as zero values and be counted as something they are not.
func checkRecord(r verdict.Run) error {
	var problems []string
	if r.RunID == "" {
		problems = append(problems, "runID is missing")
	}
	if r.Scenario == "" {
		problems = append(problems, "scenario is missing")
	}
	if r.Arm == "" {
		problems = append(problems, "arm is missing")
	}
	if !r.RunVerdict.Valid() {
		problems = append(problems, "runVerdict is missing")
	}
	judged := map[string]int{}
	for i, j := range r.Judgements {
		if j.Invariant == "" {
			problems = append(problems, fmt.Sprintf("judgements[%d].invariant is missing", i))
		} else if k, dup := judged[j.Invariant]; dup {
			// Two verdicts for one invariant in one run would count twice.
			problems = append(problems, fmt.Sprintf("judgements[%d].invariant %q was already judged in judgements[%d]", i, j.Invariant, k))
		} else {
			judged[j.Invariant] = i
		}
		if !j.Verdict.Valid() {
			problems = append(problems, fmt.Sprintf("judgements[%d].verdict is missing", i))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
