package timeline

import "testing"

func TestHatchLinesStayInTheRectangle(t *testing.T) {
	for _, l := range hatchLines(10, 20, 30, 8, 5) {
		for _, p := range [][2]float64{{l[0], l[1]}, {l[2], l[3]}} {
			if p[0] < 10-1e-9 || p[0] > 40+1e-9 || p[1] < 20-1e-9 || p[1] > 28+1e-9 {
				t.Fatalf("hatch line %v leaves the rectangle", l)
			}
		}
	}
}
