// Command faultline-lab-measure brings up a local lab and reports what it
// costs on this machine: cold boot to every node Ready, reset to clean, and
// resident memory per host and in all. It is a report, not a test: the
// figures depend on the machine and on what else runs on it.
//
//	faultline-lab-measure [-resets N] [-keep] [-v] <lab file or topology name>
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"text/tabwriter"
	"time"

	// The images the local lab loads into its nodes.
	_ "github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local"
)

func main() {
	resets := flag.Int("resets", 3, "how many resets to time")
	keep := flag.Bool("keep", false, "leave the lab up afterwards")
	verbose := flag.Bool("v", false, "print every step of up and reset")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [-resets N] [-keep] [-v] <lab file or topology name>\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *resets, *keep, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "faultline-lab-measure:", err)
		os.Exit(1)
	}
}

func run(arg string, resets int, keep, verbose bool) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	path, err := lab.ResolveConfigPath(arg)
	if err != nil {
		return err
	}
	cfg, err := lab.LoadConfig(path)
	if err != nil {
		return err
	}
	l, err := local.New(cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	if verbose {
		l.SetProgress(os.Stderr)
	}
	if !keep {
		defer func() {
			if derr := l.Down(context.Background()); derr != nil && err == nil {
				err = derr
			}
		}()
	}
	fmt.Printf("lab %s (%d hosts, timer profile %s)\n", cfg.Name, len(cfg.Hosts), cfg.Kubernetes.TimerProfile)
	start := time.Now()
	if err := l.Up(ctx); err != nil {
		return err
	}
	t := l.LastUp()
	fmt.Printf("up: %s in all (hosts %s, cold boot to all nodes Ready %s, cold snapshot and boot %s)\n",
		round(time.Since(start)), round(t.Provision), round(t.ColdBoot), round(t.Snapshot))

	var took []time.Duration
	for i := 0; i < resets; i++ {
		s := time.Now()
		if err := l.Reset(ctx); err != nil {
			return err
		}
		took = append(took, time.Since(s))
	}
	if len(took) > 0 {
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		fmt.Printf("reset to clean (%d runs): min %s, median %s, max %s\n", len(took), round(took[0]), round(took[len(took)/2]), round(took[len(took)-1]))
	}

	// Let the fleet settle before reading memory.
	time.Sleep(10 * time.Second)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "host\tprocesses\tRSS MiB")
	var total int64
	for _, h := range l.Hosts() {
		rss, n, err := l.HostRSS(h.Name())
		if err != nil {
			return err
		}
		total += rss
		fmt.Fprintf(w, "%s\t%d\t%.0f\n", h.Name(), n, float64(rss)/(1<<20))
	}
	fmt.Fprintf(w, "total\t\t%.0f\n", float64(total)/(1<<20))
	return w.Flush()
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
