package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotPair draws both arms' moments on one time axis (seconds after the
// fault), one row per arm, each point labelled with its moment (the
// return's too, at their time after the fault), and where the divergence
// begins as a vertical line; path's extension picks the format
// (.png or .svg).
func PlotPair(c, e PairArm, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Power off (6.C1) against kubelet stopped (6.C2), timer profile %s", c.Run.Lab.TimerProfile)
	p.X.Label.Text = "seconds after the fault"
	p.Y.Min, p.Y.Max = 0, 3
	p.NominalY("", "6.C2 kubelet stopped", "6.C1 power off", "")
	colors := []color.Color{color.RGBA{R: 30, G: 90, B: 200, A: 255}, color.RGBA{R: 200, G: 50, B: 30, A: 255}}
	for i, a := range []PairArm{c, e} {
		var xys plotter.XYs
		var labels []string
		for _, m := range append(append([]Moment{}, a.Moments...), a.Return...) {
			if !m.Seen {
				continue
			}
			xys = append(xys, plotter.XY{X: m.Offset.Seconds(), Y: float64(i + 1)})
			labels = append(labels, m.Key)
		}
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(i + 1)}, {X: xys[len(xys)-1].X, Y: float64(i + 1)}})
		if err != nil {
			return fmt.Errorf("plotting %s: %w", a.Run.RunID, err)
		}
		line.Color = colors[i]
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", a.Run.RunID, err)
		}
		sc.GlyphStyle.Color = colors[i]
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(3)
		// Alternate labels above and below the row so neighbours stay legible.
		var up, down plotter.XYLabels
		for j, xy := range xys {
			if j%2 == 0 {
				up.XYs = append(up.XYs, plotter.XY{X: xy.X, Y: xy.Y + 0.12})
				up.Labels = append(up.Labels, labels[j])
			} else {
				down.XYs = append(down.XYs, plotter.XY{X: xy.X, Y: xy.Y - 0.22})
				down.Labels = append(down.Labels, labels[j])
			}
		}
		p.Add(line, sc)
		for _, set := range []plotter.XYLabels{up, down} {
			if len(set.XYs) == 0 {
				continue
			}
			ls, err := plotter.NewLabels(set)
			if err != nil {
				return fmt.Errorf("plotting %s: %w", a.Run.RunID, err)
			}
			for k := range ls.TextStyle {
				ls.TextStyle[k].Rotation = 0.5
				ls.TextStyle[k].Font.Size = vg.Points(7)
			}
			p.Add(ls)
		}
	}
	if d, ok := Diverge(c, e); ok {
		v, err := plotter.NewLine(plotter.XYs{{X: d.At.Seconds(), Y: 0.3}, {X: d.At.Seconds(), Y: 2.7}})
		if err != nil {
			return err
		}
		v.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(v)
		p.Legend.Add("divergence: "+d.Label, v)
		p.Legend.Top = true
	}
	p.Add(plotter.NewGrid())
	if err := p.Save(30*vg.Centimeter, 12*vg.Centimeter, path); err != nil {
		return fmt.Errorf("saving the plot %s: %w", path, err)
	}
	return nil
}
