package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	drillreport "github.com/faultline/faultline/suites/drills/report"
)

// writeDrillReports writes the drill reports of every run folder among
// args that holds drill runs, and prints the Markdown ones.
func writeDrillReports(w io.Writer, args []string) error {
	for _, dir := range args {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		files, err := drillreport.WriteFolder(dir)
		if errors.Is(err, drillreport.ErrNoDrillRuns) || errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("drill report of %s: %w", dir, err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f, ".md") {
				fmt.Fprintf(w, "\n(plot written to %s)\n", f)
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("drill report: %w", err)
			}
			fmt.Fprintf(w, "\n%s\n(written to %s)\n", b, f)
		}
	}
	return nil
}
