package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/suites/drills"
)

// Statement is one answer of the racks drill with the evidence behind it.
type Statement struct {
	Question string
	Answer   string
	Evidence []string
}

// RacksHosts names the racks drill's hosts as the evidence shows them.
type RacksHosts struct{ M1, W1, M2, W2 string }

// AnalyseRacks answers the racks drill's questions from one run.
func AnalyseRacks(run verdict.Run, rec evidence.Record, h RacksHosts) ([]Statement, error) {
	tl := rec.Timeline.Sorted()
	inj := tl.OfKind("fault-injected")
	if len(inj) == 0 {
		return nil, fmt.Errorf("run %s: its timeline has no fault-injected event", run.RunID)
	}
	// The positive control's inject waits for the taint and force-deletes:
	// the cut came at the start of the inject.
	faultAt := inj[0].At.Add(-time.Duration(run.Timings["inject"] * float64(time.Second)))
	if l := tl.OfKind("ledger-recorded"); len(l) > 0 {
		faultAt = l[0].At
	}
	// The window ends as the heal starts: what follows is the heal's doing.
	// Records written before the engine stamped heal-started end it at the
	// heal's end instead.
	healAt := time.Time{}
	if hs := tl.OfKind("heal-started"); len(hs) > 0 {
		healAt = hs[0].At
	} else if hl := tl.OfKind("fault-healed"); len(hl) > 0 {
		healAt = hl[0].At
	}
	rel := func(t time.Time) string { return fmt.Sprintf("%s (+%s)", stamp(t), secs(t.Sub(faultAt))) }
	inWindow := func(t time.Time) bool { return !t.Before(faultAt) && (healAt.IsZero() || t.Before(healAt)) }
	var out []Statement

	// Placement before the cut.
	pl := Statement{Question: "Where were the leader leases and the virtual address when R1 was cut off?"}
	for _, e := range tl {
		if (e.Kind == drills.KindLeadersPlaced || e.Kind == drills.KindVirtualAddressPlaced) && e.At.Before(faultAt) {
			pl.Evidence = append(pl.Evidence, fmt.Sprintf("timeline %s %s: %s %s", rel(e.At), e.Source, e.Kind, e.Detail))
		}
	}
	kcm, sched := leaderAt(rec.Baseline, "kube-controller-manager"), leaderAt(rec.Baseline, "kube-scheduler")
	pl.Answer = fmt.Sprintf("at the baseline the kube-controller-manager lease was held by %s and the kube-scheduler lease by %s (drill/leaders)", orNone(drills.HolderHost(kcm)), orNone(drills.HolderHost(sched)))
	if len(pl.Evidence) == 0 {
		pl.Answer += "; the run records no placement of the leases or the virtual address before the cut"
	}
	out = append(out, pl)

	// Leaders.
	le := func(key, name string) string {
		if v, ok := run.Lab.Timers[key]; ok {
			return name + " = " + v
		}
		return name + " (not recorded)"
	}
	timersText := strings.Join([]string{le("leader-election.lease-duration", "lease duration"), le("leader-election.renew-deadline", "renew deadline"), le("leader-election.retry-period", "retry period")}, ", ")
	for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
		st := Statement{Question: fmt.Sprintf("What triggers the %s leader election, and how long until M2 leads?", lease)}
		before := leaderAt(rec.Baseline, lease)
		var took *evidence.Snapshot
		var takeSrc evidence.Source
		var holder string
		for i := range rec.Window {
			s := &rec.Window[i]
			for _, src := range s.Sources() {
				var v drills.LeadersValue
				if err := s.Get(src, drills.QuestionLeaders).Decode(&v); err != nil {
					continue
				}
				if hh := v.Leases[lease].HolderIdentity; drills.HolderHost(hh) == h.M2 && took == nil {
					took, takeSrc, holder = s, src, hh
				}
			}
			if took != nil {
				break
			}
		}
		switch {
		case drills.HolderHost(before) != h.M1:
			st.Answer = fmt.Sprintf("not answerable from this run: before the fault %s was held by %q, not by M1 (%s)", lease, before, h.M1)
		case took == nil:
			st.Answer = fmt.Sprintf("M1 held the lease before the fault and no API server showed M2 holding it during the window (%s)", timersText)
		default:
			a := took.Get(takeSrc, drills.QuestionLeaders)
			seen, src := a.ReadAt, string(takeSrc)
			for _, e := range tl {
				if e.Kind == "leader-changed" && strings.HasSuffix(e.Subject, "/"+lease) && inWindow(e.At) && strings.Contains(e.Detail, "→ "+h.M2+"_") && e.At.Before(seen) {
					seen, src = e.At, string(e.Source)+" (timeline)"
					break
				}
			}
			st.Answer = fmt.Sprintf("M1 held the lease before the cut and could no longer renew it (its API server lost etcd); M2's standby took it once it had gone unrenewed for the lease duration. "+
				"M2 was first seen leading at %s by %s, %s after the cut (%s).", rel(seen), src, secs(seen.Sub(faultAt)), timersText)
			st.Evidence = append(st.Evidence, fmt.Sprintf("baseline: holder %s (drill/leaders)", before),
				fmt.Sprintf("%s at %s: holder %s", takeSrc, stamp(a.ReadAt), holder))
		}
		for _, e := range tl {
			if e.Kind == "leader-changed" && strings.HasSuffix(e.Subject, "/"+lease) && inWindow(e.At) {
				st.Evidence = append(st.Evidence, fmt.Sprintf("timeline %s %s: leader-changed %s", rel(e.At), e.Source, e.Detail))
			}
		}
		out = append(out, st)
	}

	// M1's components.
	st := Statement{Question: "What do M1's components do?"}
	restarted, restartEvidence := componentRestarts(rec, h.M1, rel)
	var acts []string
	for _, e := range tl {
		if strings.HasPrefix(e.Subject, "process/"+h.M1+"/") && inWindow(e.At) {
			acts = append(acts, fmt.Sprintf("%s %s %s (%s)", rel(e.At), strings.TrimPrefix(e.Subject, "process/"), e.Kind, e.Detail))
		}
	}
	if len(acts) == 0 {
		st.Answer = "no stop, start or restart of M1's kube-apiserver, kube-controller-manager or kube-scheduler was seen during the window (the lab's process table was read every sample)"
	} else {
		n := map[string]int{}
		for _, e := range tl {
			if strings.HasPrefix(e.Subject, "process/"+h.M1+"/") && inWindow(e.At) {
				n[e.Kind]++
			}
		}
		st.Answer = fmt.Sprintf("%d process changes on M1 during the window: %d stopped, %d started, %d restarted (a new pid between two reads)",
			len(acts), n[drills.KindComponentStopped], n[drills.KindComponentStarted], n[drills.KindComponentRestarted])
		st.Evidence = acts
	}
	if restarted != "" {
		st.Answer = restarted + "; " + st.Answer
		st.Evidence = append(restartEvidence, st.Evidence...)
	}
	out = append(out, st)

	// P1 on W1.
	p1 := Statement{Question: "Does P1 keep running on W1 while R1 is cut off?"}
	reads, running, readable := 0, 0, 0
	var lastRun time.Time
	var why string
	for _, s := range rec.Window {
		a := s.Get(evidence.Source("cri/"+h.W1), evidence.PodRunningHere)
		if a.State == evidence.NotAsked {
			continue
		}
		reads++
		var v evidence.RuntimePodValue
		if err := a.Decode(&v); err != nil {
			if why == "" {
				why = a.Reason
			}
			continue
		}
		readable++
		if v.Running {
			running++
			lastRun = a.ReadAt
		}
	}
	switch {
	case readable == 0:
		p1.Answer = "cannot be said: W1's runtime was unreadable throughout the window (" + why + ")"
	case running == readable:
		p1.Answer = fmt.Sprintf("yes: every readable read of W1's runtime (%d of %d reads) saw P1's container running, the last at %s", readable, reads, rel(lastRun))
	case running == 0:
		p1.Answer = fmt.Sprintf("no: none of %d readable reads of W1's runtime saw P1 running", readable)
	default:
		p1.Answer = fmt.Sprintf("partly: %d of %d readable reads of W1's runtime saw P1 running, the last at %s", running, readable, rel(lastRun))
	}
	p1.Evidence = []string{fmt.Sprintf("cri/%s statefulpod/running-here over %d window snapshots", h.W1, reads)}
	out = append(out, p1)

	// Replacement of P on W2.
	rp := Statement{Question: "Does M2 start a replacement of P on W2?"}
	var created, scheduled, forced []evidence.Event
	for _, e := range tl {
		if e.Subject != "pod/"+drills.Namespace+"/"+drills.StatefulPodName || !inWindow(e.At) {
			continue
		}
		switch e.Kind {
		case "pod-created":
			// Only a pod that replaces another is new: the timeline also
			// reports P1 itself when its watch starts.
			if strings.Contains(e.Detail, "replaces uid") {
				created = append(created, e)
			}
		case "pod-scheduled":
			scheduled = append(scheduled, e)
		case "pod-force-deleted":
			forced = append(forced, e)
		}
	}
	newUIDs := map[string]bool{}
	for _, e := range created {
		if uid, _, ok := strings.Cut(strings.TrimPrefix(e.Detail, "uid "), ","); ok {
			newUIDs[uid] = true
		}
	}
	var placed []evidence.Event
	for _, e := range scheduled {
		if uid, _, ok := strings.Cut(strings.TrimPrefix(e.Detail, "uid "), " "); ok && newUIDs[uid] {
			placed = append(placed, e)
		}
	}
	scheduled = placed
	w2Running := 0
	var w2First time.Time
	for _, s := range rec.Window {
		var v evidence.RuntimePodValue
		a := s.Get(evidence.Source("cri/"+h.W2), evidence.PodRunningHere)
		if a.Decode(&v) == nil && v.Running {
			w2Running++
			if w2First.IsZero() {
				w2First = a.ReadAt
			}
		}
	}
	switch {
	case len(created) == 0:
		rp.Answer = "no: no new pod p-0 was created during the window; the StatefulSet controller waits for the old pod to be gone, and only W1's kubelet, cut off, can confirm that"
	default:
		rp.Answer = fmt.Sprintf("yes: a new p-0 was created at %s", rel(created[0].At))
		if len(forced) > 0 {
			rp.Answer += fmt.Sprintf(", after faultline force-deleted P1 at %s", rel(forced[0].At))
		}
		if w2Running > 0 {
			rp.Answer += fmt.Sprintf("; W2's runtime saw it running from %s", rel(w2First))
		}
	}
	for _, e := range append(append(forced, created...), scheduled...) {
		rp.Evidence = append(rp.Evidence, fmt.Sprintf("timeline %s %s: %s %s", rel(e.At), e.Source, e.Kind, e.Detail))
	}
	out = append(out, rp)

	// Two copies.
	tc := Statement{Question: "Can P1 and its replacement run at the same time?"}
	for _, j := range run.Judgements {
		if j.Invariant == invariant.SingleCopyName {
			tc.Answer = fmt.Sprintf("single-copy %s: %s", j.Verdict, j.Reason)
			tc.Evidence = append(tc.Evidence, "sources: "+strings.Join(j.Sources, ", "))
		}
	}
	if tc.Answer == "" {
		tc.Answer = "the run record holds no single-copy verdict"
	}
	out = append(out, tc)

	// Deployment.
	dp := Statement{Question: "How does the Deployment behave?"}
	maxPods, maxAt := 0, time.Time{}
	var maxSrc evidence.Source
	for _, s := range rec.Window {
		for _, src := range s.Sources() {
			var v drills.PodsValue
			a := s.Get(src, drills.QuestionPods)
			if a.Decode(&v) != nil {
				continue
			}
			n := 0
			for _, p := range v.Pods {
				if strings.HasPrefix(p.Owner, "ReplicaSet/"+drills.DeploymentName+"-") {
					n++
				}
			}
			if n > maxPods {
				maxPods, maxAt, maxSrc = n, a.ReadAt, src
			}
		}
	}
	both := 0
	var bothAt time.Time
	for _, s := range rec.Window {
		w1, ok1 := webRunning(s, h.W1)
		w2, ok2 := webRunning(s, h.W2)
		if ok1 && ok2 && w1 > 0 && w2 > 0 {
			both++
			if bothAt.IsZero() {
				bothAt = s.Taken
			}
		}
	}
	dp.Answer = fmt.Sprintf("its one replica: the API servers listed up to %d pods of it at once (%s at %s)", maxPods, maxSrc, rel(maxAt))
	if both > 0 {
		dp.Answer += fmt.Sprintf("; in %d rounds, from %s, W1's and W2's runtimes both ran a web container: more than `replicas` pods ran at once, which a ReplicaSet does not promise against", both, rel(bothAt))
	} else {
		dp.Answer += "; no round saw web containers running on both W1 and W2"
	}
	dp.Evidence = []string{"drill/pods from every API server; drill/containers from cri/" + h.W1 + " and cri/" + h.W2}
	out = append(out, dp)

	// P2 on W2.
	p2 := Statement{Question: "Does the pod on W2 keep running while R1 is cut off?"}
	r2, ok2, run2 := 0, 0, 0
	for _, s := range rec.Window {
		a := s.Get(evidence.Source("cri/"+h.W2), drills.QuestionContainers)
		if a.State == evidence.NotAsked {
			continue
		}
		r2++
		var v drills.ContainersValue
		if a.Decode(&v) != nil {
			continue
		}
		ok2++
		for _, c := range v.Containers {
			if c.Pod == drills.RackTwoPodName && c.State == "CONTAINER_RUNNING" {
				run2++
				break
			}
		}
	}
	switch {
	case ok2 == 0:
		p2.Answer = "cannot be said: W2's runtime was never readable"
	case run2 == ok2:
		p2.Answer = fmt.Sprintf("yes: all %d readable reads of W2's runtime (of %d) saw p2 running", ok2, r2)
	default:
		p2.Answer = fmt.Sprintf("no: only %d of %d readable reads of W2's runtime saw p2 running", run2, ok2)
	}
	p2.Evidence = []string{"cri/" + h.W2 + " drill/containers"}
	out = append(out, p2)
	return out, nil
}

