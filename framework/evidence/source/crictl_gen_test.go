//go:build gen

package source

// go test -tags gen -run TestGenerateCrictlTestdata ./framework/evidence/source/
// writes testdata/crictl/*.json: CRI list responses printed exactly as
// crictl v1.37 prints them (cmd/crictl/util.go protobufObjectToJSON:
// protojson with EmitDefaultValues and a two-space indent), for a node
// holding an old, stopped sandbox of the stateful pod, its replacement
// running, and an unrelated pod.

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/runtime/protoiface"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func crictlJSON(t *testing.T, obj protoiface.MessageV1) []byte {
	b, err := protojson.MarshalOptions{EmitDefaultValues: true, Indent: "  "}.Marshal(protoadapt.MessageV2Of(obj))
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestGenerateCrictlTestdata(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	podLabels := func(ns, name, uid string) map[string]string {
		return map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.uid": uid, "app": name}
	}
	ctrLabels := func(ns, name, uid, ctr string) map[string]string {
		return map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.uid": uid, "io.kubernetes.container.name": ctr}
	}
	pods := &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{
		{Id: "9f1c0aa1b2", Metadata: &runtimeapi.PodSandboxMetadata{Name: "stateful-0", Uid: "uid-old", Namespace: "faultline", Attempt: 0},
			State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, CreatedAt: t0.UnixNano(), Labels: podLabels("faultline", "stateful-0", "uid-old")},
		{Id: "3d4e5f6a7b", Metadata: &runtimeapi.PodSandboxMetadata{Name: "stateful-0", Uid: "uid-new", Namespace: "faultline", Attempt: 0},
			State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: t0.Add(90 * time.Second).UnixNano(), Labels: podLabels("faultline", "stateful-0", "uid-new")},
		{Id: "77aa88bb99", Metadata: &runtimeapi.PodSandboxMetadata{Name: "stateful-0", Uid: "uid-x", Namespace: "elsewhere", Attempt: 0},
			State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: t0.UnixNano(), Labels: podLabels("elsewhere", "stateful-0", "uid-x")},
	}}
	ctrs := &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{
		{Id: "c0ffee0001", PodSandboxId: "9f1c0aa1b2", Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
			Image: &runtimeapi.ImageSpec{Image: "sha256:aaaa"}, ImageRef: "sha256:aaaa",
			State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: t0.Add(time.Second).UnixNano(), Labels: ctrLabels("faultline", "stateful-0", "uid-old", "main")},
		{Id: "c0ffee0002", PodSandboxId: "3d4e5f6a7b", Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
			Image: &runtimeapi.ImageSpec{Image: "sha256:aaaa"}, ImageRef: "sha256:aaaa",
			State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: t0.Add(91 * time.Second).UnixNano(), Labels: ctrLabels("faultline", "stateful-0", "uid-new", "main")},
		{Id: "c0ffee0003", PodSandboxId: "77aa88bb99", Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
			Image: &runtimeapi.ImageSpec{Image: "sha256:aaaa"}, ImageRef: "sha256:aaaa",
			State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: t0.UnixNano(), Labels: ctrLabels("elsewhere", "stateful-0", "uid-x", "main")},
	}}
	for name, b := range map[string][]byte{"pods.json": crictlJSON(t, pods), "ps.json": crictlJSON(t, ctrs)} {
		if err := os.WriteFile(filepath.Join("testdata", "crictl", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
