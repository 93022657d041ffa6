// Package iptables reads iptables-save's text: the reader shared by the
// readers of what kube-proxy (iptables mode), kube-router and Calico
// programmed. Hand-written: no Go library reads iptables-save's text
// (go-iptables runs the iptables binaries, which are not on the machine
// that parses the dump).
package iptables

import (
	"fmt"
	"net/netip"
	"strings"
)

// Dump is one iptables-save output: per table, its chains and rules.
type Dump struct {
	// tables by name ("filter", "nat"), each closed by COMMIT.
	Tables map[string]*Table
}

type Table struct {
	// chains holds every chain the table declares (":NAME POLICY [p:b]").
	Chains map[string]bool
	Rules  []Rule
}

// Rule is one "-A CHAIN ..." line of iptables-save: its options in order,
// and the ones faultline reads most, taken out.
type Rule struct {
	Table, Chain string
	// comment is the last --comment (kube-proxy writes one); comments are
	// all of them in order (Calico writes its rule hash, then text).
	Comment  string
	Comments []string
	// jump is the -j or -g target; isGoto is true for -g.
	Jump   string
	IsGoto bool
	// dest, proto, dport and toDest are the un-negated -d, -p, --dport and
	// --to-destination.
	Dest, Proto, DPort, ToDest string
	Opts                       []Option
}

// Option is one option of a rule with its arguments ("-m" ["set"],
// "--match-set" ["KUBE-SRC-X", "src"]); neg is true when "!" preceded it.
type Option struct {
	Name string
	Neg  bool
	Args []string
}

// Opt is the rule's first option named name (any of names).
func (r Rule) Opt(names ...string) (Option, bool) {
	for _, o := range r.Opts {
		for _, n := range names {
			if o.Name == n {
				return o, true
			}
		}
	}
	return Option{}, false
}

// All is every option of the rule named name.
func (r Rule) All(name string) []Option {
	var out []Option
	for _, o := range r.Opts {
		if o.Name == name {
			out = append(out, o)
		}
	}
	return out
}

// Arg is the first argument of the rule's first un-negated option named
// name, "" when there is none.
func (r Rule) Arg(names ...string) string {
	for _, o := range r.Opts {
		for _, n := range names {
			if o.Name == n && !o.Neg && len(o.Args) > 0 {
				return o.Args[0]
			}
		}
	}
	return ""
}

// HasComment reports whether one of the rule's comments is text.
func (r Rule) HasComment(text string) bool {
	for _, c := range r.Comments {
		if c == text {
			return true
		}
	}
	return false
}

// Chain is the rules of one chain of one table, in order.
func (d Dump) Chain(table, chain string) []Rule {
	t := d.Tables[table]
	if t == nil {
		return nil
	}
	var out []Rule
	for _, r := range t.Rules {
		if r.Chain == chain {
			out = append(out, r)
		}
	}
	return out
}

// Declares reports whether the table declares the chain.
func (d Dump) Declares(table, chain string) bool {
	t := d.Tables[table]
	return t != nil && t.Chains[chain]
}

