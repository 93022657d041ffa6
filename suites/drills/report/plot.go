package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PlotPair draws both arms' timelines side by side (pairScene: the
// moments with their labels stacked, the timers behind the intervals, the
// API's listing of the drill's pods and the worker's runtime, the
// divergence) into path, whose extension picks the format: .png or .svg.
func PlotPair(c, e PairArm, path string) error {
	s := pairScene(c, e)
	var content []byte
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		var b strings.Builder
		if err := s.WritePNG(&b); err != nil {
			return fmt.Errorf("drawing %s: %w", path, err)
		}
		content = []byte(b.String())
	case ".svg":
		svg, err := s.SVG("drill-pair")
		if err != nil {
			return fmt.Errorf("drawing %s: %w", path, err)
		}
		content = []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + string(svg) + "\n")
	default:
		return fmt.Errorf("drawing %s: give a .png or .svg path", path)
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return fmt.Errorf("saving the plot %s: %w", path, err)
	}
	return nil
}
