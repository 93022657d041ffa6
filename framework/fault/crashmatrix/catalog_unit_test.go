package crashmatrix_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
)

// The matrix covers every kind the registry holds (what `faultline heal`
// links), each once, and every crash point declared inside a kind's inject
// or heal is one of that kind's cells.
func TestTheCatalogCoversEveryRegisteredKindAndItsPoints(t *testing.T) {
	byKind := map[string]entry{}
	for _, e := range catalog {
		if _, dup := byKind[e.kind]; dup {
			t.Errorf("%s is in the catalog twice", e.kind)
		}
		byKind[e.kind] = e
	}
	kinds := fault.Kinds()
	for _, k := range kinds {
		if _, ok := byKind[k]; !ok {
			t.Errorf("the registry holds %s; the crash matrix has no entry for it", k)
		}
	}
	for k := range byKind {
		if !slices.Contains(kinds, k) {
			t.Errorf("the catalog has %s, which the registry does not hold", k)
		}
	}
	sh := shape{topology: "lab11", workers: []string{"worker1", "worker2", "worker3"}, controlPlane: []string{"cp1", "cp2", "cp3"}, fenced: "fenced"}
	for _, e := range catalog {
		own := append(append([]string(nil), e.inject...), e.heal...)
		for _, c := range e.cells(sh) {
			for _, p := range []string{c.point, c.healPoint} {
				if p == "" {
					continue
				}
				if err := declared(p); err != nil {
					t.Errorf("%s, cell %s: %v", e.kind, c.name, err)
				}
			}
		}
		for _, p := range crashpoint.Points {
			if strings.HasPrefix(p.Name, e.kind+"/") && !slices.ContainsFunc(own, func(q string) bool { return strings.HasPrefix(q, p.Name) }) {
				t.Errorf("%s declares crash point %s, which none of its cells reaches", e.kind, p.Name)
			}
		}
		// A numbered key names one of the kind's cells; any other key is
		// a kind of cell.
		names := map[string]bool{cellRecorded: true, cellInjected: true, cellWindow: true, cellHealBegun: true, cellMidHeal: true, cellHealed: true, cellReleased: true, cellHealKilled: true, cellFencing: true}
		for _, c := range e.cells(sh) {
			names[c.name] = true
		}
		for k := range e.unreachable {
			if !names[k] {
				t.Errorf("%s: unreachable names %q, which is none of its cells", e.kind, k)
			}
		}
		f := e.make(sh, fixtures{Node: "worker1", Pod: "p", Deployment: "d", Claim: "c"})
		if f.Kind() != e.kind {
			t.Errorf("the %s entry makes a %s fault", e.kind, f.Kind())
		}
		if _, lingers := f.(fault.Lingering); lingers != e.lingering {
			t.Errorf("%s: lingering %v, the catalog says %v", e.kind, lingers, e.lingering)
		}
	}
}
