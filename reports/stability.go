package reports

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/faultline/faultline/framework/verdict"
)

// StabilityRow is one scenario × arm × invariant over its repetitions: k
// VIOLATED of n judged with its Wilson interval (the repetitions are
// trials of one experiment), the other outcomes apart, whether it is
// flaky, and the median and range of each quantity its judged verdicts
// measured.
type StabilityRow struct {
	verdict.Stability
	Quantities []QuantitySummary
}

// QuantitySummary is one quantity over the judged repetitions that
// measured it (a VIOLATED or PRESERVED verdict of a JUDGED run): its
// median (the mean of the middle two where their number is even) and
// range, and where it scales with other quantities of the same judgement
// (verdict.Quantity.Per), the same of it divided by their product in each
// repetition, so that runs of different windows or workload rates
// compare.
type QuantitySummary struct {
	Name, Unit string
	Stats
	// Per names the quantities it scales with; Normalised is it divided
	// by their product, over the repetitions that measured them all (a
	// zero divisor leaves a repetition out), in NormalisedUnit.
	Per            []string
	NormalisedUnit string
	Normalised     Stats
}

// Stats are the median and range of some values, N of them.
type Stats struct {
	N                int
	Median, Min, Max float64
}

func statsOf(vals []float64) Stats {
	if len(vals) == 0 {
		return Stats{}
	}
	v := slices.Clone(vals)
	sort.Float64s(v)
	mid := len(v) / 2
	med := v[mid]
	if len(v)%2 == 0 {
		med = (v[mid-1] + v[mid]) / 2
	}
	return Stats{N: len(v), Median: med, Min: v[0], Max: v[len(v)-1]}
}

// Text is "5 [4, 6] (3)": the median, the range and how many values.
func (s Stats) Text(unit string) string {
	if s.N == 0 {
		return "-"
	}
	u := ""
	if unit != "" {
		u = " " + unit
	}
	if s.N == 1 {
		return fmt.Sprintf("%s%s (1)", num(s.Median), u)
	}
	return fmt.Sprintf("%s%s [%s, %s] (%d)", num(s.Median), u, num(s.Min), num(s.Max), s.N)
}

// Text is "stretch: 5 s [4, 6] (3)", and where the quantity scales,
// "appends-lost: 12 appends [6, 20] (3); per overlap × append-rate: 2
// appends/(s × appends/s) [1.5, 2] (3)".
func (q QuantitySummary) Text() string {
	s := q.Name + ": " + q.Stats.Text(q.Unit)
	if len(q.Per) > 0 {
		s += fmt.Sprintf("; per %s: %s", strings.Join(q.Per, " × "), q.Normalised.Text(q.NormalisedUnit))
	}
	return s
}

