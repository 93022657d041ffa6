package invariant

import (
	"time"

	"github.com/faultline/faultline/framework/verdict"
)

// JudgeFunc judges an invariant over its input, as Invariant.Judge does.
type JudgeFunc func(in Input) verdict.Judgement

// New makes an invariant of a name, a phase, what it reads and the
// function that judges it, as controller-runtime's reconcile.Func makes a
// reconciler of a function: an invariant over one question needs no type
// of its own. Judge holds what it returns to the verdict rules like any
// other invariant's.
func New(name string, phase verdict.Phase, reads []Reading, judge JudgeFunc) Invariant {
	return funcInvariant{name: name, phase: phase, reads: reads, judge: judge}
}

// NewBounded is New for an invariant that fires only on a condition that
// lasted past bound (see Bounded).
func NewBounded(name string, phase verdict.Phase, bound time.Duration, reads []Reading, judge JudgeFunc) Bounded {
	return boundedFunc{funcInvariant{name: name, phase: phase, reads: reads, judge: judge}, bound}
}

type funcInvariant struct {
	name  string
	phase verdict.Phase
	reads []Reading
	judge JudgeFunc
}

func (f funcInvariant) Name() string                     { return f.name }
func (f funcInvariant) Phase() verdict.Phase             { return f.phase }
func (f funcInvariant) Reads() []Reading                 { return append([]Reading(nil), f.reads...) }
func (f funcInvariant) Judge(in Input) verdict.Judgement { return f.judge(in) }

type boundedFunc struct {
	funcInvariant
	bound time.Duration
}

func (b boundedFunc) Bound() time.Duration { return b.bound }
