package source

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The reader of `nft -j list ...` output (libnftables' JSON, schema 1),
// shared by the readers of kube-proxy's nftables mode and of
// kube-network-policies. Only the objects and expressions those agents
// write are decoded; the rest is kept raw.

// nftRuleset is one JSON listing: its tables, chains, rules and sets
// (maps included) by table.
type nftRuleset struct {
	tables map[nftTableID]*nftTable
}

type nftTableID struct{ family, name string }

type nftTable struct {
	chains map[string]*nftChain
	sets   map[string]*nftSet
}

type nftChain struct {
	name  string
	hook  string
	rules []nftRule
}

type nftRule struct {
	chain   string
	comment string
	expr    []map[string]json.RawMessage
}

type nftSet struct {
	Family  string            `json:"family"`
	Name    string            `json:"name"`
	Table   string            `json:"table"`
	Map     string            `json:"map"`
	Comment string            `json:"comment"`
	Elem    []json.RawMessage `json:"elem"`
}

// parseNFTJSON reads `nft -j list ruleset|table ...` output. Output that
// is not that JSON (an nft error message, a listing cut short), or an
// object of a table the listing does not hold, is an error.
func parseNFTJSON(out string) (nftRuleset, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&doc); err != nil {
		return nftRuleset{}, fmt.Errorf("nft JSON: %w", err)
	}
	if dec.More() {
		return nftRuleset{}, fmt.Errorf("nft JSON: more after the listing")
	}
	if doc.Nftables == nil {
		return nftRuleset{}, fmt.Errorf("nft JSON: no \"nftables\" array (not nft -j output)")
	}
	rs := nftRuleset{tables: map[nftTableID]*nftTable{}}
	table := func(kind, family, name string) (*nftTable, error) {
		t := rs.tables[nftTableID{family, name}]
		if t == nil {
			return nil, fmt.Errorf("nft JSON: a %s of table %s %s, which the listing does not hold", kind, family, name)
		}
		return t, nil
	}
	for i, obj := range doc.Nftables {
		if len(obj) != 1 {
			return nftRuleset{}, fmt.Errorf("nft JSON: object %d has %d keys, not one", i, len(obj))
		}
		for kind, raw := range obj {
			switch kind {
			case "metainfo":
			case "table":
				var t struct{ Family, Name string }
				if err := json.Unmarshal(raw, &t); err != nil {
					return nftRuleset{}, fmt.Errorf("nft JSON: table %d: %w", i, err)
				}
				rs.tables[nftTableID{t.Family, t.Name}] = &nftTable{chains: map[string]*nftChain{}, sets: map[string]*nftSet{}}
			case "chain":
				var c struct{ Family, Table, Name, Hook string }
				if err := json.Unmarshal(raw, &c); err != nil {
					return nftRuleset{}, fmt.Errorf("nft JSON: chain %d: %w", i, err)
				}
				t, err := table("chain", c.Family, c.Table)
				if err != nil {
					return nftRuleset{}, err
				}
				t.chains[c.Name] = &nftChain{name: c.Name, hook: c.Hook}
			case "rule":
				var r struct {
					Family, Table, Chain, Comment string
					Expr                          []map[string]json.RawMessage
				}
				if err := json.Unmarshal(raw, &r); err != nil {
					return nftRuleset{}, fmt.Errorf("nft JSON: rule %d: %w", i, err)
				}
				t, err := table("rule", r.Family, r.Table)
				if err != nil {
					return nftRuleset{}, err
				}
				c := t.chains[r.Chain]
				if c == nil {
					return nftRuleset{}, fmt.Errorf("nft JSON: a rule of chain %s, which table %s %s does not list", r.Chain, r.Family, r.Table)
				}
				c.rules = append(c.rules, nftRule{chain: r.Chain, comment: r.Comment, expr: r.Expr})
			case "set", "map":
				var s nftSet
				if err := json.Unmarshal(raw, &s); err != nil {
					return nftRuleset{}, fmt.Errorf("nft JSON: %s %d: %w", kind, i, err)
				}
				t, err := table(kind, s.Family, s.Table)
				if err != nil {
					return nftRuleset{}, err
				}
				t.sets[s.Name] = &s
			default:
				// Elements, flowtables, counters and other objects are not
				// read by these readers.
			}
		}
	}
	return rs, nil
}

