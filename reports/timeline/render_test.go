package timeline

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"strings"
	"testing"
)

func TestHatchLinesStayInTheRectangle(t *testing.T) {
	for _, l := range hatchLines(10, 20, 30, 8, 5) {
		for _, p := range [][2]float64{{l[0], l[1]}, {l[2], l[3]}} {
			if p[0] < 10-1e-9 || p[0] > 40+1e-9 || p[1] < 20-1e-9 || p[1] > 28+1e-9 {
				t.Fatalf("hatch line %v leaves the rectangle", l)
			}
		}
	}
}

// A scene with every kind of item renders as one well-formed svg element
// (a child group inside its parent, after the parent's own items; a
// polygon as a closed path; a text of no measured width in the viewer's
// font, and one of no colour taking its group's) and as a PNG of its size.
func TestEveryItemRendersInBothFormats(t *testing.T) {
	s := &Scene{W: 200, H: 100}
	g := s.Add(&Group{Class: "outer", Data: []Data{{Name: "arm", Value: "a"}}, Title: "the outer group"})
	g.Rects = append(g.Rects, Rect{X: 1, Y: 2, W: 30, H: 10, Hatch: true, Class: "unreadable"}, Rect{X: 40, Y: 2, W: 30, H: 10, Fill: "#4e79a7", Stroke: "#888"})
	g.Lines = append(g.Lines, Line{X1: 5, Y1: 0, X2: 5, Y2: 90, Stroke: "#c00", Width: 1.5, Dash: true, Class: "mark", Data: []Data{{Name: "mark", Value: "inject"}}})
	g.Circles = append(g.Circles, Circle{X: 50, Y: 50, R: 4, Fill: "none", Stroke: "#e00"})
	g.Paths = append(g.Paths, Path{Points: [][2]float64{{10, 38}, {14, 44}, {10, 50}, {6, 44}}, Fill: "#fff", Stroke: "#333", Width: 1.5, Class: "event"})
	g.Texts = append(g.Texts, TextAt(4, 80, "measured", 10, "start"), Text{X: 100, Y: 80, Text: "styled", Size: 10, Anchor: "middle"})
	g.Add(&Group{Class: "inner", Texts: []Text{BoldAt(4, 95, "inner", 9)}})

	svg, err := s.SVG("d")
	if err != nil {
		t.Fatal(err)
	}
	out := string(svg)
	dec := xml.NewDecoder(strings.NewReader(out))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the SVG is not well-formed: %v\n%s", err, out)
		}
	}
	for _, want := range []string{`<svg id="d"`, `<pattern id="d-hatch"`, `fill="url(#d-hatch)"`, `data-mark="inject"`, `d="M10 38 L14 44 L10 50 L6 44 Z"`, `stroke-dasharray="5 3"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the SVG lacks %s:\n%s", want, out)
		}
	}
	if !strings.HasPrefix(out, `<svg id="d"`) || strings.Count(out, "<svg") != 1 {
		t.Errorf("the SVG is not one svg element:\n%s", out)
	}
	if i, j := strings.Index(out, `class="inner"`), strings.Index(out, ">measured<"); i < j || strings.Index(out, `class="outer"`) > i {
		t.Errorf("the child group is not drawn inside its parent, after the parent's items:\n%s", out)
	}
	if !strings.Contains(out, `textLength=`) || strings.Contains(out, `lengthAdjust="spacingAndGlyphs">styled`) || strings.Contains(out, `fill="" `) {
		t.Errorf("a measured text is not held to its width, or an unmeasured or uncoloured one is:\n%s", out)
	}

	var b bytes.Buffer
	if err := s.WritePNG(&b); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w != int(s.W*PNGDPI/72) {
		t.Errorf("the PNG is %d px wide, want %d", w, int(s.W*PNGDPI/72))
	}
}

// AxisStep picks the smallest round step under n intervals.
func TestAxisStep(t *testing.T) {
	for _, c := range []struct {
		span float64
		n    int
		want float64
	}{{12, 16, 1}, {15.9, 16, 1}, {16, 16, 2}, {100, 16, 10}, {3600, 16, 300}, {1e6, 16, 62500}} {
		if got := AxisStep(c.span, c.n); got != c.want {
			t.Errorf("AxisStep(%v, %d) = %v, want %v", c.span, c.n, got, c.want)
		}
	}
}
