package invariant

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// Every invariant of this package, registered by name (registry.go), with
// the parameters of those built with bounds.
func init() {
	for name, build := range map[string]func() Invariant{
		SingleCopyName:                SingleCopy,
		SingleLeaderName:              SingleLeader,
		GracefulDeletionName:          GracefulDeletion,
		AcknowledgedWritesSurviveName: AcknowledgedWritesSurvive,
		ReplicasRestoredName:          ReplicasRestored,
		ConvergenceName:               Convergence,
		IsolatedFromStartName:         IsolatedFromStart,
		AgentsConvergedName:           AgentsConverged,
		AcknowledgedDataSurvivesName:  AcknowledgedDataSurvives,
		StorageIntegrityName:          StorageIntegrity,
		SingleWriterAtStorageName:     SingleWriterAtStorage,
		SingleHistoryName:             SingleHistory,
		FencingMonotonicName:          FencingMonotonic,
	} {
		Register(name, Plain(build))
	}
	Register(APIAgreementName, decodeAPIAgreement)
	Register(NoTimeTravelName, decodeNoTimeTravel)
	Register(EndpointsTruthfulName, decodeBound(EndpointsTruthful))
	Register(ServiceRoutesTruthfulName, decodeBound(ServiceRoutesTruthful))
	Register(PolicyEnforcedName, decodeBound(PolicyEnforced))
	Register(AgentHealthTruthfulName, decodeBound(AgentHealthTruthful))
	Register(DNSTruthfulName, decodeDNSTruthful)
}

// duration is a time.Duration in parameters: its string form ("1.5s"),
// so that a record reads as the bound a suite declares.
type duration = verdict.Duration

// boundParams is a Bound in parameters.
type boundParams struct {
	Limit *duration `json:"limit"`
	Why   string    `json:"why,omitempty"`
}

func paramsOfBound(b Bound) boundParams {
	d := duration(b.Limit)
	return boundParams{Limit: &d, Why: b.Why}
}

func (p boundParams) bound() (Bound, error) {
	if p.Limit == nil {
		return Bound{}, errors.New("a bound needs its limit")
	}
	return Bound{Limit: time.Duration(*p.Limit), Why: p.Why}, nil
}

type agreementParams struct {
	Bounds map[evidence.Question]boundParams `json:"bounds"`
}

func (a apiAgreement) Params() json.RawMessage {
	p := agreementParams{Bounds: map[evidence.Question]boundParams{}}
	for q, b := range a.bounds {
		p.Bounds[q] = paramsOfBound(b)
	}
	return mustParams(p)
}

func decodeAPIAgreement(raw json.RawMessage) (Invariant, error) {
	var p agreementParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Bounds == nil {
		return nil, errors.New("api-agreement needs its bounds, one per question")
	}
	bounds := map[evidence.Question]Bound{}
	for q, bp := range p.Bounds {
		b, err := bp.bound()
		if err != nil {
			return nil, fmt.Errorf("bound of %s: %w", q, err)
		}
		bounds[q] = b
	}
	return APIAgreement(bounds), nil
}

type coverageParams struct {
	Coverage *boundParams `json:"coverage"`
}

func (n noTimeTravel) Params() json.RawMessage {
	c := paramsOfBound(n.coverage)
	return mustParams(coverageParams{Coverage: &c})
}

func decodeNoTimeTravel(raw json.RawMessage) (Invariant, error) {
	var p coverageParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Coverage == nil {
		return nil, errors.New("no-time-travel needs its coverage bound")
	}
	b, err := p.Coverage.bound()
	if err != nil {
		return nil, fmt.Errorf("coverage: %w", err)
	}
	return NoTimeTravel(b), nil
}

// singleBound are the parameters of an invariant with one bound.
type singleBound struct {
	Bound *duration `json:"bound"`
}

func paramsOfOneBound(b time.Duration) json.RawMessage {
	d := duration(b)
	return mustParams(singleBound{Bound: &d})
}

func (e endpointsTruthful) Params() json.RawMessage { return paramsOfOneBound(e.bound) }
func (s serviceRoutes) Params() json.RawMessage     { return paramsOfOneBound(s.bound) }
func (p policyEnforced) Params() json.RawMessage    { return paramsOfOneBound(p.bound) }
func (a agentHealth) Params() json.RawMessage       { return paramsOfOneBound(a.bound) }

// decodeBound is the decoder of an invariant built with one bound.
func decodeBound(build func(time.Duration) Invariant) Decoder {
	return func(raw json.RawMessage) (Invariant, error) {
		var p singleBound
		if err := decodeParams(raw, &p); err != nil {
			return nil, err
		}
		if p.Bound == nil {
			return nil, errors.New("it needs its bound")
		}
		return build(time.Duration(*p.Bound)), nil
	}
}

type dnsParams struct {
	Bound       *duration `json:"bound"`
	NegativeTTL *duration `json:"negativeTTL"`
}

func (d dnsTruthful) Params() json.RawMessage {
	b, n := duration(d.bound), duration(d.negativeTTL)
	return mustParams(dnsParams{Bound: &b, NegativeTTL: &n})
}

func decodeDNSTruthful(raw json.RawMessage) (Invariant, error) {
	var p dnsParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Bound == nil || p.NegativeTTL == nil {
		return nil, errors.New("dns-truthful needs its bound and its negative TTL")
	}
	return DNSTruthful(time.Duration(*p.Bound), time.Duration(*p.NegativeTTL)), nil
}
