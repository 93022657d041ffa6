package html

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/reports/aggregate"
)

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

func answer(t *testing.T, v any, at time.Time) evidence.Answer {
	t.Helper()
	a, err := evidence.ValueAnswer(v, at, "")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// snap is one round: apiserver/cp1 answers worker1/ready (ready), and
// cri/worker1 answers statefulpod/running-here unless frozen, when it is
// unreadable; cri/worker1 is never asked worker1/ready.
func snap(t *testing.T, at time.Time, ready, frozen bool) evidence.Snapshot {
	s := evidence.NewSnapshot(at)
	s.Set("apiserver/cp1", "worker1/ready", answer(t, ready, at))
	if frozen {
		s.Set("cri/worker1", "statefulpod/running-here", evidence.UnreadableAnswer("timeout: no answer within 4s", at))
	} else {
		s.Set("cri/worker1", "statefulpod/running-here", answer(t, true, at))
	}
	s.Set("cri/worker1", "worker1/ready", evidence.NotAskedAnswer())
	return s
}

// runFolder is a run folder with a finding run (containerd frozen,
// single-copy VIOLATED at +4 s, graceful-deletion VIOLATED during the
// window without a moment), a positive control of only-controlled, and a
// null arm, each with evidence but the null arm's.
func runFolder(t *testing.T) string {
	t.Helper()
	f, err := record.NewFolder(t.TempDir(), "selftest", t0)
	if err != nil {
		t.Fatal(err)
	}
	finding := verdict.Run{
		RunID: "frozen-fault-1", Suite: "selftest", Scenario: "containerd-frozen", Arm: "fault", Role: verdict.RoleFinding,
		FaultClass: "process", FaultKind: "freeze", Started: t0, Ended: t0.Add(time.Minute), RunVerdict: verdict.RunJudged,
		Lab:       verdict.LabInfo{Name: "lab11", Kind: "local", KubernetesVersion: "v1.36.3", EtcdVersion: "v3.6.8", TimerProfile: "fast"},
		GitCommit: "abc123", ConfigHash: "sha256:feed", Emulation: "emulated: a frozen process in a test",
		Load: []verdict.Load{{At: t0, One: 1.5, Five: 2, Fifteen: 3}, {At: t0.Add(time.Minute), One: 4.25, Five: 2, Fifteen: 3}},
		Judgements: []verdict.Judgement{
			{Invariant: "single-copy", Phase: verdict.Safety, Verdict: verdict.Violated, Reason: "two pods ran", At: t0.Add(14 * time.Second), During: "window", Exercised: verdict.Exercised()},
			{Invariant: "graceful-deletion", Phase: verdict.Safety, Verdict: verdict.Violated, Reason: "deleted early", During: "window"},
			{Invariant: "convergence", Phase: verdict.Convergence, Verdict: verdict.Preserved, Reason: "settled", Exercised: verdict.NotExercised()},
		},
	}
	control := verdict.Run{
		RunID: "control-1", Suite: "selftest", Scenario: "control-breaks-it", Arm: "fault", Role: verdict.RoleControl, ControlOf: []string{"only-controlled"},
		Started: t0.Add(2 * time.Minute), Ended: t0.Add(3 * time.Minute), RunVerdict: verdict.RunJudged,
		Judgements: []verdict.Judgement{{Invariant: "only-controlled", Phase: verdict.Safety, Verdict: verdict.Violated, Reason: "broken on purpose"}},
	}
	null := verdict.Run{
		RunID: "frozen-null-1", Suite: "selftest", Scenario: "containerd-frozen", Arm: "null", Role: verdict.RoleNull,
		Started: t0.Add(4 * time.Minute), Ended: t0.Add(5 * time.Minute), RunVerdict: verdict.RunJudged,
		Judgements: []verdict.Judgement{{Invariant: "single-copy", Phase: verdict.Safety, Verdict: verdict.Preserved, Reason: "one pod"}},
	}
	for _, r := range []verdict.Run{finding, control, null} {
		if err := f.AppendRun(r); err != nil {
			t.Fatal(err)
		}
	}
	// Baseline at +0, pre-fault +2, window +10..+20 (fault at +10, heal
	// at +20), settle +22, final +24.
	base := snap(t, t0, true, false)
	rec := evidence.Record{
		Baseline: &base,
		PreFault: []evidence.Snapshot{snap(t, t0.Add(2*time.Second), true, false)},
		Window:   []evidence.Snapshot{snap(t, t0.Add(10*time.Second), true, true), snap(t, t0.Add(15*time.Second), false, true)},
		Settle:   []evidence.Snapshot{snap(t, t0.Add(22*time.Second), true, false)},
		Timeline: evidence.Timeline{
			{At: t0.Add(10 * time.Second), Source: "faultline", Subject: "scenario/containerd-frozen", Kind: invariant.FaultInjectedEvent, Detail: "freeze worker1 containerd"},
			{At: t0.Add(12 * time.Second), Source: "apiserver/cp1", Subject: "node/worker1", Kind: "ready-unknown"},
			evidence.Event{At: t0.Add(16 * time.Second), Source: "apiserver/cp1", Subject: "pod/faultline/web-1", Kind: "pod-created", Detail: "uid u9", Replayed: true}.
				WithCluster(t0.Add(11*time.Second), "metadata.creationTimestamp", evidence.Seconds),
			{At: t0.Add(20 * time.Second), Source: "faultline", Subject: "scenario/containerd-frozen", Kind: invariant.HealStartedEvent},
			{At: t0.Add(21 * time.Second), Source: "faultline", Subject: "scenario/containerd-frozen", Kind: invariant.FaultHealedEvent},
		},
	}
	final := snap(t, t0.Add(24*time.Second), true, false)
	rec.Final = &final
	if err := f.WriteEvidence(finding.RunID, rec); err != nil {
		t.Fatal(err)
	}
	ctl := evidence.Record{Baseline: &base}
	if err := f.WriteEvidence(control.RunID, ctl); err != nil {
		t.Fatal(err)
	}
	return f.Dir
}

func parse(t *testing.T, b []byte) *xhtml.Node {
	t.Helper()
	doc, err := xhtml.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("page does not parse as HTML: %v", err)
	}
	return doc
}

