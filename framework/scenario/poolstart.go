package scenario

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/faultline/faultline/lab"
)

// poolEngines opens and checks, on process 1 before anything is touched,
// every lab of the pool that a run of `total` Ginkgo processes uses: one
// engine per process, the first st's own. It refuses (closing what it
// opened) when there are more processes than labs; when a lab is refused
// as a single lab would be (no `lab: true`, the suite's Shape, VerifyLab);
// when two entries are one lab (one name or one state dir); when the labs
// run different timer profiles (a run folder's runs share one); when the
// labs could not be up together (lab.CheckCoexist: on one machine, say,
// overlapping networks); and when a scenario that will run needs a
// topology or shape that some labs have and others lack, since any
// process may be handed any spec. A scenario that no lab of the pool can
// run is skipped on whichever process gets it, as on one lab; the note
// says which.
func (st *suiteState) poolEngines(ctx context.Context, pool *LabPool, total int, toRun []Scenario) (engines []*engine, note string, err error) {
	if err := pool.fits(total); err != nil {
		return nil, "", fmt.Errorf("%v (nothing was touched)", err)
	}
	entries := pool.InUse(total)
	closeAll := func() {
		for _, e := range engines {
			if e.lab != nil {
				e.lab.Close()
				e.lab = nil
			}
		}
	}
	var errs []error
	for i, entry := range entries {
		e := st.engine
		if i > 0 {
			e = &engine{name: st.name, cfg: st.cfg, out: st.out}
		}
		e.entry = entry
		engines = append(engines, e)
		if err := e.open(ctx); err != nil {
			errs = append(errs, fmt.Errorf("lab %d of the pool (%s, for ginkgo process %d): %v", i+1, entry, i+1, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		closeAll()
		return nil, "", fmt.Errorf("the lab pool (%s), nothing of it touched:\n%w", pool.From, err)
	}
	labs := make([]lab.Lab, len(engines))
	for i, e := range engines {
		labs[i] = e.lab
	}
	if err := checkPoolLabs(labs); err != nil {
		closeAll()
		return nil, "", fmt.Errorf("the lab pool (%s): %v (nothing was touched)", pool.From, err)
	}
	skipped, shapes := checkPoolShapes(engines, toRun)
	if shapes != nil {
		closeAll()
		return nil, "", fmt.Errorf("the lab pool (%s) cannot run these specs: Ginkgo hands each spec to whichever process asks next, so every lab of the pool must be able to run every spec that will run (nothing was touched):\n%v", pool.From, shapes)
	}
	names := make([]string, len(engines))
	for i, e := range engines {
		names[i] = fmt.Sprintf("process %d: %s", i+1, e.labInfo.Name)
	}
	note = fmt.Sprintf("lab pool (%s): %s", pool.From, strings.Join(names, ", "))
	if idle := pool.Idle(total); len(idle) > 0 {
		note += fmt.Sprintf("; %d labs of the pool are idle, no process owning them (%s): run with ginkgo --procs=%d to use them", len(idle), strings.Join(idle, ", "), len(pool.Entries))
	}
	for _, s := range skipped {
		note += "\n" + s
	}
	return engines, note, nil
}

// checkPoolLabs refuses a pool whose labs are not distinct labs that can
// be up at once and whose runs can share a run folder.
func checkPoolLabs(labs []lab.Lab) error {
	var errs []error
	byName, byState := map[string]int{}, map[string]int{}
	profiles := map[string][]string{}
	var configs []*lab.Config
	for i, l := range labs {
		info := l.Info()
		if j, dup := byName[info.Name]; dup {
			errs = append(errs, fmt.Errorf("labs %d and %d of the pool are both lab %s: each lab of a pool is one process's alone, or the two would judge each other's faults", j+1, i+1, info.Name))
		} else {
			byName[info.Name] = i
		}
		if d := l.StateDir(); d != "" {
			d = filepath.Clean(d)
			if j, dup := byState[d]; dup {
				errs = append(errs, fmt.Errorf("labs %d and %d of the pool share the state dir %s (and so one heal ledger): each lab of a pool needs its own", j+1, i+1, d))
			} else {
				byState[d] = i
			}
		}
		profiles[info.TimerProfile] = append(profiles[info.TimerProfile], info.Name)
		if c := l.Config(); c != nil {
			configs = append(configs, c)
		}
	}
	if len(profiles) > 1 {
		var ps []string
		for p, names := range profiles {
			ps = append(ps, fmt.Sprintf("%q (%s)", p, strings.Join(names, ", ")))
		}
		sort.Strings(ps)
		errs = append(errs, fmt.Errorf("the labs run different timer profiles, %s: the runs of one folder share one profile, and the scenarios' windows were sized from it", strings.Join(ps, " and ")))
	}
	if err := lab.CheckCoexist(configs...); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkPoolShapes checks every scenario that will run against every lab:
// an error listing each scenario that some labs can run and others
// cannot (naming the scenario, each lab that cannot and what it lacks),
// and the notes of those no lab can run (skipped wherever they land).
func checkPoolShapes(engines []*engine, toRun []Scenario) (skipped []string, err error) {
	var errs []error
	seen := map[string]bool{}
	for _, sc := range toRun {
		key := pairKey(sc.ID, string(sc.arm()))
		if seen[key] {
			continue
		}
		seen[key] = true
		var lacking []string
		for i, e := range engines {
			if err := e.fits(sc); err != nil {
				lacking = append(lacking, fmt.Sprintf("  lab %s (ginkgo process %d): %v", e.labInfo.Name, i+1, err))
			}
		}
		switch {
		case len(lacking) == 0:
		case len(lacking) == len(engines):
			skipped = append(skipped, fmt.Sprintf("spec %s: no lab of the pool can run it, so it is skipped on whichever process gets it:\n%s", key, strings.Join(lacking, "\n")))
		default:
			errs = append(errs, fmt.Errorf("spec %s needs what %d of the %d labs lack:\n%s", key, len(lacking), len(engines), strings.Join(lacking, "\n")))
		}
	}
	return skipped, errors.Join(errs...)
}

// withoutFinished are the scenarios of the planned runs a resumed folder
// holds no finished run of: the others are skipped, whatever lab gets
// them.
func withoutFinished(runs []plannedRun, done map[string]resumedRun) []Scenario {
	var out []Scenario
	for _, p := range runs {
		if _, ok := done[runKey(p.sc.ID, string(p.sc.arm()), p.rep)]; !ok {
			out = append(out, p.sc)
		}
	}
	return out
}
