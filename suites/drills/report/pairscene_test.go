package report

import (
	"bytes"
	"image/png"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/suites/drills"
)

// Stacked labels never run into each other, and no leader crosses a label
// below its own: labels at one x (the taints at +11 s, the deletions at
// +41 s) take a row each.
func TestStackKeepsLabelsApart(t *testing.T) {
	check := func(items []stackItem, rows []int) {
		t.Helper()
		for i, a := range items {
			for j, b := range items {
				if i == j {
					continue
				}
				ax0, ax1 := a.X+leaderPad, a.X+leaderPad+a.Width
				bx0, bx1 := b.X+leaderPad, b.X+leaderPad+b.Width
				if rows[i] == rows[j] && ax0 < bx1 && bx0 < ax1 {
					t.Fatalf("labels %d and %d share row %d and overlap: %+v %+v", i, j, rows[i], a, b)
				}
				if rows[j] < rows[i] && a.X >= bx0 && a.X <= bx1 {
					t.Fatalf("the leader of label %d (row %d, x %.1f) crosses label %d (row %d, %.1f to %.1f)", i, rows[i], a.X, j, rows[j], bx0, bx1)
				}
			}
		}
	}
	same := []stackItem{{100, 80}, {100, 120}, {100, 60}, {100, 90}}
	rows := stack(same, 3)
	check(same, rows)
	seen := map[int]bool{}
	for _, r := range rows {
		seen[r] = true
	}
	if len(seen) != 4 {
		t.Errorf("four labels at one x got rows %v, want four rows", rows)
	}
	spread := []stackItem{{10, 30}, {200, 30}, {400, 30}}
	if rows := stack(spread, 3); rows[0]+rows[1]+rows[2] != 0 {
		t.Errorf("labels with room got rows %v, want all on the first", rows)
	}
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 200; n++ {
		items := make([]stackItem, 1+rng.Intn(20))
		for i := range items {
			items[i] = stackItem{X: math.Round(rng.Float64() * 300), Width: 20 + rng.Float64()*200}
		}
		check(items, stack(items, 3))
	}
}

func TestIntervalRows(t *testing.T) {
	x0, x1 := []float64{0, 5, 20, 6}, []float64{10, 30, 25, 8}
	rows := intervalRows(x0, x1, 1)
	for i := range x0 {
		for j := range x0 {
			if i != j && rows[i] == rows[j] && x0[i] < x1[j]+1 && x0[j] < x1[i]+1 {
				t.Errorf("intervals %d and %d share row %d: %v", i, j, rows[i], rows)
			}
		}
	}
}

func recordedPair(t *testing.T) (PairArm, PairArm) {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, "testdata/pair-fast", dir)
	runs, err := record.ReadRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	var c, e PairArm
	for _, r := range runs {
		a, err := analyse(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		switch r.Scenario {
		case drills.IDKubeletStopped:
			c = a
		case drills.IDPowerOff:
			e = a
		}
	}
	return c, e
}

func dataOf(d []dataAttr, name string) string {
	for _, a := range d {
		if a.Name == name {
			return a.Value
		}
	}
	return ""
}

func groupsOf(s *scene, class, arm, view string) []*group {
	var out []*group
	for _, g := range s.Groups {
		if g.Class == class && (arm == "" || dataOf(g.Data, "arm") == arm) && (view == "" || dataOf(g.Data, "view") == view) {
			out = append(out, g)
		}
	}
	return out
}