func attr(n *xhtml.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *xhtml.Node, class string) bool {
	c, _ := attr(n, "class")
	for _, f := range strings.Fields(c) {
		if f == class {
			return true
		}
	}
	return false
}

// find returns the elements, in document order, for which match holds.
func find(n *xhtml.Node, match func(*xhtml.Node) bool) []*xhtml.Node {
	var out []*xhtml.Node
	var walk func(*xhtml.Node)
	walk = func(n *xhtml.Node) {
		if n.Type == xhtml.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func text(n *xhtml.Node) string {
	var b strings.Builder
	var walk func(*xhtml.Node)
	walk = func(n *xhtml.Node) {
		if n.Type == xhtml.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func byID(doc *xhtml.Node, id string) *xhtml.Node {
	els := find(doc, func(n *xhtml.Node) bool { v, _ := attr(n, "id"); return v == id })
	if len(els) != 1 {
		return nil
	}
	return els[0]
}

func buildSite(t *testing.T, dir string) *Site {
	t.Helper()
	s, err := Build([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runPageOf(t *testing.T, s *Site, dir, runID string) *xhtml.Node {
	t.Helper()
	name := RunsDir + "/" + filepath.Base(dir) + "--" + runID + ".html"
	b, ok := s.Files[name]
	if !ok {
		var names []string
		for n := range s.Files {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Fatalf("site has no %s; it has %v", name, names)
	}
	return parse(t, b)
}

func TestRunPageTimeline(t *testing.T) {
	dir := runFolder(t)
	s := buildSite(t, dir)
	doc := runPageOf(t, s, dir, "frozen-fault-1")
	if len(find(doc, func(n *xhtml.Node) bool { return n.Data == "script" })) > 0 {
		t.Error("run page has a script")
	}
	for _, el := range find(doc, func(n *xhtml.Node) bool { _, ok := attr(n, "src"); return ok }) {
		t.Errorf("run page loads %s from elsewhere", el.Data)
	}

	// One lane per source and question asked; cri/worker1 was never asked
	// worker1/ready, so that pair has none.
	var lanes []string
	laneEls := find(doc, func(n *xhtml.Node) bool { return n.Data == "g" && hasClass(n, "lane") })
	for _, l := range laneEls {
		src, _ := attr(l, "data-source")
		q, _ := attr(l, "data-question")
		lanes = append(lanes, src+" "+q)
	}
	want := []string{"apiserver/cp1 worker1/ready", "cri/worker1 statefulpod/running-here"}
	if strings.Join(lanes, ",") != strings.Join(want, ",") {
		t.Errorf("lanes = %v, want %v", lanes, want)
	}
	// The runtime's lane is unreadable for the window, shaded, with the
	// reason in its tooltip, and readable on both sides of it.
	cri := laneEls[1]
	var states []string
	for _, r := range find(cri, func(n *xhtml.Node) bool { return n.Data == "rect" }) {
		c, _ := attr(r, "class")
		states = append(states, c)
		if c == "unreadable" && !strings.Contains(text(r), "timeout: no answer within 4s") {
			t.Errorf("unreadable stretch's tooltip %q lacks the reason", text(r))
		}
	}
	if strings.Join(states, ",") != "value,unreadable,value" {
		t.Errorf("cri lane stretches = %v, want value,unreadable,value", states)
	}
	// The API server's lane changes value twice (ready, not ready, ready).
	if n := len(find(laneEls[0], func(n *xhtml.Node) bool { return n.Data == "line" && hasClass(n, "change") })); n != 2 {
		t.Errorf("apiserver lane has %d value changes, want 2", n)
	}

	// Marks, spans and events.
	for _, kind := range []string{"inject", "heal", "healed"} {
		if len(find(doc, func(n *xhtml.Node) bool { v, _ := attr(n, "data-mark"); return v == kind })) != 1 {
			t.Errorf("no %s mark", kind)
		}
	}
	spans := map[string]*xhtml.Node{}
	for _, sp := range find(doc, func(n *xhtml.Node) bool { _, ok := attr(n, "data-span"); return ok }) {
		v, _ := attr(sp, "data-span")
		spans[v] = sp
	}
	for _, name := range []string{"pre-fault", "window", "heal", "settle"} {
		if spans[name] == nil {
			t.Errorf("no %s span", name)
		}
	}
	if w := spans["window"]; w != nil && !strings.Contains(text(w), "window +0.0s to +10.0s") {
		t.Errorf("window span says %q, want it from the injection to the heal", text(w))
	}
	if n := len(find(doc, func(n *xhtml.Node) bool { return n.Data == "path" && hasClass(n, "event") })); n != 5 {
		t.Errorf("%d events drawn, want 5", n)
	}
	// The replayed creation is drawn apart, and says when the cluster
	// recorded it, in its tooltip and in the event table.
	replayed := find(doc, func(n *xhtml.Node) bool { return n.Data == "path" && hasClass(n, "replayed") })
	if len(replayed) != 1 || !strings.Contains(text(replayed[0]), "the cluster recorded it at 10:00:11 UTC (metadata.creationTimestamp, 5s before it was seen)") ||
		!strings.Contains(text(replayed[0]), "replayed by a relisting") {
		t.Errorf("replayed events drawn: %d, tooltip %q", len(replayed), func() string {
			if len(replayed) > 0 {
				return text(replayed[0])
			}
			return ""
		}())
	}
	rowsReplayed := find(byID(doc, "event-table"), func(n *xhtml.Node) bool { return n.Data == "tr" && hasClass(n, "replayed") })
	if len(rowsReplayed) != 1 || !strings.Contains(text(rowsReplayed[0]), "pod-created (replayed)") || !strings.Contains(text(rowsReplayed[0]), "at 10:00:11 UTC") {
		t.Errorf("event table's replayed rows: %d", len(rowsReplayed))
	}

	// The VIOLATED moments: single-copy's a line at its moment,
	// graceful-deletion's the window it names; convergence (PRESERVED)
	// none.
	viol := map[string]*xhtml.Node{}
	for _, v := range find(doc, func(n *xhtml.Node) bool { return hasClass(n, "violated") }) {
		inv, _ := attr(v, "data-invariant")
		viol[inv] = v
	}
	if len(viol) != 2 {
		t.Errorf("violated marks for %v, want single-copy and graceful-deletion", viol)
	}
	if v := viol["single-copy"]; v == nil || v.Data != "line" || !strings.Contains(text(v), "VIOLATED at +4.0s") {
		t.Errorf("single-copy's moment is not marked as a line at +4.0s")
	}
	if v := viol["graceful-deletion"]; v == nil || v.Data != "rect" || !strings.Contains(text(v), "during the window") {
		t.Errorf("graceful-deletion's window is not marked")
	}

	// Every verdict in a row under the lanes: single-copy with a dot at
	// its moment and an outline over the window it names, convergence
	// with neither.
	vrows := map[string]*xhtml.Node{}
	for _, r := range find(doc, func(n *xhtml.Node) bool { return n.Data == "g" && hasClass(n, "verdict-row") }) {
		inv, _ := attr(r, "data-invariant")
		vrows[inv] = r
	}
	count := func(n *xhtml.Node, class string) int {
		return len(find(n, func(n *xhtml.Node) bool { return hasClass(n, class) }))
	}
	if len(vrows) != 3 {
		t.Errorf("%d verdict rows, want 3", len(vrows))
	} else {
		if v, _ := attr(vrows["single-copy"], "data-verdict"); v != "VIOLATED" || count(vrows["single-copy"], "vat") != 1 || count(vrows["single-copy"], "vspan") != 1 {
			t.Errorf("single-copy's row lacks its verdict, moment or window")
		}
		if count(vrows["convergence"], "vat")+count(vrows["convergence"], "vspan") != 0 {
			t.Errorf("convergence's row marks a moment it does not have")
		}
	}

	// Provenance and the verdict table beside the timeline.
	page := text(doc)
	for _, want := range []string{"v1.36.3", "v3.6.8", "fast", "abc123", "sha256:feed", "1.50/2.00/3.00 → 4.25/2.00/3.00"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if r := byID(doc, "role"); r == nil || text(r) != "finding" {
		t.Errorf("run page does not give the role finding")
	}
	vt := byID(doc, "verdict-table")
	if vt == nil {
		t.Fatal("no verdict table")
	}
	rows := find(vt, func(n *xhtml.Node) bool { _, ok := attr(n, "data-invariant"); return n.Data == "tr" && ok })
	if len(rows) != 3 || !strings.Contains(text(rows[0]), "two pods ran") || !strings.Contains(text(rows[2]), "no") {
		t.Errorf("verdict table rows = %d, want 3 with reasons and exercised", len(rows))
	}

	// Every SVG on the page is well-formed XML.
	for _, svg := range find(doc, func(n *xhtml.Node) bool { return n.Data == "svg" }) {
		var b bytes.Buffer
		if err := xhtml.Render(&b, svg); err != nil {
			t.Fatal(err)
		}
		checkXML(t, "timeline svg", b.Bytes())
	}
}

// The run page gives each phase's cadence as `faultline report
// --timeline` does: the window's two snapshots 5 s apart are 0.2 rounds
// per second, and the longest any source went without a value is the
// whole window (cri/worker1, unreadable throughout it, ties with
// apiserver/cp1 between its two answers; the first by name is named); a
// phase of one snapshot has no interval.
func TestRunPageCadence(t *testing.T) {
	dir := runFolder(t)
	s := buildSite(t, dir)
	doc := runPageOf(t, s, dir, "frozen-fault-1")
	table := byID(doc, "cadence-table")
	if table == nil {
		t.Fatal("no cadence table")
	}
	rows := map[string]string{}
	for _, r := range find(table, func(n *xhtml.Node) bool { _, ok := attr(n, "data-phase"); return n.Data == "tr" && ok }) {
		p, _ := attr(r, "data-phase")
		var cells []string
		for _, c := range find(r, func(n *xhtml.Node) bool { return n.Data == "td" }) {
			cells = append(cells, text(c))
		}
		rows[p] = strings.Join(cells, "|")
	}
	want := map[string]string{
		"pre-fault": "pre-fault|1|-|-|-|-",
		"window":    "window|2|0.20|5s|5s|5s (apiserver/cp1)",
		"settle":    "settle|1|-|-|-|-",
	}
	for p, w := range want {
		if rows[p] != w {
			t.Errorf("cadence of %s = %q, want %q", p, rows[p], w)
		}
	}
	if len(rows) != len(want) {
		t.Errorf("cadence rows %v, want the phases that took snapshots", rows)
	}
	// A run without evidence has no cadence to show.
	if byID(runPageOf(t, s, dir, "frozen-null-1"), "cadence-table") != nil {
		t.Error("a run without evidence shows a cadence table")
	}
}

func checkXML(t *testing.T, what string, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := dec.Token(); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			t.Fatalf("%s is not well-formed: %v", what, err)
		}
	}
}

func TestRunPageSaysTheFaultWasEmulated(t *testing.T) {
	dir := runFolder(t)
	s := buildSite(t, dir)
	e := byID(runPageOf(t, s, dir, "frozen-fault-1"), "emulation")
	if e == nil || text(e) != "Fault freeze, emulated: a frozen process in a test." {
		t.Errorf("the emulated run's page says %v", e)
	}
	if byID(runPageOf(t, s, dir, "control-1"), "emulation") != nil {
		t.Error("a run of a real fault says it was emulated")
	}
}

func TestRunPageWithoutEvidence(t *testing.T) {
	dir := runFolder(t)
	doc := runPageOf(t, buildSite(t, dir), dir, "frozen-null-1")
	if !strings.Contains(text(doc), "holds no evidence of this run") {
		t.Error("a run without evidence does not say so")
	}
	if byID(doc, "timeline-svg") != nil {
		t.Error("a run without evidence has a timeline")
	}
}

func TestIndexKeepsRolesApart(t *testing.T) {
	dir := runFolder(t)
	s := buildSite(t, dir)
	doc := parse(t, s.Files[IndexFile])
	findings := find(doc, func(n *xhtml.Node) bool { return n.Data == "table" && hasClass(n, "findings") })
	if len(findings) != 2 {
		t.Fatalf("%d findings tables, want by invariant and by scenario", len(findings))
	}
	for _, ft := range findings {
		txt := text(ft)
		if strings.Contains(txt, "only-controlled") || strings.Contains(txt, "control-breaks-it") {
			t.Errorf("findings table holds the control:\n%s", txt)
		}
	}
	if txt := text(findings[0]); !strings.Contains(txt, "single-copy") || !strings.Contains(txt, "1/1 = 100.0%") {
		t.Errorf("findings by invariant lack single-copy's 1/1:\n%s", txt)
	}
	// The rate's Wilson interval is drawn: 1/1 is [20.7%, 100%].
	rows := find(findings[0], func(n *xhtml.Node) bool {
		return n.Data == "tr" && n.FirstChild != nil && text(n.FirstChild) == "single-copy"
	})
	if len(rows) != 1 {
		t.Fatalf("findings by invariant have %d single-copy rows", len(rows))
	}
	bars := find(rows[0], func(n *xhtml.Node) bool { return n.Data == "rect" && hasClass(n, "interval") })
	if len(bars) == 0 {
		t.Fatal("no Wilson interval drawn")
	}
	if x, _ := attr(bars[0], "x"); !strings.HasPrefix(x, "37.") { // 4 + 0.2065*160
		t.Errorf("first interval starts at x=%s, want about 37 (20.7%%)", x)
	}
	ct := byID(doc, "control-table")
	if ct == nil || !strings.Contains(text(ct), "only-controlled") || !strings.Contains(text(ct), "hit") {
		t.Errorf("control table lacks the control's hit")
	}
	nulls := find(doc, func(n *xhtml.Node) bool { return n.Data == "table" && hasClass(n, "null-arms") })
	if len(nulls) != 2 || !strings.Contains(text(nulls[0]), "0/1 = 0.0%") {
		t.Errorf("null-arm tables lack the null arm's 0/1")
	}
	// A link to every run's page, each of which the site holds.
	links := find(byID(doc, "run-table"), func(n *xhtml.Node) bool { return n.Data == "a" })
	if len(links) != 3 {
		t.Errorf("%d run links, want 3", len(links))
	}
	for _, a := range links {
		href, _ := attr(a, "href")
		if _, ok := s.Files[href]; !ok {
			t.Errorf("link %s has no page", href)
		}
	}
	for _, f := range []string{RatesSVGFile, RatesPNGFile, RatesTeXFile, RatesCSVFile} {
		if len(s.Files[f]) == 0 {
			t.Errorf("site has no %s", f)
		}
	}
	checkXML(t, RatesSVGFile, s.Files[RatesSVGFile])
	if !bytes.HasPrefix(s.Files[RatesPNGFile], []byte("\x89PNG")) {
		t.Errorf("%s is not a PNG", RatesPNGFile)
	}
	if !bytes.Contains(s.Files[RatesSVGFile], []byte("single-copy (1/1)")) {
		t.Errorf("%s does not name single-copy with its count", RatesSVGFile)
	}
}

// The rate per scenario pools its invariants: containerd-frozen's finding
// has two VIOLATED and one PRESERVED. Both plots are on the index, inline,
// and in the site as SVG and PNG.
func TestRatePlotPerScenario(t *testing.T) {
	dir := runFolder(t)
	s := buildSite(t, dir)
	for _, f := range []string{ScenarioRatesSVGFile, ScenarioRatesPNGFile} {
		if len(s.Files[f]) == 0 {
			t.Fatalf("site has no %s", f)
		}
	}
	checkXML(t, ScenarioRatesSVGFile, s.Files[ScenarioRatesSVGFile])
	if !bytes.HasPrefix(s.Files[ScenarioRatesPNGFile], []byte("\x89PNG")) {
		t.Errorf("%s is not a PNG", ScenarioRatesPNGFile)
	}
	svg := string(s.Files[ScenarioRatesSVGFile])
	for _, want := range []string{"containerd-frozen (2/3)", "per scenario, over its invariants"} {
		if !strings.Contains(svg, want) {
			t.Errorf("%s lacks %q", ScenarioRatesSVGFile, want)
		}
	}
	if strings.Contains(svg, "single-copy") || strings.Contains(svg, "control-breaks-it") {
		t.Errorf("%s names an invariant or the control", ScenarioRatesSVGFile)
	}
	doc := parse(t, s.Files[IndexFile])
	figs := map[string]string{}
	for _, f := range find(doc, func(n *xhtml.Node) bool { return n.Data == "figure" && hasClass(n, "rate-plot") }) {
		by, _ := attr(f, "data-by")
		if len(find(f, func(n *xhtml.Node) bool { return n.Data == "svg" })) != 1 {
			t.Errorf("the %s figure holds no inline svg", by)
		}
		figs[by] = text(f)
	}
	if !strings.Contains(figs["invariant"], "single-copy (1/1)") || !strings.Contains(figs["scenario"], "containerd-frozen (2/3)") {
		t.Errorf("index figures %v, want the plot by invariant and by scenario", figs)
	}
	if _, err := RatePlot(&aggregate.Report{}, "suite", "svg"); err == nil {
		t.Error("a rate plot by suite was drawn; only invariant and scenario have one")
	}
}

func TestWriteSite(t *testing.T) {
	dir := runFolder(t)
	out := filepath.Join(t.TempDir(), "site")
	if err := WriteSite(out, []string{dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, IndexFile)); err != nil {
		t.Error(err)
	}
	pages, _ := filepath.Glob(filepath.Join(out, RunsDir, "*.html"))
	if len(pages) != 3 {
		t.Errorf("%d run pages written, want 3", len(pages))
	}
	// Writing again over the site replaces it.
	if err := WriteSite(out, []string{dir}); err != nil {
		t.Errorf("writing over a site: %v", err)
	}
}

func TestWriteSiteBadInput(t *testing.T) {
	good := runFolder(t)
	root := t.TempDir()
	empty := filepath.Join(root, "20261101T100000Z-empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "a-file")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	brokenEv := t.TempDir()
	f := &record.Folder{Dir: brokenEv}
	if err := f.AppendRun(verdict.Run{RunID: "r1", Scenario: "s", Arm: "fault", RunVerdict: verdict.RunJudged, Started: t0, Ended: t0,
		Judgements: []verdict.Judgement{{Invariant: "i", Phase: verdict.Safety, Verdict: verdict.Preserved, Reason: "ok"}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(brokenEv, record.EvidenceDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.EvidencePath("r1"), []byte(`{"kind":"nonsense"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		out     string
		folders []string
		want    []string
	}{
		{"folder without verdicts.jsonl", filepath.Join(root, "site1"), []string{empty}, []string{empty, "has no verdicts.jsonl"}},
		{"-o a file", file, []string{good}, []string{file, "is a file, not a directory"}},
		{"-o under no directory", filepath.Join(root, "no", "such"), []string{good}, []string{"is not a directory"}},
		{"malformed evidence", filepath.Join(root, "site2"), []string{brokenEv}, []string{brokenEv, "reading evidence of run r1", "unknown line kind"}},
		{"no folders", filepath.Join(root, "site3"), nil, []string{"no run folders given"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := WriteSite(c.out, c.folders)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if c.out == file {
				if b, _ := os.ReadFile(file); string(b) != "keep" {
					t.Errorf("the file -o named was changed: %q", b)
				}
			} else if _, err := os.Stat(c.out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was written: %v", c.out, err)
			}
		})
	}
}

// An application control's fault arm has tables of its own on the index,
// never the findings'.
func TestIndexShowsApplicationControlsApart(t *testing.T) {
	dir := runFolder(t)
	app := verdict.Run{
		RunID: "app-1", Suite: "selftest", Scenario: "containerd-frozen-correct-app", Arm: "fault", Role: verdict.RoleApplication,
		Started: t0.Add(6 * time.Minute), Ended: t0.Add(7 * time.Minute), RunVerdict: verdict.RunJudged,
		Judgements: []verdict.Judgement{{Invariant: "single-copy", Phase: verdict.Safety, Verdict: verdict.Preserved, Reason: "the application kept one"}},
	}
	if err := (&record.Folder{Dir: dir}).AppendRun(app); err != nil {
		t.Fatal(err)
	}
	doc := parse(t, buildSite(t, dir).Files[IndexFile])
	for _, ft := range find(doc, func(n *xhtml.Node) bool { return n.Data == "table" && hasClass(n, "findings") }) {
		if txt := text(ft); strings.Contains(txt, "correct-app") || strings.Contains(txt, "1/2 = 50.0%") {
			t.Errorf("findings table pools the application control:\n%s", txt)
		}
	}
	apps := find(doc, func(n *xhtml.Node) bool { return n.Data == "table" && hasClass(n, "application-controls") })
	if len(apps) != 2 || !strings.Contains(text(apps[0]), "0/1 = 0.0%") {
		t.Errorf("%d application-control tables, want 2 with single-copy's 0/1", len(apps))
	}
}
