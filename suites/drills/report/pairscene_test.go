package report

import (
	"math"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/reports/timeline"
	"github.com/faultline/faultline/suites/drills"
)

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

func dataOf(d []timeline.Data, name string) string {
	for _, a := range d {
		if a.Name == name {
			return a.Value
		}
	}
	return ""
}

func groupsOf(s *timeline.Scene, class, arm, view string) []*timeline.Group {
	var out []*timeline.Group
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
				px0, py0, px1, py1 := p.Box()
				qx0, qy0, qx1, qy1 := q.Box()
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
}
