package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/faultline/faultline"

// pkg is what the rules need of one package: its path inside the module,
// its direct and transitive imports inside the module (non-test files
// only), the direct imports inside the module of its test files (its own
// package's and the external test package's), whether it registers a lab
// backend, and whether it is a test helper (its non-test files import
// "testing": it is linked only into tests).
type pkg struct {
	Path        string
	Imports     []string
	Deps        []string
	TestImports []string
	Backend     bool
	FromTest    bool
	TestHelper  bool
}

// under reports whether p is prefix or a package below it.
func under(p, prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }

// suiteOf is the suite a package under suites/ belongs to (suites/drills
// for suites/drills/report), or "" for a package under no suite.
func suiteOf(p string) string {
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 2 || parts[0] != "suites" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// kitOf is the kit a package under kits/ belongs to (kits/dataplane for
// kits/dataplane/readers), or "" for a package under no kit.
func kitOf(p string) string {
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 2 || parts[0] != "kits" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

func anyUnder(p string, prefixes ...string) bool {
	for _, pre := range prefixes {
		if under(p, pre) {
			return true
		}
	}
	return false
}

// violations applies the layering rules to the packages and returns one
// line per broken rule. Only non-test imports count but for the rule on
// suites importing suites: a test may link what it exercises (the
// engine's self-test links the renderers to check the summary it
// writes). A test helper's own imports count as a test's, so the rules
// below apply to it only through the first one.
//
//   - No package but a test helper depends on a test helper: they import
//     "testing" and start real processes for tests, and are linked only
//     into tests.
//   - No package of internal/ depends on framework, kits, suites,
//     reports or fixtures, a test helper no more than any other: internal/ holds
//     helpers below every layer that uses them (building the project's
//     programs, a headless browser, real components on loopback); a
//     helper of one layer lives beside what it helps
//     (framework/verdict/verdicttest, framework/evidence/internal/realcluster).
//   - lab/... depends on nothing of framework, kits, suites, reports,
//     fixtures or cmd: the lab layer is at the bottom.
//   - lab/... depends on a package of internal/ only if that package
//     depends on nothing of the module (a leaf, such as internal/gobuild):
//     what the lab layer needs of its own lives under lab.
//   - A backend (a package that registers a lab kind, and everything
//     below it) depends on no framework and no fixtures.
//   - lab/local/internal/... (the local lab's parts: host namespaces,
//     processes, supervision, component configs) depends on no
//     lab/local: the life cycle is built on the parts, not the reverse.
//   - framework/... depends on no suite, no reports, no cmd, and on no
//     backend: it sees labs through package lab only.
//   - framework/... (the core) depends on no kit: a kit builds on the
//     core, and a mechanism only some experiments use never makes every
//     experiment link it.
//   - framework/... depends on no package of fixtures/ but
//     fixtures/history, the history format every workload keeps (the
//     register writer's log line is evidence.RegisterOp): a workload's
//     own format (a ledger's log, a database, an elector's history) is
//     read by the kit of its mechanism.
//   - kits/... depend on no suite, no reports, no cmd and no backend: a
//     kit is a mechanism any suite may use, below them all.
//   - No package of a kit (kits/<name>/...) depends on a package of
//     another kit, from its non-test files or its tests: what two kits
//     share is core, and lives in framework.
//   - reports/... depends on no suite, no cmd and no backend: it reads
//     records and renders them.
//   - fixtures/... depends on no framework, kit, suite, reports or cmd.
//   - suites/... depend on no cmd, and import no backend directly: they
//     link lab/backends.
//   - No package of a suite (suites/<name>/...) imports a package of
//     another suite, from its non-test files or its tests (a suite's
//     table lives in its test files): what two suites share (a lab's
//     topology, its timers, a window's mechanism) lives below them, in
//     lab or framework. A suite's own packages import one another
//     (suites/drills/report imports suites/drills).
//   - cmd/... imports a suite only by blank import: checked on the
//     source files by cmdViolations, below, since the import's name is
//     not in the package list.
func violations(pkgs []pkg) []string {
	var backends []string
	for _, p := range pkgs {
		if p.Backend {
			backends = append(backends, p.Path)
		}
	}
	isBackend := func(p string) bool { return anyUnder(p, backends...) }
	byPath := map[string]pkg{}
	for _, p := range pkgs {
		byPath[p.Path] = p
	}
	// A package the listing did not find counts as depending on the
	// module: the rule then fires rather than passes unseen.
	isLeaf := func(p string) bool {
		q, ok := byPath[p]
		return ok && len(q.Deps) == 0
	}
	var out []string
	bad := func(p pkg, dep, why string) {
		out = append(out, fmt.Sprintf("%s depends on %s: %s", p.Path, dep, why))
	}
	for _, p := range pkgs {
		if under(p.Path, "internal") {
			for _, d := range p.Deps {
				if anyUnder(d, "framework", "kits", "suites", "reports", "fixtures") {
					bad(p, d, "internal/ is below the framework, the kits, the suites, the renderers and the fixtures; a helper of one of them lives beside it")
				}
			}
		}
		if p.TestHelper {
			continue
		}
		for _, d := range p.Deps {
			switch {
			case byPath[d].TestHelper:
				bad(p, d, "a test helper is linked only into tests")
			case p.Path == "fixtures/history":
				bad(p, d, "the history package imports nothing of the module: the workloads that write histories and the checkers that read them both link it alone")
			case under(p.Path, "lab") && anyUnder(d, "framework", "kits", "suites", "reports", "fixtures", "cmd"):
				bad(p, d, "the lab layer is below the framework, the kits, the suites and the fixtures")
			case under(p.Path, "lab") && under(d, "internal") && !isLeaf(d):
				bad(p, d, "the lab layer uses only leaf packages of internal/; what it needs of its own lives under lab")
			case isBackend(p.Path) && anyUnder(d, "framework", "fixtures"):
				bad(p, d, "a backend knows no framework and no fixtures")
			case under(p.Path, "lab/local/internal") && d == "lab/local":
				bad(p, d, "the local lab's parts are below its life cycle")
			case under(p.Path, "framework") && anyUnder(d, "suites", "reports", "cmd"):
				bad(p, d, "the framework is below the suites and the renderers")
			case under(p.Path, "framework") && isBackend(d):
				bad(p, d, "the framework sees labs through package lab only, never a backend")
			case under(p.Path, "framework") && under(d, "kits"):
				bad(p, d, "the core imports no kit: a kit builds on the core")
			case under(p.Path, "framework") && under(d, "fixtures") && d != "fixtures/history":
				bad(p, d, "the core imports no workload but the one history format every workload keeps (fixtures/history): a workload's own format is read by the kit of its mechanism")
			case under(p.Path, "kits") && (anyUnder(d, "suites", "reports", "cmd") || isBackend(d)):
				bad(p, d, "a kit is below the suites, the renderers and the command, and sees labs through package lab only")
			case under(p.Path, "reports") && (anyUnder(d, "suites", "cmd") || isBackend(d)):
				bad(p, d, "reports reads records and renders them; it knows no suite and no backend")
			case under(p.Path, "fixtures") && anyUnder(d, "framework", "kits", "suites", "reports", "cmd"):
				bad(p, d, "fixtures are below the framework and the suites")
			case under(p.Path, "suites") && under(d, "cmd"):
				bad(p, d, "a suite is below the command")
			}
		}
		if under(p.Path, "suites") {
			for _, d := range p.Imports {
				if isBackend(d) && !under(d, "lab/backends") {
					bad(p, d, "a suite links every backend through lab/backends, not one by name")
				}
			}
		}
		if own := kitOf(p.Path); own != "" {
			seen := map[string]bool{}
			for _, d := range append(append([]string(nil), p.Deps...), p.TestImports...) {
				if other := kitOf(d); other != "" && other != own && !seen[d] {
					seen[d] = true
					out = append(out, fmt.Sprintf("%s depends on %s (from its non-test or test files): no kit imports another; what two kits share is core, in framework", p.Path, d))
				}
			}
		}
		if own := suiteOf(p.Path); own != "" {
			seen := map[string]bool{}
			for _, d := range append(append([]string(nil), p.Imports...), p.TestImports...) {
				if other := suiteOf(d); other != "" && other != own && !seen[d] {
					seen[d] = true
					out = append(out, fmt.Sprintf("%s imports %s (its non-test or test files): no suite imports another; what two suites share lives below them, in lab or framework", p.Path, d))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// listed is one package as `go list -json` prints it.
type listed struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

func inModule(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == module {
			out = append(out, ".")
		} else if strings.HasPrefix(p, module+"/") {
			out = append(out, strings.TrimPrefix(p, module+"/"))
		}
	}
	return out
}

// registersBackend reports whether a package's non-test files call
// lab.Register, which is how a backend makes its kind known.
func registersBackend(l listed) (bool, error) {
	for _, f := range l.GoFiles {
		b, err := os.ReadFile(filepath.Join(l.Dir, f))
		if err != nil {
			return false, err
		}
		if bytes.Contains(b, []byte("lab.Register(")) {
			return true, nil
		}
	}
	return false, nil
}

func modulePackages(t *testing.T) []pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the layering test lists packages with the go command: %v", err)
	}
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(outb))
	var pkgs []pkg
	for {
		var l listed
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		rel := inModule([]string{l.ImportPath})
		if len(rel) == 0 {
			continue
		}
		backend, err := registersBackend(l)
		if err != nil {
			t.Fatal(err)
		}
		helper := false
		for _, imp := range l.Imports {
			helper = helper || imp == "testing"
		}
		tests := inModule(append(append([]string(nil), l.TestImports...), l.XTestImports...))
		pkgs = append(pkgs, pkg{Path: rel[0], Imports: inModule(l.Imports), Deps: inModule(l.Deps), TestImports: tests, Backend: backend, TestHelper: helper})
	}
	return pkgs
}

func TestTheLayersHold(t *testing.T) {
	pkgs := modulePackages(t)
	var backends, frameworks []string
	for _, p := range pkgs {
		if p.Backend {
			backends = append(backends, p.Path)
		}
		if under(p.Path, "framework") {
			frameworks = append(frameworks, p.Path)
		}
	}
	// The rules mean nothing if the listing found no backend or no
	// framework package to hold them against.
	for _, want := range []string{"lab/local", "lab/static", "lab/proxmox", "lab/vsphere"} {
		if !anyUnder(want, backends...) {
			t.Errorf("%s does not register a lab backend (lab.Register): the backend rules would not apply to it; found %v", want, backends)
		}
	}
	if len(frameworks) < 5 {
		t.Fatalf("go list found %d framework packages: %v", len(frameworks), frameworks)
	}
	parts := 0
	for _, p := range pkgs {
		if under(p.Path, "lab/local/internal") {
			parts++
		}
	}
	if parts == 0 {
		t.Error("go list found no package under lab/local/internal: the rule on the local lab's parts holds against nothing")
	}
	helpers := 0
	for _, p := range pkgs {
		if under(p.Path, "internal") && len(p.Deps) > 0 {
			helpers++
		}
	}
	if helpers == 0 {
		t.Error("go list found no package under internal/ that depends on the module: the rule on internal/ holds against nothing")
	}
	history := false
	for _, p := range pkgs {
		history = history || p.Path == "fixtures/history"
	}
	if !history {
		t.Error("go list found no package fixtures/history: the rule that it imports nothing of the module holds against nothing")
	}
	suites, tested := map[string]bool{}, 0
	for _, p := range pkgs {
		if s := suiteOf(p.Path); s != "" {
			suites[s] = true
			if len(p.TestImports) > 0 {
				tested++
			}
		}
	}
	if len(suites) < 2 || tested == 0 {
		t.Errorf("go list found %d suites, %d of their packages with tests importing the module: the rule that no suite imports another holds against nothing", len(suites), tested)
	}
	kits := 0
	for _, p := range pkgs {
		if kitOf(p.Path) != "" {
			kits++
		}
	}
	if kits == 0 {
		t.Error("go list found no package under kits/: the kit rules hold against nothing")
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// Each rule fires on a graph that breaks it and stays quiet on one that
// keeps it, so the test above can fail.
func TestEachRuleCanFail(t *testing.T) {
	backend := pkg{Path: "lab/local", Backend: true}
	for _, c := range []struct {
		name string
		p    pkg
		want string
	}{
		{"lab on framework", pkg{Path: "lab/ssh", Deps: []string{"framework/fault"}}, "lab/ssh depends on framework/fault"},
		{"lab on a package of internal/ that is not a leaf", pkg{Path: "lab/local/internal/components", Deps: []string{"internal/binpaths", "lab"}}, "lab/local/internal/components depends on internal/binpaths"},
		{"a package on a test helper", pkg{Path: "framework/evidence", Deps: []string{"internal/kubetest"}}, "framework/evidence depends on internal/kubetest"},
		{"internal on framework", pkg{Path: "internal/runstest", Deps: []string{"framework/verdict"}}, "internal/runstest depends on framework/verdict"},
		{"a test helper of internal on fixtures", pkg{Path: "internal/kubetest2", Deps: []string{"fixtures/images"}, TestHelper: true}, "internal/kubetest2 depends on fixtures/images"},
		{"backend on fixtures", pkg{Path: "lab/local/pki", Deps: []string{"fixtures/images"}}, "lab/local/pki depends on fixtures/images"},
		{"local lab part on the local lab", pkg{Path: "lab/local/internal/components", Deps: []string{"lab/local/internal/supervise", "lab/local"}}, "lab/local/internal/components depends on lab/local:"},
		{"framework on reports", pkg{Path: "framework/scenario", Deps: []string{"reports"}}, "framework/scenario depends on reports"},
		{"framework on a suite", pkg{Path: "framework/invariant", Deps: []string{"suites/drills"}}, "framework/invariant depends on suites/drills"},
		{"framework on a backend", pkg{Path: "framework/fault/faults", Deps: []string{"lab/local/binpaths"}}, "framework/fault/faults depends on lab/local/binpaths"},
		{"the core on a kit", pkg{Path: "framework/invariant", Deps: []string{"kits/dataplane"}}, "framework/invariant depends on kits/dataplane"},
		{"the core on a workload", pkg{Path: "framework/fault/controls", Deps: []string{"fixtures/ledgerlog", "fixtures/history"}}, "framework/fault/controls depends on fixtures/ledgerlog"},
		{"a kit on a suite", pkg{Path: "kits/dataplane/readers", Deps: []string{"suites/agents", "framework/evidence"}}, "kits/dataplane/readers depends on suites/agents"},
		{"a kit on a backend", pkg{Path: "kits/dataplane/readers", Deps: []string{"lab/local", "lab"}}, "kits/dataplane/readers depends on lab/local"},
		{"a kit on another kit", pkg{Path: "kits/storeddata/invariants", Deps: []string{"kits/dataplane", "framework/invariant"}}, "kits/storeddata/invariants depends on kits/dataplane"},
		{"a kit's tests on another kit", pkg{Path: "kits/storeddata", Deps: []string{"framework/evidence"}, TestImports: []string{"kits/storeddata", "kits/dataplane/readers"}}, "kits/storeddata depends on kits/dataplane/readers"},
		{"lab on a kit", pkg{Path: "lab/topology", Deps: []string{"kits/dataplane"}}, "lab/topology depends on kits/dataplane"},
		{"fixtures on a kit", pkg{Path: "fixtures/kvdb", Deps: []string{"kits/dataplane"}}, "fixtures/kvdb depends on kits/dataplane"},
		{"reports on a suite", pkg{Path: "reports/aggregate", Deps: []string{"suites/drills"}}, "reports/aggregate depends on suites/drills"},
		{"fixtures on framework", pkg{Path: "fixtures", Deps: []string{"framework/evidence"}}, "fixtures depends on framework/evidence"},
		{"the history package on a workload", pkg{Path: "fixtures/history", Deps: []string{"fixtures/ledgerlog"}}, "fixtures/history depends on fixtures/ledgerlog"},
		{"suite on one backend", pkg{Path: "suites/drills", Imports: []string{"lab/local"}, Deps: []string{"lab/local"}}, "suites/drills depends on lab/local"},
		{"suite on another suite", pkg{Path: "suites/splitbrain", Imports: []string{"suites/disagree"}, Deps: []string{"suites/disagree", "framework/scenario"}, TestImports: []string{"suites/disagree"}}, "suites/splitbrain imports suites/disagree"},
		{"suite's tests on another suite", pkg{Path: "suites/agents", Imports: []string{"framework/scenario"}, TestImports: []string{"suites/agents", "suites/disagree"}}, "suites/agents imports suites/disagree"},
		{"a suite's inner package on another suite", pkg{Path: "suites/drills/report", Imports: []string{"suites/drills"}, TestImports: []string{"suites/splitbrain/internal/x"}}, "suites/drills/report imports suites/splitbrain/internal/x"},
	} {
		got := violations([]pkg{backend, {Path: "internal/binpaths", Deps: []string{"lab"}}, {Path: "internal/kubetest", Deps: []string{"lab/local/binpaths"}, TestHelper: true}, c.p})
		if len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
			t.Errorf("%s: got %q, want one violation starting %q", c.name, got, c.want)
		}
	}
	ok := []pkg{
		backend,
		{Path: "lab/local/internal/components", Deps: []string{"lab/local/internal/supervise", "lab/local/internal/layout", "lab/local/pki", "lab/local/binpaths", "lab", "internal/gobuild"}},
		{Path: "internal/gobuild"},
		{Path: "internal/kubetest", Deps: []string{"lab/local/binpaths", "lab"}, TestHelper: true},
		{Path: "framework/evidence/internal/realcluster", Deps: []string{"internal/kubetest", "lab/local/binpaths", "framework/evidence"}, TestHelper: true},
		{Path: "lab/backends", Imports: []string{"lab/local"}, Deps: []string{"lab/local", "lab"}},
		{Path: "framework/scenario", Deps: []string{"lab", "framework/record"}},
		{Path: "reports", Deps: []string{"framework/record", "lab"}},
		{Path: "suites/disagree", Imports: []string{"lab/backends"}, Deps: []string{"lab/backends", "lab/local", "framework/scenario", "fixtures"}, TestImports: []string{"suites/disagree", "lab/topology", "framework/scenario"}},
		{Path: "suites/drills/report", Imports: []string{"suites/drills", "reports/suitereports"}, Deps: []string{"suites/drills", "reports/suitereports"}, TestImports: []string{"suites/drills", "suites/drills/report"}},
		{Path: "fixtures/images", Deps: []string{"lab"}},
		{Path: "kits/dataplane/invariants", Deps: []string{"kits/dataplane", "framework/invariant", "framework/evidence", "lab"}, TestImports: []string{"kits/dataplane/invariants", "kits/dataplane"}},
		{Path: "suites/agents", Imports: []string{"lab/backends", "kits/dataplane/readers"}, Deps: []string{"lab/backends", "lab/local", "kits/dataplane/readers", "kits/dataplane"}, TestImports: []string{"kits/dataplane/invariants"}},
		{Path: "fixtures/history"},
		{Path: "fixtures/ledgerlog", Deps: []string{"fixtures/history"}},
		{Path: "kits/storeddata/checker", Deps: []string{"fixtures/history", "fixtures/ledgerlog"}},
		{Path: "framework/evidence", Deps: []string{"fixtures/history"}},
	}
	if got := violations(ok); len(got) != 0 {
		t.Errorf("a graph that keeps the layers: %q", got)
	}
}

// fileImport is one import of one Go file: the file, the imported path
// inside the module, and the name it is imported under ("_" for a blank
// import, empty for none).
type fileImport struct {
	File string
	Path string
	Name string
}

// cmdViolations returns one line per import of a suite or a kit by a
// command that is not blank: a command links the suites' reports, which
// register themselves (reports/suitereports), and calls them through the
// registry, so it never names a suite's identifiers; it links a kit's
// invariants, which register themselves with invariant.Register, so that
// faultline rejudge can build them again from a record, and never names
// a kit's identifiers either.
func cmdViolations(imports []fileImport) []string {
	var out []string
	for _, i := range imports {
		if !under(i.File, "cmd") || i.Name == "_" {
			continue
		}
		switch {
		case under(i.Path, "suites"):
			out = append(out, fmt.Sprintf("%s imports %s by name: a command links a suite only by blank import, the suite registering itself", i.File, i.Path))
		case under(i.Path, "kits"):
			out = append(out, fmt.Sprintf("%s imports %s by name: a command links a kit only by blank import, its invariants registering themselves", i.File, i.Path))
		}
	}
	sort.Strings(out)
	return out
}

// cmdImports parses the imports of every non-test Go file under cmd/,
// whatever its build tags.
func cmdImports(t *testing.T) []fileImport {
	t.Helper()
	root := filepath.Join("..", "..")
	var out []fileImport
	files := 0
	err := filepath.WalkDir(filepath.Join(root, "cmd"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			p := strings.Trim(spec.Path.Value, "`\"")
			in := inModule([]string{p})
			if len(in) == 0 {
				continue
			}
			name := ""
			if spec.Name != nil {
				name = spec.Name.Name
			}
			out = append(out, fileImport{File: filepath.ToSlash(rel), Path: in[0], Name: name})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("found no Go file under cmd/: the rule on the command's imports holds against nothing")
	}
	return out
}

func TestTheCommandLinksSuitesOnlyByBlankImport(t *testing.T) {
	imports := cmdImports(t)
	for _, v := range cmdViolations(imports) {
		t.Error(v)
	}
	// The rule holds against the one suite package the command links
	// today: the drills' report, blank, which registers itself.
	drills := false
	for _, i := range imports {
		drills = drills || (i.Path == "suites/drills/report" && i.Name == "_")
	}
	if !drills {
		t.Error("no file under cmd/ links suites/drills/report by blank import: the rule on the command's imports holds against nothing it was written for")
	}
}

func TestTheCommandRuleCanFail(t *testing.T) {
	for _, c := range []struct {
		name string
		i    fileImport
		want string
	}{
		{"named import", fileImport{File: "cmd/faultline/report.go", Path: "suites/drills/report", Name: "drillreport"}, "cmd/faultline/report.go imports suites/drills/report by name"},
		{"plain import", fileImport{File: "cmd/faultline/drill_report.go", Path: "suites/drills/report"}, "cmd/faultline/drill_report.go imports suites/drills/report by name"},
		{"dot import", fileImport{File: "cmd/faultline/report.go", Path: "suites/disagree", Name: "."}, "cmd/faultline/report.go imports suites/disagree by name"},
		{"a kit by name", fileImport{File: "cmd/faultline/invariants.go", Path: "kits/dataplane/invariants"}, "cmd/faultline/invariants.go imports kits/dataplane/invariants by name"},
	} {
		got := cmdViolations([]fileImport{c.i})
		if len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
			t.Errorf("%s: got %q, want one violation starting %q", c.name, got, c.want)
		}
	}
	ok := []fileImport{
		{File: "cmd/faultline/report.go", Path: "suites/drills/report", Name: "_"},
		{File: "cmd/faultline/report.go", Path: "reports/suitereports"},
		{File: "cmd/faultline/invariants.go", Path: "kits/dataplane/invariants", Name: "_"},
		{File: "suites/drills/report/register.go", Path: "suites/drills", Name: "drills"},
	}
	if got := cmdViolations(ok); len(got) != 0 {
		t.Errorf("imports that keep the rule: %q", got)
	}
}
