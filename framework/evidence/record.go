package evidence

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Record is all the evidence of one run, in the order it was taken: the
// baseline snapshot, the pre-fault window sampled after it, the snapshots
// sampled during the fault window, those sampled while heal ran, the
// settle samples before the last, the last settle sample (the final
// snapshot), and the timeline.
//
// Records written before the pre-fault window and heal samples were taken
// have neither, and their settle samples are only those some convergence
// invariant was judged over (the first in which it settled, when that was
// before the last), not every one.
type Record struct {
	Baseline *Snapshot `json:"baseline,omitempty"`
	// PreFault are the snapshots sampled after the baseline and before
	// the fault, over which (with the baseline) every invariant is judged
	// once before the fault.
	PreFault []Snapshot `json:"preFault,omitempty"`
	Window   []Snapshot `json:"window,omitempty"`
	// Heal are the snapshots sampled while the fault's heal ran.
	Heal   []Snapshot `json:"heal,omitempty"`
	Settle []Snapshot `json:"settle,omitempty"`
	Final  *Snapshot  `json:"final,omitempty"`
	// Timeline holds, among the rest, the heal-started and fault-healed
	// events that bound the heal.
	Timeline Timeline `json:"timeline,omitempty"`
}

// Line kinds of a record's JSONL form.
const (
	lineBaseline = "baseline"
	linePreFault = "pre-fault"
	lineWindow   = "window"
	lineHeal     = "heal"
	lineSettle   = "settle"
	lineFinal    = "final"
	lineEvent    = "event"
)

// recordLine is one line of a record's JSONL form: a snapshot or an event,
// tagged with what it is. One thing per line lets tools read a long record
// line by line (grep, jq) without holding it whole.
type recordLine struct {
	Kind     string    `json:"kind"`
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	Event    *Event    `json:"event,omitempty"`
}

// WriteJSONL writes the record as JSON lines: the baseline, the pre-fault,
// window, heal and settle snapshots, each in order, the final snapshot,
// then the timeline's events.
func (r Record) WriteJSONL(w io.Writer) error {
	enc := json.NewEncoder(w)
	put := func(l recordLine) error {
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("writing %s line: %w", l.Kind, err)
		}
		return nil
	}
	if r.Baseline != nil {
		if err := put(recordLine{Kind: lineBaseline, Snapshot: r.Baseline}); err != nil {
			return err
		}
	}
	for _, part := range []struct {
		kind  string
		snaps []Snapshot
	}{{linePreFault, r.PreFault}, {lineWindow, r.Window}, {lineHeal, r.Heal}, {lineSettle, r.Settle}} {
		for i := range part.snaps {
			if err := put(recordLine{Kind: part.kind, Snapshot: &part.snaps[i]}); err != nil {
				return err
			}
		}
	}
	if r.Final != nil {
		if err := put(recordLine{Kind: lineFinal, Snapshot: r.Final}); err != nil {
			return err
		}
	}
	for i := range r.Timeline {
		if err := put(recordLine{Kind: lineEvent, Event: &r.Timeline[i]}); err != nil {
			return err
		}
	}
	return nil
}

// ReadJSONL reads a record written by WriteJSONL. Every snapshot's answers
// are validated, so a value without a read time or an unreadable answer
// without a reason is an error naming its line.
func ReadJSONL(rd io.Reader) (Record, error) {
	var r Record
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l recordLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return Record{}, fmt.Errorf("evidence line %d: %w", n, err)
		}
		switch l.Kind {
		case lineBaseline, linePreFault, lineWindow, lineHeal, lineSettle, lineFinal:
			if l.Snapshot == nil {
				return Record{}, fmt.Errorf("evidence line %d: %s line has no snapshot", n, l.Kind)
			}
			if err := l.Snapshot.Validate(); err != nil {
				return Record{}, fmt.Errorf("evidence line %d: %w", n, err)
			}
			switch l.Kind {
			case lineBaseline:
				if r.Baseline != nil {
					return Record{}, fmt.Errorf("evidence line %d: a second baseline", n)
				}
				r.Baseline = l.Snapshot
			case linePreFault:
				r.PreFault = append(r.PreFault, *l.Snapshot)
			case lineWindow:
				r.Window = append(r.Window, *l.Snapshot)
			case lineHeal:
				r.Heal = append(r.Heal, *l.Snapshot)
			case lineSettle:
				r.Settle = append(r.Settle, *l.Snapshot)
			case lineFinal:
				if r.Final != nil {
					return Record{}, fmt.Errorf("evidence line %d: a second final snapshot", n)
				}
				r.Final = l.Snapshot
			}
		case lineEvent:
			if l.Event == nil {
				return Record{}, fmt.Errorf("evidence line %d: event line has no event", n)
			}
			r.Timeline = append(r.Timeline, *l.Event)
		default:
			return Record{}, fmt.Errorf("evidence line %d: unknown line kind %q", n, l.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return Record{}, fmt.Errorf("reading evidence: %w", err)
	}
	if n == 0 {
		return Record{}, errors.New("evidence is empty")
	}
	return r, nil
}
