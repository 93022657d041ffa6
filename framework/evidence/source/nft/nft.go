// Package nft reads `nft -j list ...` output (libnftables' JSON, schema
// 1): the reader shared by the readers of kube-proxy's nftables mode and
// of kube-network-policies. Only the objects and expressions those agents
// write are decoded; the rest is kept raw.
package nft

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Ruleset is one JSON listing: its tables, chains, rules and sets
// (maps included) by table.
type Ruleset struct {
	Tables map[TableID]*Table
}

// TableID names a table: its family and name.
type TableID struct{ Family, Name string }

// Table is one table's chains and sets (maps included) by name.
type Table struct {
	Chains map[string]*Chain
	Sets   map[string]*Set
}

// Chain is one chain: its name, its hook for a base chain, its rules in
// order.
type Chain struct {
	Name  string
	Hook  string
	Rules []Rule
}

// Rule is one rule: its chain, its comment and its expressions raw.
type Rule struct {
	Chain   string
	Comment string
	Expr    []map[string]json.RawMessage
}

// Set is one set or map as listed, its elements raw.
type Set struct {
	Family  string            `json:"family"`
	Name    string            `json:"name"`
	Table   string            `json:"table"`
	Map     string            `json:"map"`
	Comment string            `json:"comment"`
	Elem    []json.RawMessage `json:"elem"`
}

// Parse reads `nft -j list ruleset|table ...` output. Output that
// is not that JSON (an nft error message, a listing cut short), or an
// object of a table the listing does not hold, is an error.
func Parse(out string) (Ruleset, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&doc); err != nil {
		return Ruleset{}, fmt.Errorf("nft JSON: %w", err)
	}
	if dec.More() {
		return Ruleset{}, fmt.Errorf("nft JSON: more after the listing")
	}
	if doc.Nftables == nil {
		return Ruleset{}, fmt.Errorf("nft JSON: no \"nftables\" array (not nft -j output)")
	}
	rs := Ruleset{Tables: map[TableID]*Table{}}
	table := func(kind, family, name string) (*Table, error) {
		t := rs.Tables[TableID{family, name}]
		if t == nil {
			return nil, fmt.Errorf("nft JSON: a %s of table %s %s, which the listing does not hold", kind, family, name)
		}
		return t, nil
	}
	for i, obj := range doc.Nftables {
		if len(obj) != 1 {
			return Ruleset{}, fmt.Errorf("nft JSON: object %d has %d keys, not one", i, len(obj))
		}
		for kind, raw := range obj {
			switch kind {
			case "metainfo":
			case "table":
				var t struct{ Family, Name string }
				if err := json.Unmarshal(raw, &t); err != nil {
					return Ruleset{}, fmt.Errorf("nft JSON: table %d: %w", i, err)
				}
				rs.Tables[TableID{t.Family, t.Name}] = &Table{Chains: map[string]*Chain{}, Sets: map[string]*Set{}}
			case "chain":
				var c struct{ Family, Table, Name, Hook string }
				if err := json.Unmarshal(raw, &c); err != nil {
					return Ruleset{}, fmt.Errorf("nft JSON: chain %d: %w", i, err)
				}
				t, err := table("chain", c.Family, c.Table)
				if err != nil {
					return Ruleset{}, err
				}
				t.Chains[c.Name] = &Chain{Name: c.Name, Hook: c.Hook}
			case "rule":
				var r struct {
					Family, Table, Chain, Comment string
					Expr                          []map[string]json.RawMessage
				}
				if err := json.Unmarshal(raw, &r); err != nil {
					return Ruleset{}, fmt.Errorf("nft JSON: rule %d: %w", i, err)
				}
				t, err := table("rule", r.Family, r.Table)
				if err != nil {
					return Ruleset{}, err
				}
				c := t.Chains[r.Chain]
				if c == nil {
					return Ruleset{}, fmt.Errorf("nft JSON: a rule of chain %s, which table %s %s does not list", r.Chain, r.Family, r.Table)
				}
				c.Rules = append(c.Rules, Rule{Chain: r.Chain, Comment: r.Comment, Expr: r.Expr})
			case "set", "map":
				var s Set
				if err := json.Unmarshal(raw, &s); err != nil {
					return Ruleset{}, fmt.Errorf("nft JSON: %s %d: %w", kind, i, err)
				}
				t, err := table(kind, s.Family, s.Table)
				if err != nil {
					return Ruleset{}, err
				}
				t.Sets[s.Name] = &s
			default:
				// Elements, flowtables, counters and other objects are not
				// read by these readers.
			}
		}
	}
	return rs, nil
}

