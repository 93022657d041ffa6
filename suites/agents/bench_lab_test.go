//go:build lab

package agents_test

import (
	"context"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/suites/agents"
)

// BenchmarkAgentSourcesRound measures what paper 2's sources add to a
// snapshot round: each of the suite's readers (every client node's
// kube-proxy rules, client pod probes, agents' health and policy rules,
// and every API server's endpoints and policy expectation) asked at once,
// as a round asks them, on a lab that is up (FAULTLINE_LAB) with the
// fixtures installed. It reports the round's p50 and p95 (the slowest
// reader) and each source's p95:
//
//	sudo FAULTLINE_LAB=lab11 go test -tags lab -run '^$' \
//	    -bench AgentSourcesRound -benchtime 40x ./suites/agents/
func BenchmarkAgentSourcesRound(b *testing.B) {
	if os.Getenv(scenario.EnvLab) == "" || os.Geteuid() != 0 {
		b.Skip("needs root and a lab that is up named in " + scenario.EnvLab)
	}
	ctx := context.Background()
	l, err := scenario.OpenLabFromEnv(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := adminClient(l)
	if err != nil {
		b.Fatal(err)
	}
	if err := agents.Install(ctx, cs, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	var readers []evidence.Reader
	env := sampler.EnvFor(l, sampler.DefaultExtraRequestTimeout)
	for _, x := range agents.Extras() {
		parts, err := x.Open(env)
		if err != nil {
			b.Fatal(err)
		}
		readers = append(readers, parts.Readers...)
	}
	var rounds []time.Duration
	per := map[string][]time.Duration{}
	var mu sync.Mutex
	unreadable := 0
	for b.Loop() {
		t0 := time.Now()
		var wg sync.WaitGroup
		for _, r := range readers {
			wg.Go(func() {
				rctx, cancel := context.WithTimeout(ctx, sampler.DefaultCommandReadTimeout)
				defer cancel()
				start := time.Now()
				ans := r.Read(rctx)
				d := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				key := string(r.Source()) + " " + string(r.Questions()[0])
				per[key] = append(per[key], d)
				for _, a := range ans {
					if a.State == evidence.Unreadable {
						unreadable++
					}
				}
			})
		}
		wg.Wait()
		rounds = append(rounds, time.Since(t0))
	}
	p50, p95 := pct(rounds)
	b.ReportMetric(float64(p50)/1e6, "round-p50-ms")
	b.ReportMetric(float64(p95)/1e6, "round-p95-ms")
	b.ReportMetric(float64(unreadable)/float64(len(rounds)), "unreadable/op")
	for k, ds := range per {
		_, p := pct(ds)
		b.ReportMetric(float64(p)/1e6, strings.NewReplacer("/", "-", " ", "-").Replace(k)+"-p95-ms")
	}
}

func pct(d []time.Duration) (p50, p95 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2], s[(len(s)*95+99)/100-1]
}
