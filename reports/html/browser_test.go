//go:build browser

package html

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/internal/browser"
)

// The browser test: `go test -tags browser ./reports/html/` with Debian's
// chromium installed. It renders a run folder built here (and, with
// FAULTLINE_BROWSER_RUN=<run folder>, that folder too), loads every page
// in headless Chromium and checks that it raises no script error, asks
// nothing of the network, that the index draws both rate plots, that the
// timeline has a drawn lane for every source and question the run's
// evidence asked, and that porcupine's drawing of a register writer's
// history runs its script and draws every operation.

// laneInfo is what the browser drew for each lane: its source, question
// and the size of its box.
const laneInfo = `Array.from(document.querySelectorAll('#timeline-svg g.lane')).map(g => {
	const b = g.getBBox();
	return {source: g.dataset.source, question: g.dataset.question, width: b.width, height: b.height,
		unreadable: Array.from(g.querySelectorAll('rect.unreadable')).reduce((w, r) => w + r.getBBox().width, 0),
		fills: Array.from(g.querySelectorAll('rect.unreadable')).map(r => getComputedStyle(r).fill)};
})`

type drawnLane struct {
	Source, Question string
	Width, Height    float64
	Unreadable       float64
	Fills            []string
}

func TestPagesInChromium(t *testing.T) {
	folders := []string{runFolder(t), writerFolder(t, map[string][]evidence.RegisterOp{"linearizable": writerOps(6, false), "stale": writerOps(6, true)}), repeatedFolder(t)}
	if d := os.Getenv("FAULTLINE_BROWSER_RUN"); d != "" {
		folders = append(folders, d)
	}
	site := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	b, err := browser.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i, folder := range folders {
		dir := filepath.Join(site, strings.Repeat("x", i+1))
		if err := WriteSite(dir, []string{folder}); err != nil {
			t.Fatal(err)
		}
		load := func(page string) *browser.Page {
			t.Helper()
			url := "file://" + filepath.Join(dir, page)
			p, err := b.Open(ctx, url, 1300)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Errors) > 0 {
				t.Errorf("%s: script errors: %v", page, p.Errors)
			}
			for _, r := range p.Requests {
				if r != url {
					t.Errorf("%s asks for %s", page, r)
				}
			}
			return p
		}
		index := load(IndexFile)
		var links []string
		if err := index.Eval(ctx, `Array.from(document.querySelectorAll('#run-table a')).map(a => a.getAttribute('href'))`, &links); err != nil {
			t.Fatal(err)
		}
		runs, err := record.ReadRuns(folder)
		if err != nil {
			t.Fatal(err)
		}
		// The rate plots, inline: by invariant and by scenario, and over
		// repeated runs the stability plot.
		var plots []float64
		if err := index.Eval(ctx, `Array.from(document.querySelectorAll('figure.rate-plot svg')).map(s => s.getBoundingClientRect().width)`, &plots); err != nil {
			t.Fatal(err)
		}
		wantPlots := 2
		if verdict.Repeated(runs) {
			wantPlots = 3
			checkStabilityInChromium(ctx, t, index, load)
		}
		if len(plots) != wantPlots || slices.ContainsFunc(plots, func(w float64) bool { return w < 100 }) {
			t.Errorf("%s: rate plots drawn %v, want %d", IndexFile, plots, wantPlots)
		}
		if len(links) != len(runs) {
			t.Errorf("%s: index links %d runs, the folder holds %d", folder, len(links), len(runs))
		}
		for _, r := range runs {
			href := RunsDir + "/" + record.SafeName(filepath.Base(folder)) + "--" + record.SafeName(r.RunID) + ".html"
			p := load(href)
			var lanes []drawnLane
			if err := p.Eval(ctx, laneInfo, &lanes); err != nil {
				t.Fatal(err)
			}
			rec, err := record.ReadEvidence(folder, r.RunID)
			if err != nil {
				if len(lanes) != 0 {
					t.Errorf("%s: lanes drawn without evidence", href)
				}
				continue
			}
			want := askedPairs(rec)
			var got []string
			for _, l := range lanes {
				got = append(got, l.Source+" "+l.Question)
				if l.Width < 1 || l.Height < 1 {
					t.Errorf("%s: lane %s %s is not drawn (box %.0f×%.0f)", href, l.Source, l.Question, l.Width, l.Height)
				}
				for _, f := range l.Fills {
					if !strings.Contains(f, "#timeline-svg-hatch") {
						t.Errorf("%s: lane %s %s has an unreadable stretch filled %q, not hatched", href, l.Source, l.Question, f)
					}
				}
				if rec.Window != nil && l.Unreadable > 0 && l.Unreadable > l.Width {
					t.Errorf("%s: lane %s %s shades more than its width", href, l.Source, l.Question)
				}
			}
			// porcupine's drawing of the register writer's history, where
			// the run has one: its own script runs without error and draws
			// a box per operation.
			var register string
			if err := p.Eval(ctx, `(() => { const a = document.querySelector('#register-link'); return a ? a.getAttribute('href') : ''; })()`, &register); err != nil {
				t.Fatal(err)
			}
			if register != "" {
				rp := load(RunsDir + "/" + register)
				var boxes int
				if err := rp.Eval(ctx, `document.querySelectorAll('#canvas svg rect').length`, &boxes); err != nil {
					t.Fatal(err)
				}
				if ops := len(writerOps(6, r.RunID == "stale")); boxes < ops {
					t.Errorf("%s: porcupine drew %d boxes for %d operations", register, boxes, ops)
				}
			} else if r.Suite == "splitbrain" {
				t.Errorf("%s: no link to the writer's history", href)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: lanes drawn\n%s\nwant one per source and question asked\n%s", href, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if r.RunID == "frozen-fault-1" {
				// The runtime unreadable over the window: 10 of the 24 s
				// the lane spans.
				for _, l := range lanes {
					if l.Source == "cri/worker1" && (l.Unreadable < 0.3*l.Width || l.Unreadable > 0.5*l.Width) {
						t.Errorf("cri/worker1 lane shades %.0f of %.0f px, want the window's share", l.Unreadable, l.Width)
					}
				}
			}
		}
	}
}

