package faults

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"

	"github.com/faultline/faultline/framework/fault"
)

// checker is what every fault's parameters do: say what is wrong with
// them without looking at a lab.
type checker interface{ check() error }

// register makes kind decodable: its parameters are read strictly
// (unknown fields are errors, since a ledger entry written by another
// version may mean something else) and checked before build sees them.
func register[P checker](kind string, build func(P) fault.Fault) {
	fault.Register(kind, func(raw json.RawMessage) (fault.Fault, error) {
		var p P
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		if err := p.check(); err != nil {
			return nil, err
		}
		return build(p), nil
	})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Parameters are plain structs of strings, numbers and slices.
		panic(fmt.Sprintf("faults: parameters are not JSON: %v", err))
	}
	return b
}

// tagsGiven are the tags this process has handed out: random four-digit
// tags collide by chance (about one in fifty among fifty faults), and two
// faults of one run sharing a tag would heal each other's rules.
var (
	tagsMu    sync.Mutex
	tagsGiven = map[string]bool{}
)

// newTag returns four hex digits, not 0000 and not given before by this
// process, naming one injected fault's own objects on the hosts (iptables
// chain, qdisc handle, marker files), so heal removes exactly them. Four
// digits fit a tc handle's major number.
func newTag() string {
	tagsMu.Lock()
	defer tagsMu.Unlock()
	for {
		var b [2]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("faults: no randomness for a fault tag: %v", err))
		}
		tag := hex.EncodeToString(b[:])
		if b != [2]byte{} && !tagsGiven[tag] {
			tagsGiven[tag] = true
			return tag
		}
	}
}

var tagPattern = regexp.MustCompile(`^[0-9a-f]{4}$`)

func checkTag(tag string) error {
	if !tagPattern.MatchString(tag) || tag == "0000" {
		return fmt.Errorf("tag %q is not four lower-case hex digits (not 0000)", tag)
	}
	return nil
}

// chainName is the iptables chain of one fault; heal removes exactly it.
func chainName(tag string) string { return "FAULTLINE-" + tag }
