package csidriver

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

// ParamFSType is the StorageClass parameter external-provisioner reads
// the file system type from; it goes into the volume capability, not to
// CreateVolume.
const ParamFSType = "csi.storage.k8s.io/fstype"

// Provisioner answers the claims of a kind's StorageClasses with
// CreateVolume and released volumes with DeleteVolume, as
// external-provisioner does for a CSI driver. external-provisioner itself
// is not on the Go module proxy; this is built on the library it is built
// on (sig-storage-lib-external-provisioner), which watches the claims,
// creates the PersistentVolume, binds it and retries.
type Provisioner struct {
	kind Kind
	ctrl csi.ControllerServer
}

var _ controller.BlockProvisioner = (*Provisioner)(nil)

// NewProvisioner provisions kind k's volumes through ctrl.
func NewProvisioner(k Kind, ctrl csi.ControllerServer) *Provisioner {
	return &Provisioner{kind: k, ctrl: ctrl}
}

// SupportsBlock says raw block claims (volumeMode: Block) are not served:
// the library refuses them with an event on the claim.
func (p *Provisioner) SupportsBlock(context.Context) bool { return false }

// accessModes are the CSI access modes of a claim's modes, as Kubernetes
// maps them for a driver with SINGLE_NODE_MULTI_WRITER.
func accessModes(modes []v1.PersistentVolumeAccessMode) ([]csi.VolumeCapability_AccessMode_Mode, error) {
	var out []csi.VolumeCapability_AccessMode_Mode
	for _, m := range modes {
		switch m {
		case v1.ReadWriteOnce:
			out = append(out, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER)
		case v1.ReadWriteOncePod:
			out = append(out, csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)
		case v1.ReadOnlyMany:
			out = append(out, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY)
		case v1.ReadWriteMany:
			out = append(out, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
		default:
			return nil, fmt.Errorf("access mode %q is not one Kubernetes defines", m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the claim names no access mode")
	}
	return out, nil
}

// Provision makes the volume of a claim and the PersistentVolume for it.
func (p *Provisioner) Provision(ctx context.Context, o controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	if o.PVC == nil || o.StorageClass == nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("provisioning %s: no claim or no storage class", o.PVName)
	}
	if o.PVC.Spec.VolumeMode != nil && *o.PVC.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return nil, controller.ProvisioningFinished, fmt.Errorf("claim %s/%s: raw block volumes (volumeMode: Block) are not served", o.PVC.Namespace, o.PVC.Name)
	}
	params := map[string]string{}
	fsType := ""
	for k, v := range o.StorageClass.Parameters {
		if k == ParamFSType {
			fsType = v
			continue
		}
		params[k] = v
	}
	if p.kind == KindBlock && fsType == "" {
		fsType = FSTypeExt4
	}
	params[ParamPVCName], params[ParamPVCNamespace], params[ParamPVName] = o.PVC.Name, o.PVC.Namespace, o.PVName

	modes, err := accessModes(o.PVC.Spec.AccessModes)
	if err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("claim %s/%s: %w", o.PVC.Namespace, o.PVC.Name, err)
	}
	var caps []*csi.VolumeCapability
	for _, m := range modes {
		caps = append(caps, &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType, MountFlags: o.StorageClass.MountOptions}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: m},
		})
	}
	cr := &csi.CapacityRange{}
	if q, ok := o.PVC.Spec.Resources.Requests[v1.ResourceStorage]; ok {
		cr.RequiredBytes = q.Value()
	}
	if q, ok := o.PVC.Spec.Resources.Limits[v1.ResourceStorage]; ok {
		cr.LimitBytes = q.Value()
	}
	resp, err := p.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: o.PVName, CapacityRange: cr, VolumeCapabilities: caps, Parameters: params,
	})
	if err != nil {
		return nil, provisioningState(err), fmt.Errorf("claim %s/%s: %w", o.PVC.Namespace, o.PVC.Name, err)
	}
	size := resp.Volume.CapacityBytes
	if size == 0 {
		size = cr.RequiredBytes
	}
	reclaim := v1.PersistentVolumeReclaimDelete
	if o.StorageClass.ReclaimPolicy != nil {
		reclaim = *o.StorageClass.ReclaimPolicy
	}
	fs := v1.PersistentVolumeFilesystem
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: o.PVName},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   o.PVC.Spec.AccessModes,
			MountOptions:                  o.StorageClass.MountOptions,
			VolumeMode:                    &fs,
			Capacity:                      v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(size, resource.BinarySI)},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver:           p.kind.DriverName(),
				VolumeHandle:     resp.Volume.VolumeId,
				FSType:           fsType,
				VolumeAttributes: resp.Volume.VolumeContext,
			}},
		},
	}, controller.ProvisioningFinished, nil
}

// provisioningState says whether a failed CreateVolume is final or may
// still succeed when tried again (it is idempotent).
func provisioningState(err error) controller.ProvisioningState {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.AlreadyExists, codes.OutOfRange, codes.FailedPrecondition, codes.Unimplemented, codes.NotFound:
		return controller.ProvisioningFinished
	}
	return controller.ProvisioningInBackground
}

// Delete removes a released volume.
func (p *Provisioner) Delete(ctx context.Context, pv *v1.PersistentVolume) error {
	src := pv.Spec.CSI
	if src == nil || src.Driver != p.kind.DriverName() {
		return &controller.IgnoredError{Reason: fmt.Sprintf("volume %s is not a %s volume", pv.Name, p.kind.DriverName())}
	}
	if _, err := p.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: src.VolumeHandle}); err != nil {
		return fmt.Errorf("volume %s: %w", pv.Name, err)
	}
	return nil
}

// ProvisionerName is the StorageClass provisioner of a kind: its driver
// name, as for any CSI driver.
func ProvisionerName(k Kind) string { return k.DriverName() }

// NewProvisionController is the library's controller for kind k's
// StorageClasses, without leader election (one controller runs).
func NewProvisionController(ctx context.Context, client kubernetes.Interface, k Kind, p *Provisioner) *controller.ProvisionController {
	return controller.NewProvisionController(ctx, client, ProvisionerName(k), p,
		controller.LeaderElection(false),
		controller.FailedProvisionThreshold(0),
		controller.FailedDeleteThreshold(0),
	)
}
