package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindDelay is the kind of Delay faults.
const KindDelay = "delay"

// ClassSlowNetwork is traffic that arrives late or not at all while every
// link stays up.
const ClassSlowNetwork fault.Class = "slow-network"

// minProbedLatency is the smallest delay the probe can tell from the time
// a shell needs to open a connection on a loaded machine.
const minProbedLatency = 20 * time.Millisecond

type delayParams struct {
	Host string `json:"host"`
	// To are selectors of the hosts whose traffic is delayed; empty means
	// everything the host sends on its management interface.
	To      []string `json:"to,omitempty"`
	Latency string   `json:"latency"`
	Jitter  string   `json:"jitter,omitempty"`
	Tag     string   `json:"tag"`
}

func (p delayParams) durations() (latency, jitter time.Duration, err error) {
	latency, err = time.ParseDuration(p.Latency)
	if err != nil {
		return 0, 0, fmt.Errorf("latency %q: %w", p.Latency, err)
	}
	if p.Jitter != "" {
		if jitter, err = time.ParseDuration(p.Jitter); err != nil {
			return 0, 0, fmt.Errorf("jitter %q: %w", p.Jitter, err)
		}
	}
	return latency, jitter, nil
}

func (p delayParams) check() error {
	var errs []error
	if p.Host == "" {
		errs = append(errs, errors.New("no host named"))
	}
	for _, s := range p.To {
		if err := checkSelector(s); err != nil {
			errs = append(errs, err)
		}
	}
	if latency, jitter, err := p.durations(); err != nil {
		errs = append(errs, err)
	} else {
		if latency < minProbedLatency {
			errs = append(errs, fmt.Errorf("latency %s is under %s, which the effect probe cannot tell from noise", latency, minProbedLatency))
		}
		if jitter < 0 || jitter > latency {
			errs = append(errs, fmt.Errorf("jitter %s must be between 0 and the latency %s", jitter, latency))
		}
	}
	if err := checkTag(p.Tag); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Delay adds latency (± jitter) with tc netem to what host sends to the
// hosts `to` selects (all of its management traffic when to is empty), e.g.
// Delay("etcd1", []string{"role:etcd", "role:control-plane"}, 200ms, 20ms)
// slows etcd1's peer and client traffic.
func Delay(host string, to []string, latency, jitter time.Duration) fault.Fault {
	p := delayParams{Host: host, To: to, Latency: latency.String(), Tag: newTag()}
	if jitter > 0 {
		p.Jitter = jitter.String()
	}
	return &delay{p: p}
}

type delay struct{ p delayParams }

func (f *delay) Kind() string            { return KindDelay }
func (f *delay) Class() fault.Class      { return ClassSlowNetwork }
func (f *delay) Params() json.RawMessage { return mustJSON(f.p) }

// Inject refuses a host whose interface has a root qdisc of its own (a
// handle other than the kernel default's 0:): heal deletes the root qdisc,
// which gives back the kernel default, so that is the only state it can
// restore exactly.
func (f *delay) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("delay: %w", err)
	}
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("delay: %w", err)
	}
	addrs, dev, err := shapedInterface(ctx, l, h, f.p.To)
	if err != nil {
		return fmt.Errorf("delay from %s: %w", h.Name(), err)
	}
	latency, jitter, _ := f.p.durations()
	if _, err := run(ctx, h, netemScript(dev, f.p.Tag, latency, jitter, addrs)); err != nil {
		if strings.Contains(err.Error(), "qdisc kind is unknown") {
			return lab.Unsupported(l.Info().Kind, "delay on "+h.Name(), "the host's kernel has no prio or netem queueing discipline (sch_prio, sch_netem): "+err.Error())
		}
		return fmt.Errorf("delay from %s: %w", h.Name(), err)
	}
	return nil
}

// shapedInterface resolves the targets' addresses and the one interface
// h sends them by, and checks that interface's root qdisc is the kernel
// default: a fault that shapes traffic replaces the root qdisc and heal
// deletes it, which gives back the kernel default, so that is the only
// state it can restore exactly.
func shapedInterface(ctx context.Context, l lab.Lab, h lab.Host, to []string) (addrs []string, dev string, err error) {
	addrs, _, err = targetAddresses(ctx, l, h, to)
	if err != nil {
		return nil, "", err
	}
	first := ""
	if len(addrs) > 0 {
		first = addrs[0]
	}
	if dev, err = egressInterface(ctx, l, h, first); err != nil {
		return nil, "", err
	}
	for _, a := range addrs[min(1, len(addrs)):] {
		if d, err := egressInterface(ctx, l, h, a); err != nil || d != dev {
			return nil, "", fmt.Errorf("traffic to %s leaves by %q, not %s (err %v): one fault shapes one interface", a, d, dev, err)
		}
	}
	root, err := run(ctx, h, "tc qdisc show dev "+dev+" root")
	if err != nil {
		return nil, "", err
	}
	if !isDefaultRootQdisc(root) {
		return nil, "", fmt.Errorf("%s has a root qdisc of its own (%s); heal could not restore it, so nothing was changed", dev, strings.TrimSpace(root))
	}
	return addrs, dev, nil
}

