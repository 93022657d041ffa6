package html

import (
	"bytes"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
)

// registerSource is the source the register writer's history is asked of
// (acknowledged-writes-survive reads it there).
const registerSource evidence.Source = "writer"

// registerCheckTimeout bounds the linearizability check a page's drawing
// needs; a history it cannot decide in that time is drawn with what the
// checker had found, and the page says so.
const registerCheckTimeout = 10 * time.Second

// registerView is what a run page says of the writer's history, beside the
// link to porcupine's drawing of it.
type registerView struct {
	Href    string
	Ops     int
	Writers int
	ReadAt  string
	Check   invariant.HistoryCheck
	Timeout time.Duration
	Problem string
}

// registerPage draws the latest history the record holds of the register
// writer with porcupine, for the page at href (a file beside the run's
// page). It returns nil when the run has no such history.
func registerPage(rec evidence.Record, origin time.Time, href string) (*registerView, []byte) {
	var ops []evidence.RegisterOp
	var readAt time.Time
	found := false
	for _, s := range orderedSnapshots(rec) {
		a := s.snap.Get(registerSource, evidence.RegisterHistory)
		if !a.Readable() {
			continue
		}
		var v evidence.RegisterHistoryValue
		if err := a.Decode(&v); err != nil {
			continue
		}
		ops, readAt, found = v.Ops, a.ReadAt, true
	}
	if !found {
		return nil, nil
	}
	rv := &registerView{Ops: len(ops), ReadAt: offset(readAt, origin), Timeout: registerCheckTimeout}
	writers := map[string]bool{}
	for _, op := range ops {
		writers[op.Writer] = true
	}
	rv.Writers = len(writers)
	var marks []invariant.HistoryMark
	events := rec.Timeline.Sorted()
	for _, m := range []struct{ kind, label string }{
		{invariant.FaultInjectedEvent, "fault injected"},
		{invariant.HealStartedEvent, "heal started"},
		{invariant.FaultHealedEvent, "fault healed"},
	} {
		if at := firstEvent(events, m.kind); !at.IsZero() {
			marks = append(marks, invariant.HistoryMark{At: at, Label: m.label})
		}
	}
	var b bytes.Buffer
	check, err := invariant.VisualizeRegisterHistory(ops, marks, registerCheckTimeout, &b)
	if err != nil {
		rv.Problem = err.Error()
		return rv, nil
	}
	rv.Check, rv.Href = check, href
	return rv, b.Bytes()
}

// registerHref is the file of a run page's register drawing, beside it.
func registerHref(runHref string) string {
	return strings.TrimSuffix(runHref, ".html") + "--register.html"
}
