// Package html renders run folders as a static site that works offline:
// a page per run (provenance, the verdict table, a timeline of the
// evidence drawn as SVG) and a page over all the runs given (findings,
// positive controls and null arms apart, rates with their Wilson
// intervals drawn, the applicability table, links to every run page),
// beside the figures and tables a paper takes: the findings' rate plot
// (SVG and PNG) and rate tables (LaTeX and CSV).
//
// Every page is one file with its style inline and no script; nothing is
// fetched when it is viewed. The one exception is porcupine's own drawing
// of a register writer's history, a page of its own beside the run's, with
// porcupine's script inline (it fetches nothing either). A suite can add
// pages over a whole run folder (WithFolderPages). Records are read through framework/record and
// tallied by reports/aggregate, as `faultline report` tallies them.
package html

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/reports/aggregate"
)

// Files of a site, beside the run pages under RunsDir.
const (
	IndexFile    = "index.html"
	RunsDir      = "runs"
	RatesSVGFile = "rates.svg"
	RatesPNGFile = "rates.png"
	// The rate per scenario, pooled over its invariants.
	ScenarioRatesSVGFile = "rates-by-scenario.svg"
	ScenarioRatesPNGFile = "rates-by-scenario.png"
	RatesTeXFile         = "rates.tex"
	RatesCSVFile         = "rates.csv"
)

//go:embed templates/*.tmpl templates/style.css
var templateFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"pct":     func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	"f1":      func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"secs":    func(v float64) string { return fmt.Sprintf("%.1f s", v) },
	"orDash":  orDash,
	"verdict": func(j verdict.Judgement) string { return reports.VerdictText(j) },
	"exercised": func(j verdict.Judgement) string {
		return reports.ExercisedText(j)
	},
	// vclass is a verdict's class (v-violated), of a verdict.Verdict or of
	// a stability's outcome, which is one where it is a verdict.
	"vclass":   func(v any) string { return "v-" + strings.ToLower(fmt.Sprint(v)) },
	"time":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 UTC") },
	"add":      func(a, b float64) float64 { return a + b },
	"sub":      func(a, b float64) float64 { return a - b },
	"loadText": reports.LoadText,
}).ParseFS(templateFS, "templates/*.tmpl"))

var style = func() template.CSS {
	b, err := fs.ReadFile(templateFS, "templates/style.css")
	if err != nil {
		panic(err)
	}
	return template.CSS(b)
}()

// Site is a rendered site: file name (slash-separated, relative to the
// site's directory) to content. Nothing is written until Write.
type Site struct {
	Files map[string][]byte
}

// WriteSite renders the run folders and writes the site into dir. dir is
// checked first and every folder read and rendered before anything is
// written, so bad input writes nothing.
func WriteSite(dir string, folders []string, opts ...Option) error {
	if err := checkOutputDir(dir); err != nil {
		return err
	}
	s, err := Build(folders, opts...)
	if err != nil {
		return err
	}
	return s.Write(dir)
}

// checkOutputDir accepts a directory, or a path that does not exist yet
// under an existing directory.
func checkOutputDir(dir string) error {
	if dir == "" {
		return errors.New("html report: no output directory given (-o DIR)")
	}
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("html report: -o %s is a file, not a directory: give a directory for the site", dir)
	case err == nil:
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("html report: -o %s: %w", dir, err)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if pst, err := os.Stat(parent); err != nil || !pst.IsDir() {
		return fmt.Errorf("html report: -o %s: its parent %s is not a directory", dir, parent)
	}
	return nil
}

// Write writes the site's files into dir, making it if needed; files of
// an earlier site of the same names are overwritten, others left.
func (s *Site) Write(dir string) error {
	if err := checkOutputDir(dir); err != nil {
		return err
	}
	names := make([]string, 0, len(s.Files))
	for n := range s.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("html report: %w", err)
		}
		if err := os.WriteFile(path+".tmp", s.Files[n], 0o644); err != nil {
			return fmt.Errorf("html report: %w", err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return fmt.Errorf("html report: %w", err)
		}
	}
	return nil
}

// runPage is one run and where its page goes.
type runPage struct {
	aggregate.Record
	Folder string
	// Href is the page's path from the site's root.
	Href string
}

