package controls

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/lab"
)

// storeLab is a lab whose storage is one block volume's file system
// state; what the tests do not call is the nil embedded Lab's (and
// panics).
type storeLab struct {
	lab.Lab

	mu      sync.Mutex
	mounted []string
	damaged int
}

func (s *storeLab) set(mounted []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mounted = mounted
}

func (s *storeLab) damages() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.damaged
}

func (s *storeLab) Info() lab.Info { return lab.Info{Name: "store", Kind: "test"} }

func (s *storeLab) OverwriteVolumeFile(context.Context, string, string, int64, []byte) ([]byte, error) {
	return nil, fmt.Errorf("%w: a block volume", lab.ErrUnsupported)
}

func (s *storeLab) DamageVolumeFilesystem(context.Context, string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mounted) > 0 {
		return "", fmt.Errorf("%w on %v", lab.ErrVolumeMounted, s.mounted)
	}
	s.damaged++
	return "damaged", nil
}

func (s *storeLab) CheckVolumeFilesystem(context.Context, string) (lab.VolumeFilesystem, error) {
	if s.damages() > 0 {
		return lab.VolumeFilesystem{Image: "image", ExitCode: 4}, nil
	}
	return lab.VolumeFilesystem{Image: "image"}, nil
}

// boundClaim is the claim data of namespace faultline-split, bound to a
// CSI volume with handle vol-1.
func boundClaim(more ...runtime.Object) []runtime.Object {
	return append([]runtime.Object{
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "faultline-split", Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "vol-1"}}}},
	}, more...)
}

func TestStopThenDamageFilesystemWaitsForTheVolumeToBeLetGo(t *testing.T) {
	one := int32(1)
	cs := fake.NewClientset(boundClaim(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "faultline-split", Name: "ledger"}, Spec: appsv1.StatefulSetSpec{Replicas: &one}})...)
	useFake(t, cs)
	l := &storeLab{mounted: []string{"worker1"}}
	f := StopThenDamageFilesystem(FilesystemDamage{Namespace: "faultline-split", StatefulSet: "ledger", Claim: "data", Replicas: 1})
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { done <- f.Inject(ctx, l) }()
	time.Sleep(1200 * time.Millisecond)
	if l.damages() != 0 {
		t.Fatal("damaged while a node mounted the volume")
	}
	sts, _ := cs.AppsV1().StatefulSets("faultline-split").Get(ctx, "ledger", metav1.GetOptions{})
	if *sts.Spec.Replicas != 0 {
		t.Errorf("the statefulset was not stopped first: %d replicas", *sts.Spec.Replicas)
	}
	l.set(nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := l.damages(); n != 1 {
		t.Errorf("damaged %d times", n)
	}
	if eff, err := f.Probe(ctx, l); err != nil || !eff.Observed {
		t.Errorf("probe: %+v, %v", eff, err)
	}
	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	sts, _ = cs.AppsV1().StatefulSets("faultline-split").Get(ctx, "ledger", metav1.GetOptions{})
	if *sts.Spec.Replicas != 1 {
		t.Errorf("heal left %d replicas", *sts.Spec.Replicas)
	}
	if err := cs.AppsV1().StatefulSets("faultline-split").Delete(ctx, "ledger", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Heal(ctx, l); err != nil {
		t.Errorf("healing with the statefulset gone: %v", err)
	}
}
