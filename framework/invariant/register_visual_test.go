package invariant

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
)

// visualData is the JSON porcupine's page renders, as far as these tests
// read it.
type visualData struct {
	Partitions []struct {
		History []struct {
			ClientId    int
			Description string
			Metadata    string
		}
		PartialLinearizations [][]struct {
			Index            int
			StateDescription string
		}
	}
	Annotations []struct {
		Tag, Description string
	}
}

func visualise(t *testing.T, ops []evidence.RegisterOp, marks []HistoryMark) (HistoryCheck, string, visualData) {
	t.Helper()
	var b bytes.Buffer
	check, err := VisualizeRegisterHistory(ops, marks, 10*time.Second, &b)
	if err != nil {
		t.Fatal(err)
	}
	page := b.String()
	m := regexp.MustCompile(`(?s)const data = (\{.*\})\s*render\(data\)`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no data in porcupine's page:\n%.400s", page)
	}
	var d visualData
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatal(err)
	}
	return check, page, d
}

// A linearizable history is drawn with its linearization: every op
// placed, the register's value after each, the writer and round of each,
// and the run's marks and the writers named beside them.
func TestVisualizeALinearizableHistory(t *testing.T) {
	h := steady(4, 0)
	h.ops[3].Writer = "writer-b" // a second client
	check, page, d := visualise(t, h.ops, []HistoryMark{{At: sec(1.5), Label: "fault injected"}, {At: sec(3.5), Label: "heal started"}})
	if check != HistoryLinearizable {
		t.Errorf("check %q, want linearizable", check)
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, "http://www.w3.org/2000/svg") {
		t.Error("the page names a network address other than the SVG namespace")
	}
	if len(d.Partitions) != 1 || len(d.Partitions[0].History) != len(h.ops) {
		t.Fatalf("partitions %d, want one of %d ops", len(d.Partitions), len(h.ops))
	}
	p := d.Partitions[0]
	if len(p.PartialLinearizations) == 0 || len(p.PartialLinearizations[0]) != len(h.ops) {
		t.Fatalf("no full linearization drawn: %+v", p.PartialLinearizations)
	}
	var states []string
	for _, step := range p.PartialLinearizations[0] {
		states = append(states, step.StateDescription)
	}
	if got := strings.Join(states, " "); got != "{absent} {w-1} {w-1} {w-2} {w-2} {w-3} {w-3} {w-4}" {
		t.Errorf("states after each op: %s", got)
	}
	clients := map[int]bool{}
	for _, op := range p.History {
		clients[op.ClientId] = true
	}
	if len(clients) != 2 {
		t.Errorf("clients %v, want the two writers", clients)
	}
	if p.History[1].Description != "create(w-1) unknown=false" || p.History[1].Metadata != "w, round 2, outcome ok" {
		t.Errorf("op 1 drawn as %q (%q)", p.History[1].Description, p.History[1].Metadata)
	}
	var notes []string
	for _, a := range d.Annotations {
		notes = append(notes, a.Tag+": "+a.Description)
	}
	if got := strings.Join(notes, "; "); got != "faultline: fault injected; faultline: heal started; writers: client 0: w; writers: client 1: writer-b" {
		t.Errorf("annotations %s", got)
	}
}

// A stale read makes the history not linearizable; the drawing still
// comes, with the partial linearizations, and says so.
func TestVisualizeAStaleRead(t *testing.T) {
	h := steady(6, 0)
	h.add("read", "w-3", "", "ok", 8, true)
	check, _, d := visualise(t, h.ops, nil)
	if check != HistoryNotLinearizable {
		t.Errorf("check %q, want not linearizable", check)
	}
	longest := 0
	for _, pl := range d.Partitions[0].PartialLinearizations {
		longest = max(longest, len(pl))
	}
	if longest == 0 || longest >= len(h.ops) {
		t.Errorf("longest partial linearization %d of %d ops, want a partial one", longest, len(h.ops))
	}
}

func TestVisualizeRefusesAMalformedHistory(t *testing.T) {
	h := steady(2, 0)
	h.ops[1].Outcome = "maybe"
	var b bytes.Buffer
	if _, err := VisualizeRegisterHistory(h.ops, nil, time.Second, &b); err == nil || !strings.Contains(err.Error(), `outcome "maybe"`) {
		t.Errorf("got %v, want the malformed op named", err)
	}
	if b.Len() != 0 {
		t.Error("a malformed history was drawn")
	}
	if _, err := VisualizeRegisterHistory(nil, nil, time.Second, &b); err == nil {
		t.Error("an empty history was drawn")
	}
}