// targetFilters sends the traffic to each address (everything when there
// are none) to class flow of the root qdisc tag.
func targetFilters(dev, tag, flow string, addrs []string) []string {
	if len(addrs) == 0 {
		addrs = []string{"0.0.0.0/0"}
	}
	var cmds []string
	for _, a := range addrs {
		if !strings.Contains(a, "/") {
			a += "/32"
		}
		cmds = append(cmds, "tc filter add dev "+dev+" parent "+tag+": protocol ip prio 1 u32 match ip dst "+a+" flowid "+tag+":"+flow)
	}
	return cmds
}

// isDefaultRootQdisc says whether `tc qdisc show dev X root` shows the
// kernel's default root qdisc, whose handle is always 0:.
func isDefaultRootQdisc(show string) bool {
	f := strings.Fields(show)
	return len(f) >= 3 && f[0] == "qdisc" && f[2] == "0:"
}

// netemScript installs a prio root qdisc whose handle is the fault's tag,
// a netem qdisc on a fourth band, and a filter per target sending its
// traffic there; everything else keeps the default priomap's bands 0-2.
func netemScript(dev, tag string, latency, jitter time.Duration, addrs []string) string {
	netem := "netem delay " + tcTime(latency)
	if jitter > 0 {
		netem += " " + tcTime(jitter) + " distribution normal"
	}
	cmds := []string{
		"tc qdisc add dev " + dev + " root handle " + tag + ": prio bands 4 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1",
		"tc qdisc add dev " + dev + " parent " + tag + ":4 " + netem,
	}
	return script(append(cmds, targetFilters(dev, tag, "4", addrs)...))
}

func tcTime(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + "us" }

// rootQdiscDevices is a pipeline that prints every interface whose root
// is the fault's qdisc of that kind (its tag is the handle).
func rootQdiscDevices(kind, tag string) string {
	return `tc qdisc show | awk '$1=="qdisc" && $2=="` + kind + `" && $3=="` + tag + `:" && $6=="root" {print $5}'`
}

// removeQdiscScript deletes the root qdisc of every interface whose root is
// the fault's qdisc of that kind, and nothing else, printing what it found
// and removed (healRun).
func removeQdiscScript(kind, tag string) string {
	return rootQdiscDevices(kind, tag) + ` | while read -r dev; do echo "` + foundLine + kind + ` root qdisc ` + tag + `: on $dev"; tc qdisc del dev "$dev" root || exit 1; echo "` + removedLine + `the root qdisc ` + tag + `: of $dev"; done`
}

func (f *delay) Heal(ctx context.Context, l lab.Lab) error {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("healing delay: %w", err)
	}
	if _, err := healRun(ctx, h, removeQdiscScript("prio", f.p.Tag)); err != nil {
		return fmt.Errorf("healing delay from %s: %w", h.Name(), err)
	}
	return nil
}

// Probe times a TCP connection from the host to a target's SSH port: the
// SYN waits in netem, so the connection takes at least the latency.
func (f *delay) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fault.Effect{}, err
	}
	_, targets, err := targetAddresses(ctx, l, h, f.p.To)
	if err != nil {
		return fault.Effect{}, err
	}
	if len(targets) == 0 {
		for _, o := range l.Hosts() {
			if o.Name() != h.Name() {
				targets = []lab.Host{o}
				break
			}
		}
	}
	if len(targets) == 0 {
		return fault.Effect{}, errors.New("delay probe: the lab has no other host to connect to")
	}
	to := targets[0]
	latency, _, _ := f.p.durations()
	took, err := connectTime(ctx, h, to.Address(), sshPort(l))
	if err != nil {
		return fault.Effect{}, err
	}
	threshold := latency * 8 / 10
	return fault.Effect{
		Observed: took >= threshold,
		Detail:   fmt.Sprintf("TCP connect from %s to %s took %s (delayed if ≥ %s)", h.Name(), to.Name(), took, threshold),
	}, nil
}

// connectTime measures on h how long a TCP connect to addr:port takes.
func connectTime(ctx context.Context, h lab.Host, addr string, port int) (time.Duration, error) {
	cmd := fmt.Sprintf(`s=$(date +%%s%%N); timeout 10 bash -c 'exec 3<>/dev/tcp/%s/%d' 2>/dev/null; c=$?; e=$(date +%%s%%N); echo "$c $(( (e - s) / 1000 ))"`, addr, port)
	out, err := run(ctx, h, cmd)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0, fmt.Errorf("%s: timing a connection to %s: unexpected output %q", h.Name(), addr, out)
	}
	if f[0] != "0" && f[0] != "1" {
		return 0, fmt.Errorf("%s: connection to %s:%d did not complete (exit %s)", h.Name(), addr, port, f[0])
	}
	us, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: timing a connection to %s: %w", h.Name(), addr, err)
	}
	return time.Duration(us) * time.Microsecond, nil
}

func init() { register(KindDelay, func(p delayParams) fault.Fault { return &delay{p: p} }) }
