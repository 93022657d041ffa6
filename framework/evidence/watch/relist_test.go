package watch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
)

// watches hands out, for each watch request, a watcher the test drives.
type watches struct {
	mu   sync.Mutex
	all  []*kwatch.FakeWatcher
	opts []metav1.ListOptions
}

func (w *watches) open(o metav1.ListOptions) *kwatch.FakeWatcher {
	w.mu.Lock()
	defer w.mu.Unlock()
	fw := kwatch.NewFakeWithChanSize(10, false)
	w.all = append(w.all, fw)
	w.opts = append(w.opts, o)
	return fw
}

// current waits for the n-th watch (from 1) to be opened and returns it.
func (w *watches) current(t *testing.T, n int) *kwatch.FakeWatcher {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		if len(w.all) >= n {
			fw := w.all[n-1]
			w.mu.Unlock()
			return fw
		}
		w.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("watch %d was never opened", n)
	return nil
}

// expired is the error a watch ends with when its resourceVersion is too
// old to resume from: the informer then lists again.
func expired() kwatch.Event {
	st := apierrors.NewResourceExpired("too old resource version").ErrStatus
	return kwatch.Event{Type: kwatch.Error, Object: &st}
}

func testPod(uid, rv string, created time.Time) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "faultline", Name: "web-" + uid, UID: types.UID(uid), ResourceVersion: rv,
		CreationTimestamp: metav1.NewTime(created)}}
}

// listsOnly is a client that does not serve watch-list streams, so that
// the informer lists.
type listsOnly struct{}

func (listsOnly) IsWatchListSemanticsUnSupported() bool { return true }

type delivery struct {
	what     string // "add web-a", "update web-a", "delete web-a"
	replayed bool
}

// An informer over a scripted lister: the deliveries of a relisting after
// an expired watch are replayed (the unchanged object, the one added while
// the watch was down, the one gone meanwhile), what the watches deliver is
// not, and the first listing is nobody's replay.
func TestRelistingsDeliveriesAreReplayed(t *testing.T) {
	var mu sync.Mutex
	listing := []corev1.Pod{*testPod("a", "10", t0), *testPod("c", "9", t0)}
	ws := &watches{}
	inf, rl := informer(&corev1.Pod{}, listsOnly{},
		func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20"}, Items: append([]corev1.Pod(nil), listing...)}, nil
		},
		func(_ context.Context, o metav1.ListOptions) (kwatch.Interface, error) { return ws.open(o), nil })
	got := make(chan delivery, 20)
	name := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		return obj.(*corev1.Pod).Name
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { got <- delivery{"add " + name(obj), rl.Replayed(obj)} },
		UpdateFunc: func(_, obj any) { got <- delivery{"update " + name(obj), rl.Replayed(obj)} },
		DeleteFunc: func(obj any) { got <- delivery{"delete " + name(obj), rl.Replayed(obj)} },
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("no sync")
	}
	rl.arm()
	next := func() delivery {
		t.Helper()
		select {
		case d := <-got:
			return d
		case <-time.After(10 * time.Second):
			t.Fatal("no delivery")
			return delivery{}
		}
	}
	for range 2 {
		if d := next(); d.replayed {
			t.Errorf("the first listing's %s marked replayed", d.what)
		}
	}

	ws.current(t, 1).Modify(testPod("a", "21", t0))
	if d := next(); d != (delivery{"update web-a", false}) {
		t.Errorf("a watched change: %+v", d)
	}

	// While the watch is down, b is created and c deleted; the next watch
	// cannot resume and the informer lists again.
	mu.Lock()
	listing = []corev1.Pod{*testPod("a", "21", t0), *testPod("b", "22", t0.Add(time.Minute))}
	mu.Unlock()
	ws.current(t, 1).Action(expired().Type, expired().Object)
	want := map[string]bool{"update web-a": true, "add web-b": true, "delete web-c": true}
	for range 3 {
		d := next()
		if !want[d.what] || !d.replayed {
			t.Errorf("relisting delivered %+v, want each of %v replayed", d, want)
		}
		delete(want, d.what)
	}

	ws.current(t, 2).Add(testPod("d", "23", t0))
	if d := next(); d != (delivery{"add web-d", false}) {
		t.Errorf("a watched add after the relisting: %+v", d)
	}
}

