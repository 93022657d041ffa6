package crashmatrix_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func attachment(name, volume, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"external-attacher/block-csi-faultline-local"}},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "block.csi.faultline.local",
			NodeName: node,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: &volume},
		},
		Status: storagev1.VolumeAttachmentStatus{Attached: true},
	}
}

// The fencing cell's moment is the fixture's volume being detached from
// its node: its VolumeAttachment being deleted, or gone once it was seen.
// csi-attacher unpublishes (the fence) and drops its finalizer within a
// fraction of a second of the deletion, so a poll that looks only for the
// deletionTimestamp misses the moment whenever the attachment goes between
// two polls; on lab11s it did, and the run was never killed. Attachments
// of other volumes or nodes, and one never seen, are not the moment.
func TestTheFencingMomentIsTheAttachmentGoingEvenBetweenPolls(t *testing.T) {
	fx := fixtures{Node: "worker3", Pod: "crash-pod-1", Claim: "crash-vol-1"}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fx.Claim, Namespace: fixtureNamespace},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"},
	}
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(t *testing.T, kc *fake.Clientset)
		want   bool
	}{
		{"nothing changes", func(*testing.T, *fake.Clientset) {}, false},
		{"being deleted", func(t *testing.T, kc *fake.Clientset) {
			va, err := kc.StorageV1().VolumeAttachments().Get(ctx, "va-fixture", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			now := metav1.Now()
			va.DeletionTimestamp = &now
			if _, err := kc.StorageV1().VolumeAttachments().Update(ctx, va, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"deleted and gone between two polls", func(t *testing.T, kc *fake.Clientset) {
			if err := kc.StorageV1().VolumeAttachments().Delete(ctx, "va-fixture", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"other volumes' and nodes' attachments gone", func(t *testing.T, kc *fake.Clientset) {
			for _, n := range []string{"va-other-node", "va-other-volume"} {
				if err := kc.StorageV1().VolumeAttachments().Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kc := fake.NewClientset(claim,
				attachment("va-fixture", "pv-1", "worker3"),
				attachment("va-other-node", "pv-1", "worker2"),
				attachment("va-other-volume", "pv-2", "worker3"))
			begun := detachBegun(kc, fx, t.Logf)
			for range 3 {
				if begun(ctx) {
					t.Fatal("the moment came with the volume attached and nothing deleted")
				}
				time.Sleep(10 * time.Millisecond)
			}
			c.change(t, kc)
			if got := begun(ctx); got != c.want {
				t.Errorf("after %s: moment %v, want %v", c.name, got, c.want)
			}
		})
	}
	t.Run("never seen attached", func(t *testing.T) {
		kc := fake.NewClientset(claim, attachment("va-other-node", "pv-1", "worker2"))
		if detachBegun(kc, fx, t.Logf)(ctx) {
			t.Error("an attachment never seen is taken for one that went")
		}
	})
}
