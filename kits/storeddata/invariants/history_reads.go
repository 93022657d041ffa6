package invariants

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// unreadTail is what a judgement from one read of a growing record (a
// history store's keys, a log appended to) leaves unread: the reads of
// the input's later snapshots, none of which gave a value. Such a record
// holds, when read, everything written before; so the read of the input's
// last snapshot (after the workloads quiesced, when the suite quiesces
// them) covers every write, and an earlier one only what came before it.
type unreadTail struct {
	// readAt is when the judged read returned.
	readAt time.Time
	// last is when the input's last snapshot was taken.
	last time.Time
	// unread counts the later reads that gave no value; first is why
	// the first of them gave none.
	unread int
	first  string
}

// tailAfter is the unread tail after snapshot i of snaps, in which src's
// answer a to q was judged.
func tailAfter(snaps []evidence.Snapshot, i int, a evidence.Answer, src evidence.Source, q evidence.Question) unreadTail {
	u := unreadTail{readAt: a.ReadAt}
	if len(snaps) > 0 {
		u.last = snaps[len(snaps)-1].Taken
	}
	for _, s := range snaps[i+1:] {
		b := s.Get(src, q)
		why := b.Reason
		switch b.State {
		case evidence.NotAsked:
			why = fmt.Sprintf("%s was not asked %s", src, q)
		case evidence.Unreadable:
		default:
			why = "a value that could not be decoded"
		}
		u.unread++
		if u.first == "" {
			u.first = why
		}
	}
	return u
}

func (u unreadTail) String() string {
	return fmt.Sprintf("read at %s; the %d read(s) after it, through the last snapshot at %s, gave no value (first: %s)",
		invariant.Stamp(u.readAt), u.unread, invariant.Stamp(u.last), u.first)
}

// hold holds a judgement made from the read to what that read can show
// of the whole input (what names the record, for the reason): a VIOLATED
// stands, for what the read shows happened; a PRESERVED needs the read of
// the input's last snapshot, which covers every write, and from an
// earlier read is INSUFFICIENT_DATA, as an INSUFFICIENT_DATA stays.
func (u unreadTail) hold(j verdict.Judgement, what string) verdict.Judgement {
	if u.unread == 0 {
		return j
	}
	if j.Verdict == verdict.Violated {
		j.Reason += fmt.Sprintf("; the %s judged was %s", what, u)
		return j
	}
	return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: j.Sources,
		Reason: fmt.Sprintf("the latest readable %s was %s: what was written after %s was never read, and a PRESERVED needs the %s as the input's last snapshot read it, after every write (from the earlier read alone: %s, %s)",
			what, u, invariant.Stamp(u.readAt), what, j.Verdict, j.Reason)}
}
