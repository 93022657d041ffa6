package invariant

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/faultline/faultline/framework/verdict"
)

// Applicability is the table of fault classes that cannot reach what an
// invariant reads: for these pairs the verdict is NOT_APPLICABLE, with the
// reason given here, and the invariant is not judged. It is data, reviewed
// like code, and printed in every report.
//
// The rule that decides a row: a class × invariant pair may be a row only
// when no fault of the class can reach any source the invariant reads in
// any way: change the state it reports, make it serve an older state than
// one already served, make it restart, re-list or re-watch, or make it
// unreadable (ClassReach declares what each class can do; Reaches.Admits
// applies the rule, and catalog tests hold every row to it). Each of those
// changes what the invariant is judged from, so a row that ignores one
// hides a violation, or turns evidence the fault took away into a verdict
// nobody judged. Each row says why it holds.
//
// Classes are broad (crash-stop is a power-off or kill of any host or
// service; partition, slow-network and gray-network cut or slow any path),
// and a row must hold for every fault of its class, present and future.
// So the table is short on purpose, and today no pair passes. Even
// clock-skew × no-time-travel, whose resourceVersions never come from a
// clock, fails: a skewed host's certificates can be judged out of date,
// which breaks its API server's and its clients' connections, and a
// broken watch re-lists, possibly from a watch cache behind the servers,
// which is what no-time-travel reads (as under gray-network).
var Applicability = Table{}

// Reach is one way a fault can touch a source an invariant reads.
type Reach string

const (
	// ReachState: the fault changes the cluster state the source reports
	// (a node NotReady, a pod moved or restarted, a write refused).
	ReachState Reach = "state"
	// ReachOlderState: the source can serve a state older than one it, or
	// another source, already served (a cache behind the servers, a server
	// cut off from etcd answering from its watch cache).
	ReachOlderState Reach = "older-state"
	// ReachRestart: the source's process restarts, or its watches break
	// and re-list, rebuilding what it serves.
	ReachRestart Reach = "restart"
	// ReachUnreadable: reads of the source time out or are refused.
	ReachUnreadable Reach = "unreadable"
)

// everyWay is every Reach.
var everyWay = []Reach{ReachState, ReachOlderState, ReachRestart, ReachUnreadable}

// AnySource is the SourceReach.Sources of a reach over every kind of
// source.
const AnySource = "*"

// SourceReach is what some fault of a class can do to one kind of source
// (the part of a source's name before the "/": "apiserver", "cri",
// "informer", "writer", ...), and why.
type SourceReach struct {
	Sources string
	Ways    []Reach
	Why     string
}

// Reaches declares, per fault class, what its faults can do to the
// sources invariants read. A class it does not declare is taken to reach
// every source every way.
type Reaches map[string][]SourceReach

