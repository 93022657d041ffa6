package drills

import (
	"context"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/placement"
	"github.com/faultline/faultline/lab"
)

// Timeline moments at which the racks drill saw M1 hold both leader
// leases, and the lab's virtual address served from rack R2, before the
// cut.
const (
	KindLeadersPlaced        = placement.KindLeadersPlaced
	KindVirtualAddressPlaced = placement.KindVirtualAddressPlaced
)

// HolderHost is the host part of a leader identity.
func HolderHost(identity string) string { return placement.HolderHost(identity) }

// PlaceLeaders makes M1 hold the controller-manager and scheduler leases,
// as the racks drill's question presumes: unless it already holds both,
// M2's two components are stopped until the Lease objects name M1 as the
// holder of both, and started again (placement.Leaders).
func PlaceLeaders(ctx context.Context, l lab.Lab, cs kubernetes.Interface, s RacksShape, leaseDuration time.Duration, note func(evidence.Event)) error {
	return placement.Leaders(ctx, l, cs, s.M1, []string{s.M2}, placement.ControlPlaneLeases, leaseDuration, note)
}

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
	return placement.VirtualAddress(ctx, l, s.M2, []string{s.M1}, note)
}
