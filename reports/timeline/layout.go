package timeline

import (
	"math"
	"sort"
)

// StackItem is a label to stack: a leader at X, the text starting
// LeaderPad to its right, Width wide. Stacking puts each in the lowest
// row where its text runs into no other label and no leader passing
// through that row, and where its own leader, up from row 0, crosses no
// label below it.
type StackItem struct {
	X, Width float64
}

// LeaderPad is how far right of its leader a label starts, so that the
// leaders of labels stacked above pass beside it, not through it.
const LeaderPad = 4.0

// Stack assigns rows. Labels are placed right to left: every label
// already placed then starts right of the new one's leader, so that
// leader is never blocked, and every label finds a row.
func Stack(items []StackItem, gap float64) []int {
	type span struct {
		x0, x1 float64
		label  bool
	}
	var rows [][]span
	free := func(r int, x0, x1 float64, labelsOnly bool) bool {
		if r >= len(rows) {
			return true
		}
		for _, s := range rows[r] {
			if labelsOnly && !s.label {
				continue
			}
			if x0 < s.x1+gap && s.x0 < x1+gap {
				return false
			}
		}
		return true
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return items[order[a]].X > items[order[b]].X })
	out := make([]int, len(items))
	for _, i := range order {
		it := items[i]
		x0, x1 := it.X+LeaderPad, it.X+LeaderPad+it.Width
		lx0, lx1 := it.X-0.5, it.X+0.5
		r := 0
		for {
			ok := free(r, x0, x1, false)
			for below := 0; ok && below < r; below++ {
				ok = free(below, lx0, lx1, true)
			}
			if ok {
				break
			}
			r++
		}
		for len(rows) <= r {
			rows = append(rows, nil)
		}
		rows[r] = append(rows[r], span{x0, x1, true})
		for below := 0; below < r; below++ {
			rows[below] = append(rows[below], span{lx0, lx1, false})
		}
		out[i] = r
	}
	return out
}

// IntervalRows assigns rows to intervals [X0, X1] so that none in a row
// overlap (gap apart): first fit, left to right.
func IntervalRows(x0, x1 []float64, gap float64) []int {
	order := make([]int, len(x0))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return x0[order[a]] < x0[order[b]] })
	var ends []float64
	out := make([]int, len(x0))
	for _, i := range order {
		r := 0
		for r < len(ends) && x0[i] < ends[r]+gap {
			r++
		}
		if r == len(ends) {
			ends = append(ends, 0)
		}
		ends[r] = x1[i]
		out[i] = r
	}
	return out
}

// axisSteps are the round steps of a time axis, in seconds.
var axisSteps = []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600}

// AxisStep is the smallest round step, in seconds, that cuts span seconds
// into fewer than n intervals; past an hour's step, span/n rounded up to
// a whole second.
func AxisStep(span float64, n int) float64 {
	for _, s := range axisSteps {
		if span/s < float64(n) {
			return s
		}
	}
	return math.Ceil(span / float64(n))
}
