// Package suitereports is where a suite's own reports of a run folder make
// themselves known to `faultline report`. The command knows no suite: it
// links the suites' reports with blank imports, and each one registers
// itself from an init function, the way lab backends do (lab.Register).
package suitereports

import (
	"fmt"
	"sort"
	"sync"

	"github.com/faultline/faultline/reports/html"
)

// Report is what a suite registers.
type Report struct {
	// Name names the report in the command's messages ("drill" for
	// "drill report of <folder>: ..."); unique among the registered.
	Name string
	// FolderPages renders the suite's pages of a run folder for
	// `faultline report --format html` (html.WithFolderPages). Optional.
	FolderPages html.FolderPages
	// WriteFolder writes the suite's report files of a run folder beside
	// its runs and returns their paths; Markdown files (.md) are printed
	// by `faultline report --timeline`, the others named. Optional.
	WriteFolder func(dir string) ([]string, error)
	// NoRuns is the error WriteFolder returns (errors.Is) for a folder
	// that holds none of the suite's runs, which the command skips.
	NoRuns error
}

var (
	mu       sync.Mutex
	registry = map[string]Report{}
)

// Register makes a suite's report known. It panics on an empty or
// repeated name: both are mistakes in the program, not in its input.
func Register(r Report) {
	mu.Lock()
	defer mu.Unlock()
	if r.Name == "" {
		panic("suitereports: Register with an empty name")
	}
	if _, dup := registry[r.Name]; dup {
		panic(fmt.Sprintf("suitereports: %q registered twice", r.Name))
	}
	registry[r.Name] = r
}

// All returns the registered reports in the order of their names.
func All() []Report {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Report, 0, len(registry))
	for _, r := range registry {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
