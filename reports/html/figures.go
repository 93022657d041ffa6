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
// whose runs count nothing are drawn without a point and say so.
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
	p.X.Label.Text = "violation rate"
	p.X.Min, p.X.Max = 0, 1
	p.X.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		var ticks []plot.Tick
		for v := 0.0; v <= 1.0001; v += 0.25 {
			ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%.0f%%", 100*v)})
		}
		return ticks
	})
	showArm := t.ShowArm()
	names := make([]string, len(t.Rows))
	blue := color.RGBA{R: 30, G: 90, B: 200, A: 255}
	for i, r := range t.Rows {
		name := r.Key[len(r.Key)-1]
		if showArm {
			name += " (" + r.Key[0] + ")"
		}
		y := float64(i)
		v, ok := r.Tally.Rate.Value()
		if !ok {
			names[i] = name + " (nothing counted)"
			continue
		}
		names[i] = fmt.Sprintf("%s (%d/%d)", name, r.Tally.Violated, r.Tally.N())
		lo, hi, _ := r.Tally.Rate.Wilson()
		bar, err := plotter.NewLine(plotter.XYs{{X: lo, Y: y}, {X: hi, Y: y}})
		if err != nil {
			return nil, err
		}
		bar.Color, bar.Width = blue, vg.Points(4)
		pt, err := plotter.NewScatter(plotter.XYs{{X: v, Y: y}})
		if err != nil {
			return nil, err
		}
		pt.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
		p.Add(bar, pt)
	}
	if len(names) == 0 {
		names = []string{"no finding run counted"}
	}
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
