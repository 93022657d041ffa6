package suitereports

import (
	"strings"
	"testing"
)

func TestRegisterKeepsNameOrderAndRefusesRepeats(t *testing.T) {
	t.Cleanup(func() { registry = map[string]Report{} })
	Register(Report{Name: "zeta"})
	Register(Report{Name: "alpha"})
	var names []string
	for _, r := range All() {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "alpha,zeta" {
		t.Errorf("All() names %s, want alpha,zeta", got)
	}
	for _, name := range []string{"alpha", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			Register(Report{Name: name})
		}()
	}
}
