package invariants

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// The data plane's invariants, registered by name with the core's
// registry (invariant.Register), with the parameters of those built with
// bounds, so that a record of them is judged again wherever this package
// is linked (cmd/faultline links it with a blank import).
func init() {
	invariant.Register(IsolatedFromStartName, invariant.Plain(IsolatedFromStart))
	invariant.Register(AgentsConvergedName, invariant.Plain(AgentsConverged))
	invariant.Register(ServiceRoutesTruthfulName, decodeAgentBound(ServiceRoutesTruthful))
	invariant.Register(PolicyEnforcedName, decodeAgentBound(PolicyEnforced))
	invariant.Register(AgentHealthTruthfulName, decodeAgentHealth)
	invariant.Register(DNSTruthfulName, decodeDNSTruthful)
}

// duration is a time.Duration in parameters: its string form ("1.5s").
type duration = verdict.Duration

// agentBound are the parameters of service-routes-truthful and
// policy-enforced: their one bound, with its mechanism.
type agentBound struct {
	Bound *invariant.RecordedBound `json:"bound"`
}

func (s serviceRoutes) Params() json.RawMessage {
	return invariant.MustParams(agentBound{Bound: &invariant.RecordedBound{Bound: s.bound}})
}
func (p policyEnforced) Params() json.RawMessage {
	return invariant.MustParams(agentBound{Bound: &invariant.RecordedBound{Bound: p.bound}})
}

// decodeAgentBound is the decoder of an invariant built with one Bound.
func decodeAgentBound(build func(invariant.Bound) invariant.Invariant) invariant.Decoder {
	return func(raw json.RawMessage) (invariant.Invariant, error) {
		var p agentBound
		if err := invariant.DecodeParams(raw, &p); err != nil {
			return nil, err
		}
		if p.Bound == nil {
			return nil, errors.New("it needs its bound")
		}
		return build(p.Bound.Bound), nil
	}
}

// healthParams are agent-health-truthful's: a bound per agent. A record
// of one bound for both (written before each agent had its own) decodes
// to that bound for each.
type healthParams struct {
	KubeProxy   *invariant.RecordedBound `json:"kubeProxy,omitempty"`
	PolicyAgent *invariant.RecordedBound `json:"policyAgent,omitempty"`
	Bound       *invariant.RecordedBound `json:"bound,omitempty"`
}

func (a agentHealth) Params() json.RawMessage {
	return invariant.MustParams(healthParams{KubeProxy: &invariant.RecordedBound{Bound: a.bounds[healthKubeProxy]}, PolicyAgent: &invariant.RecordedBound{Bound: a.bounds[healthPolicyAgent]}})
}

func decodeAgentHealth(raw json.RawMessage) (invariant.Invariant, error) {
	var p healthParams
	if err := invariant.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	switch {
	case p.KubeProxy != nil && p.PolicyAgent != nil && p.Bound == nil:
		return AgentHealthTruthful(p.KubeProxy.Bound, p.PolicyAgent.Bound), nil
	case p.KubeProxy == nil && p.PolicyAgent == nil && p.Bound != nil:
		return AgentHealthTruthful(p.Bound.Bound, p.Bound.Bound), nil
	}
	return nil, errors.New("agent-health-truthful needs a bound for each agent (kubeProxy, policyAgent), or one bound for both")
}

// dnsParams are dns-truthful's: its bound and the longest its instances
// cache an answer. A record written when the second was the negative TTL
// (negativeTTL) decodes to it: the lab's instances cached found answers
// and name errors alike for that long.
type dnsParams struct {
	Bound       *invariant.RecordedBound `json:"bound"`
	CacheTTL    *duration                `json:"cacheTTL,omitempty"`
	NegativeTTL *duration                `json:"negativeTTL,omitempty"`
}

func (d dnsTruthful) Params() json.RawMessage {
	c := duration(d.cacheTTL)
	return invariant.MustParams(dnsParams{Bound: &invariant.RecordedBound{Bound: d.bound}, CacheTTL: &c})
}

func decodeDNSTruthful(raw json.RawMessage) (invariant.Invariant, error) {
	var p dnsParams
	if err := invariant.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	ttl := p.CacheTTL
	if ttl == nil {
		ttl = p.NegativeTTL
	}
	if p.Bound == nil || ttl == nil {
		return nil, errors.New("dns-truthful needs its bound and its cache TTL")
	}
	return DNSTruthful(p.Bound.Bound, time.Duration(*ttl)), nil
}
