package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
)

// LeaderLeases are the leader-election leases whose holder changes are
// stamped.
var LeaderLeases = []string{"kube-controller-manager", "kube-scheduler"}

// Options tune a Watcher.
type Options struct {
	Subjects evidence.Subjects
	// PollEvery is how often the other API servers are polled, and how
	// often lease renewals are checked (default 500ms).
	PollEvery time.Duration
	// SyncTimeout bounds the wait for the informers' first listing
	// (default 30s).
	SyncTimeout time.Duration
}

// Watcher records the timeline of one lab.
type Watcher struct {
	opts    Options
	watched source.Client
	polled  []source.Client

	mu      sync.Mutex
	pending []evidence.Event
	all     evidence.Recorder

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// New makes a watcher that watches one API server and polls the others.
func New(watched source.Client, polled []source.Client, opts Options) (*Watcher, error) {
	if watched.Client == nil {
		return nil, errors.New("timeline: no API server to watch")
	}
	if opts.Subjects == (evidence.Subjects{}) {
		opts.Subjects = evidence.DefaultSubjects
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = 500 * time.Millisecond
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = 30 * time.Second
	}
	return &Watcher{opts: opts, watched: watched, polled: polled}, nil
}

func (w *Watcher) add(events []evidence.Event) {
	if len(events) == 0 {
		return
	}
	w.mu.Lock()
	w.pending = append(w.pending, events...)
	w.mu.Unlock()
	for _, e := range events {
		w.all.Add(e)
	}
}

// Drain returns the events recorded since the last Drain, in time order.
func (w *Watcher) Drain() []evidence.Event {
	w.mu.Lock()
	out := w.pending
	w.pending = nil
	w.mu.Unlock()
	return evidence.Timeline(out).Sorted()
}

// Timeline returns every event recorded since Start.
func (w *Watcher) Timeline() evidence.Timeline { return w.all.Timeline() }

// Start starts the informers and pollers and waits for the informers'
// first listing; it returns an error if they do not sync in time. The
// watcher runs until Stop (or ctx ends).
func (w *Watcher) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	s := w.opts.Subjects
	tr := newTracker(w.watched.Source, s)
	cs := w.watched.Client

	nodeInf, nodeRL := informer(&corev1.Node{}, cs,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Nodes().List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return cs.CoreV1().Nodes().Watch(ctx, o)
		})
	leaseInf, leaseRL := informer(&coordinationv1.Lease{}, cs,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Watch(ctx, o)
		})
	leaderInf, leaderRL := informer(&coordinationv1.Lease{}, cs,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoordinationV1().Leases(metav1.NamespaceSystem).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return cs.CoordinationV1().Leases(metav1.NamespaceSystem).Watch(ctx, o)
		})
	podInf, podRL := informer(&corev1.Pod{}, cs,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Pods(s.PodNamespace).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return cs.CoreV1().Pods(s.PodNamespace).Watch(ctx, o)
		})
	selector := discoveryv1.LabelServiceName + "=" + s.ServiceName
	epsInf, epsRL := informer(&discoveryv1.EndpointSlice{}, cs,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return cs.DiscoveryV1().EndpointSlices(s.ServiceNamespace).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			o.LabelSelector = selector
			return cs.DiscoveryV1().EndpointSlices(s.ServiceNamespace).Watch(ctx, o)
		})
	epsLister := discoverylisters.NewEndpointSliceLister(epsInf.GetIndexer())

	now := func() time.Time { return time.Now().UTC() }
	// handlers calls on with each object added or updated, and whether a
	// relisting delivered it.
	handlers := func(rl *relists, on func(obj any, replayed bool)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { on(obj, rl.Replayed(obj)) },
			UpdateFunc: func(_, obj any) { on(obj, rl.Replayed(obj)) },
		}
	}
	_, _ = nodeInf.AddEventHandler(handlers(nodeRL, func(obj any, replayed bool) {
		if n, ok := obj.(*corev1.Node); ok {
			w.add(markReplayed(replayed, tr.observeNode(now(), n)))
		}
	}))
	_, _ = leaseInf.AddEventHandler(handlers(leaseRL, func(obj any, replayed bool) {
		if l, ok := obj.(*coordinationv1.Lease); ok {
			w.add(markReplayed(replayed, tr.observeLease(now(), l)))
		}
	}))
	_, _ = leaderInf.AddEventHandler(handlers(leaderRL, func(obj any, replayed bool) {
		if l, ok := obj.(*coordinationv1.Lease); ok && isLeaderLease(l.Name) {
			w.add(markReplayed(replayed, tr.observeLeader(now(), l)))
		}
	}))
	podHandlers := handlers(podRL, func(obj any, replayed bool) {
		if p, ok := obj.(*corev1.Pod); ok {
			w.add(markReplayed(replayed, tr.observePod(now(), p)))
		}
	})
	podHandlers.DeleteFunc = func(obj any) {
		replayed := podRL.Replayed(obj)
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			w.add(markReplayed(replayed, tr.podGone(now(), p.Namespace, p.Name, string(p.UID))))
		}
	}
	_, _ = podInf.AddEventHandler(podHandlers)
	onSlices := func(obj any) {
		replayed := epsRL.Replayed(obj)
		list, err := epsLister.EndpointSlices(s.ServiceNamespace).List(labels.Everything())
		if err != nil {
			return
		}
		items := make([]discoveryv1.EndpointSlice, 0, len(list))
		for _, e := range list {
			items = append(items, *e)
		}
		w.add(markReplayed(replayed, tr.observeEndpoints(now(), items)))
	}
	_, _ = epsInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onSlices, UpdateFunc: func(_, o any) { onSlices(o) }, DeleteFunc: onSlices,
	})

	all := []struct {
		inf cache.SharedIndexInformer
		rl  *relists
	}{{nodeInf, nodeRL}, {leaseInf, leaseRL}, {leaderInf, leaderRL}, {podInf, podRL}, {epsInf, epsRL}}
	var informers sync.WaitGroup
	synced := make([]cache.InformerSynced, 0, len(all))
	for _, i := range all {
		informers.Go(func() { i.inf.RunWithContext(ctx) })
		synced = append(synced, i.inf.HasSynced)
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, w.opts.SyncTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		cancel()
		informers.Wait()
		return fmt.Errorf("timeline: informers on %s did not sync within %s", w.watched.Source, w.opts.SyncTimeout)
	}
	for _, i := range all {
		i.rl.arm()
	}
	tr.markStarted()
	w.done.Go(informers.Wait)
	w.done.Go(func() { w.checkLeasesLoop(ctx, tr) })
	for _, c := range w.polled {
		ptr := newTracker(c.Source, s)
		w.done.Go(func() { w.pollLoop(ctx, c, ptr) })
	}
	return nil
}