// A watch-list stream's initial events, up to the bookmark that ends them,
// are a listing; what the stream carries after is not.
func TestWatchListInitialEventsAreAListing(t *testing.T) {
	ws := &watches{}
	rl := newRelists(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return &corev1.PodList{}, nil },
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return ws.open(o), nil
		},
	})
	rl.arm()
	yes := true
	w, err := rl.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: &yes})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	fw := ws.current(t, 1)
	end := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "30", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	go func() {
		fw.Add(testPod("a", "10", t0))
		fw.Action(kwatch.Bookmark, end)
		fw.Add(testPod("b", "31", t0))
	}()
	var objs []any
	for len(objs) < 3 {
		select {
		case ev := <-w.ResultChan():
			objs = append(objs, ev.Object)
		case <-time.After(10 * time.Second):
			t.Fatalf("the stream stopped after %d events", len(objs))
		}
	}
	if !rl.Replayed(objs[0]) {
		t.Error("an initial event is not replayed")
	}
	if rl.Replayed(objs[0]) {
		t.Error("a version replayed twice")
	}
	if rl.Replayed(objs[2]) {
		t.Error("an event after the initial-events bookmark is replayed")
	}
	// Before arm, a watch-list stream is the first listing.
	first := newRelists(&cache.ListWatch{WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
		return ws.open(o), nil
	}})
	w2, _ := first.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: &yes})
	defer w2.Stop()
	fw2 := ws.current(t, 2)
	go fw2.Add(testPod("c", "5", t0))
	ev := <-w2.ResultChan()
	if first.Replayed(ev.Object) {
		t.Error("the first listing's object is replayed")
	}
}

// The symptom that made the mark: pods created while the watched API
// server's watch was down arrive together when it comes back. The watcher
// stamps them at that moment, marks them replayed, and gives each its
// creationTimestamp.
func TestWatcherMarksWhatARelistingFinds(t *testing.T) {
	s := evidence.DefaultSubjects
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.Node}})
	ws := &watches{}
	cs.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, kwatch.Interface, error) {
		return true, ws.open(a.(k8stesting.WatchActionImpl).ListOptions), nil
	})
	w, err := New(source.Client{Source: "apiserver/cp1", Client: cs}, nil, Options{Subjects: s, SyncTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	live := testPod("live", "1", time.Now().Add(-time.Second))
	ws.current(t, 1).Add(live)
	waitKind(t, w, KindPodCreated, 1)

	// Three pods created 70 s ago, while the watch was down; the pod
	// watch then expires.
	created := time.Now().Add(-70 * time.Second)
	for i := range 3 {
		if err := cs.Tracker().Add(testPod(fmt.Sprintf("r%d", i), "", created)); err != nil {
			t.Fatal(err)
		}
	}
	ws.current(t, 1).Action(expired().Type, expired().Object)
	events := waitKind(t, w, KindPodCreated, 4)
	for _, e := range events {
		switch {
		case strings.HasSuffix(e.Subject, "/web-live"):
			if e.Replayed {
				t.Errorf("the watched creation is marked replayed: %+v", e)
			}
		case !e.Replayed || !e.ClusterAt.Equal(created.Truncate(time.Second).UTC()) || e.ClusterField != "metadata.creationTimestamp" ||
			e.At.Sub(e.ClusterAt) < time.Minute:
			t.Errorf("a pod found by the relisting: %+v", e)
		}
	}
}

// waitKind waits until the watcher holds n events of kind, and returns them.
func waitKind(t *testing.T, w *Watcher, kind string, n int) evidence.Timeline {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if got := w.Timeline().OfKind(kind); len(got) >= n {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("fewer than %d %s events: %+v", n, kind, w.Timeline())
	return nil
}
