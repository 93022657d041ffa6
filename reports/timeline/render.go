package timeline

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// svgFonts are the families the SVG asks for, the measured one first.
const svgFonts = "Liberation Sans, Arimo, Arial, Helvetica, sans-serif"

// num writes a coordinate to a tenth of a point.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// inScene is a group with the id of the drawing it is in, which names
// the drawing's hatch pattern.
type inScene struct {
	ID string
	G  *Group
}

var sceneSVG = template.Must(template.New("scene").Funcs(template.FuncMap{
	"n":       num,
	"inScene": func(id string, g *Group) inScene { return inScene{id, g} },
	"d": func(p Path) string {
		var b strings.Builder
		for i, pt := range p.Points {
			if i == 0 {
				b.WriteString("M")
			} else {
				b.WriteString(" L")
			}
			b.WriteString(num(pt[0]) + " " + num(pt[1]))
		}
		b.WriteString(" Z")
		return b.String()
	},
}).Parse(`{{define "data"}}{{range .}} data-{{.Name}}="{{.Value}}"{{end}}{{end}}` +
	`{{define "group"}}{{$id := .ID}}{{with .G}}<g{{with .Class}} class="{{.}}"{{end}}{{template "data" .Data}}>{{with .Title}}<title>{{.}}</title>{{end}}` +
	`{{range .Rects}}<rect{{with .Class}} class="{{.}}"{{end}}{{template "data" .Data}} x="{{n .X}}" y="{{n .Y}}" width="{{n .W}}" height="{{n .H}}" fill="{{if .Hatch}}url(#{{$id}}-hatch){{else if .Fill}}{{.Fill}}{{else}}none{{end}}"{{with .Stroke}} stroke="{{.}}" stroke-width="0.6"{{end}}>{{with .Title}}<title>{{.}}</title>{{end}}</rect>{{end}}` +
	`{{range .Lines}}<line{{with .Class}} class="{{.}}"{{end}}{{template "data" .Data}} x1="{{n .X1}}" y1="{{n .Y1}}" x2="{{n .X2}}" y2="{{n .Y2}}" stroke="{{.Stroke}}" stroke-width="{{n .Width}}"{{if .Dash}} stroke-dasharray="5 3"{{end}}>{{with .Title}}<title>{{.}}</title>{{end}}</line>{{end}}` +
	`{{range .Circles}}<circle{{with .Class}} class="{{.}}"{{end}}{{template "data" .Data}} cx="{{n .X}}" cy="{{n .Y}}" r="{{n .R}}" fill="{{.Fill}}"{{with .Stroke}} stroke="{{.}}" stroke-width="1.2"{{end}}>{{with .Title}}<title>{{.}}</title>{{end}}</circle>{{end}}` +
	`{{range .Paths}}<path{{with .Class}} class="{{.}}"{{end}} d="{{d .}}" fill="{{.Fill}}"{{with .Stroke}} stroke="{{.}}"{{end}}{{if .Width}} stroke-width="{{n .Width}}"{{end}}>{{with .Title}}<title>{{.}}</title>{{end}}</path>{{end}}` +
	`{{range .Texts}}<text{{with .Class}} class="{{.}}"{{end}}{{template "data" .Data}} x="{{n .X}}" y="{{n .Y}}" font-size="{{n .Size}}" text-anchor="{{.Anchor}}"{{with .Fill}} fill="{{.}}"{{end}}{{if .Bold}} font-weight="bold"{{end}}{{if .Width}} textLength="{{n .Width}}" lengthAdjust="spacingAndGlyphs"{{end}}>{{.Text}}{{with .Title}}<title>{{.}}</title>{{end}}</text>{{end}}` +
	`{{range .Groups}}{{template "group" (inScene $id .)}}{{end}}` +
	"</g>\n{{end}}{{end}}" +
	`<svg id="{{.ID}}" xmlns="http://www.w3.org/2000/svg" width="{{n .S.W}}" height="{{n .S.H}}" viewBox="0 0 {{n .S.W}} {{n .S.H}}" font-family="{{.Fonts}}">` +
	`<defs><pattern id="{{.ID}}-hatch" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="5" height="5" fill="#fff"/><line x1="0" y1="0" x2="0" y2="5" stroke="#999" stroke-width="2"/></pattern></defs>` +
	`<rect width="{{n .S.W}}" height="{{n .S.H}}" fill="#fff"/>` + "\n" +
	`{{$id := .ID}}{{range .S.Groups}}{{template "group" (inScene $id .)}}{{end}}</svg>`))

// SVG renders the scene as one svg element with the given id, which also
// names its hatch pattern (id-hatch), so two drawings can share a page.
func (s *Scene) SVG(id string) (template.HTML, error) {
	var b bytes.Buffer
	if err := sceneSVG.Execute(&b, struct {
		ID, Fonts string
		S         *Scene
	}{id, svgFonts, s}); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil
}

// PNGDPI makes a PNG 1.5 pixels per point.
const PNGDPI = 108