// ClassReach is what the fault library's classes can do: data, reviewed
// like the table it decides. A class is declared as narrowly as every
// fault of it, present and future, allows; when in doubt, a source is
// reached.
var ClassReach = Reaches{
	"crash-stop":     {{AnySource, everyWay, "a power-off or kill can take any host or service down and back: its sources go dark, restart with rebuilt caches, and their clients re-list"}},
	"partition":      {{AnySource, everyWay, "a cut path can isolate any host: a server cut off from etcd, watches that break and re-list, agents that stop reporting"}},
	"slow-network":   {{AnySource, everyWay, "delay, loss or a throttle on any path lets watch caches fall behind, reads time out and watches restart"}},
	"process-freeze": {{AnySource, everyWay, "any component can be frozen holding its sockets and leases, and resume acting on what it knew before"}},
	"clock-skew":     {{AnySource, everyWay, "a skewed host writes leases with its own clock and can have its certificates judged out of date, which breaks its servers' and clients' connections; broken watches re-list"}},
	"etcd-history":   {{AnySource, everyWay, "compacting history under open watches makes every watcher of etcd and of the API servers re-list, possibly from a cache behind the servers"}},
	"etcd-no-space":  {{AnySource, everyWay, "refused writes stop lease renewals, so nodes go NotReady and leaders lose their leases; components that cannot write restart"}},
	"split-brain":    {{AnySource, everyWay, "parts of the control plane serve different states of the cluster"}},
	"gray-network": {
		{"informer", everyWay, "the informer runs in a pod: its watch breaks, re-lists and may read a cache behind the servers"},
		{"writer", everyWay, "the writer runs in a pod: its requests time out, with outcomes unknown"},
		{"probe", everyWay, "endpoint probes travel the pod network"},
		{"dns", everyWay, "the DNS pods answer over the pod network"},
		{"apiserver", []Reach{ReachState}, "failing readiness probes change endpoints and pod status"},
		{"etcd", []Reach{ReachState}, "failing readiness probes change endpoints and pod status"},
		{"cri", []Reach{ReachState, ReachRestart}, "failing liveness probes restart containers"},
		{"kubelet", []Reach{ReachState}, "the kubelet reports the probes' results"},
		{"proxy", []Reach{ReachState}, "kube-proxy follows the endpoints"},
	},
	"gray-agent": {
		{"kubelet", everyWay, "the agent whose watch is cut keeps what it last saw"},
		{"proxy", everyWay, "the agent whose watch is cut keeps what it last saw"},
		{"cri", []Reach{ReachState}, "a kubelet that no longer sees its pods neither starts nor stops their containers"},
		{"apiserver", []Reach{ReachState}, "the agent's status reports, and what controllers do about them, change the API's state"},
		{"etcd", []Reach{ReachState}, "the agent's status reports, and what controllers do about them, change the API's state"},
		{"informer", []Reach{ReachState}, "the agent's status reports, and what controllers do about them, change the API's state"},
		{"dns", []Reach{ReachState}, "endpoints kept or dropped change the DNS answer"},
		{"probe", []Reach{ReachState}, "endpoints kept or dropped change what is probed"},
		{"writer", []Reach{ReachState}, "the writer's pod may run on the agent's node"},
	},
	"operator-action": {
		{"apiserver", []Reach{ReachState}, "a quota, a finalizer or a deletion changes the objects the API serves"},
		{"etcd", []Reach{ReachState}, "what the API changes, etcd stores"},
		{"informer", []Reach{ReachState}, "the informer follows the objects"},
		{"cri", []Reach{ReachState}, "a deleted pod's containers stop; a replacement's start"},
		{"kubelet", []Reach{ReachState}, "the kubelet follows its pods"},
		{"proxy", []Reach{ReachState}, "kube-proxy follows the endpoints"},
		{"dns", []Reach{ReachState}, "endpoints change the DNS answer"},
		{"probe", []Reach{ReachState}, "endpoints change what is probed"},
		{"writer", []Reach{ReachState}, "a quota or a deletion can refuse the writer's requests or remove its pod"},
	},
}

// sourceKind is the kind of the sources a Reading's glob names.
func sourceKind(glob string) string {
	kind, _, _ := strings.Cut(glob, "/")
	return kind
}

// Admits reports whether faultClass × inv may be a row of the
// applicability table: nil when no fault of the class reaches any source
// inv reads, otherwise an error naming the first reach found and why.
func (r Reaches) Admits(faultClass string, inv Invariant) error {
	declared, ok := r[faultClass]
	if !ok {
		return fmt.Errorf("%s × %s: the class declares no reach, so it is taken to reach every source every way", faultClass, inv.Name())
	}
	for _, rd := range inv.Reads() {
		kind := sourceKind(rd.Sources)
		for _, sr := range declared {
			if (sr.Sources == AnySource || sr.Sources == kind) && len(sr.Ways) > 0 {
				return fmt.Errorf("%s × %s: %s reads %s, which a fault of the class can reach (%s): %s",
					faultClass, inv.Name(), inv.Name(), rd.Sources, describeWays(sr.Ways), sr.Why)
			}
		}
	}
	return nil
}

func describeWays(ways []Reach) string {
	var parts []string
	for _, w := range everyWay {
		if !slices.Contains(ways, w) {
			continue
		}
		switch w {
		case ReachState:
			parts = append(parts, "change the state it reports")
		case ReachOlderState:
			parts = append(parts, "make it serve an older state")
		case ReachRestart:
			parts = append(parts, "make it restart or re-list")
		case ReachUnreadable:
			parts = append(parts, "make it unreadable")
		}
	}
	return strings.Join(parts, ", ")
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