// Build reads the run folders (as `faultline report` reads them: a
// malformed record is an error naming its file and line) and every run's
// evidence, and renders the site, with the folder pages the options add.
func Build(folders []string, opts ...Option) (*Site, error) {
	var o buildOptions
	for _, opt := range opts {
		opt(&o)
	}
	in, err := aggregate.ReadRunFolders(folders)
	if err != nil {
		return nil, err
	}
	if len(in.Records) == 0 {
		return nil, fmt.Errorf("html report: the run folders given (%s) hold no finished run", strings.Join(folders, ", "))
	}
	rep, err := aggregate.Build(in, aggregate.DefaultGroupings)
	if err != nil {
		return nil, err
	}
	site := &Site{Files: map[string][]byte{}}
	runs := make([]runPage, 0, len(in.Records))
	for _, r := range in.Records {
		folder := filepath.Dir(r.File)
		runs = append(runs, runPage{Record: r, Folder: folder,
			Href: RunsDir + "/" + record.SafeName(filepath.Base(folder)) + "--" + record.SafeName(r.RunID) + ".html"})
	}
	seen := map[string]bool{}
	for _, rp := range runs {
		if seen[rp.Href] {
			return nil, fmt.Errorf("html report: %s: run %s of folder %s has the page of another run given; give folders of different names", rp.Where(), rp.RunID, filepath.Base(rp.Folder))
		}
		seen[rp.Href] = true
	}
	folderLinks, byRun, err := addFolderPages(site, o, folders, runs)
	if err != nil {
		return nil, err
	}
	for _, rp := range runs {
		var links []folderLink
		for _, l := range byRun[rp.Href] {
			l.Href = "../" + l.Href
			links = append(links, l)
		}
		stability := ""
		if rep.Repeated {
			stability = stabilityLink(rp)
		}
		b, beside, err := renderRun(rp, links, stability)
		if err != nil {
			return nil, err
		}
		site.Files[rp.Href] = b
		for name, content := range beside {
			site.Files[name] = content
		}
	}
	figs, err := addFigures(site, rep)
	if err != nil {
		return nil, err
	}
	var stab *stabilityIndex
	if rep.Repeated {
		rows, err := addStabilityPages(site, rep, runs)
		if err != nil {
			return nil, err
		}
		plot, err := addStabilityPlot(site, rep)
		if err != nil {
			return nil, err
		}
		stab = &stabilityIndex{Tables: stabilityTables(rows), Plot: plot}
	}
	idx, err := renderIndex(rep, runs, figs, folderLinks, stab)
	if err != nil {
		return nil, err
	}
	site.Files[IndexFile] = idx
	return site, nil
}

// runView is what a run page shows.
type runView struct {
	Style template.CSS
	Run   runPage
	// Record is where the run record was read, from the run folder's
	// name: the page says nothing of the machine it was made on.
	Record string
	// Controls names the invariants a control run must break, each with
	// the violation kinds that count as its hit (reports.ControlledText).
	Controls string
	Role     string
	Load     string
	Effect   string
	Timings  []timing
	Timeline *runTimeline
	Cadence  []cadenceRow
	Register *registerView
	// Folders are the folder pages that draw this run beside others.
	Folders []folderLink
	// Stability is the page of the run's scenario over its repetitions;
	// "" when the site's runs are not repeated.
	Stability  string
	NoEvidence string
	Events     []eventRow
	Violated   int
}

// cadenceRow is how often one phase's snapshots came, as `faultline report
// --timeline` prints it.
type cadenceRow struct {
	Phase     string
	Snapshots int
	// PerSecond is rounds per second over the phase: intervals between
	// its first and last tick over the time between them.
	PerSecond, Median, Max, Slowest string
}

// cadenceRows measures each phase of a record that took snapshots; a
// phase of fewer than two has no interval to measure and says so.
func cadenceRows(rec evidence.Record) []cadenceRow {
	var out []cadenceRow
	for _, ph := range []struct {
		name  string
		snaps []evidence.Snapshot
	}{{partPreFault, rec.PreFault}, {partWindow, rec.Window}, {partHeal, rec.Heal}, {partSettle, rec.Settle}} {
		c := evidence.CadenceOf(ph.snaps)
		row := cadenceRow{Phase: ph.name, Snapshots: c.Snapshots, PerSecond: "-", Median: "-", Max: "-", Slowest: "-"}
		if c.Snapshots >= 2 {
			first, last := ph.snaps[0].Taken, ph.snaps[0].Taken
			for _, s := range ph.snaps {
				if s.Taken.Before(first) {
					first = s.Taken
				}
				if s.Taken.After(last) {
					last = s.Taken
				}
			}
			if span := last.Sub(first); span > 0 {
				row.PerSecond = fmt.Sprintf("%.2f", float64(c.Snapshots-1)/span.Seconds())
			}
			row.Median, row.Max = c.Median.Round(10*time.Millisecond).String(), c.Max.Round(10*time.Millisecond).String()
			if c.SlowestSource != "" {
				row.Slowest = fmt.Sprintf("%s (%s)", c.SourceMax.Round(10*time.Millisecond), c.SlowestSource)
			}
		}
		if c.Snapshots > 0 {
			out = append(out, row)
		}
	}
	return out
}

