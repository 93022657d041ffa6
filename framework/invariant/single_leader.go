package invariant

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// SingleLeaderName names the single-leader invariant.
const SingleLeaderName = "single-leader"

// leaderComponents are the leader-elected components judged, with the
// question each host answers about its own process and the Lease.
var leaderComponents = []struct {
	name    string
	leading evidence.Question
	lease   evidence.Question
}{
	{"kube-controller-manager", evidence.ControllerManagerLeading, evidence.ControllerManagerLease},
	{"kube-scheduler", evidence.SchedulerLeading, evidence.SchedulerLease},
}

// SingleLeader: at most one kube-controller-manager and at most one
// kube-scheduler act as leader at any moment.
//
// Reads: from every control-plane host ("controlplane/*"), whether its
// controller-manager and its scheduler act as leader, with the identity
// of the process; and the two leader Leases from every API server, to
// name the holders in reasons.
//
// Fires when two hosts acted as leader of one component at a proven common
// moment: a process seen leading by two reads led throughout between them,
// because a controller that loses its lease exits (see simultaneity.go).
// The Leases alone never decide: holder and renew times are written by
// different hosts' clocks, and a Lease can only say who should lead, not
// who acts.
//
// Why: leader election is what keeps two controllers from acting on the
// same objects; the Lease's duration and the renew deadline are meant to
// make the old leader stop before a new one can start.
//
// INSUFFICIENT_DATA when no host's answer was readable, or when a host was
// unreadable while another led (a second leader could have hidden there).
//
// Exercised when leadership of a component changed hands within the
// input: two processes (by identity, or on two hosts) were seen leading
// it, or the timeline has a leader Lease changing holder (leader-changed)
// within the input's span (one a relisting replayed by its acquireTime:
// evidence.Event.Within). Only then could an old leader have gone on
// acting beside a new one; a run with one leader throughout never
// challenged the guarantee, and its PRESERVED says so. VIOLATED is always
// exercised.
func SingleLeader() Invariant { return singleLeader{} }

// leaderChangedEvent is the timeline event of a leader Lease changing
// holder (recorded by evidence/watch).
const leaderChangedEvent = "leader-changed"

type singleLeader struct{}

func (singleLeader) Name() string         { return SingleLeaderName }
func (singleLeader) Phase() verdict.Phase { return verdict.Safety }
func (singleLeader) Reads() []Reading {
	var rs []Reading
	for _, c := range leaderComponents {
		rs = append(rs, Reading{Sources: "controlplane/*", Question: c.leading}, Reading{Sources: ConsistentReaders, Question: c.lease})
	}
	return rs
}

func (singleLeader) Judge(in Input) verdict.Judgement {
	snaps := Ordered(in.Snapshots)
	taken := make([]time.Time, len(snaps))
	for i, s := range snaps {
		taken[i] = s.Taken
	}
	var summaries, unsure, handOvers []string
	var sources []string
	for _, c := range leaderComponents {
		obs, gaps := Collect[evidence.LeadingValue](snaps, "controlplane/*", c.leading)
		if len(obs) == 0 {
			unsure = append(unsure, fmt.Sprintf("no host said whether its %s leads (%s)", c.name, orNone(GapSummary(gaps))))
			continue
		}
		hosts := SourcesOf(obs, gaps)
		sources = append(sources, hosts...)
		byPlace := map[string][]placeRead{}
		bySnap := map[int][]placeRead{}
		for _, o := range obs {
			r := placeRead{Place: string(o.Source), Taken: o.Taken, ReadAt: o.ReadAt}
			if o.Value.Leading {
				// Without a process identity continuity is unknown: each
				// read then stands alone and never spans.
				id := o.Value.Process
				if id == "" {
					id = fmt.Sprintf("unidentified@%d", o.Snapshot)
				}
				r.Active = []string{id}
			}
			byPlace[r.Place] = append(byPlace[r.Place], r)
			bySnap[o.Snapshot] = append(bySnap[o.Snapshot], r)
		}
		if ov, ok := firstOverlap(byPlace); ok {
			reason := fmt.Sprintf("two %s leaders at once: %s", c.name, describeOverlap(ov, "process"))
			if holders := leaseHolders(snaps, c.lease); holders != "" {
				reason += "; lease holders seen: " + holders
			}
			return verdict.Judgement{Verdict: verdict.Violated, Reason: reason, Sources: []string{ov.A.Place, ov.B.Place}, At: ov.At,
				Exercised: verdict.Exercised(), Exercise: fmt.Sprintf("%s led on %s and on %s", c.name, HostOf(evidence.Source(ov.A.Place)), HostOf(evidence.Source(ov.B.Place)))}
		}
		if blind := blindSpots(hosts, taken, bySnap); len(blind) > 0 {
			b := blind[0]
			unsure = append(unsure, fmt.Sprintf("%s: %s unreadable at %s while %s led (%d such snapshots)", c.name, strings.Join(b.Unreadable, ", "), Stamp(b.Taken), orNone(strings.Join(b.Active, ", ")), len(blind)))
			continue
		}
		summaries = append(summaries, fmt.Sprintf("%s: %s", c.name, runningSummary(byPlace)))
		if leaders := leadersSeen(obs); len(leaders) > 1 {
			handOvers = append(handOvers, fmt.Sprintf("%s led by %s", c.name, strings.Join(leaders, ", then ")))
		}
	}
	sources = uniqueSorted(sources)
	if len(unsure) > 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no two leaders seen, but " + strings.Join(unsure, "; "), Sources: sources}
	}
	reason := "at most one leader of each component at every proven moment (" + strings.Join(summaries, "; ") + ")"
	reason = strings.ReplaceAll(reason, "ran it in", "led in")
	from, to := in.Span()
	for _, e := range in.Timeline.OfKind(leaderChangedEvent) {
		if e.Within(from, to) {
			handOvers = append(handOvers, fmt.Sprintf("%s changed holder at %s (%s)", e.Subject, eventStamp(e), e.Detail))
		}
	}
	exercised, exercise := verdict.Exercised(), strings.Join(handOvers, "; ")
	if len(handOvers) == 0 {
		exercised, exercise = verdict.NotExercised(), "one leader of each component throughout, and no leader Lease changed holder within the input"
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Sources: sources, Exercised: exercised, Exercise: exercise}
}

// leadersSeen lists the leaders of one component in the order first seen,
// each a process on a host; a leader without a process identity counts
// once per host, since nothing tells its processes apart.
func leadersSeen(obs []Observation[evidence.LeadingValue]) []string {
	var out []string
	for _, o := range obs {
		if !o.Value.Leading {
			continue
		}
		who := fmt.Sprintf("%s on %s", o.Value.Process, HostOf(o.Source))
		if o.Value.Process == "" {
			who = "a process on " + HostOf(o.Source)
		}
		if !slices.Contains(out, who) {
			out = append(out, who)
		}
	}
	return out
}

// leaseHolders lists the distinct holders the API servers showed, in order.
func leaseHolders(snaps []evidence.Snapshot, q evidence.Question) string {
	obs, _ := Collect[evidence.LeaseValue](snaps, ConsistentReaders, q)
	var holders []string
	seen := map[string]bool{}
	for _, o := range obs {
		h := o.Value.HolderIdentity
		if h != "" && !seen[h] {
			seen[h] = true
			holders = append(holders, fmt.Sprintf("%s (first by %s at %s)", h, o.Source, Stamp(o.ReadAt)))
		}
	}
	return strings.Join(holders, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