// nftVerdict is a verdict expression: {"goto": {"target": "c"}},
// {"jump": {"target": "c"}}, {"drop": null}, {"accept": null}, …
type nftVerdict struct{ kind, target string }

func decodeNFTVerdict(raw json.RawMessage) (nftVerdict, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || len(obj) != 1 {
		return nftVerdict{}, false
	}
	for k, v := range obj {
		return nftVerdictOf(k, v)
	}
	return nftVerdict{}, false
}

// nftVerdictOf reads one verdict given as its key and value.
func nftVerdictOf(kind string, v json.RawMessage) (nftVerdict, bool) {
	switch kind {
	case "goto", "jump":
		var t struct{ Target string }
		if json.Unmarshal(v, &t) != nil || t.Target == "" {
			return nftVerdict{}, false
		}
		return nftVerdict{kind: kind, target: t.Target}, true
	case "accept", "drop", "continue", "return":
		return nftVerdict{kind: kind}, true
	}
	return nftVerdict{}, false
}

// nftMapElem is one element of a map: its key's parts (a concatenation's
// parts, or the one value), its comment, and its value.
type nftMapElem struct {
	key     []string
	comment string
	value   json.RawMessage
}

// mapElems decodes a map's elements: each [key, value], the key a scalar,
// {"concat": [...]}, or {"elem": {"val": <key>, "comment": "..."}}.
func (s *nftSet) mapElems() ([]nftMapElem, error) {
	var out []nftMapElem
	for i, raw := range s.Elem {
		var pair []json.RawMessage
		if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("map %s: element %d is not [key, value]", s.Name, i)
		}
		key, comment, err := decodeNFTKey(pair[0])
		if err != nil {
			return nil, fmt.Errorf("map %s: element %d: %w", s.Name, i, err)
		}
		out = append(out, nftMapElem{key: key, comment: comment, value: pair[1]})
	}
	return out, nil
}

// setElems decodes a set's elements to strings (each key's parts joined
// by " . ").
func (s *nftSet) setElems() ([]string, error) {
	var out []string
	for i, raw := range s.Elem {
		key, _, err := decodeNFTKey(raw)
		if err != nil {
			return nil, fmt.Errorf("set %s: element %d: %w", s.Name, i, err)
		}
		out = append(out, strings.Join(key, " . "))
	}
	return out, nil
}

func decodeNFTKey(raw json.RawMessage) (parts []string, comment string, err error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		if e, ok := obj["elem"]; ok {
			var el struct {
				Val     json.RawMessage
				Comment string
			}
			if err := json.Unmarshal(e, &el); err != nil {
				return nil, "", fmt.Errorf("an elem without a value: %w", err)
			}
			parts, _, err := decodeNFTKey(el.Val)
			return parts, el.Comment, err
		}
		if c, ok := obj["concat"]; ok {
			var items []json.RawMessage
			if err := json.Unmarshal(c, &items); err != nil {
				return nil, "", fmt.Errorf("a concat that is not a list: %w", err)
			}
			for _, it := range items {
				s, err := nftScalar(it)
				if err != nil {
					return nil, "", err
				}
				parts = append(parts, s)
			}
			return parts, "", nil
		}
		if p, ok := obj["prefix"]; ok {
			var pf struct {
				Addr string
				Len  int
			}
			if err := json.Unmarshal(p, &pf); err != nil {
				return nil, "", fmt.Errorf("a prefix without addr and len: %w", err)
			}
			return []string{fmt.Sprintf("%s/%d", pf.Addr, pf.Len)}, "", nil
		}
		return nil, "", fmt.Errorf("a key nft does not write: %s", truncate(string(raw), 80))
	}
	s, err := nftScalar(raw)
	if err != nil {
		return nil, "", err
	}
	return []string{s}, "", nil
}

// nftScalar is a JSON string or number as text.
func nftScalar(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("a value that is neither a string nor a number: %s", truncate(string(raw), 80))
}
