package csidriver

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

func TestStorageClasses(t *testing.T) {
	want := map[string]struct {
		driver string
		params map[string]string
	}{
		SharedStorageClass:      {DirectoryDriverName, nil},
		BlockStorageClass:       {BlockDriverName, nil},
		BlockMMPStorageClass:    {BlockDriverName, map[string]string{ParamMMP: "true", ParamMMPUpdateInterval: "1"}},
		BlockFencedStorageClass: {BlockDriverName, map[string]string{ParamFence: "true"}},
	}
	got := StorageClasses()
	if len(got) != len(want) {
		t.Fatalf("%d StorageClasses, want %d", len(got), len(want))
	}
	for _, sc := range got {
		w, ok := want[sc.Name]
		if !ok {
			t.Errorf("unexpected StorageClass %s", sc.Name)
			continue
		}
		if sc.Provisioner != w.driver || !maps.Equal(sc.Parameters, w.params) {
			t.Errorf("%s: provisioner %s, parameters %v; want %s, %v", sc.Name, sc.Provisioner, sc.Parameters, w.driver, w.params)
		}
		if sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
			sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
			t.Errorf("%s: reclaim %v, binding %v", sc.Name, sc.ReclaimPolicy, sc.VolumeBindingMode)
		}
		// Every class's parameters are ones its driver takes.
		k := KindBlock
		if sc.Provisioner == DirectoryDriverName {
			k = KindDirectory
		}
		bp, err := checkParameters(k, sc.Parameters)
		if err != nil {
			t.Errorf("%s: %v", sc.Name, err)
		}
		if bp.Fence != (sc.Name == BlockFencedStorageClass) {
			t.Errorf("%s: fence %v", sc.Name, bp.Fence)
		}
	}
}
