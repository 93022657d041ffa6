package evidence

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Record is all the evidence of one run: the snapshot before the fault, the
// snapshots sampled during the window, the settle samples some convergence
// invariant was judged over (the first in which it settled, when that was
// before the last), the snapshot after heal and settle, and the timeline.
type Record struct {
	Baseline *Snapshot  `json:"baseline,omitempty"`
	Window   []Snapshot `json:"window,omitempty"`
	Settle   []Snapshot `json:"settle,omitempty"`
	Final    *Snapshot  `json:"final,omitempty"`
	Timeline Timeline   `json:"timeline,omitempty"`
}

// Line kinds of a record's JSONL form.
const (
	lineBaseline = "baseline"
	lineWindow   = "window"
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

// WriteJSONL writes the record as JSON lines: the baseline, the window
// snapshots in order, the settle snapshots in order, the final snapshot,
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
	for i := range r.Window {
		if err := put(recordLine{Kind: lineWindow, Snapshot: &r.Window[i]}); err != nil {
			return err
		}
	}
	for i := range r.Settle {
		if err := put(recordLine{Kind: lineSettle, Snapshot: &r.Settle[i]}); err != nil {
			return err
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
		case lineBaseline, lineWindow, lineSettle, lineFinal:
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
			case lineWindow:
				r.Window = append(r.Window, *l.Snapshot)
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
