package csidriver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Identity is the CSI identity service of one kind.
type Identity struct {
	csi.UnimplementedIdentityServer
	kind       Kind
	store      Store
	controller bool
}

// NewIdentity is the identity service of kind k; controller says whether
// the same endpoint serves the controller service.
func NewIdentity(k Kind, st Store, controller bool) *Identity {
	return &Identity{kind: k, store: st, controller: controller}
}

func (i *Identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{
		Name:          i.kind.DriverName(),
		VendorVersion: VendorVersion,
		Manifest:      map[string]string{"kind": string(i.kind)},
	}, nil
}

func (i *Identity) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	resp := &csi.GetPluginCapabilitiesResponse{}
	if i.controller {
		resp.Capabilities = append(resp.Capabilities, &csi.PluginCapability{
			Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
		})
	}
	// No VOLUME_ACCESSIBILITY_CONSTRAINTS: every node reaches the
	// storage.
	return resp, nil
}

// Probe says the driver is ready while the export path is reachable.
func (i *Identity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if err := i.store.Check(); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "Probe: %v", err)
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
