// Package timeline is the drawing engine of every timeline the reports
// draw: a run page's lanes of evidence (reports/html) and a suite's own
// drawings over several runs (the drills' side-by-side timelines). A
// drawing is a Scene laid out once, in points, and rendered twice: as SVG
// for a page (groups with classes and data attributes a test or a
// stylesheet can find, a tooltip on every mark) and as PNG for a paper.
// What a drawing shows (which lanes, which marks) is its user's; the
// engine measures text, stacks labels so that coinciding moments do not
// draw over each other, picks axis steps, and renders.
package timeline

// A Scene is a drawing laid out in points, y running down from the top.
// The layout is done by its user rather than by gonum/plot because labels
// are stacked by their measured widths, which a plot's own label
// placement does not do: that is what drew coinciding moments over each
// other.
type Scene struct {
	W, H   float64
	Groups []*Group
}

// Group is a part of the drawing: a lane, a label stack, the axis. Its
// items are drawn in the order rects, lines, circles, paths, texts, then
// its child groups in order.
type Group struct {
	Class string
	Data  []Data
	Title string

	Rects   []Rect
	Lines   []Line
	Circles []Circle
	Paths   []Path
	Texts   []Text
	Groups  []*Group
}

// Data is a data attribute (data-Name="Value") of a group or an item.
type Data struct{ Name, Value string }

// WithData is data and one attribute more, in a slice of its own.
func WithData(data []Data, more Data) []Data {
	return append(append([]Data{}, data...), more)
}

// Rect is a rectangle; with neither Fill nor Hatch it is not filled.
type Rect struct {
	X, Y, W, H float64
	Fill       string
	// Hatch draws the rectangle hatched (unreadable), over Fill.
	Hatch  bool
	Stroke string
	Class  string
	Title  string
	Data   []Data
}

// Line is a straight line; Dash draws it dashed.
type Line struct {
	X1, Y1, X2, Y2 float64
	Stroke         string
	Width          float64
	Dash           bool
	Class          string
	Title          string
	Data           []Data
}

// Circle is a dot, filled, outlined where Stroke is set.
type Circle struct {
	X, Y, R      float64
	Fill, Stroke string
	Class        string
	Title        string
	Data         []Data
}

// Path is a closed polygon through Points, filled, outlined where Stroke
// is set (Width wide).
type Path struct {
	Points       [][2]float64
	Fill, Stroke string
	Width        float64
	Class        string
	Title        string
}

// Text is one line of text; Y is its baseline. Width is its measured
// width, which the SVG holds it to (textLength), so that a viewer's font
// cannot make stacked labels run into each other; a text of Width 0 is
// drawn in the viewer's font at its own width. A text with no Fill takes
// its colour from its group (a page's stylesheet).
type Text struct {
	X, Y   float64
	Text   string
	Size   float64
	Anchor string // start, middle or end
	Bold   bool
	Fill   string
	Width  float64
	Class  string
	Title  string
	Data   []Data
}

// Add adds a group to the scene and returns it.
func (s *Scene) Add(g *Group) *Group {
	s.Groups = append(s.Groups, g)
	return g
}

// Add adds a child group, drawn after the group's own items, and
// returns it.
func (g *Group) Add(child *Group) *Group {
	g.Groups = append(g.Groups, child)
	return child
}

// Fit widens the scene to hold every text, so a label stacked past the
// axis's right end is drawn, not cut.
func (s *Scene) Fit() {
	var fit func(gs []*Group)
	fit = func(gs []*Group) {
		for _, g := range gs {
			for _, t := range g.Texts {
				end := t.X
				switch t.Anchor {
				case "start":
					end += t.Width
				case "middle":
					end += t.Width / 2
				}
				s.W = max(s.W, end+8)
			}
			fit(g.Groups)
		}
	}
	fit(s.Groups)
}
