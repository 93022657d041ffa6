//go:build lab

package sampler_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/lab"
)

// BenchmarkSnapshotRound measures one snapshot round (every source asked
// every question) on a local lab that is already up, named by its lab
// file in FAULTLINE_EVIDENCE_LAB. It installs the fixtures (the informer
// among them), then reports the rounds' p50 and p95 and each source's p95
// as custom metrics, first with every source answering, then with one API
// server stopped (started again afterwards), and last the two ways of
// reading the container runtimes side by side (runtime-paths: CRI over a
// forwarded socket, and crictl over SSH):
//
//	sudo FAULTLINE_EVIDENCE_LAB=lab.yaml go test -tags lab -run '^$' \
//	    -bench SnapshotRound -benchtime 40x ./framework/evidence/sampler/
//
// Percentiles need many rounds: use -benchtime Nx with N of 20 or more.
func BenchmarkSnapshotRound(b *testing.B) {
	path := os.Getenv("FAULTLINE_EVIDENCE_LAB")
	if path == "" {
		b.Skip("FAULTLINE_EVIDENCE_LAB names no lab file of a local lab that is up")
	}
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	ctx := context.Background()
	l, err := lab.OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	installFixtures(ctx, b, l)
	smp := sampler.New(sampler.Options{NoTimeline: true})
	defer smp.Close()
	// The first round opens the sources and their connections.
	if _, _, err := smp.Sample(ctx, l); err != nil {
		b.Fatal(err)
	}

	b.Run("all-answering", func(b *testing.B) {
		measureRounds(ctx, b, smp, l)
	})
	b.Run("one-apiserver-stopped", func(b *testing.B) {
		h := apiServerWithoutVIP(ctx, b, l)
		if err := h.StopService(ctx, lab.ServiceAPIServer); err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := h.StartService(ctx, lab.ServiceAPIServer); err != nil {
				b.Errorf("starting %s's API server again: %v", h.Name(), err)
			}
		}()
		measureRounds(ctx, b, smp, l)
	})
	b.Run("runtime-paths", func(b *testing.B) {
		measureRuntimePaths(ctx, b, l)
	})
}

// measureRuntimePaths reads every worker's container runtime both ways at
// each iteration, the workers at once as in a round and the two ways one
// after the other (in turns, each first every other time), and reports
// each way's p50 and p95 per worker and over all reads, the ratio of
// crictl's to CRI's, and how many reads per iteration gave answers that
// differ between the ways (the listing may change between two reads, so a
// few may).
func measureRuntimePaths(ctx context.Context, b *testing.B, l lab.Lab) {
	type pair struct {
		worker      string
		cri, crictl *source.Runtime
	}
	var pairs []pair
	for _, h := range lab.HostsWithRole(l, lab.RoleWorker) {
		socket, ok, err := lab.RuntimeSocket(l, h.Name())
		if err != nil || !ok {
			b.Skipf("no CRI socket for %s (%v): nothing to compare", h.Name(), err)
		}
		cri := source.NewRuntime(h, socket, evidence.DefaultSubjects)
		defer cri.Close()
		pairs = append(pairs, pair{h.Name(), cri, source.NewCrictlRuntime(h, evidence.DefaultSubjects)})
	}
	read := func(r *source.Runtime) (time.Duration, evidence.Answer) {
		rctx, cancel := context.WithTimeout(ctx, sampler.DefaultCommandReadTimeout)
		defer cancel()
		t0 := time.Now()
		a := r.Read(rctx)[evidence.PodRunningHere]
		return time.Since(t0), a
	}
	type reading struct {
		d time.Duration
		a evidence.Answer
	}
	// readAll reads every worker's runtime one way, the workers at once.
	readAll := func(pick func(pair) *source.Runtime) []reading {
		out := make([]reading, len(pairs))
		var wg sync.WaitGroup
		for i, p := range pairs {
			wg.Go(func() {
				d, a := read(pick(p))
				out[i] = reading{d, a}
			})
		}
		wg.Wait()
		return out
	}
	criOf := func(p pair) *source.Runtime { return p.cri }
	crictlOf := func(p pair) *source.Runtime { return p.crictl }
	// The first reads open the connections; they are not measured.
	readAll(criOf)
	readAll(crictlOf)

	per := map[string]map[string][]time.Duration{"cri": {}, "crictl": {}}
	all := map[string][]time.Duration{}
	unreadable := map[string]int{}
	differing, iterations := 0, 0
	for b.Loop() {
		var viaCRI, viaCrictl []reading
		if iterations%2 == 0 {
			viaCRI, viaCrictl = readAll(criOf), readAll(crictlOf)
		} else {
			viaCrictl, viaCRI = readAll(crictlOf), readAll(criOf)
		}
		iterations++
		for i, p := range pairs {
			for way, r := range map[string]reading{"cri": viaCRI[i], "crictl": viaCrictl[i]} {
				per[way][p.worker] = append(per[way][p.worker], r.d)
				all[way] = append(all[way], r.d)
				if r.a.State != evidence.Answered {
					unreadable[way]++
					b.Logf("%s via %s: %s", p.worker, way, firstWords(r.a.Reason))
				}
			}
			if a, c := viaCRI[i].a, viaCrictl[i].a; a.State == evidence.Answered && c.State == evidence.Answered && string(a.Value) != string(c.Value) {
				differing++
				b.Logf("%s: the two ways differ\n cri    %s\n crictl %s", p.worker, a.Value, c.Value)
			}
		}
	}
	for way, byWorker := range per {
		for worker, ds := range byWorker {
			p50, p95 := percentiles(ds)
			b.ReportMetric(ms(p50), fmt.Sprintf("cri-%s-via-%s-p50-ms", worker, way))
			b.ReportMetric(ms(p95), fmt.Sprintf("cri-%s-via-%s-p95-ms", worker, way))
		}
		p50, p95 := percentiles(all[way])
		b.ReportMetric(ms(p50), way+"-p50-ms")
		b.ReportMetric(ms(p95), way+"-p95-ms")
		b.ReportMetric(float64(unreadable[way])/float64(iterations), way+"-unreadable/op")
	}
	c50, c95 := percentiles(all["cri"])
	k50, k95 := percentiles(all["crictl"])
	if c50 > 0 && c95 > 0 {
		b.ReportMetric(float64(k50)/float64(c50), "crictl/cri-p50-ratio")
		b.ReportMetric(float64(k95)/float64(c95), "crictl/cri-p95-ratio")
	}
	b.ReportMetric(float64(differing)/float64(iterations), "differing/op")
}

