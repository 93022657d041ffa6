package html

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"slices"

	"gonum.org/v1/plot"

	"github.com/faultline/faultline/reports/aggregate"
)

// addFigures adds the paper's figures and tables to the site: the
// findings' rate per invariant and per scenario, each with its Wilson
// interval (SVG and PNG), and the rate tables as LaTeX and CSV. It returns
// the plots' SVG for the index to show inline.
func addFigures(site *Site, rep *aggregate.Report) ([]figure, error) {
	var tex, csv bytes.Buffer
	if err := aggregate.WriteLaTeX(&tex, rep); err != nil {
		return nil, fmt.Errorf("html report: %s: %w", RatesTeXFile, err)
	}
	if err := aggregate.WriteCSV(&csv, rep); err != nil {
		return nil, fmt.Errorf("html report: %s: %w", RatesCSVFile, err)
	}
	site.Files[RatesTeXFile], site.Files[RatesCSVFile] = tex.Bytes(), csv.Bytes()
	var figs []figure
	for _, p := range ratePlots {
		for _, f := range []struct{ name, format string }{{p.svg, "svg"}, {p.png, "png"}} {
			b, err := RatePlot(rep, p.by, f.format)
			if err != nil {
				return nil, fmt.Errorf("html report: %s: %w", f.name, err)
			}
			site.Files[f.name] = b
		}
		figs = append(figs, figure{By: p.by, SVG: inlineSVG(site.Files[p.svg]), Files: []string{p.svg, p.png}})
	}
	return figs, nil
}

// ratePlots are the rate figures a site holds: by invariant, by scenario.
var ratePlots = []struct{ by, svg, png string }{
	{aggregate.ByInvariant, RatesSVGFile, RatesPNGFile},
	{aggregate.ByScenario, ScenarioRatesSVGFile, ScenarioRatesPNGFile},
}

// figure is one rate plot as the index shows it.
type figure struct {
	By    string
	SVG   template.HTML
	Files []string
}

// inlineSVG is an SVG file's svg element, for a page to hold: the file's
// XML declaration and comments go.
func inlineSVG(b []byte) template.HTML {
	if i := bytes.Index(b, []byte("<svg")); i >= 0 {
		b = b[i:]
	}
	return template.HTML(b)
}

// findingsTable is the findings table by dimension by alone (beside the
// arm).
func findingsTable(rep *aggregate.Report, by string) (aggregate.Table, bool) {
	for _, t := range rep.Findings {
		if slices.Equal(t.Columns, []string{aggregate.ByArm, by}) {
			return t, true
		}
	}
	return aggregate.Table{}, false
}

// RatePlot draws the findings' violation rate per invariant or per
// scenario (by is aggregate.ByInvariant or aggregate.ByScenario), each
// with its 95% Wilson interval as a horizontal bar, in format "svg" or
// "png". A scenario's rate pools the verdicts of its invariants. Rows
// whose runs count nothing are drawn without a point and say so; a rate
// that pools the repetitions of several scenarios is drawn as a point
// without an interval and says so (each scenario's own is in the
// stability plot).
func RatePlot(rep *aggregate.Report, by, format string) ([]byte, error) {
	t, _ := findingsTable(rep, by)
	p := plot.New()
	switch by {
	case aggregate.ByInvariant:
		p.Title.Text = "Violation rate per invariant (findings; 95% Wilson interval)"
	case aggregate.ByScenario:
		p.Title.Text = "Violation rate per scenario, over its invariants (findings; 95% Wilson interval)"
	default:
		return nil, fmt.Errorf("rate plot by %q: give %s or %s", by, aggregate.ByInvariant, aggregate.ByScenario)
	}
	rateAxis(p)
	showArm := t.ShowArm()
	names := make([]string, len(t.Rows))
	blue := color.RGBA{R: 30, G: 90, B: 200, A: 255}
	for i, r := range t.Rows {
		name := r.Key[len(r.Key)-1]
		if showArm {
			name += " (" + r.Key[0] + ")"
		}
		v, ok := r.Tally.Rate.Value()
		if !ok {
			names[i] = name + " (nothing counted)"
			continue
		}
		pooled := r.Pool.PoolsRepetitions()
		if pooled {
			names[i] = fmt.Sprintf("%s (%d/%d, pooled over %d scenarios: no interval)", name, r.Tally.Violated, r.Tally.N(), r.Pool.Scenarios())
		} else {
			names[i] = fmt.Sprintf("%s (%d/%d)", name, r.Tally.Violated, r.Tally.N())
		}
		lo, hi, _ := r.Tally.Rate.Wilson()
		if err := addInterval(p, float64(i), v, lo, hi, blue, !pooled); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		names = []string{"no finding run counted"}
	}
	return drawNominal(p, names, format)
}
