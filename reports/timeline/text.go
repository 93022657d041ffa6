package timeline

import (
	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/font/liberation"
	"gonum.org/v1/plot/vg"
)

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

// TextWidth is the width of s in Liberation Sans at size points.
func TextWidth(s string, size float64, bold bool) float64 {
	f := sansFace(size, bold)
	return f.Width(s).Points()
}

// width is the text's width: its measured one, else measured now.
func (t Text) width() float64 {
	if t.Width > 0 {
		return t.Width
	}
	return TextWidth(t.Text, t.Size, t.Bold)
}

// Box is the rectangle a text covers: its width, from its face's ascent
// above the baseline to its descent below.
func (t Text) Box() (x0, y0, x1, y1 float64) {
	f := sansFace(t.Size, t.Bold)
	ext := f.Extents()
	w := t.width()
	x0 = t.X
	switch t.Anchor {
	case "end":
		x0 -= w
	case "middle":
		x0 -= w / 2
	}
	return x0, t.Y - ext.Ascent.Points(), x0 + w, t.Y + ext.Descent.Points()
}

// TextAt is a text at (x, y), measured at its size, in the drawing's dark
// grey.
func TextAt(x, y float64, s string, size float64, anchor string) Text {
	return Text{X: x, Y: y, Text: s, Size: size, Anchor: anchor, Fill: "#222", Width: TextWidth(s, size, false)}
}

// BoldAt is a bold text starting at (x, y), measured at its size.
func BoldAt(x, y float64, s string, size float64) Text {
	return Text{X: x, Y: y, Text: s, Size: size, Anchor: "start", Bold: true, Fill: "#222", Width: TextWidth(s, size, true)}
}
