package main

// The fault kinds `faultline heal` can decode from a heal ledger, each
// registering itself with fault.Register from its init function. The null
// arm's fault comes with the fault package itself. A ledger entry of a kind
// not linked here stays in the ledger and is reported as not known.
//
// Fault packages are linked here, and only here, with blank imports.

import (
	_ "github.com/faultline/faultline/framework/fault/controls"
	_ "github.com/faultline/faultline/framework/fault/faults"
	_ "github.com/faultline/faultline/kits/storeddata/faults"
)
