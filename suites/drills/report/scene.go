package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/font/liberation"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// A scene is a drawing laid out once, in points, and rendered twice: as
// SVG for a page (groups with classes and data attributes a test can find,
// a tooltip on every mark) and as PNG for a paper. The layout is done
// here rather than by gonum/plot because the labels are stacked by their
// measured widths, which a plot's own label placement does not do: that is
// what drew coinciding moments over each other.
type scene struct {
	W, H   float64
	Groups []*group
}

// group is a part of the drawing: a lane, a label stack, the axis.
type group struct {
	Class string
	Data  []dataAttr
	Title string

	Rects   []rectItem
	Lines   []lineItem
	Circles []circleItem
	Texts   []textItem
}

type dataAttr struct{ Name, Value string }

type rectItem struct {
	X, Y, W, H float64
	Fill       string
	// Hatch draws the rectangle hatched (unreadable), over Fill.
	Hatch  bool
	Stroke string
	Class  string
	Title  string
	Data   []dataAttr
}

type lineItem struct {
	X1, Y1, X2, Y2 float64
	Stroke         string
	Width          float64
	Dash           bool
	Class          string
	Title          string
}

type circleItem struct {
	X, Y, R      float64
	Fill, Stroke string
	Class        string
	Title        string
	Data         []dataAttr
}

// textItem is one line of text; Y is its baseline. Width is its measured
// width, which the SVG holds it to (textLength), so that a viewer's font
// cannot make stacked labels run into each other.
type textItem struct {
	X, Y   float64
	Text   string
	Size   float64
	Anchor string // start, middle or end
	Bold   bool
	Fill   string
	Width  float64
	Class  string
	Title  string
	Data   []dataAttr
}

func (s *scene) add(g *group) *group {
	s.Groups = append(s.Groups, g)
	return g
}

// faces are the Liberation fonts gonum/plot ships.
var faces = font.NewCache(liberation.Collection())

// sansFace is the face text is measured and drawn with: Liberation Sans,
// metric-compatible with Arial.
func sansFace(size float64, bold bool) font.Face {
	f := font.Font{Typeface: "Liberation", Variant: "Sans"}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return faces.Lookup(f, vg.Length(size))
}

func textWidth(s string, size float64, bold bool) float64 {
	f := sansFace(size, bold)
	return f.Width(s).Points()
}

// box is the rectangle a text item covers: its measured width, from its
// face's ascent above the baseline to its descent below.
func (t textItem) box() (x0, y0, x1, y1 float64) {
	f := sansFace(t.Size, t.Bold)
	ext := f.Extents()
	x0 = t.X
	switch t.Anchor {
	case "end":
		x0 -= t.Width
	case "middle":
		x0 -= t.Width / 2
	}
	return x0, t.Y - ext.Ascent.Points(), x0 + t.Width, t.Y + ext.Descent.Points()
}

// text makes a text item measured at its size.
func text(x, y float64, s string, size float64, anchor string) textItem {
	return textItem{X: x, Y: y, Text: s, Size: size, Anchor: anchor, Fill: "#222", Width: textWidth(s, size, false)}
}

func boldText(x, y float64, s string, size float64) textItem {
	return textItem{X: x, Y: y, Text: s, Size: size, Anchor: "start", Bold: true, Fill: "#222", Width: textWidth(s, size, true)}
}

// A label to stack: a leader at X, the text starting Pad to its right,
// Width wide. Stacking puts each in the lowest row where its text runs
// into no other label and no leader passing through that row, and where
// its own leader, up from row 0, crosses no label below it.
type stackItem struct {
	X, Width float64
}

// leaderPad is how far right of its leader a label starts, so that the
// leaders of labels stacked above pass beside it, not through it.
const leaderPad = 4.0

// stack assigns rows. Labels are placed right to left: every label
// already placed then starts right of the new one's leader, so that
// leader is never blocked, and every label finds a row.
func stack(items []stackItem, gap float64) []int {
	type span struct {
		x0, x1 float64
		label  bool
	}
	var rows [][]span
	free := func(r int, x0, x1 float64, labelsOnly bool) bool {
		if r >= len(rows) {
			return true
		}
		for _, s := range rows[r] {
			if labelsOnly && !s.label {
				continue
			}
			if x0 < s.x1+gap && s.x0 < x1+gap {
				return false
			}
		}
		return true
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return items[order[a]].X > items[order[b]].X })
	out := make([]int, len(items))
	for _, i := range order {
		it := items[i]
		x0, x1 := it.X+leaderPad, it.X+leaderPad+it.Width
		lx0, lx1 := it.X-0.5, it.X+0.5
		r := 0
		for {
			ok := free(r, x0, x1, false)
			for below := 0; ok && below < r; below++ {
				ok = free(below, lx0, lx1, true)
			}
			if ok {
				break
			}
			r++
		}
		for len(rows) <= r {
			rows = append(rows, nil)
		}
		rows[r] = append(rows[r], span{x0, x1, true})
		for below := 0; below < r; below++ {
			rows[below] = append(rows[below], span{lx0, lx1, false})
		}
		out[i] = r
	}
	return out
}

