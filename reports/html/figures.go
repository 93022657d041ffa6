package html

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/faultline/faultline/reports/aggregate"
)

// addFigures adds the paper's figures and tables to the site: the
// findings' rate per invariant with its Wilson interval (SVG and PNG), and
// the rate tables as LaTeX and CSV.
func addFigures(site *Site, rep *aggregate.Report) error {
	var tex, csv bytes.Buffer
	if err := aggregate.WriteLaTeX(&tex, rep); err != nil {
		return fmt.Errorf("html report: %s: %w", RatesTeXFile, err)
	}
	if err := aggregate.WriteCSV(&csv, rep); err != nil {
		return fmt.Errorf("html report: %s: %w", RatesCSVFile, err)
	}
	site.Files[RatesTeXFile], site.Files[RatesCSVFile] = tex.Bytes(), csv.Bytes()
	for _, f := range []struct{ name, format string }{{RatesSVGFile, "svg"}, {RatesPNGFile, "png"}} {
		b, err := RatePlot(rep, f.format)
		if err != nil {
			return fmt.Errorf("html report: %s: %w", f.name, err)
		}
		site.Files[f.name] = b
	}
	return nil
}

// invariantTable is the findings table by invariant alone.
func invariantTable(rep *aggregate.Report) (aggregate.Table, bool) {
	for _, t := range rep.Findings {
		if slices.Equal(t.Columns, []string{aggregate.ByArm, aggregate.ByInvariant}) {
			return t, true
		}
	}
	return aggregate.Table{}, false
}

// RatePlot draws the findings' violation rate per invariant, each with its
// 95% Wilson interval as a horizontal bar, in format "svg" or "png". Rows
// whose runs count nothing are drawn without a point and say so.
func RatePlot(rep *aggregate.Report, format string) ([]byte, error) {
	t, _ := invariantTable(rep)
	p := plot.New()
	p.Title.Text = "Violation rate per invariant (findings; 95% Wilson interval)"
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
