package drills

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

// KindLeadersPlaced is the timeline moment at which the racks drill saw
// M1 hold both leader leases before the cut.
const KindLeadersPlaced = "leaders-placed"

// HolderHost is the host part of a leader identity: controller-manager
// and scheduler name themselves <hostname>_<uuid>.
func HolderHost(identity string) string {
	h, _, _ := strings.Cut(identity, "_")
	return h
}

// leaseHolders reads who holds each of LeaderLeases.
func leaseHolders(ctx context.Context, cs kubernetes.Interface) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range LeaderLeases {
		l, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading lease kube-system/%s: %w", name, err)
		}
		if l.Spec.HolderIdentity != nil {
			out[name] = *l.Spec.HolderIdentity
		}
	}
	return out, nil
}

func allHeldBy(holders map[string]string, host string) bool {
	for _, name := range LeaderLeases {
		if HolderHost(holders[name]) != host {
			return false
		}
	}
	return true
}

// PlaceLeaders makes M1 hold the controller-manager and scheduler leases,
// as the racks drill's question presumes: unless it already holds both,
// M2's two components are stopped until the Lease objects name M1 as the
// holder of both (M2's leases run out after the lease duration and M1's
// standbys take them), and started again; M2's components then stand by.
// note receives what was done, for the timeline. leaseDuration bounds the
// wait.
func PlaceLeaders(ctx context.Context, l lab.Lab, cs kubernetes.Interface, s RacksShape, leaseDuration time.Duration, note func(evidence.Event)) error {
	holders, err := leaseHolders(ctx, cs)
	if err != nil {
		return fmt.Errorf("placing the leader leases on %s: %w", s.M1, err)
	}
	how := "M1 held both already"
	if !allHeldBy(holders, s.M1) {
		m2, err := l.Host(s.M2)
		if err != nil {
			return fmt.Errorf("placing the leader leases on %s: %w", s.M1, err)
		}
		components := []string{lab.ServiceControllerManager, lab.ServiceScheduler}
		for _, c := range components {
			if err := m2.StopService(ctx, c); err != nil {
				return fmt.Errorf("placing the leader leases on %s: stopping %s on %s: %w", s.M1, c, s.M2, err)
			}
		}
		stopped := time.Now().UTC()
		// Started again whatever happens, so a failed placement leaves the
		// control plane as it was.
		startM2 := func() error {
			for _, c := range components {
				if err := m2.StartService(context.WithoutCancel(ctx), c); err != nil {
					return fmt.Errorf("starting %s on %s again: %w", c, s.M2, err)
				}
			}
			return nil
		}
		waitErr := lab.WaitFor(ctx, "both leader leases held by "+s.M1, 3*leaseDuration+time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
			h, err := leaseHolders(ctx, cs)
			if err != nil {
				return false, err
			}
			holders = h
			return allHeldBy(h, s.M1), nil
		})
		startErr := startM2()
		if waitErr != nil {
			return fmt.Errorf("placing the leader leases on %s (holders now %v): %w", s.M1, holders, waitErr)
		}
		if startErr != nil {
			return fmt.Errorf("placing the leader leases on %s: %w", s.M1, startErr)
		}
		how = fmt.Sprintf("%s's kube-controller-manager and kube-scheduler were stopped at %s until M1 held both, then started again",
			s.M2, stopped.Format("15:04:05.000"))
	}
	// Read again after M2's components are back: they must have come
	// back as standbys.
	holders, err = leaseHolders(ctx, cs)
	if err != nil {
		return fmt.Errorf("placing the leader leases on %s: %w", s.M1, err)
	}
	if !allHeldBy(holders, s.M1) {
		return fmt.Errorf("placing the leader leases on %s: after %s's components started again the leases are held by %v", s.M1, s.M2, holders)
	}
	if note != nil {
		note(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "lease/kube-system", Kind: KindLeadersPlaced,
			Detail: fmt.Sprintf("kube-controller-manager held by %s, kube-scheduler held by %s (Lease objects); %s",
				holders["kube-controller-manager"], holders["kube-scheduler"], how)})
	}
	return nil
}

// KindVirtualAddressPlaced is the timeline moment at which the racks drill
// saw the lab's virtual address served from rack R2.
const KindVirtualAddressPlaced = "virtual-address-placed"

// PlaceVirtualAddress makes M2 serve the lab's virtual address (the one
// the kubelets reach the API through) before R1 is cut off, by stopping
// M1's keepalived until the address is on M2 alone; M1's keepalived stays
// stopped for the run (a reset starts it again).
//
// Why: the question is about M1 leading the controllers, not about the
// load balancer. With the address on M1 the cut takes it into R1: the
// partition's rules go with where the address is at the cut, so R2's
// kubelets lose every API server, the controller-manager that takes over
// on M2 marks every node unreachable, and nothing can be scheduled on W2 —
// the positive control then never gets its second copy. An address that
// a load balancer outside R1 would keep serving belongs with R2.
func PlaceVirtualAddress(ctx context.Context, l lab.Lab, s RacksShape, note func(evidence.Event)) error {
	c := l.Config()
	if c == nil || c.Network.VirtualIP == "" {
		return nil
	}
	vip := c.Network.VirtualIP
	m1, err := l.Host(s.M1)
	if err != nil {
		return fmt.Errorf("placing the virtual address on %s: %w", s.M2, err)
	}
	m2, err := l.Host(s.M2)
	if err != nil {
		return fmt.Errorf("placing the virtual address on %s: %w", s.M2, err)
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
	onM2Only := func(ctx context.Context) (bool, error) {
		a, err := holds(ctx, m1)
		if err != nil {
			return false, err
		}
		b, err := holds(ctx, m2)
		if err != nil {
			return false, err
		}
		return !a && b, nil
	}
	how := "it was on " + s.M2 + " already"
	if ok, err := onM2Only(ctx); err != nil {
		return fmt.Errorf("placing the virtual address on %s: %w", s.M2, err)
	} else if !ok {
		if err := m1.StopService(ctx, lab.ServiceKeepalived); err != nil {
			return fmt.Errorf("placing the virtual address on %s: stopping keepalived on %s: %w", s.M2, s.M1, err)
		}
		how = fmt.Sprintf("keepalived on %s stopped at %s", s.M1, time.Now().UTC().Format("15:04:05.000"))
		if err := lab.WaitFor(ctx, "virtual address "+vip+" on "+s.M2+" alone", time.Minute, 500*time.Millisecond, onM2Only); err != nil {
			return fmt.Errorf("placing the virtual address on %s: %w", s.M2, err)
		}
	}
	if note != nil {
		note(evidence.Event{At: time.Now().UTC(), Source: evidence.Source("ssh/" + s.M2), Subject: "address/" + vip, Kind: KindVirtualAddressPlaced,
			Detail: fmt.Sprintf("%s is on %s's eth0 and not on %s's (ip addr over SSH); %s", vip, s.M2, s.M1, how)})
	}
	return nil
}
