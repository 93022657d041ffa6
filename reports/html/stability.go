package html

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/reports/aggregate"
)

// Files of a site over repeated runs.
const (
	// StabilityDir holds a page per scenario: its runs as rows, its
	// invariants as columns.
	StabilityDir = "stability"
	// The findings' rate per scenario × invariant over its repetitions.
	StabilitySVGFile = "stability.svg"
	StabilityPNGFile = "stability.png"
)

// stabilityHref is the page of a suite's scenario, from the site's root.
func stabilityHref(suite, scenario string) string {
	return StabilityDir + "/" + record.SafeName(suite) + "--" + record.SafeName(scenario) + ".html"
}

// stabilityView is one scenario's page: a grid per arm.
type stabilityView struct {
	Style           template.CSS
	Suite, Scenario string
	Title           string
	Arms            []armGrid
}

// armGrid is the runs of one scenario × arm as rows and its invariants as
// columns, each cell the run's verdict of the invariant linked to the
// run's page, and under them each invariant over the runs.
type armGrid struct {
	Arm, Role  string
	Invariants []string
	Rows       []gridRow
	Summary    []gridSummary
}

type gridRow struct {
	Repetition int
	RunID      string
	Href       string
	RunVerdict verdict.RunVerdict
	RunReason  string
	Cells      []gridCell
}

type gridCell struct {
	// Verdict is "" where the run records no verdict of the invariant.
	Verdict verdict.Verdict
	// Counted: the run was JUDGED, so the verdict counts if it is
	// PRESERVED or VIOLATED.
	Counted bool
	Reason  string
	Href    string
}

type gridSummary struct {
	reports.StabilityRow
	Bar *wilsonBar
}

// addStabilityPages adds a page per scenario of the runs, and returns
// the index's stability rows with their pages' links.
func addStabilityPages(site *Site, rep *aggregate.Report, runs []runPage) ([]stabilityIndexRow, error) {
	type scenarioKey struct{ suite, scenario string }
	var order []scenarioKey
	views := map[scenarioKey]*stabilityView{}
	grids := map[verdict.PairKey]*armGrid{}
	for _, rp := range runs {
		k := scenarioKey{rp.Suite, rp.Scenario}
		v := views[k]
		if v == nil {
			v = &stabilityView{Style: style, Suite: rp.Suite, Scenario: rp.Scenario, Title: rp.Title}
			views[k] = v
			order = append(order, k)
		}
		pair := verdict.PairOf(rp.Run)
		g := grids[pair]
		if g == nil {
			v.Arms = append(v.Arms, armGrid{Arm: rp.Arm, Role: rp.RunRole()})
			g = &v.Arms[len(v.Arms)-1]
			grids[pair] = g
		}
		for _, j := range rp.Judgements {
			if !slices.Contains(g.Invariants, j.Invariant) {
				g.Invariants = append(g.Invariants, j.Invariant)
			}
		}
	}
	// The grids' addresses are fixed only once every arm is appended.
	grids = map[verdict.PairKey]*armGrid{}
	for _, k := range order {
		v := views[k]
		for i := range v.Arms {
			grids[verdict.PairKey{Suite: k.suite, Scenario: k.scenario, Arm: v.Arms[i].Arm}] = &v.Arms[i]
		}
	}
	for _, rp := range runs {
		g := grids[verdict.PairOf(rp.Run)]
		row := gridRow{Repetition: rp.RepetitionNumber(), RunID: rp.RunID, Href: "../" + rp.Href, RunVerdict: rp.RunVerdict, RunReason: rp.RunReason}
		for _, inv := range g.Invariants {
			c := gridCell{Counted: rp.Counted(), Href: row.Href}
			for _, j := range rp.Judgements {
				if j.Invariant == inv {
					c.Verdict, c.Reason = j.Verdict, j.Reason
				}
			}
			row.Cells = append(row.Cells, c)
		}
		g.Rows = append(g.Rows, row)
	}
	byKey := map[verdict.StabilityKey]reports.StabilityRow{}
	for _, s := range rep.Stability {
		byKey[s.StabilityKey] = s
	}
	var index []stabilityIndexRow
	for _, k := range order {
		v := views[k]
		href := stabilityHref(k.suite, k.scenario)
		for i := range v.Arms {
			g := &v.Arms[i]
			for _, inv := range g.Invariants {
				s := byKey[verdict.StabilityKey{Suite: k.suite, Scenario: k.scenario, Arm: g.Arm, Invariant: inv}]
				g.Summary = append(g.Summary, gridSummary{StabilityRow: s, Bar: newBar(s.Rate)})
				index = append(index, stabilityIndexRow{StabilityRow: s, Href: href, Bar: newBar(s.Rate)})
			}
		}
		var b bytes.Buffer
		if err := pages.ExecuteTemplate(&b, "stability.tmpl", v); err != nil {
			return nil, fmt.Errorf("html report: rendering the stability of %s: %w", k.scenario, err)
		}
		site.Files[href] = b.Bytes()
	}
	return index, nil
}

