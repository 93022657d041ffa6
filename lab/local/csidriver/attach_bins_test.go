//go:build bins

package csidriver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/internal/kubetest"
	"github.com/faultline/faultline/lab/local/binpaths"
)

// The block driver's controller, with its provisioner and kubernetes-csi's
// csi-attacher on its socket, against a real API server: a claim of the
// block StorageClass gets its volume and PersistentVolume; a
// VolumeAttachment (what the attach/detach controller makes) is attached
// through ControllerPublishVolume and recorded for its node; a second
// node's VolumeAttachment is refused while the first holds the volume and
// attached once the first is deleted (detached). No kubelet and no
// controller-manager run: the test does what they would (the claim's
// provisioner annotation, the CSINode entries, the VolumeAttachments).
func TestAttachThroughExternalAttacher(t *testing.T) {
	attacher := kubetest.Binary(t, "external-attacher-"+binpaths.ExternalAttacherVersion, "csi-attacher")
	cp := kubetest.StartControlPlane(t, kubetest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := cp.Client

	dir := shortDir(t)
	export := filepath.Join(dir, "export")
	must(t, os.Mkdir(export, 0o755))
	socks := filepath.Join(dir, "s")
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() {
		runDone <- RunController(runCtx, ControllerConfig{Export: export, SocketDir: socks, Kubeconfig: cp.Kubeconfig, Provision: true, Log: quiet})
	}()
	t.Cleanup(func() {
		stopRun()
		if err := <-runDone; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	blockSock := ControllerSocket(socks, BlockDriverName)
	waitFor(t, blockSock)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", kubetest.FreePort(t))
	kubetest.Start(t, "csi-attacher", attacher, "--csi-address=unix://"+blockSock, "--kubeconfig="+cp.Kubeconfig,
		"--leader-election=false", "--timeout=15s", "--retry-interval-start=500ms", "--retry-interval-max=2s",
		"--http-endpoint="+httpAddr, "-v=4")
	// Its metrics endpoint is what a readiness probe can ask.
	for ctx.Err() == nil {
		if resp, err := http.Get("http://" + httpAddr + "/metrics"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatalf("csi-attacher's /metrics at %s never answered", httpAddr)
	}

	st := Store{Root: export}
	for _, n := range []string{"worker1", "worker2"} {
		must(t, st.RegisterNode(n, "")) // what the node driver does at start
		_, err := c.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		must(t, err)
		// What the kubelet writes once it registered the node driver.
		_, err = c.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: BlockDriverName, NodeID: n}}}}, metav1.CreateOptions{})
		must(t, err)
	}
	for _, o := range CSIDrivers() {
		_, err := c.StorageV1().CSIDrivers().Create(ctx, o, metav1.CreateOptions{})
		must(t, err)
	}
	for _, sc := range StorageClasses() {
		_, err := c.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		must(t, err)
	}

	pv := provisioned(ctx, t, c, "faultline-block", BlockDriverName)
	if pv.Spec.CSI.FSType != "ext4" || pv.Spec.CSI.VolumeHandle != VolumeID(KindBlock, pv.Name) {
		t.Fatalf("PV source %+v", pv.Spec.CSI)
	}
	if _, err := os.Stat(st.ImagePath(pv.Spec.CSI.VolumeHandle)); err != nil {
		t.Fatalf("the volume's image: %v", err)
	}
	dirPV := provisioned(ctx, t, c, "faultline-shared", DirectoryDriverName)
	if _, err := os.Stat(st.DataDir(dirPV.Spec.CSI.VolumeHandle)); err != nil {
		t.Fatalf("the directory volume's data: %v", err)
	}

	va := func(node string) *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: "va-" + node},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: BlockDriverName, NodeName: node,
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv.Name}},
		}
	}
	_, err := c.StorageV1().VolumeAttachments().Create(ctx, va("worker1"), metav1.CreateOptions{})
	must(t, err)
	got := waitVA(ctx, t, c, "va-worker1", func(a *storagev1.VolumeAttachment) bool { return a.Status.Attached })
	if got.Status.AttachmentMetadata["attachedTo"] != "worker1" || len(got.Finalizers) == 0 {
		t.Errorf("attached VolumeAttachment %+v", got)
	}
	atts, err := st.Attachments(pv.Spec.CSI.VolumeHandle)
	if err != nil || len(atts) != 1 || atts[0].Node != "worker1" || atts[0].AccessMode != "SINGLE_NODE_MULTI_WRITER" {
		t.Fatalf("attachments %+v %v", atts, err)
	}

	_, err = c.StorageV1().VolumeAttachments().Create(ctx, va("worker2"), metav1.CreateOptions{})
	must(t, err)
	refused := waitVA(ctx, t, c, "va-worker2", func(a *storagev1.VolumeAttachment) bool { return a.Status.AttachError != nil })
	if refused.Status.Attached || !strings.Contains(refused.Status.AttachError.Message, "published to node worker1") {
		t.Fatalf("the second node's attachment: %+v", refused.Status)
	}

	must(t, c.StorageV1().VolumeAttachments().Delete(ctx, "va-worker1", metav1.DeleteOptions{}))
	waitGone(ctx, t, c, "va-worker1")
	waitVA(ctx, t, c, "va-worker2", func(a *storagev1.VolumeAttachment) bool { return a.Status.Attached })
	atts, err = st.Attachments(pv.Spec.CSI.VolumeHandle)
	if err != nil || len(atts) != 1 || atts[0].Node != "worker2" {
		t.Fatalf("attachments after the move %+v %v", atts, err)
	}
	must(t, c.StorageV1().VolumeAttachments().Delete(ctx, "va-worker2", metav1.DeleteOptions{}))
	waitGone(ctx, t, c, "va-worker2")
	if atts, _ := st.Attachments(pv.Spec.CSI.VolumeHandle); len(atts) != 0 {
		t.Fatalf("still attached: %+v", atts)
	}
}

// provisioned makes a claim of class sc, marked as the PV controller
// marks a claim for an external provisioner, and returns its PV.
func provisioned(ctx context.Context, t *testing.T, c kubernetes.Interface, sc, driver string) *v1.PersistentVolume {
	t.Helper()
	name := "claim-" + sc
	mode := v1.ReadWriteOnce
	if driver == DirectoryDriverName {
		mode = v1.ReadWriteMany
	}
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Annotations: map[string]string{"volume.kubernetes.io/storage-provisioner": driver}},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: &sc,
			AccessModes:      []v1.PersistentVolumeAccessMode{mode},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("20Mi")}},
		},
	}
	created, err := c.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{})
	must(t, err)
	for ctx.Err() == nil {
		pvs, err := c.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		must(t, err)
		for i := range pvs.Items {
			pv := &pvs.Items[i]
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID == created.UID {
				if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driver || pv.Spec.StorageClassName != sc || !slices.Contains(pv.Spec.AccessModes, mode) {
					t.Fatalf("PV %+v", pv.Spec)
				}
				return pv
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no PV for claim %s: %v", name, ctx.Err())
	return nil
}

func waitVA(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, ok func(*storagev1.VolumeAttachment) bool) *storagev1.VolumeAttachment {
	t.Helper()
	var last *storagev1.VolumeAttachment
	for ctx.Err() == nil {
		a, err := c.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
		must(t, err)
		last = a
		if ok(a) {
			return a
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("VolumeAttachment %s: %v; last status %+v", name, ctx.Err(), last.Status)
	return nil
}

func waitGone(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	for ctx.Err() == nil {
		if _, err := c.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("VolumeAttachment %s not gone (the attacher keeps its finalizer until it detached): %v", name, ctx.Err())
}