// Verdict is a verdict expression: {"goto": {"target": "c"}},
// {"jump": {"target": "c"}}, {"drop": null}, {"accept": null}, …
type Verdict struct{ Kind, Target string }

// DecodeVerdict reads one verdict expression.
func DecodeVerdict(raw json.RawMessage) (Verdict, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || len(obj) != 1 {
		return Verdict{}, false
	}
	for k, v := range obj {
		return VerdictOf(k, v)
	}
	return Verdict{}, false
}

// VerdictOf reads one verdict given as its key and value.
func VerdictOf(kind string, v json.RawMessage) (Verdict, bool) {
	switch kind {
	case "goto", "jump":
		var t struct{ Target string }
		if json.Unmarshal(v, &t) != nil || t.Target == "" {
			return Verdict{}, false
		}
		return Verdict{Kind: kind, Target: t.Target}, true
	case "accept", "drop", "continue", "return":
		return Verdict{Kind: kind}, true
	}
	return Verdict{}, false
}

// MapElem is one element of a map: its key's parts (a concatenation's
// parts, or the one value), its comment, and its value.
type MapElem struct {
	Key     []string
	Comment string
	Value   json.RawMessage
}

// MapElems decodes a map's elements: each [key, value], the key a scalar,
// {"concat": [...]}, or {"elem": {"val": <key>, "comment": "..."}}.
func (s *Set) MapElems() ([]MapElem, error) {
	var out []MapElem
	for i, raw := range s.Elem {
		var pair []json.RawMessage
		if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("map %s: element %d is not [key, value]", s.Name, i)
		}
		key, comment, err := DecodeKey(pair[0])
		if err != nil {
			return nil, fmt.Errorf("map %s: element %d: %w", s.Name, i, err)
		}
		out = append(out, MapElem{Key: key, Comment: comment, Value: pair[1]})
	}
	return out, nil
}

// SetElems decodes a set's elements to strings (each key's parts joined
// by " . ").
func (s *Set) SetElems() ([]string, error) {
	var out []string
	for i, raw := range s.Elem {
		key, _, err := DecodeKey(raw)
		if err != nil {
			return nil, fmt.Errorf("set %s: element %d: %w", s.Name, i, err)
		}
		out = append(out, strings.Join(key, " . "))
	}
	return out, nil
}

// DecodeKey reads a set or map key: its parts (a concatenation's parts,
// or the one value) and its comment.
func DecodeKey(raw json.RawMessage) (parts []string, comment string, err error) {
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
			parts, _, err := DecodeKey(el.Val)
			return parts, el.Comment, err
		}
		if c, ok := obj["concat"]; ok {
			var items []json.RawMessage
			if err := json.Unmarshal(c, &items); err != nil {
				return nil, "", fmt.Errorf("a concat that is not a list: %w", err)
			}
			for _, it := range items {
				s, err := Scalar(it)
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
	s, err := Scalar(raw)
	if err != nil {
		return nil, "", err
	}
	return []string{s}, "", nil
}

// Scalar is a JSON string or number as text.
func Scalar(raw json.RawMessage) (string, error) {
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

// truncate is s cut to n bytes, marked, for error messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
