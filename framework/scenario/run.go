package scenario

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// A run: what one scenario run builds up phase by phase (its evidence
// record, its timeline, the verdicts decided so far, the moments its parts
// began), and the small steps every phase adds to it with.

// run is the state of one scenario run, built up phase by phase and turned
// into a verdict.Run at the end.
type run struct {
	sc  Scenario
	eng *engine
	id  string
	// rep is the run's repetition of its scenario × arm, from 1.
	rep     int
	started time.Time
	ended   time.Time

	// act makes heal and release happen at most once each, whoever asks
	// first (the end of the run, or the last-resort cleanup).
	act sync.Mutex
	// mu guards the state and what the phases and the cleanup share.
	mu       sync.Mutex
	st       state
	timings  map[string]float64
	record   evidence.Record
	timeline evidence.Recorder
	decided  map[string]verdict.Judgement
	probes   []probe
	// The moments that bound the parts of the run a verdict's evidence
	// can fall in (phaseAt): zero until reached.
	injectStarted, healStarted, healEnded time.Time
	// windowFrom and windowTo are when the window's sampling and probing
	// started and stopped: zero until the window ran.
	windowFrom, windowTo time.Time
	// load is the machine's load average at the run's start (and, once
	// finished, its end).
	load []verdict.Load
	// class is the fault class NOT_APPLICABLE is looked up under, when
	// not the scenario's fault's (a recorded run judged again).
	class string
	// judging is what the record keeps for judging the run again
	// (verdict.Judging), noted as each step is judged.
	judging verdict.Judging
	// replay is set when a recorded run is judged again (rejudge.go).
	replay *replay
}

func newRun(sc Scenario, eng *engine, now time.Time) *run {
	return newRepetition(sc, eng, now, 1, 1)
}

// newRepetition is the run of repetition rep of a suite run that runs
// each scenario × arm `of` times. Where there are several, the run's ID
// names its repetition: two repetitions of one pair can start in the same
// millisecond on two labs of a pool.
func newRepetition(sc Scenario, eng *engine, now time.Time, rep, of int) *run {
	id := fmt.Sprintf("%s-%s-%s", sc.ID, sc.arm(), now.UTC().Format("20060102T150405.000Z"))
	if of > 1 {
		id = fmt.Sprintf("%s-%s-rep%d-%s", sc.ID, sc.arm(), rep, now.UTC().Format("20060102T150405.000Z"))
	}
	r := &run{sc: sc, eng: eng, id: id, rep: rep, started: now, timings: map[string]float64{}, decided: map[string]verdict.Judgement{}}
	if l, ok := readLoad(); ok {
		r.load = append(r.load, l)
	}
	return r
}

// loadavgPath is where the machine's load average is read.
var loadavgPath = "/proc/loadavg"

// readLoad reads the machine's load average now; false when it cannot be
// read, so that a record never shows a load of zero it did not measure.
func readLoad() (verdict.Load, bool) {
	b, err := os.ReadFile(loadavgPath)
	if err != nil {
		return verdict.Load{}, false
	}
	return parseLoadavg(string(b), time.Now().UTC())
}

// parseLoadavg parses /proc/loadavg ("0.52 0.58 0.59 1/123 4567").
func parseLoadavg(text string, at time.Time) (verdict.Load, bool) {
	fields := strings.Fields(text)
	if len(fields) < 3 {
		return verdict.Load{}, false
	}
	var avg [3]float64
	for i := range avg {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil || v < 0 {
			return verdict.Load{}, false
		}
		avg[i] = v
	}
	return verdict.Load{At: at, One: avg[0], Five: avg[1], Fifteen: avg[2]}, true
}

func (r *run) event(kind, detail string) {
	r.timeline.Add(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: kind, Detail: detail})
}

// sampleFailed stamps a tick at which no snapshot could be taken on the
// timeline, at the tick's time (taken; now when the sampler gave none): the
// invariants count it as a round that could not tell, so no stretch is
// proven across it.
func (r *run) sampleFailed(taken time.Time, detail string) {
	if taken.IsZero() {
		taken = time.Now()
	}
	r.timeline.Add(evidence.Event{At: taken.UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: invariant.SampleFailedEvent, Detail: detail})
}

// progress prints a phase's line: how long it took and how often its
// snapshots came (the median and maximum interval between ticks, and the
// longest any source went without a value), with more said after it.
func (r *run) progress(phase string, since time.Time, snaps []evidence.Snapshot, more string) {
	c := evidence.CadenceOf(snaps)
	line := fmt.Sprintf("%s: %s %s, %d snapshots", r.id, phase, time.Since(since).Round(100*time.Millisecond), c.Snapshots)
	if c.Snapshots > 1 {
		line += fmt.Sprintf(" every %s (max %s)", c.Median.Round(10*time.Millisecond), c.Max.Round(10*time.Millisecond))
		if c.SlowestSource != "" && c.SourceMax > 2*c.Max {
			line += fmt.Sprintf(", %s %s without a value", c.SlowestSource, c.SourceMax.Round(100*time.Millisecond))
		}
	}
	if more != "" {
		line += ", " + more
	}
	r.eng.logf("%s", line)
}

func (r *run) timed(phase string, since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timings[phase] += time.Since(since).Seconds()
}

func (r *run) decide(j verdict.Judgement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decided[j.Invariant] = j
}

func (r *run) isDecided(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.decided[name]
	return ok
}

func (r *run) addEvents(events []evidence.Event) {
	for _, e := range events {
		r.timeline.Add(e)
	}
}

// faultClass is the class NOT_APPLICABLE is looked up under: the
// scenario's fault's, or the recorded one of a run judged again.
func (r *run) faultClass() string {
	if r.class != "" || r.sc.Fault == nil {
		return r.class
	}
	return string(r.sc.Fault.Class())
}

// faultClasses are the classes of what the run injects (fault.Classes),
// for the invariants judged after the fault; judging a recorded run
// again, those its record keeps.
func (r *run) faultClasses() []string {
	if r.replay != nil {
		return r.judging.FaultClasses
	}
	var out []string
	for _, c := range fault.Classes(r.sc.injected()) {
		out = append(out, string(c))
	}
	return out
}
