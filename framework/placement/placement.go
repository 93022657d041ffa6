// Package placement puts the control plane where a scenario's question
// presumes it before the fault: which host holds the leader leases, which
// host serves the lab's virtual address. Each helper changes the cluster
// only through the lab's own service controls, checks the outcome from the
// cluster's account, and says on the timeline what it did.
package placement

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// Timeline kinds of the placements.
const (
	KindLeadersPlaced        = "leaders-placed"
	KindVirtualAddressPlaced = "virtual-address-placed"
)

// Lease is a leader-election lease in kube-system and the lab service
// whose processes campaign for it.
type Lease struct {
	Name    string
	Service string
}

// ControlPlaneLeases are the kube-controller-manager and kube-scheduler
// leases.
var ControlPlaneLeases = []Lease{
	{Name: "kube-controller-manager", Service: lab.ServiceControllerManager},
	{Name: "kube-scheduler", Service: lab.ServiceScheduler},
}

// HolderHost is the host part of a leader identity: controller-manager
// and scheduler name themselves <hostname>_<uuid>.
func HolderHost(identity string) string {
	h, _, _ := strings.Cut(identity, "_")
	return h
}

// LeaseHolders reads who holds each lease (an empty holder when none).
func LeaseHolders(ctx context.Context, cs kubernetes.Interface, leases []Lease) (map[string]string, error) {
	out := map[string]string{}
	for _, ls := range leases {
		l, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, ls.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading lease kube-system/%s: %w", ls.Name, err)
		}
		if l.Spec.HolderIdentity != nil {
			out[ls.Name] = *l.Spec.HolderIdentity
		}
	}
	return out, nil
}

func allHeldBy(holders map[string]string, leases []Lease, host string) bool {
	for _, ls := range leases {
		if HolderHost(holders[ls.Name]) != host {
			return false
		}
	}
	return true
}

// Leaders makes host on hold every one of leases: unless it holds them
// all already, the leases' services are stopped on the hosts named in
// others until the Lease objects name on as the holder of each (the
// others' leases run out after the lease duration and on's standbys take
// them), and started again whatever happens, so a failed placement leaves
// the control plane as it was; the others' processes then stand by,
// which is checked from the Leases once more. leaseDuration bounds the
// wait. note, when set, receives what was done, for the timeline.
func Leaders(ctx context.Context, l lab.Lab, cs kubernetes.Interface, on string, others []string, leases []Lease, leaseDuration time.Duration, note func(evidence.Event)) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("placing the leader leases on %s: %s", on, fmt.Sprintf(format, args...))
	}
	holders, err := LeaseHolders(ctx, cs, leases)
	if err != nil {
		return fail("%v", err)
	}
	how := on + " held them all already"
	if !allHeldBy(holders, leases, on) {
		var hosts []lab.Host
		for _, name := range others {
			h, err := l.Host(name)
			if err != nil {
				return fail("%v", err)
			}
			hosts = append(hosts, h)
		}
		var stoppedOn []lab.Host
		// Started again whatever happens.
		startAgain := func() error {
			for _, h := range stoppedOn {
				for _, ls := range leases {
					if err := h.StartService(context.WithoutCancel(ctx), ls.Service); err != nil {
						return fmt.Errorf("starting %s on %s again: %w", ls.Service, h.Name(), err)
					}
				}
			}
			return nil
		}
		for _, h := range hosts {
			stoppedOn = append(stoppedOn, h)
			for _, ls := range leases {
				if err := h.StopService(ctx, ls.Service); err != nil {
					stopErr := fail("stopping %s on %s: %v", ls.Service, h.Name(), err)
					if err := startAgain(); err != nil {
						return fmt.Errorf("%w; %v", stopErr, err)
					}
					return stopErr
				}
			}
		}
		stopped := time.Now().UTC()
		waitErr := lab.WaitFor(ctx, "every leader lease held by "+on, 3*leaseDuration+time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
			h, err := LeaseHolders(ctx, cs, leases)
			if err != nil {
				return false, err
			}
			holders = h
			return allHeldBy(h, leases, on), nil
		})
		startErr := startAgain()
		if waitErr != nil {
			return fmt.Errorf("placing the leader leases on %s (holders now %v): %w", on, holders, waitErr)
		}
		if startErr != nil {
			return fail("%v", startErr)
		}
		how = fmt.Sprintf("%s on %s stopped at %s until %s held every lease, then started again",
			strings.Join(services(leases), " and "), strings.Join(others, ", "), stopped.Format("15:04:05.000"), on)
	}
	// Read again after the others' components are back: they must have
	// come back as standbys.
	holders, err = LeaseHolders(ctx, cs, leases)
	if err != nil {
		return fail("%v", err)
	}
	if !allHeldBy(holders, leases, on) {
		return fail("after the components on %s started again the leases are held by %v", strings.Join(others, ", "), holders)
	}
	if note != nil {
		var held []string
		for _, ls := range leases {
			held = append(held, ls.Name+" held by "+holders[ls.Name])
		}
		note(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "lease/kube-system", Kind: KindLeadersPlaced,
			Detail: strings.Join(held, ", ") + " (Lease objects); " + how})
	}
	return nil
}