type timing struct {
	Phase   string
	Seconds float64
}

type eventRow struct {
	Offset string
	// Cluster says when the cluster recorded the event (clusterText).
	Cluster string
	evidence.Event
}

// timingOrder is the engine's phases in the order they run.
var timingOrder = []string{"reset", "pre-fault", "inject", "window", "heal", "settle"}

// renderRun renders a run's page, and the files beside it (porcupine's
// drawing of the register writer's history, when the run has one), by
// their names in the site.
func renderRun(rp runPage, folders []folderLink, stability string) ([]byte, map[string][]byte, error) {
	beside := map[string][]byte{}
	v := runView{Style: style, Run: rp, Folders: folders, Stability: stability, Record: fmt.Sprintf("%s:%d", filepath.Join(filepath.Base(rp.Folder), filepath.Base(rp.File)), rp.Line), Role: rp.RunRole(), Load: reports.LoadText(rp.Load), Effect: reports.EffectText(rp.Effect)}
	if v.Role == verdict.RoleControl {
		v.Controls = reports.ControlledText(rp.Run)
	}
	seen := map[string]bool{}
	for _, p := range timingOrder {
		if s, ok := rp.Timings[p]; ok {
			v.Timings = append(v.Timings, timing{p, s})
			seen[p] = true
		}
	}
	var rest []string
	for p := range rp.Timings {
		if !seen[p] {
			rest = append(rest, p)
		}
	}
	sort.Strings(rest)
	for _, p := range rest {
		v.Timings = append(v.Timings, timing{p, rp.Timings[p]})
	}
	for _, j := range rp.Judgements {
		if j.Verdict == verdict.Violated {
			v.Violated++
		}
	}
	rec, err := record.ReadEvidence(rp.Folder, rp.RunID)
	switch {
	case errors.Is(err, os.ErrNotExist):
		v.NoEvidence = fmt.Sprintf("The folder holds no evidence of this run (%s).", filepath.Join(record.EvidenceDir, record.SafeName(rp.RunID)+".jsonl"))
	case err != nil:
		return nil, nil, fmt.Errorf("%s: %w", rp.Folder, err)
	default:
		if v.Timeline, err = buildTimeline(rp.Run, rec); err != nil {
			return nil, nil, fmt.Errorf("html report: run %s: %w", rp.RunID, err)
		}
		v.Cadence = cadenceRows(rec)
		origin := time.Time{}
		if v.Timeline != nil {
			origin = v.Timeline.Origin
		}
		name := registerHref(rp.Href)
		var page []byte
		v.Register, page = registerPage(rec, origin, path.Base(name))
		if page != nil {
			beside[name] = page
		}
		if v.Timeline == nil {
			v.NoEvidence = "The run's evidence holds neither snapshots nor events."
		}
		for _, e := range rec.Timeline.Sorted() {
			row := eventRow{Event: e, Cluster: clusterText(e)}
			if v.Timeline != nil {
				row.Offset = offset(e.At, v.Timeline.Origin)
			}
			v.Events = append(v.Events, row)
		}
	}
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, "run.tmpl", v); err != nil {
		return nil, nil, fmt.Errorf("html report: rendering run %s: %w", rp.RunID, err)
	}
	return b.Bytes(), beside, nil
}

// indexView is what the page over every run shows.
type indexView struct {
	Style        template.CSS
	Report       *aggregate.Report
	Findings     []tableView
	Applications []tableView
	NullArms     []tableView
	Controls     []controlView
	Runs         []runRow
	Figures      []string
	Plots        []figure
	Folders      []folderLink
	// Stability is the stability over repetitions; nil when no scenario ×
	// arm ran more than once.
	Stability *stabilityIndex
}

// stabilityIndex is the index's stability section: a table per role,
// each row linked to its scenario's page, and the findings' plot.
type stabilityIndex struct {
	Tables []stabilityTable
	Plot   figure
}

type tableView struct {
	Title   string
	Columns []string
	Rows    []rowView
	Notes   []string
	Null    bool
	// Class names the table's role: findings, application-controls or
	// null-arms.
	Class string
	// Repeated: the runs are repeated, and a column names each row's
	// flaky verdicts.
	Repeated bool
}

