package timeline

import (
	"math"
	"math/rand"
	"testing"
)

// Stacked labels never run into each other, and no leader crosses a label
// below its own: labels at one x (the taints at +11 s, the deletions at
// +41 s) take a row each.
func TestStackKeepsLabelsApart(t *testing.T) {
	check := func(items []StackItem, rows []int) {
		t.Helper()
		for i, a := range items {
			for j, b := range items {
				if i == j {
					continue
				}
				ax0, ax1 := a.X+LeaderPad, a.X+LeaderPad+a.Width
				bx0, bx1 := b.X+LeaderPad, b.X+LeaderPad+b.Width
				if rows[i] == rows[j] && ax0 < bx1 && bx0 < ax1 {
					t.Fatalf("labels %d and %d share row %d and overlap: %+v %+v", i, j, rows[i], a, b)
				}
				if rows[j] < rows[i] && a.X >= bx0 && a.X <= bx1 {
					t.Fatalf("the leader of label %d (row %d, x %.1f) crosses label %d (row %d, %.1f to %.1f)", i, rows[i], a.X, j, rows[j], bx0, bx1)
				}
			}
		}
	}
	same := []StackItem{{X: 100, Width: 80}, {X: 100, Width: 120}, {X: 100, Width: 60}, {X: 100, Width: 90}}
	rows := Stack(same, 3)
	check(same, rows)
	seen := map[int]bool{}
	for _, r := range rows {
		seen[r] = true
	}
	if len(seen) != 4 {
		t.Errorf("four labels at one x got rows %v, want four rows", rows)
	}
	spread := []StackItem{{X: 10, Width: 30}, {X: 200, Width: 30}, {X: 400, Width: 30}}
	if rows := Stack(spread, 3); rows[0]+rows[1]+rows[2] != 0 {
		t.Errorf("labels with room got rows %v, want all on the first", rows)
	}
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 200; n++ {
		items := make([]StackItem, 1+rng.Intn(20))
		for i := range items {
			items[i] = StackItem{X: math.Round(rng.Float64() * 300), Width: 20 + rng.Float64()*200}
		}
		check(items, Stack(items, 3))
	}
}

func TestIntervalRows(t *testing.T) {
	x0, x1 := []float64{0, 5, 20, 6}, []float64{10, 30, 25, 8}
	rows := IntervalRows(x0, x1, 1)
	for i := range x0 {
		for j := range x0 {
			if i != j && rows[i] == rows[j] && x0[i] < x1[j]+1 && x0[j] < x1[i]+1 {
				t.Errorf("intervals %d and %d share row %d: %v", i, j, rows[i], rows)
			}
		}
	}
}
