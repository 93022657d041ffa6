package crashmatrix_test

import (
	"context"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// detachBegun is the fencing cell's moment: the attach/detach controller
// has begun detaching the fixture's fenced volume from the out-of-service
// node (its VolumeAttachment is being deleted), so the storage host is
// fencing the node, or about to.
func detachBegun(kc kubernetes.Interface, fx fixtures, logf func(string, ...any)) func(context.Context) bool {
	return func(ctx context.Context) bool {
		pvc, err := kc.CoreV1().PersistentVolumeClaims(fixtureNamespace).Get(ctx, fx.Claim, metav1.GetOptions{})
		if err != nil || pvc.Spec.VolumeName == "" {
			return false
		}
		vas, err := kc.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, va := range vas.Items {
			if onNode(va, pvc.Spec.VolumeName, fx.Node) && va.DeletionTimestamp != nil {
				logf("VolumeAttachment %s of %s on %s is being deleted: killing the run", va.Name, pvc.Spec.VolumeName, fx.Node)
				return true
			}
		}
		return false
	}
}

func onNode(va storagev1.VolumeAttachment, volume, node string) bool {
	src := va.Spec.Source.PersistentVolumeName
	return src != nil && *src == volume && va.Spec.NodeName == node
}
