package splitbrain

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/kits/storeddata"
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
// the external store ("ledger", "kvdb"), the elector's histories
// ("elector", elector.go) and the file system check of a block volume
// ("volume"). A workload the run does not run is not asked: the readers
// read the run's workloads from its labels (sampler.Env.Run), so each
// sampler asks for its own run, whatever other runs sample meanwhile.
func Extras() []sampler.Extra {
	out := []sampler.Extra{volumeExtra(), electorExtra()}
	for _, w := range dataWorkloads {
		out = append(out, sampler.Extra{Name: string(w.source), Open: opener(w)})
	}
	return out
}

// dataWorkloads are the workloads that store on a volume, and how their
// readers read them.
var dataWorkloads = []storedWorkload{
	{
		workload: WorkloadLedger, source: LedgerSource, claim: LedgerClaim, file: LedgerFile, prefix: HistoryPrefix,
		data: storeddata.LedgerLog, history: storeddata.LedgerHistory,
		encode: func(path string, data []byte, mounted []string, rev int64) any {
			return storeddata.LedgerLogValue{Path: path, Data: data, Mounted: mounted, StoreRevision: rev}
		},
	},
	{
		workload: WorkloadKVDB, source: KVDBSource, claim: KVDBClaim, file: KVDBFile, prefix: KVDBHistoryPrefix,
		data: storeddata.KVDBDatabase, history: storeddata.KVDBHistory,
		encode: func(path string, data []byte, mounted []string, rev int64) any {
			return storeddata.KVDBDatabaseValue{Path: path, Data: data, Mounted: mounted, StoreRevision: rev}
		},
	},
}

// storedWorkload is what a data workload's reader reads: its file on the
// volume of claim, then its writers' histories under prefix.
type storedWorkload struct {
	workload      Workload
	source        evidence.Source
	claim, file   string
	prefix        string
	data, history evidence.Question
	// encode is the data question's value: the file's path, bytes and
	// mounts, and the history store's revision read just before it.
	encode func(path string, data []byte, mounted []string, rev int64) any
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
		return sampler.Parts{Readers: []evidence.Reader{&storedReader{w: w, use: useOf(env.Run.Labels), lab: sd, api: api.Client, store: store}}}, nil
	}
}

// storedReader reads the workload's file, then the histories: every
// record in the file then has its operation's invoke in the history it
// read (the writers store the invoke before they write).
type storedReader struct {
	w storedWorkload
	// use is what the run the reader was opened for uses.
	use   runUse
	lab   lab.StoredData
	api   kubernetes.Interface
	store *clientv3.Client

	mu     sync.Mutex
	claim  string // the claim handle was found for
	handle string // the claim's volume, once bound
}

func (r *storedReader) Source() evidence.Source { return r.w.source }

// Questions are the workload's when the reader's run runs it, none
// otherwise.
func (r *storedReader) Questions() []evidence.Question {
	if !r.use.runs(r.w.workload) {
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
	// The store's revision first: every put of a writer at or below it
	// was made before the file's read began, in the store's own order
	// (a clock-skew fault can make the writers' clocks say otherwise).
	rev0 := storeRevision(ctx, r.store, r.w.prefix)
	f, err := r.lab.ReadVolumeFile(ctx, handle, r.w.file)
	readAt := time.Now().UTC()
	switch {
	case errors.Is(err, lab.ErrUnsupported):
		out[data] = evidence.UnreadableAnswer(err.Error(), readAt)
	case err != nil && len(f.MountedOn) == 0 && errors.Is(err, lab.ErrNoSuchFile):
		// Nothing mounts the volume and the file is not there: the
		// workload never wrote, which is a value (an empty file).
		out[data] = evidence.EncodedAnswer(r.w.encode(f.Path, []byte{}, nil, rev0), readAt, "")
	case err != nil:
		out[data] = evidence.UnreadableAnswer("reading "+r.w.file+" of volume "+handle+": "+err.Error(), readAt)
	default:
		out[data] = evidence.EncodedAnswer(r.w.encode(f.Path, f.Data, f.MountedOn, rev0), readAt, "")
	}
	asked := time.Now().UTC()
	kvs, rev, err := history.ReadKVs(ctx, r.store, r.w.prefix, "the ledger history")
	if err != nil {
		out[hist] = evidence.UnreadableAnswer(err.Error(), time.Now().UTC())
		return out
	}
	v := storeddata.LedgerHistoryValue{Prefix: r.w.prefix, Revision: rev, KVs: storedKVs(kvs)}
	a := evidence.EncodedAnswer(v, time.Now().UTC(), strconv.FormatInt(rev, 10))
	a.AskedAt = asked
	out[hist] = a
	return out
}

// storeRevision is the history store's revision now, from a linearizable
// read of the history's prefix (its count only), or 0 when the read
// failed.
func storeRevision(ctx context.Context, kv clientv3.KV, prefix string) int64 {
	resp, err := kv.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0
	}
	return resp.Header.GetRevision()
}