// stabilityIndexRow is a scenario × arm × invariant as the index lists it.
type stabilityIndexRow struct {
	reports.StabilityRow
	Href string
	Bar  *wilsonBar
}

// stabilityTable is the index's stability rows of one role.
type stabilityTable struct {
	Role, Title string
	Rows        []stabilityIndexRow
}

func stabilityTables(rows []stabilityIndexRow) []stabilityTable {
	var out []stabilityTable
	for _, role := range []stabilityTable{{Role: verdict.RoleFinding, Title: "Findings"}, {Role: verdict.RoleControl, Title: "Positive controls (expected VIOLATED every time)"}, {Role: verdict.RoleApplication, Title: "Application controls (nothing expected)"}, {Role: verdict.RoleNull, Title: "Null arms (expected PRESERVED every time)"}} {
		for _, r := range rows {
			if r.Role == role.Role {
				role.Rows = append(role.Rows, r)
			}
		}
		if len(role.Rows) > 0 {
			out = append(out, role)
		}
	}
	return out
}

// addStabilityPlot adds the findings' stability plot (SVG and PNG) and
// returns it for the index to show inline.
func addStabilityPlot(site *Site, rep *aggregate.Report) (figure, error) {
	for _, f := range []struct{ name, format string }{{StabilitySVGFile, "svg"}, {StabilityPNGFile, "png"}} {
		b, err := StabilityPlot(rep.Stability, f.format)
		if err != nil {
			return figure{}, fmt.Errorf("html report: %s: %w", f.name, err)
		}
		site.Files[f.name] = b
	}
	return figure{By: "scenario, invariant", SVG: inlineSVG(site.Files[StabilitySVGFile]), Files: []string{StabilitySVGFile, StabilityPNGFile}}, nil
}

// StabilityPlot draws the findings' violation rate per scenario ×
// invariant over its repetitions, each with the 95% Wilson interval of
// that scenario's rate as a horizontal bar (its repetitions are trials of
// one experiment), a flaky one (VIOLATED in some judged repetitions,
// PRESERVED in others) in orange and named so, in format "svg" or "png".
// Rows judged in no repetition are drawn without a point and say so.
func StabilityPlot(rows []reports.StabilityRow, format string) ([]byte, error) {
	p := plot.New()
	p.Title.Text = "Violation rate per scenario × invariant over its repetitions (findings; 95% Wilson)"
	rateAxis(p)
	blue := color.RGBA{R: 30, G: 90, B: 200, A: 255}
	orange := color.RGBA{R: 230, G: 120, B: 0, A: 255}
	var names []string
	for _, r := range rows {
		if r.Role != verdict.RoleFinding {
			continue
		}
		y := float64(len(names))
		name := r.Scenario + " · " + r.Invariant
		v, ok := r.Rate.Value()
		if !ok {
			names = append(names, name+" (judged in no repetition)")
			continue
		}
		name += fmt.Sprintf(" (%d/%d)", r.Rate.Violated, r.Rate.N())
		c := blue
		if r.Flaky() {
			name += " flaky"
			c = orange
		}
		names = append(names, name)
		lo, hi, _ := r.Rate.Wilson()
		if err := addInterval(p, y, v, lo, hi, c, true); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		names = []string{"no finding run"}
	}
	return drawNominal(p, names, format)
}

// rateAxis is the x axis of a rate plot: 0–100% in quarters, with a
// margin either side so that a point at 0% or 100% stays clear of the
// labels and the frame.
func rateAxis(p *plot.Plot) {
	p.X.Label.Text = "violation rate"
	p.X.Min, p.X.Max = -0.03, 1.03
	p.X.Tick.Marker = percentTicks
}

// percentTicks marks 0–100% in quarters.
var percentTicks = plot.TickerFunc(func(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for v := 0.0; v <= 1.0001; v += 0.25 {
		ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%.0f%%", 100*v)})
	}
	return ticks
})

// addInterval draws a rate at row y as a point, with its interval [lo, hi]
// as a bar in colour c when withInterval.
func addInterval(p *plot.Plot, y, v, lo, hi float64, c color.Color, withInterval bool) error {
	if withInterval {
		bar, err := plotter.NewLine(plotter.XYs{{X: lo, Y: y}, {X: hi, Y: y}})
		if err != nil {
			return err
		}
		bar.Color, bar.Width = c, vg.Points(4)
		p.Add(bar)
	}
	pt, err := plotter.NewScatter(plotter.XYs{{X: v, Y: y}})
	if err != nil {
		return err
	}
	pt.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
	p.Add(pt)
	return nil
}

// drawNominal names the rows on the y axis and writes the plot, its
// height by the number of rows.
func drawNominal(p *plot.Plot, names []string, format string) ([]byte, error) {
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.7, float64(len(names))-0.3
	p.Add(plotter.NewGrid())
	h := vg.Length(2.5+0.7*float64(len(names))) * vg.Centimeter
	wt, err := p.WriterTo(20*vg.Centimeter, h, format)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// stabilityLink is a run page's link to its scenario's stability page.
func stabilityLink(rp runPage) string {
	return "../" + stabilityHref(rp.Suite, rp.Scenario)
}
