package html

import (
	"errors"
	"html/template"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"
)

// hrefs are the targets of a page's links, resolved against the page's
// own place in the site.
func hrefs(t *testing.T, s *Site, page string) []string {
	t.Helper()
	doc := parse(t, s.Files[page])
	var out []string
	for _, a := range find(doc, func(n *xhtml.Node) bool { return n.Data == "a" }) {
		h, _ := attr(a, "href")
		out = append(out, path.Clean(path.Join(path.Dir(page), h)))
	}
	return out
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// A suite's folder page is put in the page style with links to the index
// and to its runs' pages, which link back, and so does the index; its
// files lie beside it.
func TestFolderPagesAreLinkedBothWays(t *testing.T) {
	dir := runFolder(t)
	var asked []string
	pages := func(folder string) ([]FolderPage, error) {
		asked = append(asked, folder)
		return []FolderPage{{Name: "pair.html", Title: "Both arms", Runs: []string{"frozen-fault-1", "frozen-null-1"},
			Body: template.HTML(`<svg id="pair-svg"></svg><p><a href="pair.png">pair.png</a></p>`), Files: map[string][]byte{"pair.png": []byte("\x89PNG")}}}, nil
	}
	s, err := Build([]string{dir + string(filepath.Separator)}, WithFolderPages(pages))
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != dir {
		t.Errorf("folder pages asked of %v, want the folder %s once", asked, dir)
	}
	page := FoldersDir + "/" + filepath.Base(dir) + "/pair.html"
	if _, ok := s.Files[page]; !ok {
		t.Fatalf("no %s in the site", page)
	}
	doc := parse(t, s.Files[page])
	if byID(doc, "pair-svg") == nil || len(find(doc, func(n *xhtml.Node) bool { return n.Data == "style" })) != 1 {
		t.Error("the folder page lacks its body or the site's style")
	}
	links := hrefs(t, s, page)
	for _, want := range []string{IndexFile, path.Dir(page) + "/pair.png"} {
		if !has(links, want) {
			t.Errorf("the folder page does not link %s: %v", want, links)
		}
	}
	for _, l := range links {
		if _, ok := s.Files[l]; !ok {
			t.Errorf("the folder page links %s, which the site does not hold", l)
		}
	}
	for _, id := range []string{"frozen-fault-1", "frozen-null-1"} {
		rp := RunsDir + "/" + filepath.Base(dir) + "--" + id + ".html"
		if !has(links, rp) {
			t.Errorf("the folder page does not link run %s", id)
		}
		if !has(hrefs(t, s, rp), page) {
			t.Errorf("run %s's page does not link the folder page", id)
		}
	}
	if has(hrefs(t, s, RunsDir+"/"+filepath.Base(dir)+"--control-1.html"), page) {
		t.Error("a run the folder page is not about links it")
	}
	if !has(hrefs(t, s, IndexFile), page) {
		t.Error("the index does not link the folder page")
	}
}

// A folder page that cannot be rendered stops the site, and nothing is
// written; two pages of one name are refused.
func TestFolderPagesBadInput(t *testing.T) {
	dir := runFolder(t)
	out := filepath.Join(t.TempDir(), "site")
	broken := func(string) ([]FolderPage, error) { return nil, errors.New("evidence cut short") }
	if err := WriteSite(out, []string{dir}, WithFolderPages(broken)); err == nil || !strings.Contains(err.Error(), "evidence cut short") || !strings.Contains(err.Error(), dir) {
		t.Errorf("got %v, want the folder and its error", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed site wrote %s", out)
	}
	twice := func(string) ([]FolderPage, error) { return []FolderPage{{Name: "p.html"}, {Name: "p.html"}}, nil }
	if _, err := Build([]string{dir}, WithFolderPages(twice)); err == nil || !strings.Contains(err.Error(), "p.html") {
		t.Errorf("two pages of one name: %v", err)
	}
}