// intervalRows assigns rows to intervals [X0, X1] so that none in a row
// overlap (gap apart): first fit, left to right.
func intervalRows(x0, x1 []float64, gap float64) []int {
	order := make([]int, len(x0))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return x0[order[a]] < x0[order[b]] })
	var ends []float64
	out := make([]int, len(x0))
	for _, i := range order {
		r := 0
		for r < len(ends) && x0[i] < ends[r]+gap {
			r++
		}
		if r == len(ends) {
			ends = append(ends, 0)
		}
		ends[r] = x1[i]
		out[i] = r
	}
	return out
}

// svgFonts are the families the SVG asks for, the measured one first.
const svgFonts = "Liberation Sans, Arimo, Arial, Helvetica, sans-serif"

var sceneSVG = template.Must(template.New("scene").Funcs(template.FuncMap{
	"n": func(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) },
}).Parse(`{{define "data"}}{{range .}} data-{{.Name}}="{{.Value}}"{{end}}{{end}}` +
	`<svg id="{{.ID}}" xmlns="http://www.w3.org/2000/svg" width="{{n .S.W}}" height="{{n .S.H}}" viewBox="0 0 {{n .S.W}} {{n .S.H}}" font-family="{{.Fonts}}">` +
	`<defs><pattern id="{{.ID}}-hatch" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="5" height="5" fill="#fff"/><line x1="0" y1="0" x2="0" y2="5" stroke="#999" stroke-width="2"/></pattern></defs>` +
	`<rect width="{{n .S.W}}" height="{{n .S.H}}" fill="#fff"/>` + "\n" +
	`{{$id := .ID}}{{range .S.Groups}}<g{{with .Class}} class="{{.}}"{{end}}{{template "data" .Data}}>{{with .Title}}<title>{{.}}</title>{{end}}` +
	`{{range .Rects}}<rect{{with .Class}} class="{{.}}"{{end}}{{template "data" .Data}} x="{{n .X}}" y="{{n .Y}}" width="{{n .W}}" height="{{n .H}}" fill="{{if .Hatch}}url(#{{$id}}-hatch){{else if .Fill}}{{.Fill}}{{else}}none{{end}}"{{with .Stroke}} stroke="{{.}}" stroke-width="0.6"{{end}}>{{with .Title}}<title>{{.}}</title>{{end}}</rect>{{end}}` +
	`{{range .Lines}}<line{{with .Class}} class="{{.}}"{{end}} x1="{{n .X1}}" y1="{{n .Y1}}" x2="{{n .X2}}" y2="{{n .Y2}}" stroke="{{.Stroke}}" stroke-width="{{n .Width}}"{{if .Dash}} stroke-dasharray="5 3"{{end}}>{{with .Title}}<title>{{.}}</title>{{end}}</line>{{end}}` +
	`{{range .Circles}}<circle{{with .Class}} class="{{.}}"{{end}}{{template "data" .Data}} cx="{{n .X}}" cy="{{n .Y}}" r="{{n .R}}" fill="{{.Fill}}"{{with .Stroke}} stroke="{{.}}" stroke-width="1.2"{{end}}>{{with .Title}}<title>{{.}}</title>{{end}}</circle>{{end}}` +
	`{{range .Texts}}<text{{with .Class}} class="{{.}}"{{end}}{{template "data" .Data}} x="{{n .X}}" y="{{n .Y}}" font-size="{{n .Size}}" text-anchor="{{.Anchor}}" fill="{{.Fill}}"{{if .Bold}} font-weight="bold"{{end}} textLength="{{n .Width}}" lengthAdjust="spacingAndGlyphs">{{.Text}}{{with .Title}}<title>{{.}}</title>{{end}}</text>{{end}}` +
	"</g>\n{{end}}</svg>"))

// SVG renders the scene as one svg element with the given id (which also
// names its hatch pattern, so two drawings can share a page).
func (s *scene) SVG(id string) (template.HTML, error) {
	var b bytes.Buffer
	if err := sceneSVG.Execute(&b, struct {
		ID, Fonts string
		S         *scene
	}{id, svgFonts, s}); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil
}

// pngDPI makes a PNG 1.5 pixels per point.
const pngDPI = 108

// WritePNG renders the scene as a PNG.
func (s *scene) WritePNG(w io.Writer) error {
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(s.W), vg.Length(s.H)), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	c := draw.New(img)
	// The scene's y runs down from the top; the canvas's up from the
	// bottom.
	pt := func(x, y float64) vg.Point { return vg.Point{X: vg.Length(x), Y: vg.Length(s.H - y)} }
	for _, g := range s.Groups {
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
			c.SetColor(mustColor(ci.Fill))
			c.Fill(p)
			if ci.Stroke != "" {
				c.SetColor(mustColor(ci.Stroke))
				c.SetLineWidth(1.2)
				c.Stroke(p)
			}
		}
		for _, t := range g.Texts {
			face := sansFace(t.Size, t.Bold)
			x := t.X
			switch t.Anchor {
			case "end":
				x -= t.Width
			case "middle":
				x -= t.Width / 2
			}
			c.SetColor(mustColor(t.Fill))
			c.FillString(face, pt(x, t.Y), t.Text)
		}
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
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