type rowView struct {
	Key       []string
	Tally     reports.Tally
	Rate      string
	Exercised string
	Kinds     string
	Other     string
	Excluded  int
	Runs      int
	// Bar is nil where nothing counts, and where the rate pools the
	// repetitions of several scenarios (no interval to draw).
	Bar   *wilsonBar
	Flaky string
}

// wilsonBar is a rate and its 95% Wilson interval, on a 0–100% scale
// BarWidth wide.
type wilsonBar struct {
	P, Lo, Hi float64
	X, X0, X1 float64
}

// BarWidth is the width of the drawn rate scale.
const BarWidth = 160.0

func newBar(r verdict.Rate) *wilsonBar {
	p, ok := r.Value()
	if !ok {
		return nil
	}
	lo, hi, _ := r.Wilson()
	return &wilsonBar{P: p, Lo: lo, Hi: hi, X: 4 + p*BarWidth, X0: 4 + lo*BarWidth, X1: 4 + hi*BarWidth}
}

type controlView struct {
	aggregate.Control
	Href string
}

type runRow struct {
	runPage
	Role   string
	Counts string
	// Repeated: the index shows each run's repetition.
	Repeated bool
}

func renderIndex(rep *aggregate.Report, runs []runPage, plots []figure, folders []folderLink, stability *stabilityIndex) ([]byte, error) {
	href := map[string]string{}
	for _, rp := range runs {
		href[rp.Where()] = rp.Href
	}
	v := indexView{Style: style, Report: rep, Figures: []string{RatesSVGFile, RatesPNGFile, ScenarioRatesSVGFile, ScenarioRatesPNGFile, RatesTeXFile, RatesCSVFile}, Plots: plots, Folders: folders, Stability: stability}
	if stability != nil {
		v.Figures = append(v.Figures, StabilitySVGFile, StabilityPNGFile)
	}
	for _, t := range rep.Findings {
		v.Findings = append(v.Findings, newTableView(t, rep.Repeated))
	}
	for _, t := range rep.Applications {
		v.Applications = append(v.Applications, newTableView(t, rep.Repeated))
	}
	for _, t := range rep.NullArms {
		v.NullArms = append(v.NullArms, newTableView(t, rep.Repeated))
	}
	for _, c := range rep.Controls {
		v.Controls = append(v.Controls, controlView{Control: c, Href: href[c.Record.Where()]})
	}
	for _, rp := range runs {
		counts := map[verdict.Verdict]int{}
		for _, j := range rp.Judgements {
			counts[j.Verdict]++
		}
		var parts []string
		for _, k := range verdict.All {
			if counts[k] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
			}
		}
		v.Runs = append(v.Runs, runRow{runPage: rp, Role: rp.RunRole(), Counts: orDash(strings.Join(parts, ", ")), Repeated: rep.Repeated})
	}
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, "index.tmpl", v); err != nil {
		return nil, fmt.Errorf("html report: rendering the index: %w", err)
	}
	return b.Bytes(), nil
}

func newTableView(t aggregate.Table, repeated bool) tableView {
	tv := tableView{Title: t.Title(), Notes: t.Notes, Null: t.Role == verdict.RoleNull, Repeated: repeated,
		Class: map[string]string{verdict.RoleNull: "null-arms", verdict.RoleApplication: "application-controls"}[t.Role]}
	if tv.Class == "" {
		tv.Class = "findings"
	}
	showArm := t.ShowArm()
	first := 1
	if showArm {
		first = 0
	}
	tv.Columns = t.Columns[first:]
	for _, r := range t.Rows {
		rv := rowView{Key: r.Key[first:], Tally: r.Tally, Rate: reports.PooledRateText(r.Tally.Rate, r.Pool), Exercised: r.Tally.ExercisedRateText(),
			Kinds: orDash(r.Tally.ViolationKinds()), Other: otherCounts(r.Tally.Other), Excluded: r.Excluded, Runs: r.Runs, Flaky: orDash(t.FlakyText(r))}
		if ex, ok := r.Tally.ExercisedRate(); ok {
			rv.Exercised = reports.PooledRateText(ex, r.Pool)
		}
		if !r.Pool.PoolsRepetitions() {
			rv.Bar = newBar(r.Tally.Rate)
		}
		tv.Rows = append(tv.Rows, rv)
	}
	return tv
}

func otherCounts(m map[verdict.Verdict]int) string {
	var parts []string
	for _, v := range verdict.All {
		if m[v] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, m[v]))
		}
	}
	return orDash(strings.Join(parts, ", "))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
