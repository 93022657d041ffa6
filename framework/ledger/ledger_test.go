package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// markerFault is injected by creating a file and healed by removing it, so
// its state survives the process that injected it.
type markerFault struct {
	Path     string `json:"path"`
	FailHeal bool   `json:"failHeal,omitempty"`
	// HealLog, when set, gets one line per heal.
	HealLog string `json:"healLog,omitempty"`
}

func (m markerFault) Kind() string       { return "ledger-test-marker" }
func (m markerFault) Class() fault.Class { return "test" }
func (m markerFault) Params() json.RawMessage {
	b, _ := json.Marshal(m)
	return b
}
func (m markerFault) Inject(context.Context, lab.Lab) error { return os.WriteFile(m.Path, nil, 0o644) }
func (m markerFault) Heal(ctx context.Context, _ lab.Lab) error {
	if exists(m.Path) {
		fault.Found(ctx, "marker %s", m.Path)
	}
	if m.FailHeal {
		return errors.New("the host would not answer")
	}
	err := os.Remove(m.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err == nil {
		fault.Removed(ctx, "marker %s", m.Path)
	}
	if m.HealLog != "" {
		f, err := os.OpenFile(m.HealLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		// Slow enough that two healers overlap.
		time.Sleep(5 * time.Millisecond)
		_, err = f.WriteString(m.Path + "\n")
		return err
	}
	return nil
}
func (m markerFault) Probe(context.Context, lab.Lab) (fault.Effect, error) {
	_, err := os.Stat(m.Path)
	return fault.Effect{Observed: err == nil}, nil
}

func init() {
	fault.Register("ledger-test-marker", func(p json.RawMessage) (fault.Fault, error) {
		var m markerFault
		err := json.Unmarshal(p, &m)
		return m, err
	})
}

// lingeringMarker is a marker whose heal leaves the file (and writes
// Path+".healed") and whose release removes both.
type lingeringMarker struct {
	Path string `json:"path"`
}

func (m lingeringMarker) Kind() string       { return "ledger-test-lingering" }
func (m lingeringMarker) Class() fault.Class { return "test" }
func (m lingeringMarker) Params() json.RawMessage {
	b, _ := json.Marshal(m)
	return b
}
func (m lingeringMarker) Inject(context.Context, lab.Lab) error {
	return os.WriteFile(m.Path, nil, 0o644)
}
func (m lingeringMarker) Heal(context.Context, lab.Lab) error {
	return os.WriteFile(m.Path+".healed", nil, 0o644)
}
func (m lingeringMarker) Release(context.Context, lab.Lab) error {
	if !exists(m.Path + ".healed") {
		return errors.New("released before it was healed")
	}
	for _, p := range []string{m.Path, m.Path + ".healed"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
func (m lingeringMarker) Probe(context.Context, lab.Lab) (fault.Effect, error) {
	return fault.Effect{Observed: exists(m.Path)}, nil
}

func init() {
	fault.Register("ledger-test-lingering", func(p json.RawMessage) (fault.Fault, error) {
		var m lingeringMarker
		err := json.Unmarshal(p, &m)
		return m, err
	})
}

// stateLab is the least of a lab: a name and a state directory.
type stateLab struct {
	lab.Lab
	name, dir string
}

func (s stateLab) Info() lab.Info   { return lab.Info{Name: s.name} }
func (s stateLab) StateDir() string { return s.dir }

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestRecordThenDoneLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	led, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := markerFault{Path: filepath.Join(dir, "marker")}
	a, err := led.Record(f, "lab-a", "scenario-1")
	if err != nil {
		t.Fatal(err)
	}
	es, err := led.Entries()
	if err != nil || len(es) != 1 {
		t.Fatalf("entries %v, %v", es, err)
	}
	if es[0].Kind != f.Kind() || string(es[0].Params) != string(f.Params()) || es[0].Lab != "lab-a" || es[0].PID != os.Getpid() || es[0].Scenario != "scenario-1" {
		t.Errorf("entry %+v", es[0])
	}
	// While this process holds it, another healer must leave it alone.
	rep, err := led.HealAll(context.Background(), stateLab{name: "lab-a", dir: dir})
	if err != nil || len(rep.Busy) != 1 || len(rep.Healed) != 0 {
		t.Fatalf("heal of a held entry: %+v, %v", rep, err)
	}
	if err := a.Done(); err != nil {
		t.Fatal(err)
	}
	if es, _ := led.Entries(); len(es) != 0 {
		t.Errorf("entries left after Done: %v", es)
	}
	des, _ := os.ReadDir(led.Dir())
	if len(des) != 0 {
		t.Errorf("files left in the ledger: %v", des)
	}
}

func TestHealAllHealsWhatWasKeptAndReportsFailures(t *testing.T) {
	dir := t.TempDir()
	l := stateLab{name: "lab-a", dir: dir}
	led, _ := Open(dir)
	good := markerFault{Path: filepath.Join(dir, "good")}
	bad := markerFault{Path: filepath.Join(dir, "bad"), FailHeal: true}
	for _, f := range []markerFault{good, bad} {
		a, err := led.Record(f, "lab-a", "")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Inject(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		// Heal failed in the run: the entry stays for the next start.
		if err := a.Keep(); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := HealAll(context.Background(), l)
	if err == nil || !strings.Contains(err.Error(), "the host would not answer") {
		t.Fatalf("want the failed heal in the error, got %v", err)
	}
	if len(rep.Healed) != 1 || rep.Healed[0].Entry.Kind != good.Kind() || len(rep.Failed) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if exists(good.Path) {
		t.Error("the good fault was not healed")
	}
	es, _ := led.Entries()
	if len(es) != 1 || !strings.Contains(string(es[0].Params), "bad") {
		t.Errorf("the failed entry must stay, and only it: %v", es)
	}
	if !strings.Contains(rep.String(), "FAILED to heal") || !strings.Contains(rep.String(), "healed ledger-test-marker") {
		t.Errorf("report text:\n%s", rep)
	}
}

// A lingering fault left in the ledger (its run died between heal and
// release, or before heal) is healed and then released: nothing of it stays.
func TestHealAllReleasesALingeringFault(t *testing.T) {
	dir := t.TempDir()
	l := stateLab{name: "lab-a", dir: dir}
	led, _ := Open(dir)
	f := lingeringMarker{Path: filepath.Join(dir, "lingering")}
	a, err := led.Record(f, "lab-a", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Inject(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	if err := a.Keep(); err != nil {
		t.Fatal(err)
	}
	rep, err := HealAll(context.Background(), l)
	if err != nil || len(rep.Healed) != 1 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	if exists(f.Path) || exists(f.Path+".healed") {
		t.Error("the lingering fault's damage is still there after HealAll")
	}
	if es, _ := led.Entries(); len(es) != 0 {
		t.Errorf("entries left: %v", es)
	}
}

func TestHealAllRefusesAnotherLabsEntry(t *testing.T) {
	dir := t.TempDir()
	led, _ := Open(dir)
	f := markerFault{Path: filepath.Join(dir, "m")}
	a, _ := led.Record(f, "lab-b", "")
	a.Keep()
	f.Inject(context.Background(), nil)
	rep, err := HealAll(context.Background(), stateLab{name: "lab-a", dir: dir})
	if err == nil || !strings.Contains(err.Error(), `"lab-b"`) || len(rep.Healed) != 0 {
		t.Fatalf("%+v, %v", rep, err)
	}
	if !exists(f.Path) {
		t.Error("healed a fault of another lab")
	}
}

func TestHealAllDiscardsUnfinishedEntries(t *testing.T) {
	dir := t.TempDir()
	led, _ := Open(dir)
	if err := os.WriteFile(filepath.Join(led.Dir(), "x"+tmpSuffix), []byte(`{"id":`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := HealAll(context.Background(), stateLab{name: "lab-a", dir: dir})
	if err != nil || len(rep.Discarded) != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	if des, _ := os.ReadDir(led.Dir()); len(des) != 0 {
		t.Errorf("left %v", des)
	}
}

func TestOpenNeedsAStateDir(t *testing.T) {
	if _, err := Open(""); err == nil || !strings.Contains(err.Error(), "state directory") {
		t.Errorf("got %v", err)
	}
}

// TestKilledHolderIsHealedByTheNextProcess runs a helper process that
// records and injects a fault and then hangs; while it lives its entry is
// left alone, and after kill -9 the next HealAll heals it.
// TestConcurrentHealersHealEachEntryOnce runs two processes' HealAll over
// the same ledger at once: every entry is healed exactly once.
func TestConcurrentHealersHealEachEntryOnce(t *testing.T) {
	if dir := os.Getenv("LEDGER_TEST_HEALER"); dir != "" {
		if _, err := HealAll(context.Background(), stateLab{name: "lab-a", dir: dir}); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := t.TempDir()
	healLog := filepath.Join(dir, "heals.log")
	led, _ := Open(dir)
	const n = 30
	for i := 0; i < n; i++ {
		f := markerFault{Path: filepath.Join(dir, fmt.Sprintf("m%02d", i)), HealLog: healLog}
		a, err := led.Record(f, "lab-a", "")
		if err != nil {
			t.Fatal(err)
		}
		f.Inject(context.Background(), nil)
		a.Keep()
	}
	var cmds []*exec.Cmd
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentHealersHealEachEntryOnce$")
		cmd.Env = append(os.Environ(), "LEDGER_TEST_HEALER="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("healer: %v", err)
		}
	}
	b, err := os.ReadFile(healLog)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, line := range strings.Fields(string(b)) {
		count[line]++
	}
	if len(count) != n {
		t.Errorf("%d of %d faults healed", len(count), n)
	}
	for p, c := range count {
		if c != 1 {
			t.Errorf("%s healed %d times", filepath.Base(p), c)
		}
	}
	if es, _ := led.Entries(); len(es) != 0 {
		t.Errorf("entries left: %d", len(es))
	}
}

func TestKilledHolderIsHealedByTheNextProcess(t *testing.T) {
	if os.Getenv("LEDGER_TEST_HOLDER") != "" {
		holdForever()
		return
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledHolderIsHealedByTheNextProcess$")
	cmd.Env = append(os.Environ(), "LEDGER_TEST_HOLDER="+dir, "LEDGER_TEST_MARKER="+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for !exists(marker) {
		if time.Now().After(deadline) {
			t.Fatal("the holder never injected")
		}
		time.Sleep(20 * time.Millisecond)
	}
	l := stateLab{name: "lab-a", dir: dir}
	rep, err := HealAll(context.Background(), l)
	if err != nil || len(rep.Busy) != 1 || rep.Busy[0].Entry.PID != cmd.Process.Pid || !exists(marker) {
		t.Fatalf("a live holder's fault was touched: %+v, %v", rep, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	rep, err = HealAll(context.Background(), l)
	if err != nil || len(rep.Healed) != 1 || rep.Healed[0].Entry.PID != cmd.Process.Pid {
		t.Fatalf("after kill -9: %+v, %v", rep, err)
	}
	if exists(marker) {
		t.Error("the killed holder's fault is still injected")
	}
	led, _ := Open(dir)
	if es, _ := led.Entries(); len(es) != 0 {
		t.Errorf("entries left: %v", es)
	}
}

func holdForever() {
	dir, marker := os.Getenv("LEDGER_TEST_HOLDER"), os.Getenv("LEDGER_TEST_MARKER")
	led, err := Open(dir)
	if err != nil {
		panic(err)
	}
	f := markerFault{Path: marker}
	if _, err := led.Record(f, "lab-a", "holder"); err != nil {
		panic(err)
	}
	if err := f.Inject(context.Background(), nil); err != nil {
		panic(err)
	}
	time.Sleep(time.Minute)
}