// markReplayed marks events as replayed by a relisting when they are.
func markReplayed(replayed bool, events []evidence.Event) []evidence.Event {
	if replayed {
		for i := range events {
			events[i].Replayed = true
		}
	}
	return events
}

// Stop ends every informer and poller and waits for them.
func (w *Watcher) Stop() {
	if w.cancel != nil {
		w.cancel()
	}
	w.done.Wait()
}

func (w *Watcher) checkLeasesLoop(ctx context.Context, tr *tracker) {
	t := time.NewTicker(w.opts.PollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.add(tr.checkLeases(time.Now().UTC()))
		}
	}
}

// pollLoop reads, from one more API server, what the informers watch, and
// stamps the same moments as that server shows them. A failed read leaves
// the tracker as it was (an unreachable server shows nothing new).
func (w *Watcher) pollLoop(ctx context.Context, c source.Client, tr *tracker) {
	s := w.opts.Subjects
	first := true
	t := time.NewTicker(w.opts.PollEvery)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, w.opts.PollEvery*2)
		at := func() time.Time { return time.Now().UTC() }
		if n, err := c.Client.CoreV1().Nodes().Get(rctx, s.Node, metav1.GetOptions{}); err == nil {
			w.add(tr.observeNode(at(), n))
		}
		if l, err := c.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(rctx, s.Node, metav1.GetOptions{}); err == nil {
			w.add(tr.observeLease(at(), l))
		}
		for _, name := range LeaderLeases {
			if l, err := c.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(rctx, name, metav1.GetOptions{}); err == nil {
				w.add(tr.observeLeader(at(), l))
			}
		}
		p, err := c.Client.CoreV1().Pods(s.PodNamespace).Get(rctx, s.PodName, metav1.GetOptions{})
		switch {
		case err == nil:
			w.add(tr.observePod(at(), p))
		case apierrors.IsNotFound(err):
			w.add(tr.podAbsent(at(), s.PodNamespace, s.PodName))
		}
		if list, err := c.Client.DiscoveryV1().EndpointSlices(s.ServiceNamespace).List(rctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + s.ServiceName,
		}); err == nil {
			w.add(tr.observeEndpoints(at(), list.Items))
		}
		cancel()
		if first {
			tr.markStarted()
			first = false
		}
		w.add(tr.checkLeases(time.Now().UTC()))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func isLeaderLease(name string) bool {
	for _, n := range LeaderLeases {
		if n == name {
			return true
		}
	}
	return false
}