// WritePNG renders the scene as a PNG.
func (s *Scene) WritePNG(w io.Writer) error {
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(s.W), vg.Length(s.H)), vgimg.UseDPI(PNGDPI), vgimg.UseBackgroundColor(color.White))
	c := draw.New(img)
	// The scene's y runs down from the top; the canvas's up from the
	// bottom.
	pt := func(x, y float64) vg.Point { return vg.Point{X: vg.Length(x), Y: vg.Length(s.H - y)} }
	var paint func(gs []*Group)
	paint = func(gs []*Group) {
		for _, g := range gs {
			paintGroup(c, pt, g)
			paint(g.Groups)
		}
	}
	paint(s.Groups)
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// paintGroup paints a group's own items, in the SVG's order.
func paintGroup(c draw.Canvas, pt func(x, y float64) vg.Point, g *Group) {
	for _, r := range g.Rects {
		box := vg.Path{}
		box.Move(pt(r.X, r.Y))
		box.Line(pt(r.X+r.W, r.Y))
		box.Line(pt(r.X+r.W, r.Y+r.H))
		box.Line(pt(r.X, r.Y+r.H))
		box.Close()
		switch {
		case r.Hatch:
			c.SetColor(color.White)
			c.Fill(box)
			c.SetColor(mustColor("#999"))
			c.SetLineWidth(1.2)
			c.SetLineDash(nil, 0)
			for _, seg := range hatchLines(r.X, r.Y, r.W, r.H, 5) {
				var p vg.Path
				p.Move(pt(seg[0], seg[1]))
				p.Line(pt(seg[2], seg[3]))
				c.Stroke(p)
			}
		case r.Fill != "":
			c.SetColor(mustColor(r.Fill))
			c.Fill(box)
		}
		if r.Stroke != "" {
			c.SetColor(mustColor(r.Stroke))
			c.SetLineWidth(0.6)
			c.SetLineDash(nil, 0)
			c.Stroke(box)
		}
	}
	for _, l := range g.Lines {
		c.SetColor(mustColor(l.Stroke))
		c.SetLineWidth(vg.Length(l.Width))
		if l.Dash {
			c.SetLineDash([]vg.Length{5, 3}, 0)
		} else {
			c.SetLineDash(nil, 0)
		}
		var p vg.Path
		p.Move(pt(l.X1, l.Y1))
		p.Line(pt(l.X2, l.Y2))
		c.Stroke(p)
	}
	c.SetLineDash(nil, 0)
	for _, ci := range g.Circles {
		var p vg.Path
		p.Move(pt(ci.X+ci.R, ci.Y))
		p.Arc(pt(ci.X, ci.Y), vg.Length(ci.R), 0, 2*math.Pi)
		p.Close()
		if ci.Fill != "none" {
			c.SetColor(mustColor(ci.Fill))
			c.Fill(p)
		}
		if ci.Stroke != "" {
			c.SetColor(mustColor(ci.Stroke))
			c.SetLineWidth(1.2)
			c.Stroke(p)
		}
	}
	for _, pa := range g.Paths {
		if len(pa.Points) == 0 {
			continue
		}
		var p vg.Path
		p.Move(pt(pa.Points[0][0], pa.Points[0][1]))
		for _, q := range pa.Points[1:] {
			p.Line(pt(q[0], q[1]))
		}
		p.Close()
		if pa.Fill != "" && pa.Fill != "none" {
			c.SetColor(mustColor(pa.Fill))
			c.Fill(p)
		}
		if pa.Stroke != "" {
			c.SetColor(mustColor(pa.Stroke))
			c.SetLineWidth(vg.Length(max(pa.Width, 1)))
			c.Stroke(p)
		}
	}
	for _, t := range g.Texts {
		face := sansFace(t.Size, t.Bold)
		x0, _, _, _ := t.Box()
		fill := t.Fill
		if fill == "" {
			fill = "#000"
		}
		c.SetColor(mustColor(fill))
		c.FillString(face, pt(x0, t.Y), t.Text)
	}
}

// hatchLines are the diagonal strokes that hatch a rectangle, step apart,
// each clipped to it.
func hatchLines(x, y, w, h, step float64) [][4]float64 {
	var out [][4]float64
	// Lines x' - x + (y' - y) = k, for k from step to w + h.
	for k := step; k < w+h; k += step {
		// Start where the line meets the top or left edge, end where it
		// meets the bottom or right edge.
		x0, y0 := x+k, y
		if k > w {
			x0, y0 = x+w, y+(k-w)
		}
		x1, y1 := x, y+k
		if k > h {
			x1, y1 = x+(k-h), y+h
		}
		out = append(out, [4]float64{x0, y0, x1, y1})
	}
	return out
}

func mustColor(hex string) color.Color {
	var r, g, b uint8
	switch len(hex) {
	case 7:
		if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b); err != nil {
			panic("bad colour " + hex)
		}
	case 4:
		if _, err := fmt.Sscanf(hex, "#%1x%1x%1x", &r, &g, &b); err != nil {
			panic("bad colour " + hex)
		}
		r, g, b = r*17, g*17, b*17
	default:
		panic("bad colour " + hex)
	}
	return color.RGBA{R: r, G: g, B: b, A: 255}
}
