package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/lab"
)

// KindLeaseHandedOver is the kind of LeaseHandedOver faults.
const KindLeaseHandedOver = "lease-handed-over"

// LeaseHandover names the Lease of a leader-elected writer
// (fixtures/electorlog) and where its writers keep their histories in the
// lab's external store.
type LeaseHandover struct {
	Namespace string `json:"namespace"`
	Lease     string `json:"lease"`
	// HistoryPrefix is the writers' history prefix in the external store
	// (lab.StorageInfo.HistoryEndpoints), where each writer's start names
	// the holder identity it takes part in the election as.
	HistoryPrefix string `json:"historyPrefix"`
}

// LeaseHandedOver writes the Lease over, through the API, to name another
// candidate as its holder without counting a transition (leaseTransitions
// kept, renewTime now), as an operator or a controller editing the Lease
// by hand could: the positive control of fencing-monotonic with a token
// the fenced store does not refuse by construction. The new holder's
// client-go elector finds itself named and leads (it keeps the
// transitions of a Lease it holds), and reads its token there: the
// transitions the old holder's token has. The old holder's next renewal
// conflicts, finds another holder, and it stops leading only after its
// renew deadline, writing with its token meanwhile. The store accepts
// every write whose token is not below the highest it accepted, so both
// holders' writes with one token are accepted: one token, two holders.
//
// The candidate is a writer whose start (in the external store) names this
// Lease and another holder identity, and whose pod runs with the UID the
// start names; the latest started such writer. Heal does nothing: the
// election goes on by itself. Probe sees the fault while the Lease names
// the candidate with the transitions it had; it reads what the Inject of
// this value handed over, in this process.
func LeaseHandedOver(h LeaseHandover) *LeaseHandoverFault { return &LeaseHandoverFault{h: h} }

// LeaseHandoverFault is the fault LeaseHandedOver makes.
type LeaseHandoverFault struct {
	h LeaseHandover

	mu      sync.Mutex
	handed  bool
	from    string
	to      string
	transit int32
}

func (f *LeaseHandoverFault) Kind() string            { return KindLeaseHandedOver }
func (f *LeaseHandoverFault) Class() fault.Class      { return controls.ClassOperatorAction }
func (f *LeaseHandoverFault) Params() json.RawMessage { return mustJSON(KindLeaseHandedOver, f.h) }

