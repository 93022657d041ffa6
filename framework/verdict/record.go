package verdict

import "time"

// Phase says when an invariant is judged.
type Phase string

const (
	// Safety invariants are judged over the fault window.
	Safety Phase = "safety"
	// Convergence invariants are judged after heal and settle.
	Convergence Phase = "convergence"
)

// Judgement is one invariant's verdict in one run, with the evidence that
// backs it named.
type Judgement struct {
	Invariant string  `json:"invariant"`
	Phase     Phase   `json:"phase"`
	Verdict   Verdict `json:"verdict"`
	Reason    string  `json:"reason"`
	// Sources are the evidence sources the verdict was judged from.
	Sources []string `json:"sources,omitempty"`
	// At is the moment the deciding evidence was read (zero if none).
	At time.Time `json:"at,omitempty"`
}

// LabInfo is what a run record says about the lab.
type LabInfo struct {
	Name              string            `json:"name"`
	Kind              string            `json:"kind"`
	Topology          string            `json:"topology,omitempty"`
	ResetKind         string            `json:"resetKind,omitempty"`
	KubernetesVersion string            `json:"kubernetesVersion,omitempty"`
	EtcdVersion       string            `json:"etcdVersion,omitempty"`
	TimerProfile      string            `json:"timerProfile,omitempty"`
	Timers            map[string]string `json:"timers,omitempty"`
}

// Run is one record of verdicts.jsonl: one scenario, one arm, one run.
type Run struct {
	RunID      string     `json:"runID"`
	Suite      string     `json:"suite"`
	Scenario   string     `json:"scenario"`
	Title      string     `json:"title,omitempty"`
	Arm        string     `json:"arm"`
	FaultClass string     `json:"faultClass,omitempty"`
	FaultKind  string     `json:"faultKind,omitempty"`
	Labels     []string   `json:"labels,omitempty"`
	Started    time.Time  `json:"started"`
	Ended      time.Time  `json:"ended"`
	RunVerdict RunVerdict `json:"runVerdict"`
	// RunReason explains a run verdict other than JUDGED.
	RunReason  string      `json:"runReason,omitempty"`
	Judgements []Judgement `json:"judgements"`
	// Timings are phase durations in seconds (reset, inject, window, heal, settle).
	Timings    map[string]float64 `json:"timings,omitempty"`
	Lab        LabInfo            `json:"lab"`
	GitCommit  string             `json:"gitCommit,omitempty"`
	ConfigHash string             `json:"configHash,omitempty"`
	// SpecState is Ginkgo's outcome for the spec (passed, failed, ...).
	SpecState string `json:"specState,omitempty"`
}

// Counted reports whether the run's verdicts count towards rates.
func (r Run) Counted() bool { return r.RunVerdict == RunJudged }

// Inapplicable is one row of the applicability table: a fault class that
// cannot reach what an invariant reads, and why. Every report prints the
// table it was judged with.
type Inapplicable struct {
	FaultClass string `json:"faultClass"`
	Invariant  string `json:"invariant"`
	Reason     string `json:"reason"`
}
