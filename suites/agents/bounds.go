package agents

import (
	"time"

	"github.com/faultline/faultline/framework/invariant"
)

// SampleEvery is the suite's tick: every source asked once a second, so
// every verdict's resolution is one second.
const SampleEvery = time.Second

// RouteBound is how long a node may forward the service to what the API
// no longer records as ready (service-routes-truthful): kube-proxy
// reprograms at most minSyncPeriod (1 s, its default) after an
// EndpointSlice change reaches it, the EndpointSlice controller writes the
// change within a second of the pod's readiness, and each of the two
// reads that prove a stretch can fall up to one tick late. The null arm
// of the feasibility check measures the real lag on the lab (its
// PRESERVED reason names the longest difference it saw), and the suite
// README quotes it beside this bound.
var RouteBound = invariant.Bound{
	Limit: 5 * time.Second,
	Why:   "kube-proxy's minSyncPeriod of 1s, the EndpointSlice controller's write, and two 1s ticks of resolution",
}

// PolicyBound is how long a connection may have another outcome than the
// recorded policies give (policy-enforced): kube-router's firewall
// resyncs its node's rules on every policy, pod or namespace event it
// hears, in one iptables-restore and ipset restore (well under a second
// on the lab), and each of the two reads that prove a stretch can fall up
// to one tick late; the null arms measure the real lag.
var PolicyBound = invariant.Bound{
	Limit: 5 * time.Second,
	Why:   "kube-router's full sync on each event it hears, and two 1s ticks of resolution",
}

// Invariants are every invariant the suite judges, each run.
func Invariants() []invariant.Invariant {
	return []invariant.Invariant{
		invariant.ServiceRoutesTruthful(RouteBound.Limit),
		invariant.PolicyEnforced(PolicyBound.Limit),
		invariant.AgentHealthTruthful(HealthBound.Limit),
		invariant.AgentsConverged(),
	}
}

// HealthBound is how long an agent may report itself healthy while what
// it applied diverges (agent-health-truthful): the larger of the two
// applying bounds, since a divergence within them is a change still on
// its way, not a stale agent.
var HealthBound = invariant.Bound{
	Limit: max(RouteBound.Limit, PolicyBound.Limit),
	Why:   "the longer of the route and policy bounds: a divergence within them is a change on its way",
}

// DNSBound is how long past an answer's TTL a CoreDNS instance may keep
// records the API no longer holds (dns-truthful): the kubernetes plugin
// hears a Service change on its watch and answers from its informer at
// once, and each of the two reads that compare can fall one tick late.
var DNSBound = invariant.Bound{
	Limit: 3 * time.Second,
	Why:   "the kubernetes plugin's watch, and two 1s ticks of resolution; the TTL is the answer's own",
}

// DNSNegativeTTL is how long the lab's instances may cache a name error:
// the Corefile's cache plugin keeps an answer at most 5 s (the kubernetes
// plugin's ttl 5 and cache 5).
const DNSNegativeTTL = 5 * time.Second
