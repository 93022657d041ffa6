package verdict

import (
	"fmt"
	"math"
)

// Rate is violated / (preserved + violated), always carried with its counts
// and a 95% Wilson score interval.
type Rate struct {
	Violated  int `json:"violated"`
	Preserved int `json:"preserved"`
	// Other counts the verdicts that do not count, by verdict.
	Other map[Verdict]int `json:"other,omitempty"`
}

// Add counts one verdict.
func (r *Rate) Add(v Verdict) {
	switch v {
	case Violated:
		r.Violated++
	case Preserved:
		r.Preserved++
	default:
		if r.Other == nil {
			r.Other = map[Verdict]int{}
		}
		r.Other[v]++
	}
}

// N is the number of verdicts that count.
func (r Rate) N() int { return r.Violated + r.Preserved }

// Value is the violation rate; ok is false when nothing counts.
func (r Rate) Value() (v float64, ok bool) {
	if r.N() == 0 {
		return 0, false
	}
	return float64(r.Violated) / float64(r.N()), true
}

// z95 is the two-sided 95% standard normal quantile.
const z95 = 1.959963984540054

// Wilson returns the 95% Wilson score interval of the rate; ok is false
// when nothing counts.
func (r Rate) Wilson() (lo, hi float64, ok bool) {
	return WilsonInterval(r.Violated, r.N(), z95)
}

// WilsonInterval is the Wilson score interval for k successes in n trials
// at normal quantile z.
func WilsonInterval(k, n int, z float64) (lo, hi float64, ok bool) {
	if n <= 0 || k < 0 || k > n {
		return 0, 0, false
	}
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	denom := 1 + z2/nf
	centre := (p + z2/(2*nf)) / denom
	half := z * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / denom
	lo, hi = centre-half, centre+half
	// Exact at the edges; rounding can leave a hair outside [0,1].
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return math.Max(0, lo), math.Min(1, hi), true
}

// String renders "k/n = p% [lo%, hi%]" or "0/0 (no counted verdicts)".
func (r Rate) String() string {
	v, ok := r.Value()
	if !ok {
		return "0/0 (no counted verdicts)"
	}
	lo, hi, _ := r.Wilson()
	return fmt.Sprintf("%d/%d = %.1f%% [%.1f%%, %.1f%%]", r.Violated, r.N(), 100*v, 100*lo, 100*hi)
}