// The drawing of the recorded pair: in each arm no two moment labels
// overlap, the taints' and the deletions' labels (which coincide) each
// have a row; the runtime lane shows the pre-fault containers running
// through the window with the kubelet stopped and the runtime unreadable
// with the power off; the divergence is the runtime view; the timers are
// named with their values.
func TestPairSceneOnRecordedRuns(t *testing.T) {
	c, e := recordedPair(t)
	s := pairScene(c, e)
	ts := pairScale([]PairArm{c, e})
	for _, a := range []PairArm{c, e} {
		id := a.Run.Scenario
		labels := groupsOf(s, "moment-labels", id, "")
		if len(labels) != 1 {
			t.Fatalf("%s: %d label groups", id, len(labels))
		}
		texts := labels[0].Texts
		seen := 0
		for _, m := range append(append([]Moment{}, a.Moments...), a.Return...) {
			if m.Seen {
				seen++
			}
		}
		if len(texts) != seen {
			t.Errorf("%s: %d labels for %d moments seen", id, len(texts), seen)
		}
		for i, p := range texts {
			for j, q := range texts {
				px0, py0, px1, py1 := p.box()
				qx0, qy0, qx1, qy1 := q.box()
				if i < j && px0 < qx1 && qx0 < px1 && py0 < qy1 && qy0 < py1 {
					t.Errorf("%s: labels %q and %q overlap", id, p.Text, q.Text)
				}
			}
		}
		rowOf := map[string]string{}
		for _, tx := range texts {
			rowOf[dataOf(tx.Data, "key")] = dataOf(tx.Data, "row")
		}
		for _, group := range [][]string{{"unreachable-noschedule", "unreachable-noexecute"}, {"web-deletion", "orphan-deletion", "replacement-created"}} {
			rows := map[string]bool{}
			for _, k := range group {
				rows[rowOf[k]] = true
			}
			if len(rows) != len(group) {
				t.Errorf("%s: coinciding moments %v share rows %v", id, group, rowOf)
			}
		}

		// The runtime lane within the window, from its first window read.
		lanes := groupsOf(s, "lane", id, "runtime")
		if len(lanes) != 1 {
			t.Fatalf("%s: %d runtime lanes", id, len(lanes))
		}
		from, to := ts.x(a.Runtime.FirstReadAt.Sub(a.FaultAt)), ts.x(a.HealStart.Sub(a.FaultAt))
		states := map[string]float64{}
		for _, r := range lanes[0].Rects {
			lo, hi := math.Max(r.X, from), math.Min(r.X+r.W, to)
			if hi > lo {
				states[r.Class] += hi - lo
			}
		}
		want := RuntimeOldRunning
		if id == drills.IDPowerOff {
			want = Unreadable
		}
		if states[want] < 0.99*(to-from) {
			t.Errorf("%s: the runtime lane over the window is %v, want all %s (%.0f pt)", id, states, want, to-from)
		}
		if pods := groupsOf(s, "lane", id, "api-pods"); len(pods) != 1 || len(pods[0].Rects) < 2 {
			t.Errorf("%s: the API's pod lane is not drawn with its change to pods marked for deletion", id)
		}

		var timers []string
		for _, g := range groupsOf(s, "lane", id, "timers") {
			for _, tx := range g.Texts {
				timers = append(timers, tx.Text)
			}
		}
		joined := strings.Join(timers, "\n")
		for _, want := range []string{"node-monitor-grace-period = 12s", "toleration = 30s", "node-monitor-period = 1s"} {
			if !strings.Contains(joined, want) {
				t.Errorf("%s: no timer %q among %v", id, want, timers)
			}
		}
	}
	div := groupsOf(s, "divergence", "", "")
	if len(div) != 1 || dataOf(div[0].Data, "key") != DivergenceRuntime || len(div[0].Rects) != 2 {
		t.Errorf("the divergence is not drawn as the runtime view, outlined in both arms")
	}
	for _, g := range s.Groups {
		for _, tx := range g.Texts {
			if tx.X+tx.Width > s.W {
				t.Errorf("%q runs past the drawing's right edge", tx.Text)
			}
		}
	}

	// Both renderings: the SVG is one svg element, the PNG the scene's
	// size at 1.5 pixels a point.
	svg, err := s.SVG("x")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(svg), `<svg id="x"`) || strings.Count(string(svg), "<svg") != 1 || !strings.Contains(string(svg), `url(#x-hatch)`) {
		t.Errorf("the SVG is not one svg element using its own hatch")
	}
	var b bytes.Buffer
	if err := s.WritePNG(&b); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); math.Abs(float64(w)-s.W*pngDPI/72) > 2 {
		t.Errorf("the PNG is %d px wide, want %.0f", w, s.W*pngDPI/72)
	}
}

func TestHatchLinesStayInTheRectangle(t *testing.T) {
	for _, l := range hatchLines(10, 20, 30, 8, 5) {
		for _, p := range [][2]float64{{l[0], l[1]}, {l[2], l[3]}} {
			if p[0] < 10-1e-9 || p[0] > 40+1e-9 || p[1] < 20-1e-9 || p[1] > 28+1e-9 {
				t.Fatalf("hatch line %v leaves the rectangle", l)
			}
		}
	}
}
