package source

import (
	"fmt"
	"net/netip"
	"strings"
)

// The iptables-save reader shared by the readers of what kube-proxy
// (iptables mode), kube-router and Calico programmed. Hand-written: no Go
// library reads iptables-save's text (go-iptables runs the iptables
// binaries, which are not on the machine that parses the dump).

// ipDump is one iptables-save output: per table, its chains and rules.
type ipDump struct {
	// tables by name ("filter", "nat"), each closed by COMMIT.
	tables map[string]*ipTable
}

type ipTable struct {
	// chains holds every chain the table declares (":NAME POLICY [p:b]").
	chains map[string]bool
	rules  []rule
}

// rule is one "-A CHAIN ..." line of iptables-save: its options in order,
// and the ones faultline reads most, taken out.
type rule struct {
	table, chain string
	// comment is the last --comment (kube-proxy writes one); comments are
	// all of them in order (Calico writes its rule hash, then text).
	comment  string
	comments []string
	// jump is the -j or -g target; isGoto is true for -g.
	jump   string
	isGoto bool
	// dest, proto, dport and toDest are the un-negated -d, -p, --dport and
	// --to-destination.
	dest, proto, dport, toDest string
	opts                       []ruleOpt
}

// ruleOpt is one option of a rule with its arguments ("-m" ["set"],
// "--match-set" ["KUBE-SRC-X", "src"]); neg is true when "!" preceded it.
type ruleOpt struct {
	name string
	neg  bool
	args []string
}

// opt is the rule's first option named name (any of names).
func (r rule) opt(names ...string) (ruleOpt, bool) {
	for _, o := range r.opts {
		for _, n := range names {
			if o.name == n {
				return o, true
			}
		}
	}
	return ruleOpt{}, false
}

// all is every option of the rule named name.
func (r rule) all(name string) []ruleOpt {
	var out []ruleOpt
	for _, o := range r.opts {
		if o.name == name {
			out = append(out, o)
		}
	}
	return out
}

// arg is the first argument of the rule's first un-negated option named
// name, "" when there is none.
func (r rule) arg(names ...string) string {
	for _, o := range r.opts {
		for _, n := range names {
			if o.name == n && !o.neg && len(o.args) > 0 {
				return o.args[0]
			}
		}
	}
	return ""
}

// hasComment reports whether one of the rule's comments is text.
func (r rule) hasComment(text string) bool {
	for _, c := range r.comments {
		if c == text {
			return true
		}
	}
	return false
}

// chain is the rules of one chain of one table, in order.
func (d ipDump) chain(table, chain string) []rule {
	t := d.tables[table]
	if t == nil {
		return nil
	}
	var out []rule
	for _, r := range t.rules {
		if r.chain == chain {
			out = append(out, r)
		}
	}
	return out
}

// declares reports whether the table declares the chain.
func (d ipDump) declares(table, chain string) bool {
	t := d.tables[table]
	return t != nil && t.chains[chain]
}

// parseIPTablesDump reads iptables-save output. A table must end with
// COMMIT (a dump cut short is an error, never fewer rules), every rule and
// chain must be inside a table, and a line iptables-save does not write is
// an error.
func parseIPTablesDump(out string) (ipDump, error) {
	d := ipDump{tables: map[string]*ipTable{}}
	var cur *ipTable
	curName := ""
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		lineNo := n + 1
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "*"):
			if cur != nil {
				return ipDump{}, fmt.Errorf("iptables-save line %d: table %s starts before table %s's COMMIT (output cut short?)", lineNo, line[1:], curName)
			}
			curName = line[1:]
			if curName == "" {
				return ipDump{}, fmt.Errorf("iptables-save line %d: a table without a name", lineNo)
			}
			if d.tables[curName] != nil {
				return ipDump{}, fmt.Errorf("iptables-save line %d: table %s appears twice", lineNo, curName)
			}
			cur = &ipTable{chains: map[string]bool{}}
			d.tables[curName] = cur
		case line == "COMMIT":
			if cur == nil {
				return ipDump{}, fmt.Errorf("iptables-save line %d: COMMIT outside any table", lineNo)
			}
			cur, curName = nil, ""
		case strings.HasPrefix(line, ":"):
			if cur == nil {
				return ipDump{}, fmt.Errorf("iptables-save line %d: a chain outside any table", lineNo)
			}
			name, _, _ := strings.Cut(line[1:], " ")
			if name == "" {
				return ipDump{}, fmt.Errorf("iptables-save line %d: a chain without a name", lineNo)
			}
			cur.chains[name] = true
		case strings.HasPrefix(line, "-A "):
			if cur == nil {
				return ipDump{}, fmt.Errorf("iptables-save line %d: a rule outside any table", lineNo)
			}
			r, err := parseRule(curName, line)
			if err != nil {
				return ipDump{}, fmt.Errorf("iptables-save line %d: %w", lineNo, err)
			}
			cur.rules = append(cur.rules, r)
		default:
			return ipDump{}, fmt.Errorf("iptables-save line %d: not a line iptables-save writes: %q", lineNo, truncate(line, 80))
		}
	}
	if cur != nil {
		return ipDump{}, fmt.Errorf("iptables-save: table %s has no COMMIT (output cut short?)", curName)
	}
	return d, nil
}

// parseIPTablesSave is the rules of every table of a dump, in order.
func parseIPTablesSave(out string) ([]rule, error) {
	d, err := parseIPTablesDump(out)
	if err != nil {
		return nil, err
	}
	var rules []rule
	for _, t := range d.tables {
		rules = append(rules, t.rules...)
	}
	return rules, nil
}

// oneArgOptions take exactly one argument whatever it looks like (a
// comment may begin with "-").
var oneArgOptions = map[string]bool{"--comment": true, "-j": true, "--jump": true, "-g": true, "--goto": true}

func parseRule(table, line string) (rule, error) {
	words, err := splitRuleWords(line)
	if err != nil {
		return rule{}, err
	}
	r := rule{table: table, chain: words[1]}
	neg := false
	for i := 2; i < len(words); i++ {
		w := words[i]
		if w == "!" {
			neg = true
			continue
		}
		if !strings.HasPrefix(w, "-") {
			return rule{}, fmt.Errorf("argument %q without an option in %q", w, truncate(line, 120))
		}
		o := ruleOpt{name: w, neg: neg}
		neg = false
		if oneArgOptions[w] {
			if i+1 >= len(words) {
				return rule{}, fmt.Errorf("%s without its argument in %q", w, truncate(line, 120))
			}
			i++
			o.args = []string{words[i]}
		} else {
			for i+1 < len(words) && words[i+1] != "!" && !strings.HasPrefix(words[i+1], "-") {
				i++
				o.args = append(o.args, words[i])
			}
		}
		r.opts = append(r.opts, o)
	}
	if neg {
		return rule{}, fmt.Errorf("a trailing \"!\" in %q", truncate(line, 120))
	}
	for _, o := range r.opts {
		if o.name == "--comment" {
			r.comments = append(r.comments, o.args[0])
			r.comment = o.args[0]
		}
	}
	if o, ok := r.opt("-j", "--jump", "-g", "--goto"); ok {
		r.jump = o.args[0]
		r.isGoto = o.name == "-g" || o.name == "--goto"
	}
	r.dest = r.arg("-d", "--destination")
	r.proto = r.arg("-p", "--protocol")
	r.dport = r.arg("--dport", "--destination-port")
	r.toDest = r.arg("--to-destination")
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// hostOf is the address of an iptables -s/-d argument ("10.0.0.1/32" →
// "10.0.0.1"); a wider network or "" gives "".
func hostOf(arg string) string {
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
