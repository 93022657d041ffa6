package crashmatrix_test

import (
	"context"
	"sync"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// detachBegun is the fencing cell's moment: the attach/detach controller
// has begun detaching the fixture's fenced volume from the out-of-service
// node, so the storage host is fencing the node or has fenced it. It is
// polled, and a poll sees the volume's VolumeAttachment on the node being
// deleted, or gone after an earlier poll saw it there.
//
// Gone counts because the deleting state is short: the fixture pod has no
// grace period, so the taint's eviction removes it at once, the
// attach/detach controller deletes the attachment within a reconcile, and
// csi-attacher's unpublish (the fence) and the removal of its finalizer
// follow within a fraction of a second, often less than one poll's List
// takes on a loaded machine. A poll that looked for the deletion alone
// never saw it on lab11s, and the run was never killed. Only a detach
// takes an attachment off a node the run's fault keeps the kubelet of
// stopped, and the fixture is attached before the run starts, so the
// first poll sees it.
func detachBegun(kc kubernetes.Interface, fx fixtures, logf func(string, ...any)) func(context.Context) bool {
	var mu sync.Mutex
	seen := false
	return func(ctx context.Context) bool {
		mu.Lock()
		defer mu.Unlock()
		pvc, err := kc.CoreV1().PersistentVolumeClaims(fixtureNamespace).Get(ctx, fx.Claim, metav1.GetOptions{})
		if err != nil || pvc.Spec.VolumeName == "" {
			return false
		}
		vas, err := kc.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, va := range vas.Items {
			if !onNode(va, pvc.Spec.VolumeName, fx.Node) {
				continue
			}
			if va.DeletionTimestamp != nil {
				logf("VolumeAttachment %s of %s on %s is being deleted: killing the run", va.Name, pvc.Spec.VolumeName, fx.Node)
				return true
			}
			seen = true
			return false
		}
		if seen {
			logf("the VolumeAttachment of %s on %s, seen by an earlier poll, is gone (detached, and the node fenced): killing the run", pvc.Spec.VolumeName, fx.Node)
		}
		return seen
	}
}

func onNode(va storagev1.VolumeAttachment, volume, node string) bool {
	src := va.Spec.Source.PersistentVolumeName
	return src != nil && *src == volume && va.Spec.NodeName == node
}
