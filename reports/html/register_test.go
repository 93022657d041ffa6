package html

import (
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
)

// writerOps is a writer's history: a create, then a read and a cas a
// second, n rounds from t0; with stale, a read of w-1 after w-n was
// acknowledged.
func writerOps(n int, stale bool) []evidence.RegisterOp {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	f := true
	ops := []evidence.RegisterOp{{Writer: "writer-0", Round: 1, Op: "create", Invoke: at(0), Return: at(0.05), Value: "w-1", Outcome: "ok"}}
	for i := 2; i <= n; i++ {
		s := float64(i)
		ops = append(ops,
			evidence.RegisterOp{Writer: "writer-0", Round: i, Op: "read", Invoke: at(s), Return: at(s + 0.05), Value: fmt.Sprintf("w-%d", i-1), Found: &f, Outcome: "ok"},
			evidence.RegisterOp{Writer: "writer-0", Round: i, Op: "cas", Invoke: at(s + 0.1), Return: at(s + 0.15), Value: fmt.Sprintf("w-%d", i), Expect: fmt.Sprintf("w-%d", i-1), Outcome: "ok"})
	}
	if stale {
		s := float64(n + 1)
		ops = append(ops, evidence.RegisterOp{Writer: "writer-0", Round: n + 1, Op: "read", Invoke: at(s), Return: at(s + 0.05), Value: "w-1", Found: &f, Outcome: "ok"})
	}
	return ops
}

// writerFolder is a run folder of runs whose final snapshot holds the
// given writer histories (nil: the writer not asked), by run ID.
func writerFolder(t *testing.T, histories map[string][]evidence.RegisterOp) string {
	t.Helper()
	f, err := record.NewFolder(t.TempDir(), "splitbrain", t0)
	if err != nil {
		t.Fatal(err)
	}
	for id, ops := range histories {
		r := verdict.Run{RunID: id, Suite: "splitbrain", Scenario: "writes", Arm: "fault", Role: verdict.RoleFinding,
			Started: t0, Ended: t0.Add(time.Minute), RunVerdict: verdict.RunJudged,
			Judgements: []verdict.Judgement{{Invariant: invariant.AcknowledgedWritesSurviveName, Phase: verdict.Convergence, Verdict: verdict.Preserved, Reason: "r"}}}
		if err := f.AppendRun(r); err != nil {
			t.Fatal(err)
		}
		final := evidence.NewSnapshot(t0.Add(30 * time.Second))
		final.Set("apiserver/cp1", "worker1/ready", answer(t, true, final.Taken))
		if ops != nil {
			final.Set(registerSource, evidence.RegisterHistory, answer(t, evidence.RegisterHistoryValue{Ops: ops}, final.Taken))
		}
		rec := evidence.Record{Final: &final, Timeline: evidence.Timeline{
			{At: t0.Add(3 * time.Second), Source: "faultline", Subject: "scenario/writes", Kind: invariant.FaultInjectedEvent},
			{At: t0.Add(6 * time.Second), Source: "faultline", Subject: "scenario/writes", Kind: invariant.HealStartedEvent},
		}}
		if err := f.WriteEvidence(id, rec); err != nil {
			t.Fatal(err)
		}
	}
	return f.Dir
}

// A run whose evidence holds the writer's history links porcupine's
// drawing of it, a page beside the run's, and says what the check found;
// a run without one has no such section; a history that cannot be drawn
// is named on the page and no drawing is written.
func TestRunPageLinksTheRegisterHistory(t *testing.T) {
	bad := writerOps(3, false)
	bad[2].Outcome = "maybe"
	dir := writerFolder(t, map[string][]evidence.RegisterOp{"good": writerOps(5, false), "stale": writerOps(5, true), "none": nil, "bad": bad})
	s := buildSite(t, dir)
	for id, want := range map[string]invariant.HistoryCheck{"good": invariant.HistoryLinearizable, "stale": invariant.HistoryNotLinearizable} {
		doc := runPageOf(t, s, dir, id)
		link := byID(doc, "register-link")
		if link == nil {
			t.Fatalf("%s: no link to the register history", id)
		}
		href, _ := attr(link, "href")
		var page string
		for name := range s.Files {
			if strings.HasPrefix(name, RunsDir+"/") && path.Base(name) == href {
				page = name
			}
		}
		if page == "" || !strings.HasSuffix(page, "--register.html") {
			t.Fatalf("%s: the link %s names no file of the site", id, href)
		}
		drawn := string(s.Files[page])
		for _, w := range []string{"<title>Porcupine</title>", "fault injected", "heal started", "client 0: writer-0", "cas(w-4 → w-5)"} {
			if !strings.Contains(drawn, w) {
				t.Errorf("%s: porcupine's page lacks %q", id, w)
			}
		}
		if got := text(byID(doc, "register-check")); got != string(want) {
			t.Errorf("%s: the page says the history is %q, want %q", id, got, want)
		}
		if sec := text(byID(doc, "register-history")); sec == "" {
			t.Errorf("%s: no register section heading", id)
		}
	}
	if byID(runPageOf(t, s, dir, "none"), "register-history") != nil {
		t.Error("a run without a writer history has a register section")
	}
	doc := runPageOf(t, s, dir, "bad")
	if byID(doc, "register-link") != nil {
		t.Error("a malformed history is linked")
	}
	warn := find(doc, func(n *xhtml.Node) bool {
		return hasClass(n, "warning") && strings.Contains(text(n), `outcome "maybe"`)
	})
	if len(warn) != 1 {
		t.Error("the page does not say why the history could not be drawn")
	}
	for name := range s.Files {
		if strings.Contains(name, "--bad--register") {
			t.Errorf("%s written for a malformed history", name)
		}
	}
}
