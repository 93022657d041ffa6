package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultline/faultline/framework/verdict"
)

// WriteApplicability writes the applicability table the runs were judged
// with, as JSON (an empty table as []), synced.
func (f *Folder) WriteApplicability(table []verdict.Inapplicable) error {
	if table == nil {
		table = []verdict.Inapplicable{}
	}
	b, err := json.MarshalIndent(table, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", ApplicabilityFile, err)
	}
	if err := writeFileSynced(f.Path(ApplicabilityFile), append(b, '\n')); err != nil {
		return fmt.Errorf("writing %s: %w", ApplicabilityFile, err)
	}
	return nil
}

// ReadApplicability reads a run folder's applicability table; ok is false
// when the folder has none (folders written before the table was). A
// field it does not know, or a row without its fault class or invariant,
// is an error naming the file.
func ReadApplicability(dir string) (table []verdict.Inapplicable, ok bool, err error) {
	path := filepath.Join(dir, ApplicabilityFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading the applicability table: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&table); err != nil {
		return nil, false, fmt.Errorf("%s: malformed applicability table: %w", path, err)
	}
	for i, row := range table {
		if row.FaultClass == "" || row.Invariant == "" {
			return nil, false, fmt.Errorf("%s: applicability row %d needs faultClass and invariant", path, i)
		}
	}
	return table, true, nil
}