func services(leases []Lease) []string {
	var out []string
	for _, ls := range leases {
		out = append(out, ls.Service)
	}
	return out
}

// VirtualAddress makes host on serve the lab's virtual address alone,
// unless it does already, by stopping keepalived on every host of others
// and waiting until the address is on on alone (ip addr over SSH); keepalived stays stopped
// there for the run (a reset starts it again). A lab without a virtual
// address is left alone. note, when set, receives what was done.
func VirtualAddress(ctx context.Context, l lab.Lab, on string, others []string, note func(evidence.Event)) error {
	c := l.Config()
	if c == nil || c.Network.VirtualIP == "" {
		return nil
	}
	vip := c.Network.VirtualIP
	fail := func(err error) error { return fmt.Errorf("placing the virtual address on %s: %w", on, err) }
	target, err := l.Host(on)
	if err != nil {
		return fail(err)
	}
	var rest []lab.Host
	for _, name := range others {
		h, err := l.Host(name)
		if err != nil {
			return fail(err)
		}
		rest = append(rest, h)
	}
	holds := func(ctx context.Context, h lab.Host) (bool, error) {
		r, err := h.Run(ctx, "ip -o -4 addr show")
		if err != nil {
			return false, fmt.Errorf("reading the addresses of %s: %w", h.Name(), err)
		}
		if r.ExitCode != 0 {
			return false, fmt.Errorf("reading the addresses of %s: ip exited %d: %s", h.Name(), r.ExitCode, strings.TrimSpace(r.Stderr))
		}
		return strings.Contains(r.Stdout, " "+vip+"/"), nil
	}
	alone := func(ctx context.Context) (bool, error) {
		for _, h := range rest {
			if ok, err := holds(ctx, h); err != nil || ok {
				return false, err
			}
		}
		return holds(ctx, target)
	}
	how := "it was on " + on + " already"
	if ok, err := alone(ctx); err != nil {
		return fail(err)
	} else if !ok {
		var stopped []string
		for _, h := range rest {
			if err := h.StopService(ctx, lab.ServiceKeepalived); err != nil {
				return fail(fmt.Errorf("stopping keepalived on %s: %w", h.Name(), err))
			}
			stopped = append(stopped, h.Name())
		}
		how = fmt.Sprintf("keepalived on %s stopped at %s", strings.Join(stopped, ", "), time.Now().UTC().Format("15:04:05.000"))
		if err := lab.WaitFor(ctx, "virtual address "+vip+" on "+on+" alone", time.Minute, 500*time.Millisecond, alone); err != nil {
			return fail(err)
		}
	}
	if note != nil {
		note(evidence.Event{At: time.Now().UTC(), Source: evidence.Source("ssh/" + on), Subject: "address/" + vip, Kind: KindVirtualAddressPlaced,
			Detail: fmt.Sprintf("%s is on %s's eth0 and not on %s's (ip addr over SSH); %s", vip, on, strings.Join(others, "'s or "), how)})
	}
	return nil
}
