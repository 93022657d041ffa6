package main

// The invariants `faultline rejudge` can build again from a run record,
// each registered by name with invariant.Register from the init function
// of the package that holds it; a record of an invariant not linked here
// is an error naming it and the invariants known.
//
// framework/invariant (the core's) is linked by the command
// itself; the drills' deletions-complete comes with the drill report
// (suites/drills/report). A kit's invariants, or a package of invariants
// of its own, are linked here, and only here, with a blank import, as the
// fault packages are in faults.go.
import (
	_ "github.com/faultline/faultline/framework/invariant"
	_ "github.com/faultline/faultline/kits/dataplane/invariants"
	_ "github.com/faultline/faultline/kits/storeddata/invariants"
)
