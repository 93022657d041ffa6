package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// storeLab is a lab whose storage is one directory volume's files in a
// directory; what the tests do not call is the nil embedded Lab's (and
// panics).
type storeLab struct {
	lab.Lab
	dir     string
	mounted []string
}

func (s *storeLab) Info() lab.Info { return lab.Info{Name: "store", Kind: "test"} }

func (s *storeLab) StorageInfo() (lab.StorageInfo, error) {
	return lab.StorageInfo{HistoryEndpoints: []string{"http://store:2379"}}, nil
}

func (s *storeLab) ReadVolumeFile(_ context.Context, handle, file string) (lab.VolumeFile, error) {
	p := filepath.Join(s.dir, file)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("%w: %s", lab.ErrNoSuchFile, p)
	}
	return lab.VolumeFile{Path: p, Data: b, MountedOn: s.mounted}, err
}

func (s *storeLab) OverwriteVolumeFile(_ context.Context, handle, file string, offset int64, data []byte) ([]byte, error) {
	f, err := os.OpenFile(filepath.Join(s.dir, file), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	was := make([]byte, len(data))
	if _, err := f.ReadAt(was, offset); err != nil {
		return nil, err
	}
	_, err = f.WriteAt(data, offset)
	return was, err
}

func (s *storeLab) DamageVolumeFilesystem(context.Context, string) (string, error) {
	return "", fmt.Errorf("%w: a directory volume", lab.ErrUnsupported)
}

// boundClaim is the claim data of namespace faultline-split, bound to a
// CSI volume with handle vol-1.
func boundClaim(more ...runtime.Object) []runtime.Object {
	return append([]runtime.Object{
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "faultline-split", Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "vol-1"}}}},
	}, more...)
}

// ledgerFile writes a log of n records of one writer into dir.
func ledgerFile(t *testing.T, dir string, n int) []byte {
	t.Helper()
	var log []byte
	id := history.Identity{Pod: "ledger-0", Node: "worker1", Incarnation: "0123456789abcdef0123456789abcdef"}
	for i := 1; i <= n; i++ {
		b, err := ledgerlog.Encode(ledgerlog.Record{Seq: uint64(i), Writer: id, Op: i, At: time.Unix(int64(i), 0), Data: ledgerlog.EntryData(id.Incarnation, uint64(i), 8)})
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, b...)
	}
	if err := os.WriteFile(filepath.Join(dir, "ledger.log"), log, 0o644); err != nil {
		t.Fatal(err)
	}
	return log
}

func TestLedgerRecordDamageStrikesTheRecordItChoseOnlyOnce(t *testing.T) {
	for _, how := range []string{DamageGarbled, DamageForged} {
		t.Run(how, func(t *testing.T) {
			cs := fake.NewClientset(boundClaim()...)
			useFake(t, cs)
			l := &storeLab{dir: t.TempDir()}
			log := ledgerFile(t, l.dir, 5)
			f := LedgerRecordDamage(LedgerDamage{Namespace: "faultline-split", Claim: "data", File: "ledger.log", Damage: how})
			ctx := context.Background()
			// Not injected (a null arm): Strike does nothing, Probe sees nothing.
			if err := f.Strike(ctx, l); err != nil {
				t.Fatal(err)
			}
			if eff, err := f.Probe(ctx, l); err != nil || eff.Observed {
				t.Fatalf("probe before inject: %+v, %v", eff, err)
			}
			if err := f.Inject(ctx, l); err != nil {
				t.Fatal(err)
			}
			if eff, _ := f.Probe(ctx, l); eff.Observed || !strings.Contains(eff.Detail, "not yet") {
				t.Errorf("probe before the strike: %+v", eff)
			}
			// The writer goes on appending: the log grows past the record.
			grown := ledgerFile(t, l.dir, 7)
			if err := f.Strike(ctx, l); err != nil {
				t.Fatal(err)
			}
			if eff, err := f.Probe(ctx, l); err != nil || !eff.Observed {
				t.Errorf("probe after the strike: %+v, %v", eff, err)
			}
			got, _ := os.ReadFile(filepath.Join(l.dir, "ledger.log"))
			before, after := ledgerlog.Scan(grown), ledgerlog.Scan(got)
			mid := ledgerlog.Scan(log).Entries[2]
			if len(got) != len(grown) || string(got[:mid.Offset]) != string(grown[:mid.Offset]) || string(got[mid.End():]) != string(grown[mid.End():]) {
				t.Errorf("bytes outside record %d at %d changed", mid.Record.Seq, mid.Offset)
			}
			switch how {
			case DamageGarbled:
				if len(after.Entries) != len(before.Entries)-1 || len(after.Damage) != 1 || after.Damage[0].Offset != mid.Offset || after.Damage[0].Tail {
					t.Errorf("garbled: %d records, damage %+v; want record 3 alone damaged", len(after.Entries), after.Damage)
				}
			case DamageForged:
				if len(after.Entries) != len(before.Entries) || len(after.Damage) != 0 || after.Entries[2].Record.Writer.Incarnation == mid.Record.Writer.Incarnation || after.Entries[2].Record.Seq != 3 {
					t.Errorf("forged: records %+v, damage %+v", after.Entries[2], after.Damage)
				}
			}
			// A second strike does not strike again, even over a log restored.
			if err := os.WriteFile(filepath.Join(l.dir, "ledger.log"), grown, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := f.Strike(ctx, l); err != nil {
				t.Fatal(err)
			}
			if again, _ := os.ReadFile(filepath.Join(l.dir, "ledger.log")); string(again) != string(grown) {
				t.Error("struck twice")
			}
			if err := f.Heal(ctx, l); err != nil {
				t.Fatal(err)
			}
			if eff, _ := f.Probe(ctx, l); eff.Observed {
				t.Errorf("probe after heal: %+v", eff)
			}
			back, err := fault.Decode(f.Kind(), f.Params())
			if err != nil || back.Params() == nil || string(back.Params()) != string(f.Params()) {
				t.Errorf("decoded %v, %v", back, err)
			}
		})
	}
}

func TestLedgerRecordDamageRefusesWhatItCannotDo(t *testing.T) {
	useFake(t, fake.NewClientset(boundClaim()...))
	ctx := context.Background()
	l := &storeLab{dir: t.TempDir()}
	ledgerFile(t, l.dir, 2)
	f := LedgerRecordDamage(LedgerDamage{Namespace: "faultline-split", Claim: "data", File: "ledger.log", Damage: DamageGarbled})
	if err := f.Inject(ctx, l); err == nil || !strings.Contains(err.Error(), "needs three") {
		t.Errorf("a log of two records: %v", err)
	}
	ledgerFile(t, l.dir, 5)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	// The record is no longer where it was: no strike over another one.
	ledgerFile(t, l.dir, 1)
	if err := f.Strike(ctx, l); err == nil || !strings.Contains(err.Error(), "no longer at offset") {
		t.Errorf("a strike over a log cut back: %v", err)
	}
	if err := f.Inject(ctx, struct{ lab.Lab }{&storeLab{}}); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("a lab without storage: %v", err)
	}
	if _, err := fault.Decode(KindLedgerRecordDamaged, []byte(`{"namespace":"n","claim":"c","file":"f","damage":"shredded"}`)); err == nil {
		t.Error("decoded an unknown damage")
	}
}