// apiServerWithoutVIP is a control-plane host that does not hold the
// virtual address, whose source must keep answering.
func apiServerWithoutVIP(ctx context.Context, b *testing.B, l lab.Lab) lab.Host {
	for _, h := range lab.HostsWithRole(l, lab.RoleControlPlane) {
		res, err := h.Run(ctx, "ip -o addr show")
		if err != nil {
			b.Fatal(err)
		}
		if vip := l.Config().Network.VirtualIP; vip == "" || !strings.Contains(res.Stdout, " "+vip+"/") {
			return h
		}
	}
	b.Fatal("every control-plane host holds the virtual address")
	return nil
}

// measureRounds takes b.N rounds and reports their percentiles, each
// source's p95 (from its answers' read times), and how many answers per
// round were unreadable for a reason other than "not deployed".
func measureRounds(ctx context.Context, b *testing.B, smp *sampler.Sampler, l lab.Lab) {
	var rounds []time.Duration
	perSource := map[evidence.Source][]time.Duration{}
	unreadable := 0
	reasons := map[string]int{}
	for b.Loop() {
		t0 := time.Now()
		snap, _, err := smp.Sample(ctx, l)
		if err != nil {
			b.Fatal(err)
		}
		rounds = append(rounds, time.Since(t0))
		for src, latest := range lastReads(snap) {
			perSource[src] = append(perSource[src], latest)
		}
		for src, qs := range snap.Answers {
			for _, a := range qs {
				if a.State == evidence.Unreadable && !strings.HasPrefix(a.Reason, "not deployed") {
					unreadable++
					reasons[string(src)+": "+firstWords(a.Reason)]++
				}
			}
		}
	}
	p50, p95 := percentiles(rounds)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p95), "p95-ms")
	b.ReportMetric(float64(unreadable)/float64(len(rounds)), "unreadable/op")
	for src, ds := range perSource {
		_, p95 := percentiles(ds)
		b.ReportMetric(ms(p95), strings.ReplaceAll(string(src), "/", "-")+"-p95-ms")
	}
	for r, n := range reasons {
		b.Logf("%d× %s", n, r)
	}
}

func percentiles(d []time.Duration) (p50, p95 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2], s[(len(s)*95+99)/100-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func firstWords(s string) string {
	if len(s) > 80 {
		return s[:80]
	}
	return s
}

// lastReads is, for each source of snap, how long after the round's start
// its last answer was read: what the round waited for that source.
func lastReads(snap evidence.Snapshot) map[evidence.Source]time.Duration {
	out := map[evidence.Source]time.Duration{}
	for src, qs := range snap.Answers {
		var latest time.Duration
		for _, a := range qs {
			if !a.ReadAt.IsZero() {
				latest = max(latest, a.ReadAt.Sub(snap.Taken))
			}
		}
		out[src] = latest
	}
	return out
}
