package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/suites/drills"
)

// LaneRead is one read drawn in a lane of the side-by-side timelines: what
// a source showed of the drill at one moment, summed up in a state
// (which colours it) and a sentence.
type LaneRead struct {
	At time.Time
	// State is one of the Runtime* or Pods* constants, or Unreadable.
	State string
	Text  string
}

// Lane states.
const (
	Unreadable = "unreadable"
	// The worker's runtime: pre-fault containers of the drill running;
	// only containers started after the fault; none.
	RuntimeOldRunning = "pre-fault-running"
	RuntimeNewOnly    = "new-only"
	RuntimeNone       = "none-running"
	// The API's listing of the drill's pods: every pre-fault pod listed
	// and none marked for deletion; some marked for deletion; none of the
	// pre-fault pods listed any more.
	PodsKept        = "pre-fault-listed"
	PodsTerminating = "terminating"
	PodsReplaced    = "pre-fault-gone"
	// PodsListed: listed, but the baseline did not list the drill's pods
	// to tell the pre-fault ones apart.
	PodsListed = "listed"
)

// runtimeReads are every read of the worker's runtime the record holds,
// baseline to final, in read order.
func runtimeReads(rec evidence.Record, worker string, faultAt time.Time) []LaneRead {
	src := evidence.Source("cri/" + worker)
	var out []LaneRead
	for _, s := range everySnapshot(rec) {
		a := s.Get(src, drills.QuestionContainers)
		switch {
		case a.State == evidence.NotAsked:
			continue
		case !a.Readable():
			out = append(out, LaneRead{At: a.ReadAt, State: Unreadable, Text: "unreadable: " + a.Reason})
			continue
		}
		var cv drills.ContainersValue
		if err := a.Decode(&cv); err != nil {
			out = append(out, LaneRead{At: a.ReadAt, State: Unreadable, Text: "undecodable: " + err.Error()})
			continue
		}
		old, all := 0, 0
		for _, c := range cv.Containers {
			if c.State != "CONTAINER_RUNNING" {
				continue
			}
			all++
			if c.CreatedAt.Before(faultAt) {
				old++
			}
		}
		r := LaneRead{At: a.ReadAt}
		switch {
		case old > 0:
			r.State, r.Text = RuntimeOldRunning, fmt.Sprintf("%d pre-fault container(s) of the drill running", old)
			if all > old {
				r.Text += fmt.Sprintf(", %d started since", all-old)
			}
		case all > 0:
			r.State, r.Text = RuntimeNewOnly, fmt.Sprintf("no pre-fault container running; %d started after the fault", all)
		default:
			r.State, r.Text = RuntimeNone, "no container of the drill running"
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// podReads are one API server's listings of the drill's pods, baseline to
// final: the first API server by name that listed them at the baseline
// (or at all), so the lane is one server's view. It returns the source
// read.
func podReads(rec evidence.Record, baseline map[string]drills.PodState) ([]LaneRead, string) {
	snaps := everySnapshot(rec)
	var srcs []evidence.Source
	seen := map[evidence.Source]bool{}
	for _, s := range snaps {
		for _, src := range s.Sources() {
			if strings.HasPrefix(string(src), "apiserver/") && !seen[src] && s.Get(src, drills.QuestionPods).Readable() {
				seen[src] = true
				srcs = append(srcs, src)
			}
		}
	}
	if len(srcs) == 0 {
		return nil, ""
	}
	sort.Slice(srcs, func(i, j int) bool { return srcs[i] < srcs[j] })
	src := srcs[0]
	if rec.Baseline != nil {
		for _, s := range srcs {
			if rec.Baseline.Get(s, drills.QuestionPods).Readable() {
				src = s
				break
			}
		}
	}
	var out []LaneRead
	for _, s := range snaps {
		a := s.Get(src, drills.QuestionPods)
		if a.State == evidence.NotAsked {
			continue
		}
		pods, ok := decodePods(a)
		if !ok {
			reason := a.Reason
			if a.Readable() {
				reason = "undecodable"
			}
			out = append(out, LaneRead{At: a.ReadAt, State: Unreadable, Text: "unreadable: " + reason})
			continue
		}
		out = append(out, podsRead(a.ReadAt, pods, baseline))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, string(src)
}

func podsRead(at time.Time, pods []drills.PodState, baseline map[string]drills.PodState) LaneRead {
	listed, terminating := 0, 0
	phases := map[string]int{}
	var newer []string
	for _, p := range pods {
		if _, old := baseline[p.UID]; old {
			listed++
			if p.DeletionTimestamp != nil {
				terminating++
			}
			continue
		}
		what := p.Phase
		if p.Node == "" {
			what += ", unscheduled"
		}
		phases[what]++
	}
	for what, n := range phases {
		newer = append(newer, fmt.Sprintf("%d %s", n, what))
	}
	sort.Strings(newer)
	r := LaneRead{At: at}
	switch {
	case baseline == nil:
		r.State = PodsListed
		r.Text = fmt.Sprintf("%d pod(s) listed (the baseline did not list the drill's pods)", len(pods))
	case listed == 0:
		r.State, r.Text = PodsReplaced, fmt.Sprintf("none of the %d pre-fault pods listed", len(baseline))
	case terminating > 0:
		r.State, r.Text = PodsTerminating, fmt.Sprintf("%d of %d pre-fault pods listed, %d marked for deletion", listed, len(baseline), terminating)
	default:
		r.State, r.Text = PodsKept, fmt.Sprintf("%d of %d pre-fault pods listed, none marked for deletion", listed, len(baseline))
	}
	if len(newer) > 0 && baseline != nil {
		r.Text += "; pods created since: " + strings.Join(newer, ", ")
	}
	return r
}

// everySnapshot is the record's snapshots, baseline to final.
func everySnapshot(rec evidence.Record) []evidence.Snapshot {
	var out []evidence.Snapshot
	if rec.Baseline != nil {
		out = append(out, *rec.Baseline)
	}
	out = append(out, rec.PreFault...)
	return append(out, samples(rec)...)
}