// checkStabilityInChromium loads the index's stability tables and every
// scenario's stability page: each table row of the index drawn with its
// interval where something was judged, a flaky verdict's cell in the
// flaky colour, and every grid cell of a page a link to a run page that
// loads.
func checkStabilityInChromium(ctx context.Context, t *testing.T, index *browser.Page, load func(string) *browser.Page) {
	t.Helper()
	var rows []struct {
		Href, Outcome string
		Bar, Judged   bool
		Fill          string
	}
	if err := index.Eval(ctx, `Array.from(document.querySelectorAll('#stability table.stability tr[data-outcome]')).map(tr => ({
		href: tr.querySelector('a.stability-link').getAttribute('href'), outcome: tr.dataset.outcome,
		bar: !!tr.querySelector('rect.interval'), judged: tr.dataset.outcome !== 'not judged',
		fill: getComputedStyle(tr.querySelector('td.flaky, td[class^="v-"]')).backgroundColor}))`, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("the index's stability tables have no row")
	}
	pages := map[string]bool{}
	for _, r := range rows {
		pages[r.Href] = true
		if r.Bar != r.Judged {
			t.Errorf("stability row of %s (%s): interval drawn %v", r.Href, r.Outcome, r.Bar)
		}
		if r.Outcome == "flaky" && r.Fill != "rgb(253, 224, 184)" {
			t.Errorf("a flaky row's verdict is drawn in %s, not the flaky colour", r.Fill)
		}
	}
	for href := range pages {
		p := load(href)
		var cells []struct {
			Href  string
			Width float64
		}
		if err := p.Eval(ctx, `Array.from(document.querySelectorAll('table.grid td.cell a')).map(a => ({href: a.getAttribute('href'), width: a.getBoundingClientRect().width}))`, &cells); err != nil {
			t.Fatal(err)
		}
		if len(cells) == 0 {
			t.Errorf("%s: no verdict cell", href)
		}
		runPages := map[string]bool{}
		for _, c := range cells {
			if c.Width < 1 {
				t.Errorf("%s: a cell linking %s is not drawn", href, c.Href)
			}
			runPages[path.Join(path.Dir(href), c.Href)] = true
		}
		for rp := range runPages {
			load(rp)
		}
	}
}

// askedPairs are "source question" for every pair some snapshot of the
// record asked, sorted as the page sorts its lanes.
func askedPairs(rec evidence.Record) []string {
	seen := map[string]bool{}
	for _, s := range orderedSnapshots(rec) {
		for src, qs := range s.snap.Answers {
			for q, a := range qs {
				if a.State != evidence.NotAsked {
					seen[string(src)+" "+string(q)] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