func webRunning(s evidence.Snapshot, worker string) (int, bool) {
	var v drills.ContainersValue
	if s.Get(evidence.Source("cri/"+worker), drills.QuestionContainers).Decode(&v) != nil {
		return 0, false
	}
	n := 0
	for _, c := range v.Containers {
		if strings.HasPrefix(c.Pod, drills.DeploymentName+"-") && c.State == "CONTAINER_RUNNING" {
			n++
		}
	}
	return n, true
}

func leaderAt(s *evidence.Snapshot, lease string) string {
	if s == nil {
		return ""
	}
	for _, src := range s.Sources() {
		var v drills.LeadersValue
		if s.Get(src, drills.QuestionLeaders).Decode(&v) == nil {
			if h := v.Leases[lease].HolderIdentity; h != "" {
				return h
			}
		}
	}
	return ""
}

// racksHostsOf reads the racks hosts from the lab config recorded nowhere
// in the run: the evidence names them in its sources.
func racksHostsOf(rec evidence.Record) (RacksHosts, error) {
	if rec.Baseline == nil {
		return RacksHosts{}, fmt.Errorf("the run has no baseline snapshot")
	}
	var cps, workers []string
	for _, src := range rec.Baseline.Sources() {
		s := string(src)
		switch {
		case strings.HasPrefix(s, "controlplane/"):
			cps = append(cps, strings.TrimPrefix(s, "controlplane/"))
		case strings.HasPrefix(s, "cri/") && rec.Baseline.Get(src, drills.QuestionContainers).State != evidence.NotAsked:
			workers = append(workers, strings.TrimPrefix(s, "cri/"))
		}
	}
	sort.Strings(cps)
	sort.Strings(workers)
	if len(cps) != 2 || len(workers) != 2 {
		return RacksHosts{}, fmt.Errorf("the racks drill has two control-plane hosts and two workers; the evidence names %v and %v", cps, workers)
	}
	// The topology names them m1, m2 and w1, w2: rack order is name order.
	return RacksHosts{M1: cps[0], M2: cps[1], W1: workers[0], W2: workers[1]}, nil
}

