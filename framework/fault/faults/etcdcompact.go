package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindEtcdCompact is the kind of EtcdCompact faults.
const KindEtcdCompact = "etcd-compact"

// ClassEtcdHistory is etcd history taken away from under open watches.
const ClassEtcdHistory fault.Class = "etcd-history"

type etcdCompactParams struct {
	Defragment bool `json:"defragment,omitempty"`
}

func (etcdCompactParams) check() error { return nil }

// EtcdCompact compacts etcd to its current revision while the API servers'
// watches are open (and, with defragment, defragments every member).
// Compaction cannot be undone: heal has nothing to restore, and a lab's
// reset is what brings the history back.
func EtcdCompact(defragment bool) fault.Fault {
	return &etcdCompact{p: etcdCompactParams{Defragment: defragment}}
}

type etcdCompact struct {
	p  etcdCompactParams
	mu sync.Mutex
	// compactedTo is the revision this process compacted to; 0 when it
	// has not (the null arm) or after heal.
	compactedTo int64
}

func (f *etcdCompact) Kind() string            { return KindEtcdCompact }
func (f *etcdCompact) Class() fault.Class      { return ClassEtcdHistory }
func (f *etcdCompact) Params() json.RawMessage { return mustJSON(f.p) }

func (f *etcdCompact) Inject(ctx context.Context, l lab.Lab) error {
	c, err := etcdClient(l, "etcd compaction")
	if err != nil {
		return err
	}
	defer c.Close()
	err = compactNow(ctx, c, func(rev int64) {
		f.mu.Lock()
		f.compactedTo = rev
		f.mu.Unlock()
	})
	if err != nil {
		return err
	}
	if f.p.Defragment {
		for _, ep := range c.Endpoints() {
			if _, err := c.Defragment(ctx, ep); err != nil {
				return fmt.Errorf("etcd compaction: defragmenting %s: %w", ep, err)
			}
		}
	}
	return nil
}

func (f *etcdCompact) Heal(context.Context, lab.Lab) error {
	f.mu.Lock()
	f.compactedTo = 0
	f.mu.Unlock()
	return nil
}

// Probe asks etcd how far its history is compacted (a watch from revision
// 1 is refused with the compact revision): the fault is seen when etcd has
// compacted at least to the revision this process compacted to.
func (f *etcdCompact) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	c, err := etcdClient(l, "probing etcd compaction")
	if err != nil {
		return fault.Effect{}, err
	}
	defer c.Close()
	compacted, err := compactRevision(ctx, c)
	if err != nil {
		return fault.Effect{}, err
	}
	f.mu.Lock()
	want := f.compactedTo
	f.mu.Unlock()
	if want == 0 {
		return fault.Effect{Detail: fmt.Sprintf("etcd history is compacted to revision %d; this process compacted nothing", compacted)}, nil
	}
	return fault.Effect{Observed: compacted >= want, Detail: fmt.Sprintf("etcd history is compacted to revision %d (compacted to %d at inject)", compacted, want)}, nil
}

// compactRevision is etcd's compacted revision, 0 when nothing is compacted.
func compactRevision(ctx context.Context, c *clientv3.Client) (int64, error) {
	wctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), 3*time.Second)
	defer cancel()
	for resp := range c.Watch(wctx, "faultline-compact-probe", clientv3.WithRev(1)) {
		if resp.CompactRevision > 0 {
			return resp.CompactRevision, nil
		}
		if err := resp.Err(); err != nil {
			return 0, fmt.Errorf("reading etcd's compact revision: %w", err)
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	// The watch from revision 1 was accepted: nothing is compacted.
	return 0, nil
}

func init() {
	register(KindEtcdCompact, func(p etcdCompactParams) fault.Fault { return &etcdCompact{p: p} })
}

// CompactEtcd compacts the lab's etcd to its current revision, as a
// scenario's change rather than its fault (nothing to heal: a lab's reset
// brings the history back).
func CompactEtcd(ctx context.Context, l lab.Lab) error {
	c, err := etcdClient(l, "etcd compaction")
	if err != nil {
		return err
	}
	defer c.Close()
	return compactNow(ctx, c, nil)
}

// compactNow compacts to the current revision (physically: the call
// returns once the members dropped it), passing the revision to at, when
// given, before it compacts.
func compactNow(ctx context.Context, c *clientv3.Client, at func(rev int64)) error {
	resp, err := c.Get(ctx, "compact", clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("etcd compaction: reading the current revision: %w", err)
	}
	rev := resp.Header.Revision
	if at != nil {
		at(rev)
	}
	if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return fmt.Errorf("etcd compaction to revision %d: %w", rev, err)
	}
	return nil
}
