package scenario

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/lab"
)

func TestParsePoolList(t *testing.T) {
	got, err := ParsePoolList(" lab11 , testdata/labs/lab11b.yaml,pair")
	if err != nil || !slices.Equal(got, []string{"lab11", "testdata/labs/lab11b.yaml", "pair"}) {
		t.Errorf("got %v, %v", got, err)
	}
	for in, want := range map[string]string{
		"lab11,,lab11b":              "entry 2 is empty",
		"lab11,":                     "entry 2 is empty",
		" ":                          "entry 1 is empty",
		"lab11,lab11b,lab11":         "entry 3 (lab11) is entry 1 again",
		"a/lab.yaml,./a/lab.yaml":    "entry 2 (./a/lab.yaml) is entry 1 again",
		"x/../lab.yaml,lab.yaml,b/c": "entry 2 (lab.yaml) is entry 1 again",
	} {
		if _, err := ParsePoolList(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestLoadPoolFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, err := LoadPoolFile(write("ok.yaml", "labs:\n  - lab11\n  - ../labs/lab11b.yaml\n  - /abs/lab.yaml\n  - here.yml\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"lab11", filepath.Join(dir, "..", "labs", "lab11b.yaml"), "/abs/lab.yaml", filepath.Join(dir, "here.yml")}
	if !slices.Equal(p.Entries, want) || !strings.Contains(p.From, "ok.yaml") {
		t.Errorf("entries %v from %q, want %v", p.Entries, p.From, want)
	}
	for name, c := range map[string]struct{ text, want string }{
		"typo.yaml":  {"lab: [lab11]\n", `unknown field "lab"`},
		"empty.yaml": {"labs: []\n", "lists no lab"},
		"blank.yaml": {"labs: [lab11, '']\n", "labs[1] is empty"},
		"dup.yaml":   {"labs: [a.yaml, ./a.yaml]\n", "is entry 1 again"},
		"bad.yaml":   {"labs: {a: b}\n", "bad.yaml"},
	} {
		if _, err := LoadPoolFile(write(name, c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := LoadPoolFile(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// The shipped pool file names lab11 and lab11b, found from a suite's
// package directory by its bare name, as ginkgo runs a suite.
func TestShippedPoolFileIsFoundByName(t *testing.T) {
	t.Setenv(EnvLab, "")
	t.Setenv(EnvLabs, "")
	t.Setenv(EnvPool, "two-lab11")
	p, err := PoolFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 2 || p.Entries[0] != "lab11" || !strings.HasSuffix(p.Entries[1], filepath.Join("testdata", "labs", "lab11b.yaml")) {
		t.Errorf("entries %v", p.Entries)
	}
	if _, err := os.Stat(p.Entries[1]); err != nil {
		t.Errorf("the pool's second lab file: %v", err)
	}
	if !strings.Contains(p.From, "($FAULTLINE_POOL)") {
		t.Errorf("from %q", p.From)
	}
	t.Setenv(EnvPool, "no-such-pool")
	if _, err := PoolFromEnv(); err == nil || !strings.Contains(err.Error(), "testdata/pools/no-such-pool.yaml") {
		t.Errorf("unknown pool: %v", err)
	}
}

func TestPoolFromEnvRefusesTwoWaysOfNamingLabs(t *testing.T) {
	for _, c := range []struct {
		lab, labs, pool string
		want            string
	}{
		{"lab11", "lab11,lab11b", "", "both FAULTLINE_LAB and FAULTLINE_LABS are set"},
		{"lab11", "", "two-lab11", "both FAULTLINE_LAB and FAULTLINE_POOL are set"},
		{"", "lab11", "two-lab11", "both FAULTLINE_LABS and FAULTLINE_POOL are set"},
		{"lab11", "a", "b", "both FAULTLINE_LAB and FAULTLINE_LABS and FAULTLINE_POOL are set"},
	} {
		t.Setenv(EnvLab, c.lab)
		t.Setenv(EnvLabs, c.labs)
		t.Setenv(EnvPool, c.pool)
		if _, err := PoolFromEnv(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c, err)
		}
		// OpenLabFromEnv refuses as the engine does.
		if _, err := OpenLabFromEnv(context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenLabFromEnv %+v: %v", c, err)
		}
	}
	t.Setenv(EnvLab, "lab11")
	t.Setenv(EnvLabs, "")
	t.Setenv(EnvPool, "")
	if p, err := PoolFromEnv(); p != nil || err != nil {
		t.Errorf("one lab: pool %v, %v", p, err)
	}
}

// Process N owns entry N-1; more processes than labs is an error naming
// both counts; fewer leaves the last labs idle.
func TestPoolMapsEachProcessToItsLab(t *testing.T) {
	p := &LabPool{Entries: []string{"lab11", "lab11b", "lab11c"}, From: "$FAULTLINE_LABS"}
	for proc, want := range map[int]string{1: "lab11", 2: "lab11b", 3: "lab11c"} {
		if got, err := p.Entry(proc, 3); err != nil || got != want {
			t.Errorf("process %d of 3: %q, %v; want %q", proc, got, err, want)
		}
	}
	if got, err := p.Entry(2, 2); err != nil || got != "lab11b" {
		t.Errorf("process 2 of 2: %q, %v", got, err)
	}
	if !slices.Equal(p.InUse(2), []string{"lab11", "lab11b"}) || !slices.Equal(p.Idle(2), []string{"lab11c"}) {
		t.Errorf("in use %v, idle %v", p.InUse(2), p.Idle(2))
	}
	_, err := p.Entry(1, 4)
	if err == nil || !strings.Contains(err.Error(), "4 ginkgo processes but the lab pool ($FAULTLINE_LABS) has 3 labs (lab11, lab11b, lab11c)") ||
		!strings.Contains(err.Error(), "--procs=3") {
		t.Errorf("4 processes, 3 labs: %v", err)
	}
	if _, err := p.Entry(4, 3); err == nil {
		t.Error("process 4 of 3 has a lab")
	}
}

// Outside a Ginkgo run (a plain test) the process is 1 of 1: the pool's
// first lab is opened.
func TestOpenLabFromEnvOpensThisProcesssLabOfThePool(t *testing.T) {
	t.Setenv(EnvLab, "")
	t.Setenv(EnvPool, "")
	t.Setenv(EnvLabs, "no-such-topology,lab11")
	if _, err := OpenLabFromEnv(context.Background()); err == nil || !strings.Contains(err.Error(), `opening the lab no-such-topology: unknown lab "no-such-topology"`) {
		t.Errorf("%v", err)
	}
}

// A suite's table is sized from the lab file FAULTLINE_LAB names or, over
// a pool, from its first lab.
func TestLabFileFromEnv(t *testing.T) {
	t.Setenv(EnvLab, "")
	t.Setenv(EnvLabs, "")
	t.Setenv(EnvPool, "")
	if p, _, err := LabFileFromEnv(); p != "" || err != nil {
		t.Errorf("none named: %q %v", p, err)
	}
	t.Setenv(EnvLabs, "lab11b,lab11")
	p, how, err := LabFileFromEnv()
	if err != nil || !strings.HasSuffix(p, filepath.Join("testdata", "labs", "lab11b.yaml")) || !strings.Contains(how, "first lab of the pool") {
		t.Errorf("pool: %q %q %v", p, how, err)
	}
	t.Setenv(EnvLabs, "")
	t.Setenv(EnvLab, "pair")
	if p, _, err := LabFileFromEnv(); err != nil || !strings.HasSuffix(p, "pair.yaml") {
		t.Errorf("one lab: %q %v", p, err)
	}
	if !LabGiven() {
		t.Error("a lab is given")
	}
}

// memlabEngines opens one engine per memlab of the given names.
func memlabEngines(t *testing.T, names ...string) []*engine {
	t.Helper()
	root := t.TempDir()
	s, err := (Suite{Name: "t", OpenLab: func(context.Context) (lab.Lab, error) { return nil, errors.New("unused") },
		OpenLabEntry: func(_ context.Context, entry string) (lab.Lab, error) {
			return memlab.OpenNamed(filepath.Join(root, entry), entry, true), nil
		},
		Sampler: memlab.Sampler{}}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var out []*engine
	for _, n := range names {
		e := &engine{name: "t", cfg: s, entry: n}
		if err := e.open(context.Background()); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func wideShape() Shape {
	return Shape{Name: "wide", Check: func(l lab.Lab) error {
		if !strings.HasPrefix(l.Info().Name, "wide") {
			return errors.New("it has no wide host")
		}
		return nil
	}}
}

// A scenario some labs can run and others cannot refuses the pool, naming
// the spec, each lab that lacks it and what it lacks; one no lab can run
// is skipped wherever it lands, as on one lab, and noted; one every lab
// can run is fine.
func TestPoolShapeCheck(t *testing.T) {
	engines := memlabEngines(t, "wide-a", "narrow-b", "narrow-c")
	needsWide := Scenario{ID: "needs-wide", Shape: wideShape()}
	needsTopo := Scenario{ID: "needs-topology", Topology: "racks"}
	anyLab := Scenario{ID: "any"}
	skipped, err := checkPoolShapes(engines, []Scenario{anyLab, needsWide, needsTopo, needsWide})
	if err == nil {
		t.Fatal("a spec two of three labs cannot run was accepted")
	}
	for _, want := range []string{
		"spec needs-wide [fault] needs what 2 of the 3 labs lack",
		"lab narrow-b (ginkgo process 2): scenario needs-wide: lab narrow-b does not have the shape wide: it has no wide host",
		"lab narrow-c (ginkgo process 3)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "wide-a (") || strings.Count(err.Error(), "spec needs-wide") != 1 {
		t.Errorf("error names a lab that has the shape, or a spec twice:\n%v", err)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "spec needs-topology [fault]: no lab of the pool can run it") ||
		!strings.Contains(skipped[0], "needs topology racks; lab wide-a is memlab") {
		t.Errorf("skipped %v", skipped)
	}
	if skipped, err := checkPoolShapes(engines, []Scenario{anyLab, needsTopo}); err != nil || len(skipped) != 1 {
		t.Errorf("only specs every lab can run, or none can: %v %v", skipped, err)
	}
}

// Two entries for one lab (its name, or its state dir and so its
// ledger), and labs of different timer profiles, are refused.
func TestPoolLabsMustBeDistinctAndShareAProfile(t *testing.T) {
	root := t.TempDir()
	a := memlab.OpenNamed(filepath.Join(root, "a"), "a", true)
	if err := checkPoolLabs([]lab.Lab{a, memlab.OpenNamed(filepath.Join(root, "b"), "b", true)}); err != nil {
		t.Errorf("two memlabs: %v", err)
	}
	err := checkPoolLabs([]lab.Lab{a, memlab.OpenNamed(filepath.Join(root, "other"), "a", true)})
	if err == nil || !strings.Contains(err.Error(), "labs 1 and 2 of the pool are both lab a") {
		t.Errorf("one name twice: %v", err)
	}
	err = checkPoolLabs([]lab.Lab{a, memlab.OpenNamed(filepath.Join(root, "a"), "b", true)})
	if err == nil || !strings.Contains(err.Error(), "labs 1 and 2 of the pool share the state dir "+filepath.Join(root, "a")) {
		t.Errorf("one state dir twice: %v", err)
	}
	err = checkPoolLabs([]lab.Lab{a, profiled{memlab.OpenNamed(filepath.Join(root, "f"), "f", true), "fast"}})
	if err == nil || !strings.Contains(err.Error(), `the labs run different timer profiles, "fast" (f) and "none" (a)`) {
		t.Errorf("two profiles: %v", err)
	}
}

// profiled is a memlab that says it runs another timer profile.
type profiled struct {
	*memlab.Lab
	profile string
}

func (p profiled) Info() lab.Info {
	i := p.Lab.Info()
	i.TimerProfile = p.profile
	return i
}

// The preview's specs map to the table's scenarios by their container,
// and to their repetition by its label.
func TestRunsOfPreviewedSpecs(t *testing.T) {
	a, b := Scenario{ID: "a"}, Scenario{ID: "b", Arm: NullArm}
	byPair := map[string]Scenario{pairKey("a", "fault"): a, pairKey("b", "null"): b}
	specs := []previewedSpec{
		{containers: []string{"suite", "b [null]"}, text: "b's title"},
		{containers: []string{"a [fault]"}, text: "a's title"},
		{containers: []string{"some other container"}, text: "not a scenario"},
		{containers: []string{repetitionText(3, 3), "a [fault]"}, text: "a's title", labels: []string{"arm:fault", repetitionLabel(3)}},
	}
	got := runsOf(specs, byPair)
	if len(got) != 3 || got[0].sc.ID != "b" || got[0].rep != 1 || got[1].sc.ID != "a" || got[1].rep != 1 || got[2].sc.ID != "a" || got[2].rep != 3 {
		t.Errorf("got %+v", got)
	}
	done := map[string]resumedRun{runKey("a", "fault", 1): {}}
	if left := withoutFinished(got, done); len(left) != 2 || left[0].ID != "b" || left[1].ID != "a" {
		t.Errorf("left to run after a's first repetition: %+v", left)
	}
}
