// Package evidence holds what faultline reads from a cluster: the answers of
// sources to questions, snapshots of those answers taken at one moment, and
// the timeline of moments that matter. Invariants judge only this.
package evidence

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Source is one place that can be asked about the cluster, named by what it
// is and where ("apiserver/cp1", "cri/worker2", "etcd/etcd1").
type Source string

// Question is what every source is asked ("worker1/ready", "statefulpod/node").
type Question string

// AnswerState says whether an answer holds a value.
type AnswerState string

const (
	// Answered: the source gave a value.
	Answered AnswerState = "value"
	// Unreadable: the source was asked and could not answer (timeout,
	// connection refused, TLS, not deployed); the reason says which.
	Unreadable AnswerState = "unreadable"
	// NotAsked: the source cannot answer this question at all, so it was
	// not asked. Not a failure, and never evidence either way.
	NotAsked AnswerState = "not-asked"
)

// Answer is one source's answer to one question. It never holds a guessed
// value: either a value that was read, or why there is none.
type Answer struct {
	State AnswerState `json:"state"`
	// Value is the answer as read, in JSON (only when State is Answered).
	Value json.RawMessage `json:"value,omitempty"`
	// AskedAt is when the read began (set by the round; never before the
	// snapshot's Taken).
	AskedAt time.Time `json:"askedAt,omitzero"`
	// ReadAt is when the source answered (or failed to).
	ReadAt time.Time `json:"readAt,omitzero"`
	// ResourceVersion is the Kubernetes or etcd revision the value was read
	// at, where the source has one.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Reason says why an answer is Unreadable.
	Reason string `json:"reason,omitempty"`
}

// ValueAnswer encodes v as the answer read at readAt.
func ValueAnswer(v any, readAt time.Time, resourceVersion string) (Answer, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Answer{}, fmt.Errorf("encoding answer value: %w", err)
	}
	return Answer{State: Answered, Value: b, ReadAt: readAt, ResourceVersion: resourceVersion}, nil
}

// EncodedAnswer is ValueAnswer for values that always encode (the
// question value types): an encoding failure is still reported, as an
// unreadable answer read at readAt.
func EncodedAnswer(v any, readAt time.Time, resourceVersion string) Answer {
	a, err := ValueAnswer(v, readAt, resourceVersion)
	if err != nil {
		return UnreadableAnswer(err.Error(), readAt)
	}
	return a
}

// UnreadableAnswer records that a source was asked at readAt and could not
// answer, and why.
func UnreadableAnswer(reason string, readAt time.Time) Answer {
	return Answer{State: Unreadable, Reason: reason, ReadAt: readAt}
}

// NotAskedAnswer records that a source cannot answer a question.
func NotAskedAnswer() Answer { return Answer{State: NotAsked} }

// Readable reports whether the answer holds a value.
func (a Answer) Readable() bool { return a.State == Answered }

// Refused reports whether an unreadable answer says the source itself
// refused or answered with an error (connection refused, a TLS failure, an
// error status, not deployed): a definite "no value here". A read that
// timed out, was cancelled, or could not reach the source is not refused:
// it says nothing of what the source serves, and must be taken as
// unknown. The class is the reason's first phrase (see source.Reason).
func (a Answer) Refused() bool {
	if a.State != Unreadable {
		return false
	}
	switch a.Class() {
	case "connection refused", "TLS", "error", "not deployed":
		return true
	}
	return false
}

// Class is an unreadable answer's class, the reason's first phrase
// ("timeout", "connection refused", "not deployed"; see source.Reason);
// "" for an answer that is not unreadable.
func (a Answer) Class() string {
	if a.State != Unreadable {
		return ""
	}
	class, _, _ := strings.Cut(a.Reason, ":")
	return class
}

// Decode decodes the value into v; it fails for an answer without a value.
func (a Answer) Decode(v any) error {
	if !a.Readable() {
		if a.State == Unreadable {
			return fmt.Errorf("answer is unreadable: %s", a.Reason)
		}
		return fmt.Errorf("answer has no value (%s)", a.State)
	}
	if err := json.Unmarshal(a.Value, v); err != nil {
		return fmt.Errorf("decoding answer value: %w", err)
	}
	return nil
}

// Validate checks that the answer is one of its three forms.
func (a Answer) Validate() error {
	switch a.State {
	case Answered:
		if len(a.Value) == 0 {
			return errors.New("answer has state value but no value")
		}
		if a.ReadAt.IsZero() {
			return errors.New("answer has a value but no read time")
		}
		if a.Reason != "" {
			return errors.New("answer has a value and a reason")
		}
	case Unreadable:
		if a.Reason == "" {
			return errors.New("unreadable answer has no reason")
		}
		if len(a.Value) != 0 {
			return errors.New("unreadable answer has a value")
		}
	case NotAsked:
		if len(a.Value) != 0 || a.Reason != "" {
			return errors.New("not-asked answer has a value or a reason")
		}
	default:
		return fmt.Errorf("answer state %q is not one of value, unreadable, not-asked", a.State)
	}
	return nil
}
