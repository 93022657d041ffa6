package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindThrottle is the kind of Throttle faults.
const KindThrottle = "throttle"

// Bounds of a throttle's rate: below the lower one a single heartbeat
// waits seconds; above the upper one HTB's quantum and the kernel's own
// links make the limit meaningless.
const (
	minThrottleKbit = 8
	maxThrottleKbit = 1_000_000
)

type throttleParams struct {
	// Host is a host's name, `etcd-leader` (etcd's raft leader at inject
	// time), or a role or rack selector naming several hosts, each of
	// which then throttles what it sends to the targets.
	Host string `json:"host"`
	// To are selectors of the hosts whose traffic is throttled; empty
	// means everything the host sends on its management interface.
	To []string `json:"to,omitempty"`
	// RateKbit is the rate, in kilobits per second, that all the
	// throttled traffic shares.
	RateKbit int    `json:"rateKbit"`
	Tag      string `json:"tag"`
}

func (p throttleParams) check() error {
	var errs []error
	switch p.Host {
	case "":
		errs = append(errs, errors.New("no host named"))
	case selectorRest:
		errs = append(errs, errors.New("host rest names no host on its own"))
	default:
		if err := checkSelector(p.Host); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range p.To {
		if err := checkSelector(s); err != nil {
			errs = append(errs, err)
		}
	}
	if p.RateKbit < minThrottleKbit || p.RateKbit > maxThrottleKbit {
		errs = append(errs, fmt.Errorf("rate %d kbit/s must be between %d and %d", p.RateKbit, minThrottleKbit, maxThrottleKbit))
	}
	if err := checkTag(p.Tag); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Throttle holds what host sends to the hosts `to` selects (all of its
// management traffic when to is empty) to rateKbit kilobits per second in
// all, with an HTB root qdisc: what exceeds the rate waits in the class's
// queue, so the traffic arrives late, in order, and, unless the queue
// overflows, whole. Traffic to other hosts is not held. It is the slow
// link that needs no netem: HTB and the u32 classifier are in kernels
// built without sch_netem.
func Throttle(host string, to []string, rateKbit int) fault.Fault {
	return &throttle{p: throttleParams{Host: host, To: to, RateKbit: rateKbit, Tag: newTag()}}
}

// EtcdLeaderThrottle throttles what etcd's raft leader, found at inject
// time, sends to the other members. A commit waits for a majority to
// acknowledge the leader's append, and every append and heartbeat now
// queues behind the others in one narrow class, so writes slow down while
// every member stays up; when the queue holds a heartbeat past the
// election timeout, the followers elect another leader, which is not
// throttled.
func EtcdLeaderThrottle(rateKbit int) fault.Fault {
	return Throttle(selectorEtcdLeader, []string{"role:etcd"}, rateKbit)
}

// APIServerFromEtcdThrottle throttles what every etcd member sends to
// host (a control-plane host) to rateKbit each: the API server there gets
// its watch events and read answers late, so its watch cache falls behind
// etcd while the server goes on answering.
func APIServerFromEtcdThrottle(host string, rateKbit int) fault.Fault {
	return Throttle("role:etcd", []string{host}, rateKbit)
}

type throttle struct {
	p throttleParams
	// hosts are the hosts the qdisc went to: p.Host, the etcd leader it
	// stood for at inject time, or the hosts its selector named.
	hosts []lab.Host

	// mu guards lastOverlimits: the engine probes from one goroutine, but
	// the fault value is shared with whatever else holds it.
	mu sync.Mutex
	// lastOverlimits is each host's overlimits counter at the previous
	// probe (zero at inject: the class is new); nil in a process that has
	// neither injected nor probed the fault.
	lastOverlimits map[string]int64
}

func (f *throttle) Kind() string            { return KindThrottle }
func (f *throttle) Class() fault.Class      { return ClassSlowNetwork }
func (f *throttle) Params() json.RawMessage { return mustJSON(f.p) }

// Inject refuses an interface whose root qdisc is not the kernel default,
// as delay does: heal deletes the root qdisc.
func (f *throttle) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("throttle: %w", err)
	}
	hosts, err := resolveSelector(ctx, l, f.p.Host)
	if err != nil {
		return fmt.Errorf("throttle: %w", err)
	}
	// Every host is checked before any is changed.
	scripts := make([]string, len(hosts))
	for i, h := range hosts {
		addrs, dev, err := shapedInterface(ctx, l, h, f.p.To)
		if err != nil {
			return fmt.Errorf("throttle from %s: %w", h.Name(), err)
		}
		if len(f.p.To) > 0 && len(addrs) == 0 {
			return fmt.Errorf("throttle from %s: %v names no host but %s itself", h.Name(), f.p.To, h.Name())
		}
		scripts[i] = htbScript(dev, f.p.Tag, f.p.RateKbit, addrs)
	}
	f.hosts = hosts
	f.mu.Lock()
	f.lastOverlimits = map[string]int64{}
	for _, h := range hosts {
		f.lastOverlimits[h.Name()] = 0
	}
	f.mu.Unlock()
	for i, h := range hosts {
		if _, err := run(ctx, h, scripts[i]); err != nil {
			if strings.Contains(err.Error(), "qdisc kind is unknown") || strings.Contains(err.Error(), "Unknown filter") {
				return lab.Unsupported(l.Info().Kind, "throttle on "+h.Name(), "the host's kernel has no htb queueing discipline or u32 classifier (sch_htb, cls_u32): "+err.Error())
			}
			return fmt.Errorf("throttle from %s: %w", h.Name(), err)
		}
		crashpoint.Reach("throttle/inject/host")
	}
	return nil
}

// htbScript installs an HTB root qdisc whose handle is the fault's tag:
// class 1, the default, at 10gbit for everything else, and class 2 at
// the rate, with a filter per target sending its traffic there. The
// quanta are set so HTB does not derive them from the rates.
func htbScript(dev, tag string, rateKbit int, addrs []string) string {
	cmds := []string{
		"tc qdisc add dev " + dev + " root handle " + tag + ": htb default 1",
		"tc class add dev " + dev + " parent " + tag + ": classid " + tag + ":1 htb rate 10gbit quantum 60000",
		"tc class add dev " + dev + " parent " + tag + ": classid " + tag + ":2 htb rate " + strconv.Itoa(rateKbit) + "kbit burst 8kb quantum 1514",
	}
	return script(append(cmds, targetFilters(dev, tag, "2", addrs)...))
}

// Heal deletes the fault's root qdisc from the host it went to. A throttle
// of the etcd leader healed from the heal ledger, by a process that did
// not inject it, does not know which host that was, so it deletes the
// qdisc, found by the fault's own handle, on every host.
func (f *throttle) Heal(ctx context.Context, l lab.Lab) error {
	hosts := f.hosts
	switch {
	case hosts != nil:
	case f.p.Host == selectorEtcdLeader:
		hosts = l.Hosts()
	default:
		var err error
		if hosts, err = resolveSelector(ctx, l, f.p.Host); err != nil {
			return fmt.Errorf("healing throttle: %w", err)
		}
	}
	var errs []error
	for _, h := range hosts {
		if _, err := healRun(ctx, h, removeQdiscScript("htb", f.p.Tag)); err != nil {
			errs = append(errs, err)
		}
		crashpoint.Reach("throttle/heal/host")
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("healing throttle from %s: %w", f.p.Host, err)
	}
	return nil
}

var overlimits = regexp.MustCompile(`\boverlimits (\d+)\b`)

// currentEtcdLeader finds etcd's leader now; tests replace it.
var currentEtcdLeader = etcdLeaderHost

// Probe reads the throttled class's overlimits counter on each host (how
// often the kernel held a packet back because the class was over its
// rate) and sees the effect when it grew on some host since the previous
// probe. The counter is cumulative from inject, so its total would keep
// "seeing" a throttle whose traffic went elsewhere: an etcd leader that
// moved to an unthrottled member, a client that moved to another server.
// A process with no earlier reading (one healing from the ledger) can
// only report the totals, and says so.
//
// For a throttle of the etcd leader injected by this process, it also
// asks etcd which member leads now (one status request per endpoint, as
// finding the leader at inject does): once another member leads, the
// throttled member's traffic no longer holds commits back, and the effect
// is not seen whatever the counter does. When etcd cannot say, the
// counter decides, and the detail says the leadership was not known.
//
// The throttle declares no share of its own (fault.DefaultEffectShare):
// while its traffic flows through the narrow class the counter grows
// between any two probes a sampling interval apart, and a window in which
// it mostly did not (the leadership moved early, the traffic stopped) did
// not test the throttle.
func (f *throttle) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	hosts := f.hosts
	injected := hosts != nil
	if !injected {
		// Not injected by this process (a null arm, or before inject):
		// look where the fault would go now.
		var err error
		if hosts, err = resolveSelector(ctx, l, f.p.Host); err != nil {
			return fault.Effect{}, err
		}
	}
	cmd := rootQdiscDevices("htb", f.p.Tag) + ` | while read -r dev; do tc -s class show dev "$dev" classid ` + f.p.Tag + `:2; done`
	counts := map[string]int64{}
	var parts []string
	for _, h := range hosts {
		out, err := run(ctx, h, cmd)
		if err != nil {
			return fault.Effect{}, err
		}
		m := overlimits.FindStringSubmatch(out)
		if m == nil {
			parts = append(parts, fmt.Sprintf("%s has no throttled class %s:2", h.Name(), f.p.Tag))
			continue
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		counts[h.Name()] = n
	}
	f.mu.Lock()
	last := f.lastOverlimits
	f.lastOverlimits = counts
	f.mu.Unlock()
	grew := false
	for _, h := range hosts {
		n, ok := counts[h.Name()]
		if !ok {
			continue
		}
		if last == nil {
			grew = grew || n > 0
			parts = append(parts, fmt.Sprintf("%s held back packets to %v over %d kbit/s %d since inject", h.Name(), f.p.To, f.p.RateKbit, n))
			continue
		}
		// A counter below its last reading belongs to a class made
		// anew; all of it is since then.
		delta := n - last[h.Name()]
		if delta < 0 {
			delta = n
		}
		grew = grew || delta > 0
		parts = append(parts, fmt.Sprintf("%s held back packets to %v over %d kbit/s %d times since the last probe (%d since inject)", h.Name(), f.p.To, f.p.RateKbit, delta, n))
	}
	detail := strings.Join(parts, "; ")
	if last == nil && len(counts) > 0 {
		detail += " (this process has no earlier reading, so whether the counters still grow is not known)"
	}
	if injected && f.p.Host == selectorEtcdLeader && len(hosts) == 1 {
		leader, err := currentEtcdLeader(ctx, l)
		switch {
		case err != nil:
			detail += fmt.Sprintf("; whether %s still leads etcd is not known: %v", hosts[0].Name(), err)
		case leader.Name() != hosts[0].Name():
			return fault.Effect{Detail: fmt.Sprintf("%s leads etcd now, not the throttled %s, so the throttle no longer holds commits back; %s", leader.Name(), hosts[0].Name(), detail)}, nil
		default:
			detail += fmt.Sprintf("; %s still leads etcd", leader.Name())
		}
	}
	return fault.Effect{Observed: grew, Detail: detail}, nil
}

func init() { register(KindThrottle, func(p throttleParams) fault.Fault { return &throttle{p: p} }) }
