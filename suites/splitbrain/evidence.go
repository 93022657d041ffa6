package splitbrain

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/lab"
)

// LedgerSource is the source of the ledger's evidence, the name the
// invariants read ledger/log and ledger/history from.
const LedgerSource evidence.Source = "ledger"

// Extras are the suite's evidence beside the framework's: the ledger's log
// as the storage holds it and every writer's history in the external
// store ("ledger").
func Extras() []sampler.Extra {
	return []sampler.Extra{{Name: string(LedgerSource), Open: openLedger}}
}

func openLedger(env sampler.Env) (sampler.Parts, error) {
	sd, ok := env.Lab.(lab.StoredData)
	if !ok {
		return sampler.Parts{}, fmt.Errorf("the ledger's evidence: lab %s offers no storage (lab.StoredData)", env.Lab.Config().Name)
	}
	info, err := sd.StorageInfo()
	if err != nil {
		return sampler.Parts{}, fmt.Errorf("the ledger's evidence: %w", err)
	}
	api, ok := env.FirstAPIServer()
	if !ok {
		return sampler.Parts{}, errors.New("the ledger's evidence: no API server client to find the ledger's volume with")
	}
	store, err := clientv3.New(clientv3.Config{Endpoints: info.HistoryEndpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		return sampler.Parts{}, fmt.Errorf("the ledger's evidence: the external store at %v: %w", info.HistoryEndpoints, err)
	}
	return sampler.Parts{Readers: []evidence.Reader{&ledgerReader{lab: sd, api: api.Client, store: store}}}, nil
}

// ledgerReader reads the log, then the histories: every record in the log
// then has its append's invoke in the history it read (the writer stores
// the invoke before it appends).
type ledgerReader struct {
	lab   lab.StoredData
	api   kubernetes.Interface
	store *clientv3.Client

	mu     sync.Mutex
	handle string // the ledger claim's volume, once bound
}

func (r *ledgerReader) Source() evidence.Source { return LedgerSource }
func (r *ledgerReader) Questions() []evidence.Question {
	return []evidence.Question{evidence.LedgerLog, evidence.LedgerHistory}
}

// volume is the CSI volume handle of the ledger's claim, looked up once it
// is bound (the reader is made before the fixtures are).
func (r *ledgerReader) volume(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handle != "" {
		return r.handle, nil
	}
	pvc, err := r.api.CoreV1().PersistentVolumeClaims(Namespace).Get(ctx, LedgerClaim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("claim %s/%s: %w", Namespace, LedgerClaim, err)
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("claim %s/%s is not bound yet", Namespace, LedgerClaim)
	}
	pv, err := r.api.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("volume %s: %w", pvc.Spec.VolumeName, err)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.VolumeHandle == "" {
		return "", fmt.Errorf("volume %s is not a CSI volume", pv.Name)
	}
	r.handle = pv.Spec.CSI.VolumeHandle
	return r.handle, nil
}

func (r *ledgerReader) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	handle, err := r.volume(ctx)
	if err != nil {
		now := time.Now().UTC()
		out[evidence.LedgerLog] = evidence.UnreadableAnswer("finding the ledger's volume: "+err.Error(), now)
		out[evidence.LedgerHistory] = evidence.UnreadableAnswer("finding the ledger's volume: "+err.Error(), now)
		return out
	}
	f, err := r.lab.ReadVolumeFile(ctx, handle, LedgerFile)
	logAt := time.Now().UTC()
	switch {
	case errors.Is(err, lab.ErrUnsupported):
		out[evidence.LedgerLog] = evidence.UnreadableAnswer(err.Error(), logAt)
	case err != nil && len(f.MountedOn) == 0 && errors.Is(err, lab.ErrNoSuchFile):
		// Nothing mounts the volume and the file is not there: the
		// ledger never wrote, which is a value (an empty log).
		out[evidence.LedgerLog] = evidence.EncodedAnswer(evidence.LedgerLogValue{Path: f.Path, Data: []byte{}}, logAt, "")
	case err != nil:
		out[evidence.LedgerLog] = evidence.UnreadableAnswer("reading "+LedgerFile+" of volume "+handle+": "+err.Error(), logAt)
	default:
		out[evidence.LedgerLog] = evidence.EncodedAnswer(evidence.LedgerLogValue{Path: f.Path, Data: f.Data, Mounted: f.MountedOn}, logAt, "")
	}
	asked := time.Now().UTC()
	kvs, rev, err := ledgerlog.ReadHistoryKVs(ctx, r.store, HistoryPrefix)
	if err != nil {
		out[evidence.LedgerHistory] = evidence.UnreadableAnswer(err.Error(), time.Now().UTC())
		return out
	}
	v := evidence.LedgerHistoryValue{Prefix: HistoryPrefix, Revision: rev, KVs: make([]evidence.StoredKV, 0, len(kvs))}
	for _, kv := range kvs {
		v.KVs = append(v.KVs, evidence.StoredKV{Key: kv.Key, Value: kv.Value})
	}
	a := evidence.EncodedAnswer(v, time.Now().UTC(), strconv.FormatInt(rev, 10))
	a.AskedAt = asked
	out[evidence.LedgerHistory] = a
	return out
}
