package conformance

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
)

// Discovery as client-go's RESTMapper reads it (what controller-runtime and kubectl
// build on): the custom resource and the built-in kinds map between kind and resource,
// with their scope.
func TestDiscoveryRESTMapper(t *testing.T) {
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.Major == "" || v.GitVersion == "" {
		t.Fatalf("server version: %v %+v", err, v)
	}
	groups, err := restmapper.GetAPIGroupResources(cs.Discovery())
	if err != nil {
		t.Fatalf("API group resources: %v", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	cases := []struct {
		gvk        schema.GroupVersionKind
		resource   string
		namespaced bool
	}{
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gizmo"}, "gizmos", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "pods", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "namespaces", false},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", true},
		{schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, "leases", true},
	}
	for _, c := range cases {
		m, err := mapper.RESTMapping(c.gvk.GroupKind(), c.gvk.Version)
		if err != nil {
			t.Errorf("RESTMapping(%v): %v", c.gvk, err)
			continue
		}
		if m.Resource.Resource != c.resource || (m.Scope.Name() == "namespace") != c.namespaced {
			t.Errorf("RESTMapping(%v) = %v scope %s, want %s namespaced=%v", c.gvk, m.Resource, m.Scope.Name(), c.resource, c.namespaced)
		}
	}
	kinds, err := mapper.KindsFor(schema.GroupVersionResource{Group: "example.com", Resource: "gizmos"})
	if err != nil || len(kinds) != 1 || kinds[0].Kind != "Gizmo" {
		t.Fatalf("KindsFor(gizmos): %v %v", err, kinds)
	}
}

// A metadata-only informer (PartialObjectMetadata, what controller-runtime's
// metadata watches use) over Pods.
func TestMetadataInformer(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, ctx)
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	mc := metadata.NewForConfigOrDie(config)
	factory := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, ns, nil)
	informer := factory.ForResource(pods)
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
	eventually(t, "the metadata add of pod web", func() bool { return ev.count(added, "web") == 1 })
	objs, err := informer.Lister().ByNamespace(ns).List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil || len(objs) != 1 {
		t.Fatalf("metadata lister: %v, %d objects", err, len(objs))
	}
	m, ok := objs[0].(*metav1.PartialObjectMetadata)
	if !ok || m.Name != "web" || m.UID == "" || m.Kind != "PartialObjectMetadata" {
		t.Fatalf("metadata lister object: %#v", objs[0])
	}
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	eventually(t, "the metadata delete of pod web", func() bool { return ev.count(deleted, "web") == 1 })
}

// client-go's event recorder: repeated events are aggregated by its correlator into
// one Event whose count grows (a create, then patches).
func TestEventRecorder(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, ctx)
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	broadcaster := record.NewBroadcaster()
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "go-conformance"})
	for i := 0; i < 3; i++ {
		recorder.Event(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	}
	selector := fields.Set{"involvedObject.name": "web", "reason": "BackOff"}.AsSelector().String()
	eventually(t, "one BackOff event with count 3", func() bool {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		return err == nil && len(list.Items) == 1 && list.Items[0].Count == 3
	})
	list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("events: %v", err)
	}
	e := list.Items[0]
	if e.InvolvedObject.UID != pod.UID || e.Source.Component != "go-conformance" || e.Type != corev1.EventTypeWarning {
		t.Fatalf("event: %+v", e)
	}
}
