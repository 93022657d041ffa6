package splitbrain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/lab"
)

// mounts is a lab.StoredData whose every volume is mounted on on.
type mounts struct{ on []string }

func (m mounts) StorageInfo() (lab.StorageInfo, error) { return lab.StorageInfo{}, nil }
func (m mounts) ReadVolumeFile(context.Context, string, string) (lab.VolumeFile, error) {
	return lab.VolumeFile{MountedOn: m.on}, nil
}

// ledgerOnly are the workloads of a run of the ledger alone.
var ledgerOnly = []Workload{WorkloadLedger}

func boundClaim() []runtime.Object {
	return []runtime.Object{
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: LedgerClaim, Namespace: Namespace, UID: "c1"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1"}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{VolumeHandle: "block-1"}}}},
		LedgerStatefulSet("faultline-block", []string{"http://store:2379"}, ledgerlog.ModeNaive),
	}
}

func TestQuiesceScalesToZeroAndWaitsForTheMountsToGo(t *testing.T) {
	cs := fake.NewClientset(boundClaim()...)
	var said []string
	logf := func(f string, a ...any) { said = append(said, f) }
	if err := Quiesce(t.Context(), cs, mounts{}, ledgerOnly, time.Second, logf); err != nil {
		t.Fatal(err)
	}
	sts, err := cs.AppsV1().StatefulSets(Namespace).Get(t.Context(), Ledger, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *sts.Spec.Replicas != 0 || len(said) != 1 || !strings.Contains(said[0], "no volume mounted") {
		t.Fatalf("replicas %d, said %q", *sts.Spec.Replicas, said)
	}

	said = nil
	if err := Quiesce(t.Context(), fake.NewClientset(boundClaim()...), mounts{on: []string{"worker1"}}, ledgerOnly, 1500*time.Millisecond, func(f string, a ...any) {
		said = append(said, fmt.Sprintf(f, a...))
	}); err != nil {
		t.Fatal(err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "not quiet") || !strings.Contains(said[0], "ledger's volume mounted on worker1") {
		t.Fatalf("a mount that stays: said %q", said)
	}
}

// failedRead is a lab.StoredData whose every read of a volume fails.
type failedRead struct{ err error }

func (f failedRead) StorageInfo() (lab.StorageInfo, error) { return lab.StorageInfo{}, nil }
func (f failedRead) ReadVolumeFile(context.Context, string, string) (lab.VolumeFile, error) {
	return lab.VolumeFile{}, f.err
}

// A read of the volume that failed says nothing of its mounts: quiesce
// does not take it for "nothing mounted". A file not there is a read that
// worked: its mounts (none) stand.
func TestQuiesceTakesNoFailedReadForNothingMounted(t *testing.T) {
	var said []string
	logf := func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	if err := Quiesce(t.Context(), fake.NewClientset(boundClaim()...), failedRead{errors.New("listing the mount table: permission denied")}, ledgerOnly, 1500*time.Millisecond, logf); err != nil {
		t.Fatal(err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "not quiet") || !strings.Contains(said[0], "permission denied") {
		t.Fatalf("a failed read: said %q", said)
	}
	said = nil
	if err := Quiesce(t.Context(), fake.NewClientset(boundClaim()...), failedRead{fmt.Errorf("%w: ledger.log", lab.ErrNoSuchFile)}, ledgerOnly, 1500*time.Millisecond, logf); err != nil {
		t.Fatal(err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "no volume mounted") {
		t.Fatalf("no such file, nothing mounted: said %q", said)
	}
}

func TestQuiesceWaitsForThePods(t *testing.T) {
	objs := append(boundClaim(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: LedgerPod, Namespace: Namespace}, Spec: corev1.PodSpec{NodeName: "worker1"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: Namespace}})
	var said []string
	if err := Quiesce(t.Context(), fake.NewClientset(objs...), mounts{}, ledgerOnly, 1500*time.Millisecond, func(f string, a ...any) {
		said = append(said, fmt.Sprintf(f, a...))
	}); err != nil {
		t.Fatal(err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "pods left: ledger-0 on worker1") {
		t.Fatalf("said %q", said)
	}
}

// Once no pod of the suite is left, every claim is marked quiesced before
// its volume is looked at: a lab that reads volumes through the cluster
// reads only a marked claim. While a pod is left, none is marked.
func TestQuiesceMarksTheClaimsOnceThePodsAreGone(t *testing.T) {
	cs := fake.NewClientset(boundClaim()...)
	seen := &markSeen{cs: cs}
	if err := Quiesce(t.Context(), cs, seen, ledgerOnly, time.Second, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims(Namespace).Get(t.Context(), LedgerClaim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, pvc.Annotations[lab.QuiescedClaimAnnotation]); err != nil {
		t.Errorf("claim annotations %v: want %s set to a time", pvc.Annotations, lab.QuiescedClaimAnnotation)
	}
	if seen.reads == 0 || seen.unmarked > 0 {
		t.Errorf("%d reads of the volume, %d of them before the claim was marked", seen.reads, seen.unmarked)
	}

	objs := append(boundClaim(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: LedgerPod, Namespace: Namespace}, Spec: corev1.PodSpec{NodeName: "worker1"}})
	cs = fake.NewClientset(objs...)
	if err := Quiesce(t.Context(), cs, mounts{}, ledgerOnly, 1200*time.Millisecond, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	pvc, err = cs.CoreV1().PersistentVolumeClaims(Namespace).Get(t.Context(), LedgerClaim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := pvc.Annotations[lab.QuiescedClaimAnnotation]; ok {
		t.Errorf("claim marked quiesced (%s) while pod %s is left", v, LedgerPod)
	}
}

// markSeen is a lab.StoredData that counts the reads made before the
// ledger's claim was marked quiesced.
type markSeen struct {
	cs              *fake.Clientset
	reads, unmarked int
}

func (m *markSeen) StorageInfo() (lab.StorageInfo, error) { return lab.StorageInfo{}, nil }
func (m *markSeen) ReadVolumeFile(ctx context.Context, _, _ string) (lab.VolumeFile, error) {
	m.reads++
	pvc, err := m.cs.CoreV1().PersistentVolumeClaims(Namespace).Get(ctx, LedgerClaim, metav1.GetOptions{})
	if err != nil || pvc.Annotations[lab.QuiescedClaimAnnotation] == "" {
		m.unmarked++
	}
	return lab.VolumeFile{}, nil
}

// A write or list the API server dropped (a reset connection through the
// virtual address, a timeout) is asked again within the quiesce's time;
// a refusal is final.
func TestQuiesceAsksAgainWhenAConnectionWasReset(t *testing.T) {
	reset := errors.New(`Put "https://10.0.0.10:6443/apis/apps/v1/namespaces/faultline-split/statefulsets/ledger?timeout=10s": read tcp 10.0.0.1:59716->10.0.0.10:6443: read: connection reset by peer`)
	cs := fake.NewClientset(boundClaim()...)
	failures := map[string]int{"list": 1, "update": 2}
	cs.PrependReactor("*", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if failures[a.GetVerb()] > 0 {
			failures[a.GetVerb()]--
			return true, nil, reset
		}
		return false, nil, nil
	})
	if err := Quiesce(t.Context(), cs, mounts{}, ledgerOnly, 10*time.Second, func(string, ...any) {}); err != nil {
		t.Fatalf("two reset connections failed the quiesce: %v", err)
	}
	sts, err := cs.AppsV1().StatefulSets(Namespace).Get(t.Context(), Ledger, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *sts.Spec.Replicas != 0 {
		t.Fatalf("replicas %d after the quiesce", *sts.Spec.Replicas)
	}

	refused := fake.NewClientset(boundClaim()...)
	refused.PrependReactor("update", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, Ledger, errors.New("no"))
	})
	if err := Quiesce(t.Context(), refused, mounts{}, ledgerOnly, 10*time.Second, func(string, ...any) {}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("a refused scale: %v, want the refusal", err)
	}
}
