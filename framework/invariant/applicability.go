package invariant

import (
	"errors"
	"fmt"

	"github.com/faultline/faultline/framework/verdict"
)

// Applicability is the table of fault classes that cannot reach what an
// invariant reads: for these pairs the verdict is NOT_APPLICABLE, with the
// reason given here, and the invariant is not judged. It is data, reviewed
// like code, and printed in every report.
//
// A row claims that no fault of the class can change anything the
// invariant reads; a row that is wrong hides real violations, so each row
// says why. Rows are added together with the invariants they name.
//
// Classes are broad (crash-stop is a power-off or kill of any host or
// service; partition, slow-network and gray-network cut or slow any path),
// and a row must hold for every fault of its class, present and future.
// So the table is short on purpose: a pair is left out whenever some
// fault of the class could plausibly reach what the invariant reads, even
// if the suite's scenarios never do it.
var Applicability = Table{
	{
		FaultClass: "clock-skew",
		Invariant:  NoTimeTravelName,
		Reason: "resourceVersions are etcd revisions, assigned by raft order and never by a wall clock; the API servers " +
			"confirm a consistent read's freshness against etcd's current revision, not against time; and the reads are put " +
			"in order on faultline's own clock, which the fault does not touch. A skewed host can make a server unreadable " +
			"(certificates judged out of date), which is not time travel.",
	},
}

// Table is an applicability table.
type Table []verdict.Inapplicable

// Lookup returns the reason the invariant is not applicable under faults of
// the class, or ok false when it is applicable.
func (t Table) Lookup(faultClass, invariant string) (reason string, ok bool) {
	for _, row := range t {
		if row.FaultClass == faultClass && row.Invariant == invariant {
			return row.Reason, true
		}
	}
	return "", false
}

// Validate checks that every row names a class and an invariant, says why,
// and appears once; with known invariant names it also checks every row
// names one of them.
func (t Table) Validate(knownInvariants ...string) error {
	known := map[string]bool{}
	for _, n := range knownInvariants {
		known[n] = true
	}
	seen := map[[2]string]int{}
	var errs []error
	for i, row := range t {
		switch {
		case row.FaultClass == "":
			errs = append(errs, fmt.Errorf("applicability row %d: no fault class", i))
		case row.Invariant == "":
			errs = append(errs, fmt.Errorf("applicability row %d: no invariant", i))
		case row.Reason == "":
			errs = append(errs, fmt.Errorf("applicability row %d (%s × %s): no reason", i, row.FaultClass, row.Invariant))
		}
		if len(known) > 0 && row.Invariant != "" && !known[row.Invariant] {
			errs = append(errs, fmt.Errorf("applicability row %d: unknown invariant %q", i, row.Invariant))
		}
		key := [2]string{row.FaultClass, row.Invariant}
		if j, dup := seen[key]; dup {
			errs = append(errs, fmt.Errorf("applicability row %d (%s × %s) repeats row %d", i, row.FaultClass, row.Invariant, j))
		}
		seen[key] = i
	}
	return errors.Join(errs...)
}
