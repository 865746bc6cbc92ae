package conformance

import (
	"os"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// watchListOn is the WatchListClient gate as client-go sees it; the test fails when the
// environment asked for the other value, so each run really covers its mode.
func watchListOn(t *testing.T) bool {
	t.Helper()
	on := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
	if want := os.Getenv("KUBE_FEATURE_WatchListClient"); want != "" && (want == "true") != on {
		t.Fatalf("KUBE_FEATURE_WatchListClient=%s but the gate is %v", want, on)
	}
	t.Logf("WatchListClient: %v", on)
	return on
}

// events counts what a handler saw, by type and name.
type events struct {
	mu                     sync.Mutex
	added, updated, delete map[string]int
}

func newEvents() *events {
	return &events{added: map[string]int{}, updated: map[string]int{}, delete: map[string]int{}}
}

func (e *events) handler(name func(obj any) string) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.added[name(obj)]++
		},
		UpdateFunc: func(_, obj any) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.updated[name(obj)]++
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			e.delete[name(obj)]++
		},
	}
}

func (e *events) count(m func(*events) map[string]int, name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return m(e)[name]
}

func added(e *events) map[string]int   { return e.added }
func updated(e *events) map[string]int { return e.updated }
func deleted(e *events) map[string]int { return e.delete }

func metaName(obj any) string {
	if o, ok := obj.(metav1.Object); ok {
		return o.GetName()
	}
	return "?"
}

// A SharedInformerFactory over Pods: initial state, then add, update and delete, and
// the lister agreeing with the server; the initial state comes from a watch-list
// stream (sendInitialEvents) when WatchListClient is on and from a LIST when off.
func TestPodInformer(t *testing.T) {
	on := watchListOn(t)
	ctx := ctxFor(t)
	ns := namespace(t, ctx)
	pods := cs.CoreV1().Pods(ns)
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}
	}
	if _, err := pods.Create(ctx, pod("before"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().Pods()
	ev := newEvents()
	if _, err := informer.Informer().AddEventHandler(ev.handler(metaName)); err != nil {
		t.Fatalf("add handler: %v", err)
	}
	lister := informer.Lister()
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	for typ, ok := range factory.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("cache of %v did not sync", typ)
		}
	}
	// Handlers are notified asynchronously, after the cache has synced.
	eventually(t, "the add of the pod that existed before", func() bool { return ev.count(added, "before") == 1 })

	if _, err := pods.Create(ctx, pod("after"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	eventually(t, "the add of pod after", func() bool { return ev.count(added, "after") == 1 })
	p, err := pods.Get(ctx, "after", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	p.Labels["v"] = "2"
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	eventually(t, "the update of pod after", func() bool { return ev.count(updated, "after") >= 1 })
	eventually(t, "the lister to see the update", func() bool {
		got, err := lister.Pods(ns).Get("after")
		return err == nil && got.Labels["v"] == "2"
	})
	if err := pods.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	eventually(t, "the delete of pod before", func() bool { return ev.count(deleted, "before") == 1 })
	listed, err := lister.List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil || len(listed) != 1 || listed[0].Name != "after" {
		t.Fatalf("lister: %v %d pods", err, len(listed))
	}
	assertInitialListing(t, on, "/namespaces/"+ns+"/pods")
}

// assertInitialListing checks how the reflector got its initial state for path.
func assertInitialListing(t *testing.T, watchList bool, path string) {
	t.Helper()
	streams := journal.matching("GET", path+"?", "sendInitialEvents=true", "watch=true")
	var lists []string
	for _, r := range journal.matching("GET", path+"?") {
		if !strings.Contains(r, "watch=true") {
			lists = append(lists, r)
		}
	}
	if watchList {
		if len(streams) == 0 {
			t.Fatalf("WatchListClient on: no sendInitialEvents watch of %s was made", path)
		}
		if len(lists) != 0 {
			t.Fatalf("WatchListClient on: the reflector fell back to LIST (the server's watch-list stream was not accepted): %v", lists)
		}
	} else {
		if len(streams) != 0 {
			t.Fatalf("WatchListClient off: a sendInitialEvents watch was made: %v", streams)
		}
		if len(lists) == 0 {
			t.Fatalf("WatchListClient off: no LIST of %s was made", path)
		}
	}
}

// A dynamic SharedInformerFactory over the custom resource gizmos.example.com/v1.
func TestCustomResourceInformer(t *testing.T) {
	on := watchListOn(t)
	ctx := ctxFor(t)
	ns := namespace(t, ctx)
	client := dyn.Resource(gizmos).Namespace(ns)
	if _, err := client.Create(ctx, gizmo("before", 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	informer := factory.ForResource(gizmos)
	ev := newEvents()
	if _, err := informer.Informer().AddEventHandler(ev.handler(metaName)); err != nil {
		t.Fatalf("add handler: %v", err)
	}
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	for gvr, ok := range factory.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("cache of %v did not sync", gvr)
		}
	}
	eventually(t, "the add of the gizmo that existed before", func() bool { return ev.count(added, "before") == 1 })
	if _, err := client.Create(ctx, gizmo("after", 2), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	eventually(t, "the add of gizmo after", func() bool { return ev.count(added, "after") == 1 })
	if err := client.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	eventually(t, "the delete of gizmo before", func() bool { return ev.count(deleted, "before") == 1 })
	objs, err := informer.Lister().ByNamespace(ns).List(labels.Everything())
	if err != nil || len(objs) != 1 {
		t.Fatalf("lister: %v, %d objects", err, len(objs))
	}
	if u, ok := objs[0].(*unstructured.Unstructured); !ok || u.GetName() != "after" || u.GetKind() != "Gizmo" {
		t.Fatalf("lister object: %#v", objs[0])
	}
	assertInitialListing(t, on, "/apis/example.com/v1/namespaces/"+ns+"/gizmos")
}

func gizmo(name string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Gizmo",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"size": size},
	}}
}
