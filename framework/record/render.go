package record

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline/faultline/framework/verdict"
)

// A Renderer writes a human-readable rendering of a finished run folder
// into it (package reports renders summary.md), from the suite's name, the
// runs its verdicts.jsonl holds and the applicability table they were
// judged with.
type Renderer func(f *Folder, suite string, runs []verdict.Run, table []verdict.Inapplicable) error

var renderers = struct {
	sync.Mutex
	byName map[string]Renderer
}{byName: map[string]Renderer{}}

// RegisterRenderer links a renderer into every run folder this binary
// finishes. The renderer's package calls it from init, so that a suite
// links it by importing that package:
//
//	import _ "github.com/faultline/faultline/reports"
//
// It panics on an empty name, a nil renderer or a name registered twice.
func RegisterRenderer(name string, r Renderer) {
	renderers.Lock()
	defer renderers.Unlock()
	switch {
	case name == "":
		panic("record.RegisterRenderer: no name")
	case r == nil:
		panic("record.RegisterRenderer: nil renderer " + name)
	case renderers.byName[name] != nil:
		panic("record.RegisterRenderer: renderer " + name + " registered twice")
	}
	renderers.byName[name] = r
}

// RendererNames names the renderers linked into this binary, sorted.
func RendererNames() []string {
	renderers.Lock()
	defer renderers.Unlock()
	names := make([]string, 0, len(renderers.byName))
	for n := range renderers.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrNoRenderer says no renderer is linked, so a finished run folder
// would lack its summary.
var ErrNoRenderer = errors.New(`no renderer is linked into this suite, so its run folder would have no summary.md: import _ "github.com/faultline/faultline/reports" in the suite's test`)

// Render runs every linked renderer over the folder, in the order of their
// names; ErrNoRenderer when none is linked.
func (f *Folder) Render(suite string, runs []verdict.Run, table []verdict.Inapplicable) error {
	names := RendererNames()
	if len(names) == 0 {
		return ErrNoRenderer
	}
	var errs []error
	for _, n := range names {
		renderers.Lock()
		r := renderers.byName[n]
		renderers.Unlock()
		if err := r(f, suite, runs, table); err != nil {
			errs = append(errs, fmt.Errorf("rendering %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Finish writes what a run folder holds once its suite has ended: Ginkgo's
// JUnit of the suite, the verdict JUnit of the runs verdicts.jsonl holds
// (none when no run finished), the applicability table the runs were
// judged with and the renderings. It does all it can and returns every
// failure, with the runs it read.
func (f *Folder) Finish(suite string, report types.Report, table []verdict.Inapplicable) ([]verdict.Run, error) {
	var errs []error
	if err := f.WriteGinkgoJUnit(report); err != nil {
		errs = append(errs, err)
	}
	runs, err := ReadRuns(f.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := f.WriteVerdictJUnit(suite, runs); err != nil {
		errs = append(errs, err)
	}
	if err := f.WriteApplicability(table); err != nil {
		errs = append(errs, err)
	}
	if err := f.Render(suite, runs, table); err != nil {
		errs = append(errs, err)
	}
	return runs, errors.Join(errs...)
}
