//go:build browser

package report

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/browser"
	"github.com/faultline/faultline/reports/html"
	"github.com/faultline/faultline/suites/drills"
)

// The browser test of the pair's page: `go test -tags browser
// ./suites/drills/report/` with Debian's chromium installed. The recorded
// pair is rendered as `faultline report --format html` renders it and its
// page loaded in headless Chromium: no script error, nothing asked of the
// network, every lane of both arms drawn, the runtime's view of the
// window as the evidence has it, no two moment labels overlapping as the
// browser lays out the text, and the divergence drawn.

const pairLanes = `Array.from(document.querySelectorAll('#drill-pair-svg g.lane')).map(g => {
	const b = g.getBBox();
	const width = cls => Array.from(g.querySelectorAll('rect.' + cls)).reduce((w, r) => w + r.getBBox().width, 0);
	return {arm: g.dataset.arm, view: g.dataset.view, width: b.width, height: b.height,
		unreadable: width('unreadable'), running: width('pre-fault-running')};
})`

const pairLabels = `Array.from(document.querySelectorAll('#drill-pair-svg g.moment-labels')).map(g => ({
	arm: g.dataset.arm,
	boxes: Array.from(g.querySelectorAll('text.moment-label')).map(t => {
		const b = t.getBBox();
		return {key: t.dataset.key, x: b.x, y: b.y, w: b.width, h: b.height};
	}),
}))`

type drawnPairLane struct {
	Arm, View           string
	Width, Height       float64
	Unreadable, Running float64
}

type labelBox struct {
	Key        string
	X, Y, W, H float64
}

func TestPairPageInChromium(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "pair-fast")
	copyDir(t, "testdata/pair-fast", folder)
	site := filepath.Join(dir, "site")
	if err := html.WriteSite(site, []string{folder}, html.WithFolderPages(FolderPages)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := browser.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	url := "file://" + filepath.Join(site, html.FoldersDir, "pair-fast", PairPageFile)
	p, err := b.Open(ctx, url, 1400)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Errors) > 0 {
		t.Errorf("script errors: %v", p.Errors)
	}
	for _, r := range p.Requests {
		if r != url {
			t.Errorf("the page asks for %s", r)
		}
	}

	var lanes []drawnPairLane
	if err := p.Eval(ctx, pairLanes, &lanes); err != nil {
		t.Fatal(err)
	}
	got := map[string]drawnPairLane{}
	for _, l := range lanes {
		got[l.Arm+" "+l.View] = l
	}
	for _, arm := range []string{drills.IDKubeletStopped, drills.IDPowerOff} {
		for _, view := range []string{"moments", "timers", "api-pods", "runtime"} {
			l, ok := got[arm+" "+view]
			if !ok || l.Width < 100 || l.Height < 5 {
				t.Errorf("%s's %s lane is not drawn (%+v)", arm, view, l)
			}
		}
	}
	// With the kubelet stopped the runtime showed the pre-fault
	// containers running over the window and beyond; with the power off
	// it was unreadable over most of the window.
	c, e := recordedPair(t)
	ts := pairScale([]PairArm{c, e})
	window := func(a PairArm) float64 { return ts.x(a.HealStart.Sub(a.FaultAt)) - ts.x(0) }
	if l := got[drills.IDKubeletStopped+" runtime"]; l.Running < window(c) || l.Unreadable > 0 {
		t.Errorf("kubelet stopped: runtime lane running %.0f px, unreadable %.0f px; want running over the window's %.0f px", l.Running, l.Unreadable, window(c))
	}
	if l := got[drills.IDPowerOff+" runtime"]; l.Unreadable < 0.8*window(e) {
		t.Errorf("power off: runtime lane unreadable %.0f px, want most of the window's %.0f px", l.Unreadable, window(e))
	}

	var labels []struct {
		Arm   string
		Boxes []labelBox
	}
	if err := p.Eval(ctx, pairLabels, &labels); err != nil {
		t.Fatal(err)
	}
	if len(labels) != 2 {
		t.Fatalf("%d arms' labels drawn", len(labels))
	}
	for _, arm := range labels {
		if len(arm.Boxes) < 10 {
			t.Errorf("%s: %d moment labels drawn", arm.Arm, len(arm.Boxes))
		}
		for i, p := range arm.Boxes {
			if p.W < 10 || p.H < 5 {
				t.Errorf("%s: label %s is not drawn (%+v)", arm.Arm, p.Key, p)
			}
			for _, q := range arm.Boxes[i+1:] {
				if p.X < q.X+q.W && q.X < p.X+p.W && p.Y < q.Y+q.H && q.Y < p.Y+p.H {
					t.Errorf("%s: labels %s and %s overlap as drawn: %+v %+v", arm.Arm, p.Key, q.Key, p, q)
				}
			}
		}
	}
	// The drawing's own fills hold on the page: no rule of the site's
	// style restyles it (the run pages' timeline rules are theirs).
	var fills struct{ Unreadable, Running []string }
	if err := p.Eval(ctx, `({
		unreadable: Array.from(document.querySelectorAll('#drill-pair-svg g.lane rect.unreadable')).map(r => getComputedStyle(r).fill),
		running: Array.from(document.querySelectorAll('#drill-pair-svg g.lane rect.pre-fault-running')).map(r => getComputedStyle(r).fill),
	})`, &fills); err != nil {
		t.Fatal(err)
	}
	if len(fills.Unreadable) == 0 || len(fills.Running) == 0 {
		t.Errorf("fills %+v: want unreadable and running stretches", fills)
	}
	for _, f := range fills.Unreadable {
		if !strings.Contains(f, "#"+pairDrawingID+"-hatch") {
			t.Errorf("an unreadable stretch is filled %q, not hatched", f)
		}
	}
	for _, f := range fills.Running {
		if f != "rgb(89, 161, 79)" {
			t.Errorf("a stretch of running containers is filled %q, want the drawing's green", f)
		}
	}

	var divergence float64
	if err := p.Eval(ctx, `(() => { const l = document.querySelector('#drill-pair-svg line.divergence-line'); return l ? l.getBBox().height : 0; })()`, &divergence); err != nil {
		t.Fatal(err)
	}
	if divergence < 100 {
		t.Errorf("the divergence line is %.0f px tall, want it across both arms", divergence)
	}
}
