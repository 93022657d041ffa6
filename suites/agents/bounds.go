package agents

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/kits/dataplane/invariants"

	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/invariant"
)

// SampleEvery is the suite's tick: every source asked once a second, so
// every verdict's resolution is one second.
const SampleEvery = time.Second

// How long an agent may take to apply a change it is owed. Each bound is
// the agent's own waits, which its code states, plus the paper's
// allowance for the steps no component bounds: the watch event's
// delivery to the agent, and each sync's own work (rules written to the
// kernel) on a loaded machine. The allowance is the paper's definition of
// "in time", the same for every agent: stepAllowance per step.
//
// No sampling tick is added: a stretch is proven from the first broken
// round's latest read to the last one's start (persistence.go), a lower
// bound of how long the node had not applied the change after the API
// recorded it, so a lag within the bound can never be proven longer. The
// EndpointSlice controller's write is not in it either: the lag is
// measured from the round whose API read already shows the change.

// stepAllowance is what the paper allows each step no component bounds
// (a watch event's delivery, one sync's work): twice the suite's
// sampling interval, so a step slower than one tick on a loaded machine
// is not yet a stale agent.
const stepAllowance = 2 * SampleEvery

// kubeProxyMinSyncPeriod is kube-proxy's iptables.minSyncPeriod, which
// the lab leaves at its default (k8s.io/kubernetes v1.36.3,
// pkg/proxy/apis/config/v1alpha1/defaults.go): the least time between the
// end of one sync and the start of the next (BoundedFrequencyRunner,
// pkg/proxy/runner).
const kubeProxyMinSyncPeriod = time.Second

// RouteBound is how long a node may forward the service otherwise than
// the API records (service-routes-truthful): kube-proxy hears the
// EndpointSlice change (one step), may find a sync under way (one step),
// then waits out minSyncPeriod after it and syncs again (one step):
// 3 × 2 s + 1 s = 7 s.
var RouteBound = invariant.Bound{
	Limit: 3*stepAllowance + kubeProxyMinSyncPeriod,
	Why:   "kube-proxy's 1s minSyncPeriod between syncs, and the paper's 2s for each step no component bounds: the event's delivery, a sync under way, its own sync (3 × 2s + 1s)",
}

// PolicyBound is how long a connection may have another outcome than the
// recorded policies give (policy-enforced): kube-router's firewall asks
// for a full sync on each policy, pod or namespace event it hears (one
// step); a request made while a full sync runs waits for it (one step)
// and then runs its own (one step), with no wait of kube-router's own
// between them (pkg/controllers/netpol/network_policy_controller.go,
// RequestFullSync and the full-sync goroutine): 3 × 2 s = 6 s.
var PolicyBound = invariant.Bound{
	Limit: 3 * stepAllowance,
	Why:   "kube-router's full sync on each event, and the paper's 2s for each step no component bounds: the event's delivery, a full sync under way, its own (3 × 2s)",
}

// KubeProxyHealthBound and PolicyAgentHealthBound are how long each
// agent may report itself healthy while what it applied diverges
// (agent-health-truthful): its own applying bound, during which a change
// is on its way. This is the paper's definition, not the agents': kube-
// proxy's /healthz fails only once an update it queued has waited 2 × its
// syncPeriod (60 s by default; cmd/kube-proxy/app/server.go), and never
// for one it did not hear; kube-router's only once its controllers'
// heartbeat is older than their sync period (5 min) and a grace
// (pkg/healthcheck/health_controller.go).
var (
	KubeProxyHealthBound = invariant.Bound{
		Limit: RouteBound.Limit,
		Why:   "the paper's definition: kube-proxy's own applying bound, during which a change is on its way; its /healthz promises less (it fails only for an update queued 2 × syncPeriod ago)",
	}
	PolicyAgentHealthBound = invariant.Bound{
		Limit: PolicyBound.Limit,
		Why:   "the paper's definition: the policy agent's own applying bound, during which a change is on its way; kube-router's /healthz promises less (it fails only once its controllers' heartbeat is 5 min old)",
	}
)

// Invariants are every invariant the suite judges, each run.
func Invariants() []invariant.Invariant {
	return []invariant.Invariant{
		invariants.ServiceRoutesTruthful(RouteBound),
		invariants.PolicyEnforced(PolicyBound),
		invariants.AgentHealthTruthful(KubeProxyHealthBound, PolicyAgentHealthBound),
		invariants.AgentsConverged(),
	}
}

// DNSBound is how long after the API stopped holding a record a CoreDNS
// instance's kubernetes plugin may still hold it (dns-truthful), beyond
// what its cache may keep: the plugin answers from its informer's store
// as soon as the event is applied, with no sync of its own, so one step:
// the event's delivery, 2 s.
var DNSBound = invariant.Bound{
	Limit: stepAllowance,
	Why:   "the paper's 2s for the one step no component bounds: the Service event's delivery to the kubernetes plugin, which answers from its informer at once",
}

