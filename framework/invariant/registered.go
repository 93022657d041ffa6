package invariant

import (
	"bytes"
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
	} {
		Register(name, Plain(build))
	}
	Register(APIAgreementName, decodeAPIAgreement)
	Register(NoTimeTravelName, decodeNoTimeTravel)
	Register(EndpointsTruthfulName, decodeBound(EndpointsTruthful))
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
	return MustParams(p)
}

func decodeAPIAgreement(raw json.RawMessage) (Invariant, error) {
	var p agreementParams
	if err := DecodeParams(raw, &p); err != nil {
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
	return MustParams(coverageParams{Coverage: &c})
}

func decodeNoTimeTravel(raw json.RawMessage) (Invariant, error) {
	var p coverageParams
	if err := DecodeParams(raw, &p); err != nil {
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
	return MustParams(singleBound{Bound: &d})
}

func (e endpointsTruthful) Params() json.RawMessage { return paramsOfOneBound(e.bound) }

// decodeBound is the decoder of an invariant built with one bound.
func decodeBound(build func(time.Duration) Invariant) Decoder {
	return func(raw json.RawMessage) (Invariant, error) {
		var p singleBound
		if err := DecodeParams(raw, &p); err != nil {
			return nil, err
		}
		if p.Bound == nil {
			return nil, errors.New("it needs its bound")
		}
		return build(time.Duration(*p.Bound)), nil
	}
}

// RecordedBound is a Bound in parameters: {"limit": "7s", "why": "..."}.
// Records written before an invariant took a Bound may hold the limit
// alone ("5s"); it decodes to a Bound with no mechanism named.
type RecordedBound struct{ Bound }

func (r RecordedBound) MarshalJSON() ([]byte, error) { return json.Marshal(paramsOfBound(r.Bound)) }

func (r *RecordedBound) UnmarshalJSON(raw []byte) error {
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
		var d duration
		if err := json.Unmarshal(t, &d); err != nil {
			return err
		}
		r.Bound = Bound{Limit: time.Duration(d)}
		return nil
	}
	var p boundParams
	if err := DecodeParams(raw, &p); err != nil {
		return err
	}
	b, err := p.bound()
	if err != nil {
		return err
	}
	r.Bound = b
	return nil
}
