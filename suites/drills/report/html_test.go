package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/reports/html"
	"github.com/faultline/faultline/suites/drills"
)

func findNodes(n *xhtml.Node, match func(*xhtml.Node) bool) []*xhtml.Node {
	var out []*xhtml.Node
	var walk func(*xhtml.Node)
	walk = func(n *xhtml.Node) {
		if match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attrOf(n *xhtml.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *xhtml.Node) string {
	var b strings.Builder
	for _, t := range findNodes(n, func(n *xhtml.Node) bool { return n.Type == xhtml.TextNode }) {
		b.WriteString(t.Data)
	}
	return b.String()
}

// The recorded pair's page: the drawing inline with a lane per view and
// arm, the report's tables under it with the divergence marked, no
// script and nothing loaded; the figure beside it as PNG and SVG.
func TestFolderPagesOfThePair(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, "testdata/pair-fast", dir)
	pages, err := FolderPages(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 1 || pages[0].Name != PairPageFile || len(pages[0].Runs) != 2 {
		t.Fatalf("pages %+v, want the pair's page over both runs", pages)
	}
	p := pages[0]
	doc, err := xhtml.Parse(strings.NewReader(string(p.Body)))
	if err != nil {
		t.Fatal(err)
	}
	if n := findNodes(doc, func(n *xhtml.Node) bool { return n.Data == "script" || attrOf(n, "src") != "" }); len(n) > 0 {
		t.Errorf("the page has a script or loads something: %v", n[0].Data)
	}
	svgs := findNodes(doc, func(n *xhtml.Node) bool { return n.Data == "svg" && attrOf(n, "id") == pairDrawingID })
	if len(svgs) != 1 {
		t.Fatalf("%d drawings on the page", len(svgs))
	}
	lanes := map[string]bool{}
	for _, g := range findNodes(svgs[0], func(n *xhtml.Node) bool { return n.Data == "g" && attrOf(n, "class") == "lane" }) {
		lanes[attrOf(g, "data-arm")+" "+attrOf(g, "data-view")] = true
	}
	for _, arm := range []string{drills.IDKubeletStopped, drills.IDPowerOff} {
		for _, view := range []string{"moments", "timers", "api-pods", "runtime"} {
			if !lanes[arm+" "+view] {
				t.Errorf("no %s lane for %s", view, arm)
			}
		}
	}
	tables := findNodes(doc, func(n *xhtml.Node) bool { return n.Data == "table" })
	if len(tables) < 2 || !strings.Contains(textOf(tables[0]), "◀ divergence") || !strings.Contains(textOf(tables[0]), "node-monitor-grace-period = 12s") {
		t.Errorf("the window's table is not on the page with the divergence and the timers")
	}
	if strings.Contains(string(p.Body), "<h1") {
		t.Error("the body repeats the page's title")
	}
	img, err := png.Decode(bytes.NewReader(p.Files[PairPlotFile]))
	if err != nil || img.Bounds().Dx() < 1000 {
		t.Errorf("%s is not the drawing as a PNG (%v)", PairPlotFile, err)
	}
	dec := xml.NewDecoder(bytes.NewReader(p.Files[PairFigureSVG]))
	for {
		if _, err := dec.Token(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("%s is not well-formed: %v", PairFigureSVG, err)
			}
			break
		}
	}

	// Through the site as `faultline report --format html` builds it:
	// the run pages link the pair's page.
	site, err := html.Build([]string{dir}, html.WithFolderPages(FolderPages))
	if err != nil {
		t.Fatal(err)
	}
	name := html.FoldersDir + "/" + filepath.Base(dir) + "/" + PairPageFile
	if _, ok := site.Files[name]; !ok {
		t.Fatalf("the site has no %s", name)
	}
	for _, id := range p.Runs {
		page := site.Files[html.RunsDir+"/"+filepath.Base(dir)+"--"+record.SafeName(id)+".html"]
		if !bytes.Contains(page, []byte(`href="../`+name+`"`)) {
			t.Errorf("run %s's page does not link the pair's page", id)
		}
	}
}

// A folder with one arm gets a page saying the comparison needs both; a
// folder of no pair run, none.
func TestFolderPagesOfOneArmOrNone(t *testing.T) {
	c, e := issuePair()
	one := writeSynthFolder(t, map[string]*synthArm{drills.IDPowerOff: e})
	pages, err := FolderPages(one)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 1 || !strings.Contains(string(pages[0].Body), drills.IDPowerOff+" without "+drills.IDKubeletStopped) || len(pages[0].Files) != 0 {
		t.Errorf("one arm: %+v", pages)
	}
	other := writeSynthFolder(t, map[string]*synthArm{"not-a-drill": c})
	if pages, err := FolderPages(other); err != nil || len(pages) != 0 {
		t.Errorf("a folder of other runs: %v pages, %v", len(pages), err)
	}
	if pages, err := FolderPages(filepath.Join(t.TempDir(), "missing")); err != nil || len(pages) != 0 {
		t.Errorf("a folder without records: %v pages, %v", len(pages), err)
	}
	broken := t.TempDir()
	copyDir(t, "testdata/pair-fast", broken)
	files, _ := filepath.Glob(filepath.Join(broken, record.EvidenceDir, "*.jsonl"))
	if err := os.WriteFile(files[0], []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FolderPages(broken); err == nil {
		t.Error("a folder whose evidence is malformed gave a page")
	}
}