// storedKVs are a history store's keys as an answer holds them.
func storedKVs(kvs []history.KV) []storeddata.StoredKV {
	out := make([]storeddata.StoredKV, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, storeddata.StoredKV{Key: kv.Key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision})
	}
	return out
}

// VolumeSource is the source of the block volumes' file system checks.
const VolumeSource evidence.Source = "volume"

// volumeExtra checks the file system of the run's block volume, where the
// lab can (lab.FilesystemChecker).
func volumeExtra() sampler.Extra {
	return sampler.Extra{Name: string(VolumeSource), Open: func(env sampler.Env) (sampler.Parts, error) {
		fc, ok := env.Lab.(lab.FilesystemChecker)
		if !ok {
			return sampler.Parts{}, nil
		}
		api, ok := env.FirstAPIServer()
		if !ok {
			return sampler.Parts{}, errors.New("the volume evidence: no API server client to find the workload's volume with")
		}
		r := &volumeReader{lab: fc, use: useOf(env.Run.Labels), claims: map[Workload]*storedReader{}}
		for _, w := range dataWorkloads {
			r.claims[w.workload] = &storedReader{w: w, api: api.Client}
		}
		return sampler.Parts{Readers: []evidence.Reader{r}}, nil
	}}
}

// volumeReader answers volume/fsck for the block volume of the first data
// workload of its run that has one.
type volumeReader struct {
	lab lab.FilesystemChecker
	// use is what the run the reader was opened for uses.
	use runUse
	// claims find each data workload's volume (storedReader.volume).
	claims map[Workload]*storedReader
}

func (r *volumeReader) Source() evidence.Source { return VolumeSource }

// Questions is volume/fsck when the reader's run stores on a block
// volume, nothing otherwise.
func (r *volumeReader) Questions() []evidence.Question {
	if _, ok := r.workload(); !ok {
		return nil
	}
	return []evidence.Question{storeddata.VolumeFilesystem}
}

// workload is the run's data workload whose volume is checked.
func (r *volumeReader) workload() (storedWorkload, bool) {
	if !strings.HasPrefix(r.use.volume, "block") {
		return storedWorkload{}, false
	}
	for _, w := range dataWorkloads {
		if r.use.runs(w.workload) {
			return w, true
		}
	}
	return storedWorkload{}, false
}

func (r *volumeReader) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	w, ok := r.workload()
	if !ok {
		return nil
	}
	handle, err := r.claims[w.workload].volume(ctx)
	if err != nil {
		return map[evidence.Question]evidence.Answer{storeddata.VolumeFilesystem: evidence.UnreadableAnswer("finding the "+string(w.workload)+" volume: "+err.Error(), time.Now().UTC())}
	}
	c, err := r.lab.CheckVolumeFilesystem(ctx, handle)
	at := time.Now().UTC()
	if err != nil {
		return map[evidence.Question]evidence.Answer{storeddata.VolumeFilesystem: evidence.UnreadableAnswer("checking the file system of volume "+handle+": "+err.Error(), at)}
	}
	v := storeddata.VolumeFilesystemValue{Image: c.Image, ExitCode: c.ExitCode, Output: c.Output, Mounted: c.MountedOn}
	return map[evidence.Question]evidence.Answer{storeddata.VolumeFilesystem: evidence.EncodedAnswer(v, at, "")}
}
