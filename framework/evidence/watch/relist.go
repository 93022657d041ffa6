package watch

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// relists is an informer's ListerWatcher that remembers what every
// listing after arm returned, so that the informer's handlers can tell a
// relisting's deliveries from the changes its watch delivers.
//
// A client-go informer lists once to fill its cache, then watches. When
// the watch breaks in a way it cannot resume from (its resourceVersion
// expired, the watch request failed), the informer lists again and
// replaces its cache with the listing: an object the cache held comes to
// the handlers as an update (with the same resourceVersion when nothing
// changed), one it did not hold as an add (with isInInitialList false: that
// flag is true only for the first listing), and one the listing no longer
// holds as a deletion wrapped in cache.DeletedFinalStateUnknown. Nothing
// the handlers are given says which of these came from a listing, so the
// rule is kept here: an object delivered in the version (UID and
// resourceVersion) a relisting returned was replayed by that relisting, as
// is every DeletedFinalStateUnknown. A watch never delivers a version a
// listing returned, since it starts after the listing's resourceVersion.
//
// Both ways an informer lists are covered: a list request, and a watch-list
// stream (a watch with sendInitialEvents, whose events up to the bookmark
// annotated k8s.io/initial-events-end are the listing).
type relists struct {
	lw          cache.ListerWatcherWithContext
	noWatchList bool

	mu     sync.Mutex
	armed  bool
	listed map[string]bool // uid/resourceVersion returned by a relisting, not yet delivered
}

func newRelists(lw cache.ListerWatcher) *relists {
	return &relists{lw: cache.ToListerWatcherWithContext(lw), noWatchList: watchlist.DoesClientNotSupportWatchListSemantics(lw),
		listed: map[string]bool{}}
}

// arm ends the first listing: every listing from now on is a relisting.
func (r *relists) arm() {
	r.mu.Lock()
	r.armed = true
	r.mu.Unlock()
}

func versionKey(obj any) (string, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return string(m.GetUID()) + "/" + m.GetResourceVersion(), true
}

func (r *relists) note(obj any) {
	if k, ok := versionKey(obj); ok {
		r.listed[k] = true
	}
}

// Replayed reports whether obj, as a handler was given it, was delivered
// by a relisting; it forgets the version, which no watch delivers again.
func (r *relists) Replayed(obj any) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return r.armed
	}
	k, ok := versionKey(obj)
	if !ok || !r.listed[k] {
		return false
	}
	delete(r.listed, k)
	return true
}

// IsWatchListSemanticsUnSupported passes on whether the wrapped lister
// supports watch-list streams (a fake clientset does not).
func (r *relists) IsWatchListSemanticsUnSupported() bool { return r.noWatchList }

func (r *relists) List(o metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), o)
}

func (r *relists) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	list, err := r.lw.ListWithContext(ctx, o)
	if err != nil {
		return list, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.armed {
		_ = meta.EachListItem(list, func(obj runtime.Object) error {
			r.note(obj)
			return nil
		})
	}
	return list, nil
}

func (r *relists) Watch(o metav1.ListOptions) (kwatch.Interface, error) {
	return r.WatchWithContext(context.Background(), o)
}

func (r *relists) WatchWithContext(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
	w, err := r.lw.WatchWithContext(ctx, o)
	if err != nil || o.SendInitialEvents == nil || !*o.SendInitialEvents {
		return w, err
	}
	r.mu.Lock()
	armed := r.armed
	r.mu.Unlock()
	if !armed {
		return w, nil
	}
	return newInitialEvents(w, r), nil
}

// initialEvents passes a watch-list stream on, noting the objects of its
// initial events.
type initialEvents struct {
	in   kwatch.Interface
	out  chan kwatch.Event
	stop chan struct{}
	once sync.Once
}

func newInitialEvents(in kwatch.Interface, r *relists) *initialEvents {
	w := &initialEvents{in: in, out: make(chan kwatch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		initial := true
		for ev := range in.ResultChan() {
			if initial {
				switch ev.Type {
				case kwatch.Added:
					r.mu.Lock()
					r.note(ev.Object)
					r.mu.Unlock()
				case kwatch.Bookmark:
					if m, err := meta.Accessor(ev.Object); err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
						initial = false
					}
				}
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func (w *initialEvents) ResultChan() <-chan kwatch.Event { return w.out }

func (w *initialEvents) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.in.Stop()
}

// informer makes a shared informer of obj through list and watch, its
// relistings told apart (see relists); client is the clientset they go
// through, which says whether it supports watch-list streams.
func informer(obj runtime.Object, client any,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (kwatch.Interface, error)) (cache.SharedIndexInformer, *relists) {
	lw := newRelists(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watchFn}, client))
	return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}), lw
}