// writerStarts reads the starts of the writers under prefix in the lab's
// external store. Tests replace it.
var writerStarts = func(ctx context.Context, l lab.Lab, prefix string) ([]electorlog.WriterStart, error) {
	sd, ok := l.(lab.StoredData)
	if !ok {
		return nil, lab.Unsupported(l.Info().Kind, "reading the external store", fmt.Sprintf("lab %s has no storage (lab.StoredData)", l.Info().Name))
	}
	info, err := sd.StorageInfo()
	if err != nil {
		return nil, err
	}
	store, err := clientv3.New(clientv3.Config{Endpoints: info.HistoryEndpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("the external store at %v: %w", info.HistoryEndpoints, err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	hs, err := electorlog.ReadHistories(ctx, store, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]electorlog.WriterStart, len(hs))
	for i, h := range hs {
		out[i] = h.Start
	}
	return out, nil
}

// leaseWrites is how often Inject tries to write the Lease over when the
// elector's own renewal changes it in between.
const leaseWrites = 5

func (f *LeaseHandoverFault) Inject(ctx context.Context, l lab.Lab) error {
	h := f.h
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("lease handover: %w", err)
	}
	starts, err := writerStarts(ctx, l, h.HistoryPrefix)
	if err != nil {
		return fmt.Errorf("lease handover: reading the writers' starts: %w", err)
	}
	leases := cs.CoordinationV1().Leases(h.Namespace)
	for try := 1; ; try++ {
		lease, err := leases.Get(ctx, h.Lease, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("lease handover: reading lease %s/%s: %w", h.Namespace, h.Lease, err)
		}
		from := ""
		if lease.Spec.HolderIdentity != nil {
			from = *lease.Spec.HolderIdentity
		}
		if from == "" {
			return fmt.Errorf("lease handover: lease %s/%s has no holder to take it from", h.Namespace, h.Lease)
		}
		to, err := candidate(ctx, cs, h, starts, from)
		if err != nil {
			return err
		}
		var transitions int32
		if lease.Spec.LeaseTransitions != nil {
			transitions = *lease.Spec.LeaseTransitions
		}
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity = &to
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		switch {
		case err == nil:
			f.mu.Lock()
			f.handed, f.from, f.to, f.transit = true, from, to, transitions
			f.mu.Unlock()
			return nil
		case apierrors.IsConflict(err) && try < leaseWrites:
			continue
		default:
			return fmt.Errorf("lease handover: writing lease %s/%s over to %s: %w", h.Namespace, h.Lease, to, err)
		}
	}
}

// candidate is the holder identity to hand the Lease to: the latest
// started writer of this Lease with another identity than from, whose pod
// runs with the UID its start names.
func candidate(ctx context.Context, cs kubernetes.Interface, h LeaseHandover, starts []electorlog.WriterStart, from string) (string, error) {
	lease := h.Namespace + "/" + h.Lease
	sort.SliceStable(starts, func(i, j int) bool { return starts[i].Started.After(starts[j].Started) })
	var seen []string
	for _, st := range starts {
		if st.Lease != lease || st.Holder == from || st.Holder == "" {
			continue
		}
		pod, err := cs.CoreV1().Pods(h.Namespace).Get(ctx, st.Writer.Pod, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			seen = append(seen, st.Writer.Pod+" (gone)")
			continue
		case err != nil:
			return "", fmt.Errorf("lease handover: reading pod %s/%s: %w", h.Namespace, st.Writer.Pod, err)
		}
		if string(pod.UID) != st.Writer.PodUID || pod.DeletionTimestamp != nil {
			seen = append(seen, st.Writer.Pod+" (another pod of the name, or deleted)")
			continue
		}
		return st.Holder, nil
	}
	return "", fmt.Errorf("lease handover: no running writer of lease %s other than its holder %s under %s (passed over: %v)", lease, from, h.HistoryPrefix, seen)
}

// Heal does nothing: the election goes on by itself.
func (f *LeaseHandoverFault) Heal(context.Context, lab.Lab) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handed = false
	return nil
}

// Probe sees the fault while the Lease names the holder Inject handed it
// to with the transitions it had.
func (f *LeaseHandoverFault) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	f.mu.Lock()
	handed, to, transitions := f.handed, f.to, f.transit
	f.mu.Unlock()
	if !handed {
		return fault.Effect{Detail: "the Lease was not handed over (nothing injected)"}, nil
	}
	cs, err := client(l, "")
	if err != nil {
		return fault.Effect{}, err
	}
	lease, err := cs.CoordinationV1().Leases(f.h.Namespace).Get(ctx, f.h.Lease, metav1.GetOptions{})
	if err != nil {
		return fault.Effect{}, fmt.Errorf("reading lease %s/%s: %w", f.h.Namespace, f.h.Lease, err)
	}
	holder, got := "", int32(0)
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if lease.Spec.LeaseTransitions != nil {
		got = *lease.Spec.LeaseTransitions
	}
	return fault.Effect{Observed: holder == to && got == transitions,
		Detail: fmt.Sprintf("lease %s/%s held by %s with %d transitions (handed to %s at %d)", f.h.Namespace, f.h.Lease, holder, got, to, transitions)}, nil
}

func decodeLeaseHandover(raw json.RawMessage) (fault.Fault, error) {
	var h LeaseHandover
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, err
	}
	if h.Namespace == "" || h.Lease == "" || h.HistoryPrefix == "" {
		return nil, errors.New("namespace, lease and historyPrefix are all needed")
	}
	return LeaseHandedOver(h), nil
}

func init() { fault.Register(KindLeaseHandedOver, decodeLeaseHandover) }
