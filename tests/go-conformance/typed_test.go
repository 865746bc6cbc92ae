package conformance

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// The typed clientset's verbs and the error types client-go code branches on.
func TestTypedClientset(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, ctx)
	cms := cs.CoreV1().ConfigMaps(ns)

	created, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"app": "web"}},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Fatalf("create did not set uid, resourceVersion and creationTimestamp: %+v", created.ObjectMeta)
	}
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	mustStatus(t, "create twice", err, apierrors.IsAlreadyExists, "AlreadyExists")

	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("get: %v %+v", err, got)
	}
	_, err = cms.Get(ctx, "missing", metav1.GetOptions{})
	mustStatus(t, "get missing", err, apierrors.IsNotFound, "NotFound")

	got.Data["k"] = "w"
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil || updated.ResourceVersion == got.ResourceVersion {
		t.Fatalf("update: %v (resourceVersion %s -> %s)", err, got.ResourceVersion, updated.ResourceVersion)
	}
	got.Data["k"] = "stale"
	_, err = cms.Update(ctx, got, metav1.UpdateOptions{})
	mustStatus(t, "update with a stale resourceVersion", err, apierrors.IsConflict, "Conflict")

	patched, err := cms.Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"data":{"p":"1"}}`), metav1.PatchOptions{})
	if err != nil || patched.Data["p"] != "1" || patched.Data["k"] != "w" {
		t.Fatalf("strategic merge patch: %v %+v", err, patched)
	}
	patched, err = cms.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"remove","path":"/data/p"}]`), metav1.PatchOptions{})
	if err != nil || len(patched.Data) != 1 {
		t.Fatalf("json patch: %v %+v", err, patched)
	}
	_, err = cms.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"test","path":"/data/k","value":"nope"}]`), metav1.PatchOptions{})
	if err == nil {
		t.Fatalf("a failing JSON patch test op succeeded")
	}

	for i := 0; i < 5; i++ {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "page-", Labels: map[string]string{"page": "yes"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create page-*: %v", err)
		}
	}
	// Paging: every item exactly once, across pages of 2.
	seen := map[string]bool{}
	opts := metav1.ListOptions{LabelSelector: "page=yes", Limit: 2}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatalf("paging did not end")
		}
		list, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatalf("list page %d: %v", pages, err)
		}
		if len(list.Items) > 2 {
			t.Fatalf("page %d has %d items, limit 2", pages, len(list.Items))
		}
		for _, cm := range list.Items {
			if seen[cm.Name] {
				t.Fatalf("%s listed twice", cm.Name)
			}
			seen[cm.Name] = true
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if len(seen) != 5 {
		t.Fatalf("paging returned %d items, want 5", len(seen))
	}

	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "metadata.name=a"})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list with selectors: %v %+v", err, list)
	}

	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, FieldSelector: "metadata.name=a"})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	ev := <-w.ResultChan()
	if ev.Type != watch.Deleted {
		t.Fatalf("watch after delete: got %s %+v, want DELETED", ev.Type, ev.Object)
	}
	if cm, ok := ev.Object.(*corev1.ConfigMap); !ok || cm.Name != "a" {
		t.Fatalf("watch event object: %#v", ev.Object)
	}
	err = cms.Delete(ctx, "a", metav1.DeleteOptions{})
	mustStatus(t, "delete twice", err, apierrors.IsNotFound, "NotFound")

	err = cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "page=yes"})
	if err != nil {
		t.Fatalf("delete collection: %v", err)
	}
	list, err = cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("list after delete collection: %v, %d items", err, len(list.Items))
	}

	// A watch from a compacted resourceVersion is client-go's relist signal.
	_, err = cms.List(ctx, metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil && !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("list at an old exact resourceVersion: got %v, want success or 410 Expired", err)
	}
}

// A Pod through the typed client: status is the server's, spec is the client's.
func TestTypedPodStatusSubresource(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, ctx)
	pods := cs.CoreV1().Pods(ns)
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("a new pod's phase is %q, kube-apiserver sets Pending", pod.Status.Phase)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Spec.Containers[0].Image = "ignored-by-status-update"
	updated, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if updated.Status.Phase != corev1.PodRunning || updated.Spec.Containers[0].Image != "nginx" {
		t.Fatalf("update status: phase %q image %q, want Running and the unchanged nginx",
			updated.Status.Phase, updated.Spec.Containers[0].Image)
	}
}