// Parse reads iptables-save output. A table must end with
// COMMIT (a dump cut short is an error, never fewer rules), every rule and
// chain must be inside a table, and a line iptables-save does not write is
// an error.
func Parse(out string) (Dump, error) {
	d := Dump{Tables: map[string]*Table{}}
	var cur *Table
	curName := ""
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		lineNo := n + 1
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "*"):
			if cur != nil {
				return Dump{}, fmt.Errorf("iptables-save line %d: table %s starts before table %s's COMMIT (output cut short?)", lineNo, line[1:], curName)
			}
			curName = line[1:]
			if curName == "" {
				return Dump{}, fmt.Errorf("iptables-save line %d: a table without a name", lineNo)
			}
			if d.Tables[curName] != nil {
				return Dump{}, fmt.Errorf("iptables-save line %d: table %s appears twice", lineNo, curName)
			}
			cur = &Table{Chains: map[string]bool{}}
			d.Tables[curName] = cur
		case line == "COMMIT":
			if cur == nil {
				return Dump{}, fmt.Errorf("iptables-save line %d: COMMIT outside any table", lineNo)
			}
			cur, curName = nil, ""
		case strings.HasPrefix(line, ":"):
			if cur == nil {
				return Dump{}, fmt.Errorf("iptables-save line %d: a chain outside any table", lineNo)
			}
			name, _, _ := strings.Cut(line[1:], " ")
			if name == "" {
				return Dump{}, fmt.Errorf("iptables-save line %d: a chain without a name", lineNo)
			}
			cur.Chains[name] = true
		case strings.HasPrefix(line, "-A "):
			if cur == nil {
				return Dump{}, fmt.Errorf("iptables-save line %d: a rule outside any table", lineNo)
			}
			r, err := parseRule(curName, line)
			if err != nil {
				return Dump{}, fmt.Errorf("iptables-save line %d: %w", lineNo, err)
			}
			cur.Rules = append(cur.Rules, r)
		default:
			return Dump{}, fmt.Errorf("iptables-save line %d: not a line iptables-save writes: %q", lineNo, Truncate(line, 80))
		}
	}
	if cur != nil {
		return Dump{}, fmt.Errorf("iptables-save: table %s has no COMMIT (output cut short?)", curName)
	}
	return d, nil
}

// oneArgOptions take exactly one argument whatever it looks like (a
// comment may begin with "-").
var oneArgOptions = map[string]bool{"--comment": true, "-j": true, "--jump": true, "-g": true, "--goto": true}

func parseRule(table, line string) (Rule, error) {
	words, err := splitRuleWords(line)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Table: table, Chain: words[1]}
	neg := false
	for i := 2; i < len(words); i++ {
		w := words[i]
		if w == "!" {
			neg = true
			continue
		}
		if !strings.HasPrefix(w, "-") {
			return Rule{}, fmt.Errorf("argument %q without an option in %q", w, Truncate(line, 120))
		}
		o := Option{Name: w, Neg: neg}
		neg = false
		if oneArgOptions[w] {
			if i+1 >= len(words) {
				return Rule{}, fmt.Errorf("%s without its argument in %q", w, Truncate(line, 120))
			}
			i++
			o.Args = []string{words[i]}
		} else {
			for i+1 < len(words) && words[i+1] != "!" && !strings.HasPrefix(words[i+1], "-") {
				i++
				o.Args = append(o.Args, words[i])
			}
		}
		r.Opts = append(r.Opts, o)
	}
	if neg {
		return Rule{}, fmt.Errorf("a trailing \"!\" in %q", Truncate(line, 120))
	}
	for _, o := range r.Opts {
		if o.Name == "--comment" {
			r.Comments = append(r.Comments, o.Args[0])
			r.Comment = o.Args[0]
		}
	}
	if o, ok := r.Opt("-j", "--jump", "-g", "--goto"); ok {
		r.Jump = o.Args[0]
		r.IsGoto = o.Name == "-g" || o.Name == "--goto"
	}
	r.Dest = r.Arg("-d", "--destination")
	r.Proto = r.Arg("-p", "--protocol")
	r.DPort = r.Arg("--dport", "--destination-port")
	r.ToDest = r.Arg("--to-destination")
	return r, nil
}

// splitRuleWords splits an iptables-save line into words the way
// iptables-save quotes them: double quotes around words with spaces,
// backslash escaping a quote or backslash inside.
func splitRuleWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == '"':
			quoted = !quoted
			inWord = true
		case !quoted && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) < 2 {
		return nil, fmt.Errorf("rule without a chain: %q", line)
	}
	return words, nil
}

// Truncate is s cut to n bytes, marked, for error messages.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// HostOf is the address of an iptables -s/-d argument ("10.0.0.1/32" →
// "10.0.0.1"); a wider network or "" gives "".
func HostOf(arg string) string {
	if arg == "" {
		return ""
	}
	if p, err := netip.ParsePrefix(arg); err == nil {
		if p.Bits() != p.Addr().BitLen() {
			return ""
		}
		return p.Addr().String()
	}
	if a, err := netip.ParseAddr(arg); err == nil {
		return a.String()
	}
	return ""
}
