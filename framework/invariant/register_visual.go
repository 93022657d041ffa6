package invariant

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/faultline/faultline/framework/evidence"
)

// HistoryMark is a moment of the run drawn beside the register writer's
// history: the fault's injection, the heal.
type HistoryMark struct {
	At    time.Time
	Label string
}

// HistoryCheck is what the linearizability checker said of a history it
// drew.
type HistoryCheck string

const (
	HistoryLinearizable    HistoryCheck = "linearizable"
	HistoryNotLinearizable HistoryCheck = "not linearizable"
	// HistoryUndecided: the checker ran out of time; the drawing shows
	// the partial linearizations it had found.
	HistoryUndecided HistoryCheck = "undecided"
)

// VisualizeRegisterHistory checks the register writer's history against
// the model acknowledged-writes-survive checks it with and writes
// porcupine's own visualisation of it to w: one HTML page, its script and
// data inline, that fetches nothing. A linearizable history is drawn with
// its linearization, any other with the longest partial linearizations
// found and the operations none of them can place. marks are drawn in a
// row of their own, and the writers are named in another (porcupine
// numbers its clients). The check gives up after timeout.
func VisualizeRegisterHistory(ops []evidence.RegisterOp, marks []HistoryMark, timeout time.Duration, w io.Writer) (HistoryCheck, error) {
	hist, err := historyOf(ops)
	if err != nil {
		return "", fmt.Errorf("the writer's history is malformed: %w", err)
	}
	if len(hist) == 0 {
		return "", fmt.Errorf("the writer's history has no operation that took effect (%d logged)", len(ops))
	}
	model := registerModel(ops)
	res, info := porcupine.CheckOperationsVerbose(model, hist, timeout)
	var notes []porcupine.Annotation
	for _, m := range marks {
		if m.At.IsZero() {
			continue
		}
		notes = append(notes, porcupine.Annotation{Tag: "faultline", Start: m.At.UnixNano(), Description: m.Label,
			Details: m.Label + " at " + m.At.UTC().Format("15:04:05.000"), BackgroundColor: "#fde8c8"})
	}
	clients, first := writerClients(ops)
	for id, name := range clients {
		notes = append(notes, porcupine.Annotation{Tag: "writers", Start: first[name].UnixNano(),
			Description: fmt.Sprintf("client %d: %s", id, name), Details: fmt.Sprintf("the register writer %s's operations are client %d", name, id)})
	}
	info.AddAnnotations(notes)
	if err := porcupine.Visualize(model, info, w); err != nil {
		return "", fmt.Errorf("drawing the writer's history: %w", err)
	}
	switch res {
	case porcupine.Ok:
		return HistoryLinearizable, nil
	case porcupine.Illegal:
		return HistoryNotLinearizable, nil
	}
	return HistoryUndecided, nil
}

// writerClients names the writers in the order historyOf numbers them,
// with each one's first operation that took effect.
func writerClients(ops []evidence.RegisterOp) ([]string, map[string]time.Time) {
	var names []string
	first := map[string]time.Time{}
	for _, op := range ops {
		if op.Outcome == outcomeFail {
			continue
		}
		if _, ok := first[op.Writer]; !ok {
			names = append(names, op.Writer)
			first[op.Writer] = op.Invoke
		}
	}
	return names, first
}

// describeOpMetadata is what the visualisation shows of an operation
// beside what it did: which writer, which round, its outcome.
func describeOpMetadata(info any) string {
	m, ok := info.(opMetadata)
	if !ok {
		return ""
	}
	parts := []string{m.writer, fmt.Sprintf("round %d", m.round), "outcome " + m.outcome}
	if m.version != "" {
		parts = append(parts, "resourceVersion "+m.version)
	}
	return strings.Join(parts, ", ")
}

// opMetadata is an operation's origin, carried to the visualisation.
type opMetadata struct {
	writer  string
	round   int
	outcome string
	version string
}