// QuantitiesText is every quantity's Text, joined; "-" when none.
func (r StabilityRow) QuantitiesText() string {
	var parts []string
	for _, q := range r.Quantities {
		parts = append(parts, q.Text())
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// OutcomeText is "VIOLATED every time", "PRESERVED every time", "flaky"
// or "not judged".
func (r StabilityRow) OutcomeText() string {
	switch o := r.Outcome(); o {
	case string(verdict.Violated), string(verdict.Preserved):
		return o + " every time"
	default:
		return o
	}
}

// RateText is "k/n = p% [lo%, hi%]", or "-" when nothing was judged.
func (r StabilityRow) RateText() string {
	if r.Rate.N() == 0 {
		return "-"
	}
	return r.Rate.String()
}

// Stability is a StabilityRow per scenario × arm × invariant of the runs,
// in the order verdict.Stabilities gives.
func Stability(runs []verdict.Run) []StabilityRow {
	type sample struct {
		vals, norm []float64
		unit       string
		per        []string
		normUnit   string
	}
	samples := map[verdict.StabilityKey]map[string]*sample{}
	for _, r := range runs {
		if !r.Counted() {
			continue
		}
		for _, j := range r.Judgements {
			if !j.Verdict.Counts() || len(j.Quantities) == 0 {
				continue
			}
			k := verdict.StabilityKey{Suite: r.Suite, Scenario: r.Scenario, Arm: r.Arm, Invariant: j.Invariant}
			if samples[k] == nil {
				samples[k] = map[string]*sample{}
			}
			for name, q := range j.Quantities {
				s := samples[k][name]
				if s == nil {
					s = &sample{unit: q.Unit, per: q.Per}
					samples[k][name] = s
				}
				s.vals = append(s.vals, q.Value)
				if v, unit, ok := normalised(q, j.Quantities); ok {
					s.norm, s.normUnit = append(s.norm, v), unit
				}
			}
		}
	}
	var out []StabilityRow
	for _, st := range verdict.Stabilities(runs) {
		row := StabilityRow{Stability: st}
		names := make([]string, 0, len(samples[st.StabilityKey]))
		for n := range samples[st.StabilityKey] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			s := samples[st.StabilityKey][n]
			q := QuantitySummary{Name: n, Unit: s.unit, Stats: statsOf(s.vals), Per: s.per}
			if len(s.per) > 0 {
				q.NormalisedUnit, q.Normalised = s.normUnit, statsOf(s.norm)
			}
			row.Quantities = append(row.Quantities, q)
		}
		out = append(out, row)
	}
	return out
}

// normalised is q divided by the product of the quantities it scales with,
// and its unit; false when it scales with none, or one of them is missing
// or zero.
func normalised(q verdict.Quantity, all map[string]verdict.Quantity) (float64, string, bool) {
	if len(q.Per) == 0 {
		return 0, "", false
	}
	v := q.Value
	var units []string
	for _, p := range q.Per {
		d, ok := all[p]
		if !ok || d.Value == 0 {
			return 0, "", false
		}
		v /= d.Value
		units = append(units, d.Unit)
	}
	unit := q.Unit + "/" + units[0]
	if len(units) > 1 {
		unit = q.Unit + "/(" + strings.Join(units, " × ") + ")"
	}
	return v, unit, true
}

// num is a value with four significant digits and no trailing zeros
// (whole from 1000).
func num(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// Pool is what a rate's counted verdicts pool: the runs of each scenario
// × arm that gave one.
type Pool struct {
	runs map[verdict.PairKey]map[int]bool
}

// Add counts a counted verdict of run (an index the caller keeps) of pair.
func (p *Pool) Add(pair verdict.PairKey, run int) {
	if p.runs == nil {
		p.runs = map[verdict.PairKey]map[int]bool{}
	}
	if p.runs[pair] == nil {
		p.runs[pair] = map[int]bool{}
	}
	p.runs[pair][run] = true
}

// Scenarios is how many scenario × arm pairs the verdicts come from.
func (p Pool) Scenarios() int { return len(p.runs) }

// PoolsRepetitions reports whether the verdicts pool the repetitions of
// several scenarios: more than one scenario, and of some of them more
// than one run. Such a count is not k successes in n trials of one thing
// (each scenario has a rate of its own, and its repetitions are trials
// of it), so it gets no interval: the stability table gives each
// scenario's with its own.
func (p Pool) PoolsRepetitions() bool {
	if len(p.runs) < 2 {
		return false
	}
	for _, runs := range p.runs {
		if len(runs) > 1 {
			return true
		}
	}
	return false
}

// PooledRateText is the rate as Rate.String gives it, or, where it pools
// the repetitions of several scenarios, its count and value without an
// interval, saying why.
func PooledRateText(r verdict.Rate, p Pool) string {
	if r.N() == 0 || !p.PoolsRepetitions() {
		return r.String()
	}
	v, _ := r.Value()
	return fmt.Sprintf("%d/%d = %.1f%% (%s)", r.Violated, r.N(), 100*v, PooledNote(p))
}

// PooledNote says what a rate without an interval pools.
func PooledNote(p Pool) string {
	return fmt.Sprintf("pools the repetitions of %d scenarios: no interval", p.Scenarios())
}

// FlakyText lists the flaky stabilities as "scenario invariant k/n",
// leaving out the scenario or the invariant where the caller's row names
// it already.
func FlakyText(flaky []verdict.Stability, withScenario, withInvariant bool) string {
	var parts []string
	for _, s := range flaky {
		var words []string
		if withScenario {
			words = append(words, s.Scenario)
		}
		if withInvariant {
			words = append(words, s.Invariant)
		}
		words = append(words, fmt.Sprintf("%d/%d", s.Rate.Violated, s.Rate.N()))
		parts = append(parts, strings.Join(words, " "))
	}
	return strings.Join(parts, ", ")
}