func TestLeaseHandedOverKeepsTheTransitions(t *testing.T) {
	holder, transitions := "elector-a-1_aaaa", int32(3)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "faultline-split", Name: "elector"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseTransitions: &transitions}}
	pod := func(name, uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "faultline-split", Name: name, UID: types.UID(uid)}}
	}
	cs := fake.NewClientset(lease, pod("elector-a-1", "uid-a"), pod("elector-b-1", "uid-b"), pod("elector-b-0", "uid-new"))
	useFake(t, cs)
	start := func(pod, uid, holder string, at int) electorlog.WriterStart {
		return electorlog.WriterStart{Start: history.Start{Writer: history.Identity{Pod: pod, PodUID: uid, Incarnation: holder}, Started: time.Unix(int64(at), 0)}, Holder: holder, Lease: "faultline-split/elector"}
	}
	old := writerStarts
	writerStarts = func(context.Context, lab.Lab, string) ([]electorlog.WriterStart, error) {
		return []electorlog.WriterStart{
			start("elector-a-1", "uid-a", "elector-a-1_aaaa", 1),
			start("elector-b-1", "uid-b", "elector-b-1_bbbb", 2),
			// Started later, but its pod is another now.
			start("elector-b-0", "uid-old", "elector-b-0_cccc", 3),
			// Another Lease's writer.
			{Start: history.Start{Writer: history.Identity{Pod: "elector-a-1", PodUID: "uid-a"}, Started: time.Unix(4, 0)}, Holder: "other_dddd", Lease: "faultline-split/other"},
		}, nil
	}
	t.Cleanup(func() { writerStarts = old })
	f := LeaseHandedOver(LeaseHandover{Namespace: "faultline-split", Lease: "elector", HistoryPrefix: "/h/"})
	ctx := context.Background()
	if eff, _ := f.Probe(ctx, nil); eff.Observed {
		t.Fatalf("probe before inject: %+v", eff)
	}
	if err := f.Inject(ctx, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := cs.CoordinationV1().Leases("faultline-split").Get(ctx, "elector", metav1.GetOptions{})
	if *got.Spec.HolderIdentity != "elector-b-1_bbbb" || *got.Spec.LeaseTransitions != 3 || got.Spec.RenewTime == nil {
		t.Errorf("lease after the handover: holder %s, transitions %d, renewed %v", *got.Spec.HolderIdentity, *got.Spec.LeaseTransitions, got.Spec.RenewTime)
	}
	if eff, err := f.Probe(ctx, nil); err != nil || !eff.Observed {
		t.Errorf("probe: %+v, %v", eff, err)
	}
	// The new holder's elector counts nothing; another transition is a
	// normal election, not the handover.
	four := int32(4)
	got.Spec.LeaseTransitions = &four
	if _, err := cs.CoordinationV1().Leases("faultline-split").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if eff, _ := f.Probe(ctx, nil); eff.Observed {
		t.Errorf("probe after a transition: %+v", eff)
	}
	if err := f.Heal(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// With no other running writer there is no one to hand it to.
	writerStarts = func(context.Context, lab.Lab, string) ([]electorlog.WriterStart, error) {
		return []electorlog.WriterStart{start("elector-b-1", "uid-b", "elector-b-1_bbbb", 2)}, nil
	}
	if err := f.Inject(ctx, nil); err == nil || !strings.Contains(err.Error(), "no running writer") {
		t.Errorf("handing the Lease to its own holder: %v", err)
	}
}

// useFake makes the faults talk to cs for the rest of the test.
func useFake(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	old := client
	client = func(lab.Lab, string) (kubernetes.Interface, error) { return cs, nil }
	t.Cleanup(func() { client = old })
}
