package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindLoss is the kind of Loss faults.
const KindLoss = "loss"

type lossParams struct {
	Host string `json:"host"`
	// To are selectors of the hosts whose traffic loses packets; empty
	// means everything the host sends.
	To      []string `json:"to,omitempty"`
	Percent float64  `json:"percent"`
	Tag     string   `json:"tag"`
}

func (p lossParams) check() error {
	var errs []error
	if p.Host == "" {
		errs = append(errs, errors.New("no host named"))
	}
	for _, s := range p.To {
		if err := checkSelector(s); err != nil {
			errs = append(errs, err)
		}
	}
	if !(p.Percent > 0 && p.Percent <= 100) {
		errs = append(errs, fmt.Errorf("percent %v must be in (0, 100]", p.Percent))
	}
	if err := checkTag(p.Tag); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Loss drops percent of the packets host sends to the hosts `to` selects
// (everything it sends when to is empty). It uses iptables' statistic match
// in a chain of the fault's own rather than netem: the drop is the same
// independent per-packet coin toss, and it needs no queueing discipline,
// so it also runs on kernels built without sch_netem.
func Loss(host string, to []string, percent float64) fault.Fault {
	return &loss{p: lossParams{Host: host, To: to, Percent: percent, Tag: newTag()}}
}

type loss struct {
	p lossParams
	// mu guards lastDrops, the drop count the previous probe read (nil
	// before any): the count is cumulative since inject, so only its
	// growth says the fault still acts.
	mu        sync.Mutex
	lastDrops *int64
}

func (f *loss) Kind() string            { return KindLoss }
func (f *loss) Class() fault.Class      { return ClassSlowNetwork }
func (f *loss) Params() json.RawMessage { return mustJSON(f.p) }
func (f *loss) chain() string           { return chainName(f.p.Tag) }

func (f *loss) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("loss: %w", err)
	}
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("loss: %w", err)
	}
	addrs, _, err := targetAddresses(ctx, l, h, f.p.To)
	if err != nil {
		return fmt.Errorf("loss from %s: %w", h.Name(), err)
	}
	if _, err := run(ctx, h, lossRules(f.chain(), f.p.Percent, addrs).installScript(h.Address())); err != nil {
		return fmt.Errorf("loss from %s: %w", h.Name(), err)
	}
	return nil
}

func lossRules(chain string, percent float64, addrs []string) chainRules {
	match := "-m statistic --mode random --probability " + strconv.FormatFloat(percent/100, 'f', -1, 64) + " -j DROP"
	var rules []string
	if len(addrs) == 0 {
		rules = []string{match}
	}
	for _, a := range addrs {
		rules = append(rules, "-d "+a+" "+match)
	}
	return chainRules{chain: chain, hooks: []string{"OUTPUT"}, rules: rules}
}

func (f *loss) Heal(ctx context.Context, l lab.Lab) error {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("healing loss: %w", err)
	}
	if _, err := healRun(ctx, h, removeChainScript(f.chain(), h.Address())); err != nil {
		return fmt.Errorf("healing loss from %s: %w", h.Name(), err)
	}
	return nil
}

// Probe reads how many packets the fault's rules dropped: the kernel's own
// count of packets that never left, cumulative since inject, so the effect
// is seen only when it grew since the previous probe. No chain means
// nothing was dropped.
func (f *loss) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fault.Effect{}, err
	}
	exists, err := h.Run(ctx, "iptables -w -n -L "+f.chain()+" >/dev/null 2>&1")
	if err != nil {
		return fault.Effect{}, fmt.Errorf("%s: looking for chain %s: %w", h.Name(), f.chain(), err)
	}
	if exists.ExitCode != 0 {
		return fault.Effect{Detail: fmt.Sprintf("%s has no chain %s: no packet dropped", h.Name(), f.chain())}, nil
	}
	n, err := chainDrops(ctx, h, f.chain())
	if err != nil {
		return fault.Effect{}, err
	}
	f.mu.Lock()
	last := f.lastDrops
	f.lastDrops = &n
	f.mu.Unlock()
	if last == nil {
		return fault.Effect{Observed: n > 0, Detail: fmt.Sprintf("%s dropped %d packets it sent to %v since inject (this process has no earlier reading, so whether it still drops is not known)", h.Name(), n, f.p.To)}, nil
	}
	delta := n - *last
	if delta < 0 {
		// A count below the last reading belongs to a chain made anew.
		delta = n
	}
	return fault.Effect{Observed: delta > 0, Detail: fmt.Sprintf("%s dropped %d packets it sent to %v since the last probe (%d since inject)", h.Name(), delta, f.p.To, n)}, nil
}

func init() { register(KindLoss, func(p lossParams) fault.Fault { return &loss{p: p} }) }
