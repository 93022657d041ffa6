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
	"k8s.io/client-go/informers"
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

	all := informers.NewSharedInformerFactory(cs, 0)
	nodeLeases := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(corev1.NamespaceNodeLease))
	system := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(metav1.NamespaceSystem))
	pods := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(s.PodNamespace))
	eps := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(s.ServiceNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = discoveryv1.LabelServiceName + "=" + s.ServiceName }))

	now := func() time.Time { return time.Now().UTC() }
	handlers := func(on func(obj any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { on(obj) },
			UpdateFunc: func(_, obj any) { on(obj) },
		}
	}
	nodeInf := all.Core().V1().Nodes().Informer()
	_, _ = nodeInf.AddEventHandler(handlers(func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			w.add(tr.observeNode(now(), n))
		}
	}))
	leaseInf := nodeLeases.Coordination().V1().Leases().Informer()
	_, _ = leaseInf.AddEventHandler(handlers(func(obj any) {
		if l, ok := obj.(*coordinationv1.Lease); ok {
			w.add(tr.observeLease(now(), l))
		}
	}))
	leaderInf := system.Coordination().V1().Leases().Informer()
	_, _ = leaderInf.AddEventHandler(handlers(func(obj any) {
		if l, ok := obj.(*coordinationv1.Lease); ok && isLeaderLease(l.Name) {
			w.add(tr.observeLeader(now(), l))
		}
	}))
	podInf := pods.Core().V1().Pods().Informer()
	_, _ = podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.onPod(tr, obj) },
		UpdateFunc: func(_, obj any) { w.onPod(tr, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				w.add(tr.podGone(now(), p.Namespace, p.Name, string(p.UID)))
			}
		},
	})
	epsInf := eps.Discovery().V1().EndpointSlices()
	onSlices := func(any) {
		list, err := epsInf.Lister().EndpointSlices(s.ServiceNamespace).List(labels.Everything())
		if err != nil {
			return
		}
		items := make([]discoveryv1.EndpointSlice, 0, len(list))
		for _, e := range list {
			items = append(items, *e)
		}
		w.add(tr.observeEndpoints(now(), items))
	}
	_, _ = epsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onSlices, UpdateFunc: func(_, o any) { onSlices(o) }, DeleteFunc: onSlices,
	})

	for _, f := range []informers.SharedInformerFactory{all, nodeLeases, system, pods, eps} {
		f.Start(ctx.Done())
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, w.opts.SyncTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), nodeInf.HasSynced, leaseInf.HasSynced, leaderInf.HasSynced, podInf.HasSynced, epsInf.Informer().HasSynced) {
		cancel()
		for _, f := range []informers.SharedInformerFactory{all, nodeLeases, system, pods, eps} {
			f.Shutdown()
		}
		return fmt.Errorf("timeline: informers on %s did not sync within %s", w.watched.Source, w.opts.SyncTimeout)
	}
	tr.markStarted()
	w.done.Go(func() {
		<-ctx.Done()
		for _, f := range []informers.SharedInformerFactory{all, nodeLeases, system, pods, eps} {
			f.Shutdown()
		}
	})
	w.done.Go(func() { w.checkLeasesLoop(ctx, tr) })
	for _, c := range w.polled {
		ptr := newTracker(c.Source, s)
		w.done.Go(func() { w.pollLoop(ctx, c, ptr) })
	}
	return nil
}

func (w *Watcher) onPod(tr *tracker, obj any) {
	if p, ok := obj.(*corev1.Pod); ok {
		w.add(tr.observePod(time.Now().UTC(), p))
	}
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
