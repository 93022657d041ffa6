package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/faultline/faultline/reports/suitereports"
)

// writeDrillReports writes the registered suites' reports (the drills')
// of every run folder among args that holds their runs, and prints the
// Markdown ones.
func writeDrillReports(w io.Writer, args []string) error {
	for _, dir := range args {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		for _, r := range suitereports.All() {
			if r.WriteFolder == nil {
				continue
			}
			if err := writeSuiteReport(w, r, dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeSuiteReport writes one suite's report of one run folder and
// prints its Markdown files.
func writeSuiteReport(w io.Writer, r suitereports.Report, dir string) error {
	files, err := r.WriteFolder(dir)
	if (r.NoRuns != nil && errors.Is(err, r.NoRuns)) || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s report of %s: %w", r.Name, dir, err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".md") {
			fmt.Fprintf(w, "\n(plot written to %s)\n", f)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("%s report: %w", r.Name, err)
		}
		fmt.Fprintf(w, "\n%s\n(written to %s)\n", b, f)
	}
	return nil
}
