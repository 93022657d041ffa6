package agents_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/suites/agents"
)

// kindsOf lists a fault's kind and, for a compound, its parts' kinds.
func kindsOf(t *testing.T, f fault.Fault) []string {
	t.Helper()
	if f.Kind() != faults.KindCompound {
		return []string{f.Kind()}
	}
	var p struct {
		Parts []struct {
			Kind string `json:"kind"`
		} `json:"parts"`
	}
	if err := json.Unmarshal(f.Params(), &p); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, part := range p.Parts {
		out = append(out, part.Kind)
	}
	return out
}

// A scenario whose fault refuses an agent's lists leaves that agent's
// reflector backing off: client-go (v0.29.2 to v0.36.3) waits between failed lists
// with a backoff capped at 30 s and jittered by up to as much again
// (tools/cache/reflector.go: defaultBackoffMax 30 s, defaultBackoffJitter
// 1.0), so the wait in progress at heal can run to 60 s, and the list and
// the agent's sync come after it. Every such scenario settles at least
// that long, the same for each.
func TestSettleOutlastsTheReflectorsBackoffWhereListsWereRefused(t *testing.T) {
	const reflectorWait = 2 * 30 * time.Second
	least := reflectorWait + 5*time.Second + max(agents.RouteBound.Limit, agents.PolicyBound.Limit) + agents.SampleEvery
	for _, s := range table() {
		refused := false
		for _, k := range kindsOf(t, s.Fault) {
			refused = refused || k == faults.KindBlackholeWatch
		}
		if refused && s.Settle < least {
			t.Errorf("%s [%s]: its fault refuses an agent's lists, and it settles within %s: the reflector's wait alone may last %s, then a list (%s) and the agent's sync (%s)",
				s.ID, s.Arm, s.Settle, reflectorWait, 5*time.Second, max(agents.RouteBound.Limit, agents.PolicyBound.Limit))
		}
	}
}

// Where the API server the agents watch through lost etcd, two reflectors
// wait in turn after heal: the server's watch cache's (its watch of etcd
// failed, so it retries under client-go's backoff, the wait in progress
// at heal up to 60 s, then lists from etcd), and each agent's, whose
// requests the cache refused while it was not ready (429 "storage is
// (re)initializing", apiserver's cacher with ResilientWatchCacheInitialization),
// so its backoff too may be at its ceiling. Then the agent's list, its
// sync and the sample that reads it.
func TestSettleOutlastsBothReflectorsWhereTheServerLostEtcd(t *testing.T) {
	const reflectorWait = 2 * 30 * time.Second
	least := reflectorWait + 5*time.Second + reflectorWait + 5*time.Second + max(agents.RouteBound.Limit, agents.PolicyBound.Limit) + agents.SampleEvery
	found := false
	for _, s := range table() {
		if s.ID != "pinned-apiserver-cut-from-etcd" {
			continue
		}
		found = true
		if s.Settle < least {
			t.Errorf("%s [%s] settles within %s, want at least %s: the server's reflector's wait and its list from etcd, then the agents' reflectors' wait, their list and sync",
				s.ID, s.Arm, s.Settle, least)
		}
	}
	if !found {
		t.Fatal("no scenario cuts the agents' API server from etcd")
	}
}
