package html

import (
	"bytes"
	"path"
	"strings"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/framework/verdict/verdicttest"
)

// repeatedFolder is verdicttest.RepeatedRuns as a suite with repetitions
// records them.
func repeatedFolder(t *testing.T) string {
	t.Helper()
	f, err := record.NewFolder(t.TempDir(), "s", time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range verdicttest.RepeatedRuns() {
		if err := f.AppendRun(r); err != nil {
			t.Fatal(err)
		}
	}
	return f.Dir
}

// rowsWith are the table rows whose data-<key> attributes hold the values.
func rowsWith(n *xhtml.Node, kv ...string) []*xhtml.Node {
	return find(n, func(n *xhtml.Node) bool {
		if n.Data != "tr" {
			return false
		}
		for i := 0; i < len(kv); i += 2 {
			if v, _ := attr(n, "data-"+kv[i]); v != kv[i+1] {
				return false
			}
		}
		return true
	})
}

// Over repeated runs the index has the stability tables (each row linked
// to its scenario's page, flaky ones marked, each rate's interval drawn)
// and the stability plot; its findings tables name the flaky verdicts and
// draw no interval for a rate that pools the repetitions of several
// scenarios; and each scenario's page has its runs as rows and its
// invariants as columns, every cell linked to its run's page.
func TestStabilityPagesOfRepeatedRuns(t *testing.T) {
	s := buildSite(t, repeatedFolder(t))
	doc := parse(t, s.Files[IndexFile])
	sec := byID(doc, "stability")
	if sec == nil {
		t.Fatal("the index has no stability section")
	}
	tables := find(doc, func(n *xhtml.Node) bool { return n.Data == "table" && hasClass(n, "stability") })
	if len(tables) != 3 {
		t.Fatalf("%d stability tables, want findings, controls and null arms", len(tables))
	}
	flaky := rowsWith(tables[0], "scenario", "pod-network-cut", "invariant", verdicttest.Endpoints)
	if len(flaky) != 1 || !strings.Contains(text(flaky[0]), "2 of 3") || !strings.Contains(text(flaky[0]), "stretch: 5 s [4, 6] (3)") {
		t.Fatalf("pod-network-cut's endpoints-truthful row: %d rows", len(flaky))
	}
	if o, _ := attr(flaky[0], "data-outcome"); o != "flaky" || len(find(flaky[0], func(n *xhtml.Node) bool { return hasClass(n, "flaky") })) != 1 {
		t.Errorf("the flaky row is not marked flaky (outcome %q)", o)
	}
	if len(find(flaky[0], func(n *xhtml.Node) bool { return n.Data == "rect" && hasClass(n, "interval") })) != 1 {
		t.Error("the flaky row's interval is not drawn")
	}
	links := find(sec, func(n *xhtml.Node) bool { return n.Data == "a" && hasClass(n, "stability-link") })
	pages := map[string]bool{}
	for _, a := range links {
		href, _ := attr(a, "href")
		if _, ok := s.Files[href]; !ok {
			t.Errorf("stability link %s has no page", href)
		}
		pages[href] = true
	}
	if len(pages) != 3 {
		t.Errorf("%d scenario pages linked, want 3: %v", len(pages), pages)
	}
	for _, f := range []string{StabilitySVGFile, StabilityPNGFile} {
		if len(s.Files[f]) == 0 {
			t.Errorf("site has no %s", f)
		}
	}
	checkXML(t, StabilitySVGFile, s.Files[StabilitySVGFile])
	svg := string(s.Files[StabilitySVGFile])
	if !strings.Contains(svg, "pod-network-cut · endpoints-truthful (2/3) flaky") || !strings.Contains(svg, "kubelet-stopped · graceful-deletion (1/3) flaky") || strings.Contains(svg, "control-endpoints") {
		t.Errorf("%s does not name each finding's rate and flaky ones, or names the control", StabilitySVGFile)
	}
	if len(find(sec, func(n *xhtml.Node) bool { return n.Data == "figure" && hasClass(n, "stability-plot") })) != 1 {
		t.Error("the stability plot is not on the index")
	}

	// The findings tables: flaky named, a pooled rate without its bar.
	findings := find(doc, func(n *xhtml.Node) bool { return n.Data == "table" && hasClass(n, "findings") })
	byInv := func(inv string) *xhtml.Node {
		rows := find(findings[0], func(n *xhtml.Node) bool { return n.Data == "tr" && n.FirstChild != nil && text(n.FirstChild) == inv })
		if len(rows) != 1 {
			t.Fatalf("findings by invariant: %d rows of %s", len(rows), inv)
		}
		return rows[0]
	}
	ep := byInv(verdicttest.Endpoints)
	if !strings.Contains(text(ep), "pools the repetitions of 2 scenarios: no interval") || !strings.Contains(text(ep), "pod-network-cut 2/3") {
		t.Errorf("endpoints-truthful's findings row: %s", text(ep))
	}
	if len(find(ep, func(n *xhtml.Node) bool { return n.Data == "rect" && hasClass(n, "interval") })) != 0 {
		t.Error("a rate that pools the repetitions of two scenarios has its interval drawn")
	}
	if len(find(byInv(verdicttest.Acked), func(n *xhtml.Node) bool { return n.Data == "rect" && hasClass(n, "interval") })) != 1 {
		t.Error("one scenario's repetitions lost their interval")
	}
	if !bytes.Contains(s.Files[RatesSVGFile], []byte("endpoints-truthful (2/6, pooled over 2 scenarios: no interval)")) {
		t.Errorf("%s does not say endpoints-truthful's rate pools repetitions", RatesSVGFile)
	}

	// pod-network-cut's page: the fault arm's four runs (the third
	// ABORTED once) by its three invariants.
	page := stabilityHref("s", "pod-network-cut")
	pdoc := parse(t, s.Files[page])
	grids := find(pdoc, func(n *xhtml.Node) bool { return n.Data == "table" && hasClass(n, "grid") })
	if len(grids) != 2 {
		t.Fatalf("%s: %d grids, want the fault arm's and the null arm's", page, len(grids))
	}
	runs := find(grids[0], func(n *xhtml.Node) bool { return n.Data == "tr" && hasClass(n, "run") })
	if len(runs) != 4 {
		t.Fatalf("%s: %d runs in the fault arm's grid, want 4", page, len(runs))
	}
	var got []string
	for _, r := range runs {
		rep, _ := attr(r, "data-repetition")
		var cells []string
		for _, c := range find(r, func(n *xhtml.Node) bool { return n.Data == "td" && hasClass(n, "cell") }) {
			v, _ := attr(c, "data-verdict")
			if hasClass(c, "not-counted") {
				v = "(" + v + ")"
			}
			cells = append(cells, v)
			for _, a := range find(c, func(n *xhtml.Node) bool { return n.Data == "a" }) {
				href, _ := attr(a, "href")
				if _, ok := s.Files[path.Join(StabilityDir, href)]; !ok {
					t.Errorf("cell link %s has no page", href)
				}
			}
		}
		got = append(got, rep+":"+strings.Join(cells, ","))
	}
	want := "1:VIOLATED,PRESERVED,VIOLATED 2:PRESERVED,PRESERVED,VIOLATED 3:(INSUFFICIENT_DATA),(INSUFFICIENT_DATA),(INSUFFICIENT_DATA) 3:VIOLATED,PRESERVED,VIOLATED"
	if strings.Join(got, " ") != want {
		t.Errorf("%s: fault arm's grid\n%s\nwant\n%s", page, strings.Join(got, " "), want)
	}
	var outcomes []string
	for _, c := range find(grids[0], func(n *xhtml.Node) bool { return hasClass(n, "stability-outcome") }) {
		o, _ := attr(c, "data-outcome")
		outcomes = append(outcomes, o)
	}
	if strings.Join(outcomes, ",") != "flaky,PRESERVED,VIOLATED" {
		t.Errorf("%s: outcomes %v", page, outcomes)
	}

	// A run page says its repetition and links its scenario's page.
	rdoc := parse(t, s.Files[RunsDir+"/"+record.SafeName(filepathBase(t, s))+"--pod-network-cut-fault-rep2.html"])
	if r := byID(rdoc, "repetition"); r == nil || text(r) != "2" {
		t.Error("the run page does not say its repetition")
	}
	if p := byID(rdoc, "stability-page"); p == nil || len(find(p, func(n *xhtml.Node) bool {
		href, _ := attr(n, "href")
		return n.Data == "a" && href == "../"+page
	})) != 1 {
		t.Error("the run page does not link its scenario's stability page")
	}
}

// filepathBase is the name of the one run folder the site's run pages
// are of.
func filepathBase(t *testing.T, s *Site) string {
	t.Helper()
	for name := range s.Files {
		if strings.HasPrefix(name, RunsDir+"/") && strings.HasSuffix(name, "--pod-network-cut-fault-rep2.html") {
			return strings.TrimSuffix(strings.TrimPrefix(name, RunsDir+"/"), "--pod-network-cut-fault-rep2.html")
		}
	}
	t.Fatal("no page of pod-network-cut's second repetition")
	return ""
}

// A site of runs that each ran once has no stability section, page or
// plot.
func TestNoStabilityWithoutRepetitions(t *testing.T) {
	s := buildSite(t, runFolder(t))
	if byID(parse(t, s.Files[IndexFile]), "stability") != nil {
		t.Error("the index has a stability section")
	}
	for name := range s.Files {
		if strings.HasPrefix(name, StabilityDir+"/") || name == StabilitySVGFile {
			t.Errorf("the site holds %s", name)
		}
	}
}

// The index's stability tables keep an application control's rows in a
// table of their own, between the positive controls and the null arms,
// as summary.md does: none is dropped.
func TestStabilityTablesKeepApplicationControls(t *testing.T) {
	row := func(scenario, role string) stabilityIndexRow {
		var r stabilityIndexRow
		r.Scenario, r.Role, r.Invariant = scenario, role, "single-history"
		return r
	}
	tables := stabilityTables([]stabilityIndexRow{
		row("cut", verdict.RoleFinding), row("cut", verdict.RoleNull),
		row("ledger-locked-cut", verdict.RoleApplication), row("control-damage", verdict.RoleControl),
	})
	var got []string
	for _, tb := range tables {
		for _, r := range tb.Rows {
			got = append(got, tb.Role+":"+r.Scenario)
		}
	}
	want := []string{verdict.RoleFinding + ":cut", verdict.RoleControl + ":control-damage", verdict.RoleApplication + ":ledger-locked-cut", verdict.RoleNull + ":cut"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("stability tables hold %v, want %v", got, want)
	}
}
