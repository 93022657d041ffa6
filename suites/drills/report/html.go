package report

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"os"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/faultline/faultline/reports/html"
	"github.com/faultline/faultline/suites/drills"
)

// Files of the pair drill's page in an HTML report, beside it.
const (
	PairPageFile   = "drill-pair.html"
	PairFigureSVG  = "drill-pair.svg"
	pairDrawingID  = "drill-pair-svg"
	pairPageTitle  = "Drill 6.C1 against 6.C2: power off against a stopped kubelet"
	pairPageSingle = "Drill 6.C1 against 6.C2: one arm only"
)

// markdown renders the pair report's Markdown for the page: GitHub's
// tables, and no raw HTML passed through (the report holds none, and the
// page must hold no script).
var markdown = goldmark.New(goldmark.WithExtensions(extension.Table))

// FolderPages is the drills' page of a run folder for `faultline report
// --format html` (html.WithFolderPages): when the folder holds both arms
// of the pair drill, the side-by-side timelines drawn as SVG on the page
// (and beside it as PNG and SVG, for a paper), over the pair report. A
// folder with one arm gets a page that says the comparison needs both;
// a folder with neither, none.
func FolderPages(dir string) ([]html.FolderPage, error) {
	latest, err := latestFaultRuns(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c, okC := latest[drills.IDKubeletStopped]
	e, okE := latest[drills.IDPowerOff]
	switch {
	case !okC && !okE:
		return nil, nil
	case !okC || !okE:
		run := c
		if okE {
			run = e
		}
		body := template.HTML(`<p class="warning" id="drill-pair-missing">` + template.HTMLEscapeString(oneArm(dir, okC).Error()) + `</p>`)
		return []html.FolderPage{{Name: PairPageFile, Title: pairPageSingle, Runs: []string{run.RunID}, Body: body}}, nil
	}
	ca, err := analyse(dir, c)
	if err != nil {
		return nil, err
	}
	ea, err := analyse(dir, e)
	if err != nil {
		return nil, err
	}
	page, err := PairPage(ca, ea)
	if err != nil {
		return nil, fmt.Errorf("the pair drill's page: %w", err)
	}
	return []html.FolderPage{page}, nil
}

// PairPage is the pair drill's page: the drawing inline, the report under
// it, the figure as PNG and SVG beside it.
func PairPage(c, e PairArm) (html.FolderPage, error) {
	s := pairScene(c, e)
	svg, err := s.SVG(pairDrawingID)
	if err != nil {
		return html.FolderPage{}, err
	}
	var png bytes.Buffer
	if err := s.WritePNG(&png); err != nil {
		return html.FolderPage{}, err
	}
	var md strings.Builder
	if err := WritePairMarkdown(&md, c, e, ""); err != nil {
		return html.FolderPage{}, err
	}
	var report bytes.Buffer
	if err := markdown.Convert([]byte(withoutTitle(md.String())), &report); err != nil {
		return html.FolderPage{}, err
	}
	var body strings.Builder
	body.WriteString(`<p class="note">Both arms on one axis, each from its own fault. Per arm: the drill's moments as the API showed them (a filled dot in the window, a hollow one after the heal started; labels of moments that coincide are stacked, each on a leader to its dot; hover for the source, the detail and the timer), the timer behind each of the main intervals, one API server's listing of the drill's pods, and what the worker's container runtime showed over SSH; behind them the window, the heal and the return. The dashed red line is where the arms diverge, outlined where the divergence lies.</p>` + "\n")
	body.WriteString(string(svg))
	fmt.Fprintf(&body, "\n<p>The figure for a paper: <a href=%q>%s</a>, <a href=%q>%s</a>.</p>\n", PairPlotFile, PairPlotFile, PairFigureSVG, PairFigureSVG)
	body.WriteString(`<div class="drill-report">` + report.String() + `</div>`)
	return html.FolderPage{
		Name: PairPageFile, Title: pairPageTitle,
		Runs: []string{c.Run.RunID, e.Run.RunID},
		// The Markdown is this package's own, rendered with raw HTML
		// escaped; the drawing is reports/timeline's, through its template.
		Body: template.HTML(body.String()),
		Files: map[string][]byte{
			PairPlotFile:  png.Bytes(),
			PairFigureSVG: []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + string(svg) + "\n"),
		},
	}, nil
}

// withoutTitle drops the report's first heading: the page has its own.
func withoutTitle(md string) string {
	if strings.HasPrefix(md, "# ") {
		if i := strings.Index(md, "\n"); i >= 0 {
			return md[i+1:]
		}
	}
	return md
}
