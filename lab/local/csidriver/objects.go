package csidriver

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The StorageClasses of the two drivers.
const (
	SharedStorageClass = "faultline-shared"
	BlockStorageClass  = "faultline-block"
	// BlockMMPStorageClass is block volumes with ext4 multi-mount
	// protection (a 1 s update interval).
	BlockMMPStorageClass = "faultline-block-mmp"
	// BlockFencedStorageClass is block volumes fenced at unpublish: the
	// node a volume is detached from loses its I/O to it.
	BlockFencedStorageClass = "faultline-block-fenced"
)

// ControllerRoleName is the ClusterRole of the controller's identity
// (the provisioner) and of csi-attacher's.
const ControllerRoleName = "faultline:csi-controller"

// CSIDrivers are the CSIDriver objects the cluster needs: attachRequired
// is what makes the attach/detach controller (and so its Multi-Attach
// check and its force-detach) act on block volumes and not on directory
// volumes.
func CSIDrivers() []*storagev1.CSIDriver {
	no, yes := false, true
	none, withFS := storagev1.NoneFSGroupPolicy, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	persistent := []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	return []*storagev1.CSIDriver{
		{
			ObjectMeta: metav1.ObjectMeta{Name: DirectoryDriverName},
			Spec: storagev1.CSIDriverSpec{AttachRequired: &no, PodInfoOnMount: &no, StorageCapacity: &no,
				// A shared directory is not the pod's to chown.
				FSGroupPolicy: &none, VolumeLifecycleModes: persistent},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: BlockDriverName},
			Spec: storagev1.CSIDriverSpec{AttachRequired: &yes, PodInfoOnMount: &no, StorageCapacity: &no,
				FSGroupPolicy: &withFS, VolumeLifecycleModes: persistent},
		},
	}
}

// StorageClasses are the drivers' StorageClasses: bound at once (no
// topology: every node reaches the storage), deleted with their claims.
func StorageClasses() []*storagev1.StorageClass {
	del := corev1.PersistentVolumeReclaimDelete
	immediate := storagev1.VolumeBindingImmediate
	sc := func(name, driver string, params map[string]string) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: driver,
			Parameters: params, ReclaimPolicy: &del, VolumeBindingMode: &immediate}
	}
	return []*storagev1.StorageClass{
		sc(SharedStorageClass, DirectoryDriverName, nil),
		sc(BlockStorageClass, BlockDriverName, nil),
		sc(BlockMMPStorageClass, BlockDriverName, map[string]string{ParamMMP: "true", ParamMMPUpdateInterval: "1"}),
		sc(BlockFencedStorageClass, BlockDriverName, map[string]string{ParamFence: "true"}),
	}
}

// ControllerRules are what the controller's provisioner and csi-attacher
// do with the API: the provisioner watches claims, classes and volumes,
// creates and deletes volumes and records events (and reads a claim's
// selected node); the attacher (kubernetes-csi's deploy/kubernetes/
// rbac.yaml) patches volumes and VolumeAttachments and reads CSINodes.
func ControllerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get", "list", "watch", "create", "delete", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"csinodes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"volumeattachments"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"volumeattachments/status"}, Verbs: []string{"patch"}},
	}
}
