package csidriver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

func claim(name string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fl", UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: modes,
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("24Mi")}},
		},
	}
}

func TestProvisionMakesTheVolumeAndItsPV(t *testing.T) {
	c, st := newController(t, KindDirectory)
	p := NewProvisioner(KindDirectory, c)
	ctx := context.Background()
	retain := v1.PersistentVolumeReclaimRetain
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Provisioner: DirectoryDriverName,
		ReclaimPolicy: &retain, MountOptions: []string{"noatime"}}
	pv, state, err := p.Provision(ctx, controller.ProvisionOptions{StorageClass: sc, PVName: "pvc-1", PVC: claim("data", v1.ReadWriteMany)})
	if err != nil || state != controller.ProvisioningFinished {
		t.Fatalf("%v %v", state, err)
	}
	src := pv.Spec.CSI
	if src == nil || src.Driver != DirectoryDriverName || src.VolumeHandle != VolumeID(KindDirectory, "pvc-1") || src.FSType != "" || src.VolumeAttributes["kind"] != "directory" {
		t.Fatalf("PV source %+v", src)
	}
	if q := pv.Spec.Capacity[v1.ResourceStorage]; q.Value() != 24*mib {
		t.Errorf("capacity %v", q.String())
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != retain || pv.Spec.AccessModes[0] != v1.ReadWriteMany || pv.Spec.MountOptions[0] != "noatime" {
		t.Errorf("PV spec %+v", pv.Spec)
	}
	v, err := st.Get(src.VolumeHandle)
	if err != nil || v.Parameters[ParamPVCName] != "data" || v.Parameters[ParamPVCNamespace] != "fl" || v.Parameters[ParamPVName] != "pvc-1" {
		t.Fatalf("record %+v %v", v, err)
	}
	if err := p.Delete(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(src.VolumeHandle); !errors.Is(err, ErrNotFound) {
		t.Errorf("after Delete: %v", err)
	}
	other := pv.DeepCopy()
	other.Spec.CSI.Driver = "other.example.com"
	var ignored *controller.IgnoredError
	if err := p.Delete(ctx, other); !errors.As(err, &ignored) {
		t.Errorf("deleting another driver's volume: %v", err)
	}

	// What CreateVolume refuses is final; the library then stops trying.
	bad := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Provisioner: DirectoryDriverName, Parameters: map[string]string{"replicas": "3"}}
	_, state, err = p.Provision(ctx, controller.ProvisionOptions{StorageClass: bad, PVName: "pvc-2", PVC: claim("d2", v1.ReadWriteOnce)})
	if err == nil || state != controller.ProvisioningFinished || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("bad parameter: %v %v", state, err)
	}
	block := v1.PersistentVolumeBlock
	raw := claim("raw", v1.ReadWriteOnce)
	raw.Spec.VolumeMode = &block
	if _, _, err := p.Provision(ctx, controller.ProvisionOptions{StorageClass: sc, PVName: "pvc-3", PVC: raw}); err == nil || !strings.Contains(err.Error(), "volumeMode: Block") {
		t.Errorf("a raw block claim: %v", err)
	}
}

func TestProvisionBlockDefaultsToExt4(t *testing.T) {
	c, _ := newController(t, KindBlock)
	p := NewProvisioner(KindBlock, c)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "block"}, Provisioner: BlockDriverName, Parameters: map[string]string{ParamMMP: "true"}}
	pv, _, err := p.Provision(context.Background(), controller.ProvisionOptions{StorageClass: sc, PVName: "pvc-b", PVC: claim("b", v1.ReadWriteOncePod)})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.CSI.FSType != "ext4" || pv.Spec.CSI.VolumeAttributes["mmp"] != "true" || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Errorf("PV %+v", pv.Spec)
	}
	rwx := claim("x", v1.ReadWriteMany)
	if _, _, err := p.Provision(context.Background(), controller.ProvisionOptions{StorageClass: sc, PVName: "pvc-x", PVC: rwx}); err == nil || !strings.Contains(err.Error(), "one node at a time") {
		t.Errorf("a ReadWriteMany block claim: %v", err)
	}
}

// The library drives the provisioner from the claims it watches: a claim
// of the driver's StorageClass gets a PersistentVolume bound to it.
func TestProvisionControllerAnswersClaims(t *testing.T) {
	c, _ := newController(t, KindDirectory)
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Provisioner: DirectoryDriverName}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cl := claim("data", v1.ReadWriteMany)
	cl.Spec.StorageClassName = new(string)
	*cl.Spec.StorageClassName = "shared"
	// What the PV controller sets on a claim for an external provisioner.
	cl.Annotations = map[string]string{"volume.kubernetes.io/storage-provisioner": DirectoryDriverName}
	if _, err := client.CoreV1().PersistentVolumeClaims("fl").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pc := NewProvisionController(ctx, client, KindDirectory, NewProvisioner(KindDirectory, c))
	go pc.Run(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pvs.Items) == 1 {
			pv := pvs.Items[0]
			if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != "data" || pv.Spec.StorageClassName != "shared" ||
				pv.Annotations["pv.kubernetes.io/provisioned-by"] != DirectoryDriverName || pv.Spec.CSI.Driver != DirectoryDriverName {
				t.Fatalf("PV %+v", pv)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no PersistentVolume for the claim within 30 s")
}