func writeRacks(dir, path string, runs []verdict.Run) error {
	return writeFile(path, func(w io.Writer) error {
		fmt.Fprintf(w, "# The two-rack drill: R1 (M1, W1) cut off from etcd and R2\n\n")
		for _, r := range runs {
			rec, err := record.ReadEvidence(dir, r.RunID)
			if err != nil {
				return err
			}
			h, err := racksHostsOf(rec)
			if err != nil {
				return fmt.Errorf("run %s: %w", r.RunID, err)
			}
			st, err := AnalyseRacks(r, rec, h)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "## %s\n\nRun `%s` (%s), timer profile %s, run verdict %s. M1=%s W1=%s M2=%s W2=%s.\n\n", r.Title, r.RunID, r.Scenario, r.Lab.TimerProfile, r.RunVerdict, h.M1, h.W1, h.M2, h.W2)
			for _, s := range st {
				fmt.Fprintf(w, "- **%s** %s\n", s.Question, s.Answer)
				for _, e := range s.Evidence {
					fmt.Fprintf(w, "  - evidence: %s\n", e)
				}
			}
			fmt.Fprintln(w)
		}
		return nil
	})
}

// componentRestarts tells, from host's process table as the lab reported
// it in every snapshot (restart count, pid, process start time), how often
// its controller-manager and scheduler exited and were started again
// in the window (between the fault and the heal). It returns "" when the lab reports no
// restart counts (an older run, or a lab that does not restart them).
func componentRestarts(rec evidence.Record, host string, rel func(time.Time) string) (string, []string) {
	src := evidence.Source("controlplane/" + host)
	type seen struct {
		restarts  int
		at        time.Time
		pids      []string
		last      time.Time
		reported  bool
		baseCount int
	}
	byName := map[string]*seen{}
	names := []string{"kube-controller-manager", "kube-scheduler"}
	for _, n := range names {
		byName[n] = &seen{baseCount: -1}
	}
	read := func(s *evidence.Snapshot, baseline bool) {
		var v drills.ComponentsValue
		a := s.Get(src, drills.QuestionComponents)
		if a.Decode(&v) != nil {
			return
		}
		for _, c := range v.Services {
			x, ok := byName[c.Name]
			if !ok {
				continue
			}
			if !c.Started.IsZero() {
				x.reported = true
			}
			if baseline {
				x.baseCount = c.Restarts
				continue
			}
			if c.Restarts > x.restarts || x.at.IsZero() {
				x.restarts, x.at, x.last = c.Restarts, a.ReadAt, c.LastRestart
			}
			if c.PID != 0 && !c.Started.IsZero() {
				p := fmt.Sprintf("pid %d started %s", c.PID, rel(c.Started))
				if len(x.pids) == 0 || x.pids[len(x.pids)-1] != p {
					x.pids = append(x.pids, p)
				}
			}
		}
	}
	if rec.Baseline != nil {
		read(rec.Baseline, true)
	}
	for i := range rec.Window {
		read(&rec.Window[i], false)
	}
	var parts, ev []string
	for _, n := range names {
		x := byName[n]
		if !x.reported || x.baseCount < 0 {
			continue
		}
		d := x.restarts - x.baseCount
		switch {
		case d > 0:
			parts = append(parts, fmt.Sprintf("%s exited and was started again %s (the last restart at %s)", n, times(d), rel(x.last)))
		default:
			parts = append(parts, fmt.Sprintf("%s was not restarted", n))
		}
		ev = append(ev, fmt.Sprintf("%s process table of %s: restart count %d at the baseline, %d at %s; %s",
			src, n, x.baseCount, x.restarts, rel(x.at), strings.Join(x.pids, ", ")))
	}
	if len(parts) == 0 {
		return "", nil
	}
	return "between the cut and the heal, per M1's process table: " + strings.Join(parts, "; "), ev
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func orNone(s string) string {
	if s == "" {
		return "nobody"
	}
	return s
}