// DNSCacheTTL is the longest the lab's instances cache an answer, found
// or a name error: the kubernetes plugin gives every answer TTL 5 and the
// cache plugin keeps an entry at most 5 s (the lab's Corefile: ttl 5,
// cache 5), counting its TTL down in whole seconds.
const DNSCacheTTL = 5 * time.Second

// How long settling may take, derived from how the fault leaves the
// agents' list and watch at heal: the wait before an agent lists again,
// the list, the agent's sync, and the settle sample that reads it. The
// same derivation for every scenario that shares a mechanism; the table
// names each scenario's (suites/agents/README.md gives the sums).
//
// The waits come from client-go's reflector, which every agent here lists
// and watches through, in the version its module builds with
// (lab/local/bins/*/go.mod): v0.36.3 for kube-proxy, v0.29.2 for
// kube-router v2.1.0, v0.35.4 for CoreDNS v1.14.7. In all three, between
// two ListAndWatch attempts the reflector waits a backoff that starts at
// 800 ms, doubles to a ceiling of 30 s, and is jittered by up to as much
// again (tools/cache/reflector.go: defaultBackoffInit, defaultBackoffMax,
// defaultBackoffFactor, defaultBackoffJitter in v0.36.3, the same numbers
// given to NewExponentialBackoffManager in v0.29.2 and v0.35.4; the
// jitter is apimachinery's wait.Jitter, a wait in [d, 2d)), and resets
// after two minutes without a backoff.
const (
	// reflectorFirstWait is the first step: 800 ms jittered, < 1.6 s.
	reflectorFirstWait = 1600 * time.Millisecond
	// reflectorLongestWait is the ceiling: 30 s jittered, < 60 s.
	reflectorLongestWait = 60 * time.Second
	// inFlightLongest is how long a request under way when a cut heals
	// may hang before client-go gives up on it and the reflector's wait
	// begins: the HTTP/2 health check of an open connection, 30 s idle
	// then a 15 s ping (apimachinery pkg/util/net/http.go's defaults; the
	// lab's fast profile shortens both, the defaults are the longest),
	// longer than a new connection's 30 s dial timeout (client-go
	// transport/cache.go).
	inFlightLongest = 45 * time.Second
)

// listAllowance is what the paper allows one LIST of the agents' few
// objects: the suite's own allowance for one API read
// (sampler.DefaultExtraReadTimeout), past which the suite calls a read
// unreadable.
const listAllowance = sampler.DefaultExtraReadTimeout

// applyBound is the longer of the agents' applying bounds: once listed,
// an agent has that long to apply what it missed.
var applyBound = max(RouteBound.Limit, PolicyBound.Limit)

// SettleCause is how a scenario's fault leaves the agents' list and
// watch at heal.
type SettleCause int

const (
	// AgentsResumed: no list of theirs failed (a process frozen then
	// thawed, or stopped and started by heal): an agent started lists at
	// once, one whose watch ended lists after the reflector's first step.
	AgentsResumed SettleCause = iota
	// ListsRefused: their lists were refused (an authorization refusal),
	// so the reflector may be in its longest wait when heal comes.
	ListsRefused
	// ConnectionsCut: their node was cut from the API servers: a request
	// under way at heal may hang first, then the reflector's longest
	// wait.
	ConnectionsCut
	// ServerRelisted: the API server the agents watch through lost etcd:
	// its own watch cache lists again after its reflector's longest wait
	// and a list from etcd. Meanwhile the cache, not ready, refused the
	// agents' lists and watches (apiserver's cacher, with
	// ResilientWatchCacheInitialization on by default, answers 429
	// "storage is (re)initializing"), so each agent's reflector backed off
	// too and may be in its longest wait when the cache is ready again.
	ServerRelisted
)

// Settle is how long a scenario whose fault leaves the agents so may take
// to settle.
func Settle(c SettleCause) time.Duration {
	after := listAllowance + applyBound + SampleEvery
	switch c {
	case ListsRefused:
		return reflectorLongestWait + after
	case ConnectionsCut:
		return inFlightLongest + reflectorLongestWait + after
	case ServerRelisted:
		return reflectorLongestWait + listAllowance + reflectorLongestWait + after
	default:
		return reflectorFirstWait + after
	}
}

// SettleDerivation says how Settle(c) adds up, for the README's table.
func SettleDerivation(c SettleCause) string {
	tail := fmt.Sprintf("list %s + apply %s + tick %s", listAllowance, applyBound, SampleEvery)
	switch c {
	case ListsRefused:
		return fmt.Sprintf("reflector's longest wait %s + %s = %s", reflectorLongestWait, tail, Settle(c))
	case ConnectionsCut:
		return fmt.Sprintf("request in flight %s + reflector's longest wait %s + %s = %s", inFlightLongest, reflectorLongestWait, tail, Settle(c))
	case ServerRelisted:
		return fmt.Sprintf("the server's reflector's longest wait %s + its list from etcd %s + the agents' reflectors' longest wait %s (the cache refused them while not ready) + %s = %s", reflectorLongestWait, listAllowance, reflectorLongestWait, tail, Settle(c))
	default:
		return fmt.Sprintf("reflector's first step %s + %s = %s", reflectorFirstWait, tail, Settle(c))
	}
}
