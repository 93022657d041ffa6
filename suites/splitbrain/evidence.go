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

// LedgerSource and KVDBSource are the sources of the data workloads'
// evidence, the names the invariants read ledger/* and kvdb/* from.
const (
	LedgerSource evidence.Source = "ledger"
	KVDBSource   evidence.Source = "kvdb"
)

// Extras are the suite's evidence beside the framework's: each data
// workload's file as the storage holds it and every writer's history in
// the external store ("ledger", "kvdb"), and the elector's histories
// ("elector", elector.go). A workload the running scenario does not run
// is not asked.
func Extras() []sampler.Extra {
	return []sampler.Extra{
		{Name: string(LedgerSource), Open: opener(storedWorkload{
			workload: WorkloadLedger, source: LedgerSource, claim: LedgerClaim, file: LedgerFile, prefix: HistoryPrefix,
			data: evidence.LedgerLog, history: evidence.LedgerHistory,
			encode: func(path string, data []byte, mounted []string) any {
				return evidence.LedgerLogValue{Path: path, Data: data, Mounted: mounted}
			},
		})},
		{Name: string(KVDBSource), Open: opener(storedWorkload{
			workload: WorkloadKVDB, source: KVDBSource, claim: KVDBClaim, file: KVDBFile, prefix: KVDBHistoryPrefix,
			data: evidence.KVDBDatabase, history: evidence.KVDBHistory,
			encode: func(path string, data []byte, mounted []string) any {
				return evidence.KVDBDatabaseValue{Path: path, Data: data, Mounted: mounted}
			},
		})},
		electorExtra(),
	}
}

// storedWorkload is what a data workload's reader reads: its file on the
// volume of claim, then its writers' histories under prefix.
type storedWorkload struct {
	workload      Workload
	source        evidence.Source
	claim, file   string
	prefix        string
	data, history evidence.Question
	// encode is the data question's value.
	encode func(path string, data []byte, mounted []string) any
}

func opener(w storedWorkload) func(sampler.Env) (sampler.Parts, error) {
	return func(env sampler.Env) (sampler.Parts, error) {
		sd, ok := env.Lab.(lab.StoredData)
		if !ok {
			return sampler.Parts{}, fmt.Errorf("the %s evidence: lab %s offers no storage (lab.StoredData)", w.source, env.Lab.Config().Name)
		}
		info, err := sd.StorageInfo()
		if err != nil {
			return sampler.Parts{}, fmt.Errorf("the %s evidence: %w", w.source, err)
		}
		api, ok := env.FirstAPIServer()
		if !ok {
			return sampler.Parts{}, fmt.Errorf("the %s evidence: no API server client to find the workload's volume with", w.source)
		}
		store, err := clientv3.New(clientv3.Config{Endpoints: info.HistoryEndpoints, DialTimeout: 2 * time.Second})
		if err != nil {
			return sampler.Parts{}, fmt.Errorf("the %s evidence: the external store at %v: %w", w.source, info.HistoryEndpoints, err)
		}
		return sampler.Parts{Readers: []evidence.Reader{&storedReader{w: w, lab: sd, api: api.Client, store: store}}}, nil
	}
}

// storedReader reads the workload's file, then the histories: every
// record in the file then has its operation's invoke in the history it
// read (the writers store the invoke before they write).
type storedReader struct {
	w     storedWorkload
	lab   lab.StoredData
	api   kubernetes.Interface
	store *clientv3.Client

	mu     sync.Mutex
	claim  string // the claim handle was found for
	handle string // the claim's volume, once bound
}

func (r *storedReader) Source() evidence.Source { return r.w.source }

// Questions are the workload's while the running scenario runs it, none
// otherwise.
func (r *storedReader) Questions() []evidence.Question {
	if !Active(r.w.workload) {
		return nil
	}
	return []evidence.Question{r.w.data, r.w.history}
}

// volume is the CSI volume handle of the workload's claim, looked up once
// it is bound (the reader is made before the fixtures are; each reset
// makes the claim anew, so a handle is forgotten when the claim's UID
// changes).
func (r *storedReader) volume(ctx context.Context) (string, error) {
	pvc, err := r.api.CoreV1().PersistentVolumeClaims(Namespace).Get(ctx, r.w.claim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("claim %s/%s: %w", Namespace, r.w.claim, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handle != "" && r.claim == string(pvc.UID) {
		return r.handle, nil
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("claim %s/%s is not bound yet", Namespace, r.w.claim)
	}
	pv, err := r.api.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("volume %s: %w", pvc.Spec.VolumeName, err)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.VolumeHandle == "" {
		return "", fmt.Errorf("volume %s is not a CSI volume", pv.Name)
	}
	r.claim, r.handle = string(pvc.UID), pv.Spec.CSI.VolumeHandle
	return r.handle, nil
}

func (r *storedReader) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	data, hist := r.w.data, r.w.history
	handle, err := r.volume(ctx)
	if err != nil {
		now := time.Now().UTC()
		out[data] = evidence.UnreadableAnswer("finding the "+string(r.w.workload)+" volume: "+err.Error(), now)
		out[hist] = evidence.UnreadableAnswer("finding the "+string(r.w.workload)+" volume: "+err.Error(), now)
		return out
	}
	f, err := r.lab.ReadVolumeFile(ctx, handle, r.w.file)
	readAt := time.Now().UTC()
	switch {
	case errors.Is(err, lab.ErrUnsupported):
		out[data] = evidence.UnreadableAnswer(err.Error(), readAt)
	case err != nil && len(f.MountedOn) == 0 && errors.Is(err, lab.ErrNoSuchFile):
		// Nothing mounts the volume and the file is not there: the
		// workload never wrote, which is a value (an empty file).
		out[data] = evidence.EncodedAnswer(r.w.encode(f.Path, []byte{}, nil), readAt, "")
	case err != nil:
		out[data] = evidence.UnreadableAnswer("reading "+r.w.file+" of volume "+handle+": "+err.Error(), readAt)
	default:
		out[data] = evidence.EncodedAnswer(r.w.encode(f.Path, f.Data, f.MountedOn), readAt, "")
	}
	asked := time.Now().UTC()
	kvs, rev, err := ledgerlog.ReadHistoryKVs(ctx, r.store, r.w.prefix)
	if err != nil {
		out[hist] = evidence.UnreadableAnswer(err.Error(), time.Now().UTC())
		return out
	}
	v := evidence.LedgerHistoryValue{Prefix: r.w.prefix, Revision: rev, KVs: make([]evidence.StoredKV, 0, len(kvs))}
	for _, kv := range kvs {
		v.KVs = append(v.KVs, evidence.StoredKV{Key: kv.Key, Value: kv.Value})
	}
	a := evidence.EncodedAnswer(v, time.Now().UTC(), strconv.FormatInt(rev, 10))
	a.AskedAt = asked
	out[hist] = a
	return out
}
