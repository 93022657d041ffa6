package invariant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// The registry turns an invariant's name and recorded parameters back into
// the invariant, so that a process other than the suite that judged a run
// (faultline rejudge) can judge its evidence again with the code as it is
// now. As with fault kinds (fault.Register), the package that holds an
// invariant registers it from its init function, and a program links the
// invariants it can re-create with blank imports.

// Parameterised is an invariant built with parameters (its bounds):
// Params gives them as JSON, and Decode(Name(), Params()) must give back
// an equal invariant. An invariant built without any need not implement
// it.
type Parameterised interface {
	Invariant
	Params() json.RawMessage
}

// ParamsOf is inv's parameters, nil for an invariant without any.
func ParamsOf(inv Invariant) json.RawMessage {
	if p, ok := inv.(Parameterised); ok {
		return p.Params()
	}
	return nil
}

// Decoder builds an invariant of one name from its recorded parameters.
// params is nil when the record holds none: an invariant that needs some
// must then return an error wrapping ErrNoParams.
type Decoder func(params json.RawMessage) (Invariant, error)

var (
	// ErrUnknown: no package linked into the program registers an
	// invariant of that name.
	ErrUnknown = errors.New("invariant not known to this program")
	// ErrNoParams: the record does not hold the parameters the invariant
	// needs (a record written before parameters were recorded).
	ErrNoParams = errors.New("the record does not hold the invariant's parameters")
)

var (
	registryMu sync.Mutex
	registry   = map[string]Decoder{}
)

// Register makes an invariant re-creatable by name. Packages call it from
// init; a name registered twice panics.
func Register(name string, decode Decoder) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" || decode == nil {
		panic("invariant: Register needs a name and a decoder")
	}
	if _, dup := registry[name]; dup {
		panic("invariant: registered twice: " + name)
	}
	registry[name] = decode
}

// Registered lists the names registered, sorted.
func Registered() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Decode re-creates the invariant name from its recorded parameters (nil
// when the record holds none). An error wraps ErrUnknown for a name no
// linked package registers, and ErrNoParams for parameters the record
// lacks.
func Decode(name string, params json.RawMessage) (Invariant, error) {
	registryMu.Lock()
	d, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q (known: %v)", ErrUnknown, name, Registered())
	}
	inv, err := d(params)
	if err != nil {
		return nil, fmt.Errorf("re-creating invariant %s from parameters %s: %w", name, recordedParams(params), err)
	}
	if inv.Name() != name {
		return nil, fmt.Errorf("re-creating invariant %s: its decoder returned %s", name, inv.Name())
	}
	return inv, nil
}

// Plain is the decoder of an invariant built without parameters: it
// refuses any but none.
func Plain(build func() Invariant) Decoder {
	return func(params json.RawMessage) (Invariant, error) {
		if !noParams(params) {
			return nil, fmt.Errorf("it takes no parameters, the record gives %s", params)
		}
		return build(), nil
	}
}

// DecodeParams decodes params into v strictly (an unknown field is an
// error), or says the record holds none.
func DecodeParams(params json.RawMessage, v any) error {
	if noParams(params) {
		return ErrNoParams
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

func noParams(params json.RawMessage) bool {
	t := bytes.TrimSpace(params)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

func recordedParams(params json.RawMessage) string {
	if noParams(params) {
		return "(none recorded)"
	}
	return string(params)
}

// MustParams encodes an invariant's parameters; they are plain data, so
// an error is a bug.
func MustParams(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("invariant: encoding parameters: %v", err))
	}
	return b
}
