// Package faults holds the stored data's positive controls: faults that
// break a stored-data guarantee on purpose, each through what the
// workload itself wrote (fixtures/ledgerlog, fixtures/electorlog):
// LedgerRecordDamage damages one record of a ledger's log where the
// storage holds it, LeaseHandedOver hands a leader-elected writer's Lease
// to another candidate without counting a transition.
//
// Both are registered like every other fault (fault.Register), so that
// `faultline heal` decodes them from a ledger entry written by another
// process wherever this package is linked (cmd/faultline links it with a
// blank import).
package faults

import (
	"encoding/json"
	"fmt"

	"github.com/faultline/faultline/framework/fault/controls"
)

// client is a client of the API server of observer ("" for the lab's
// default address, the virtual one where there is one). Tests replace it
// with a fake clientset.
var client = controls.KubeClient

func mustJSON(kind string, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("%s params: %v", kind, err))
	}
	return b
}
