package invariant

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/verdict"
)

// What a judgement says when it is not what was expected of it: a
// VIOLATED where the invariant should hold, or anything else where a
// positive control should have broken it. The scenario engine fails a
// spec with these, and the matchers package's Preserve gives the same
// words to a user's own assertions.

// ViolatedMessage says that j, judged over in, is VIOLATED: the
// invariant, the evidence it was judged over, the moment, the sources and
// the reason.
func ViolatedMessage(j verdict.Judgement, in Input) string {
	return fmt.Sprintf("invariant %s (%s) was VIOLATED over %s\n%s", j.Invariant, j.Phase, spanText(in), judgementDetail(j))
}

// NotViolatedMessage says that j, judged over in, is not the VIOLATED
// expected of it, and what it is instead.
func NotViolatedMessage(j verdict.Judgement, in Input) string {
	return fmt.Sprintf("expected invariant %s (%s) to be VIOLATED over %s, but it was %s\n%s", j.Invariant, j.Phase, spanText(in), j.Verdict, judgementDetail(j))
}

// spanText names the evidence: its moment, and how many snapshots from
// when to when.
func spanText(in Input) string {
	from, to := in.Span()
	n := len(in.Snapshots)
	switch {
	case n == 0:
		return fmt.Sprintf("the %s (no snapshots)", in.Moment)
	case n == 1:
		return fmt.Sprintf("the %s (1 snapshot at %s)", in.Moment, zoneStamp(from))
	default:
		return fmt.Sprintf("the %s (%d snapshots, %s to %s)", in.Moment, n, zoneStamp(from), zoneStamp(to))
	}
}

func judgementDetail(j verdict.Judgement) string {
	at := "not stated by the invariant"
	if !j.At.IsZero() {
		at = zoneStamp(j.At)
	}
	sources := "none named"
	if len(j.Sources) > 0 {
		sources = strings.Join(j.Sources, ", ")
	}
	return fmt.Sprintf("  moment:  %s\n  sources: %s\n  reason:  %s", at, sources, j.Reason)
}

// zoneStamp is t to the millisecond, in UTC, saying so.
func zoneStamp(t time.Time) string { return t.UTC().Format("15:04:05.000Z07:00") }
