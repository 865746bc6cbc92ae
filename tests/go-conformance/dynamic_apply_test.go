package conformance

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// The dynamic client on a custom resource: every verb, the status subresource, the
// structural schema's defaulting and validation.
func TestDynamicClient(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, ctx)
	client := dyn.Resource(gizmos).Namespace(ns)

	created, err := client.Create(ctx, gizmo("g", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetUID() == "" || created.GetGeneration() != 1 {
		t.Fatalf("create: uid %q generation %d", created.GetUID(), created.GetGeneration())
	}
	if mode, _, _ := unstructured.NestedString(created.Object, "spec", "mode"); mode != "fast" {
		t.Errorf("spec.mode = %q, the schema's default is fast", mode)
	}
	bad := gizmo("bad", -1)
	_, err = client.Create(ctx, bad, metav1.CreateOptions{})
	mustStatus(t, "create against the schema (size < 0)", err, apierrors.IsInvalid, "Invalid (422)")

	got, err := client.Get(ctx, "g", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if err := unstructured.SetNestedField(got.Object, int64(4), "spec", "size"); err != nil {
		t.Fatal(err)
	}
	updated, err := client.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil || updated.GetGeneration() != 2 {
		t.Fatalf("update: %v (generation %d, want 2)", err, updated.GetGeneration())
	}
	_, err = client.Update(ctx, got, metav1.UpdateOptions{})
	mustStatus(t, "update with a stale resourceVersion", err, apierrors.IsConflict, "Conflict")

	if err := unstructured.SetNestedField(updated.Object, "ready", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	withStatus, err := client.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if phase, _, _ := unstructured.NestedString(withStatus.Object, "status", "phase"); phase != "ready" {
		t.Fatalf("status.phase after update status = %q", phase)
	}
	if withStatus.GetGeneration() != 2 {
		t.Fatalf("a status update changed the generation to %d", withStatus.GetGeneration())
	}

	patched, err := client.Patch(ctx, "g", types.MergePatchType, []byte(`{"spec":{"size":5}}`), metav1.PatchOptions{})
	if size, _, _ := unstructured.NestedInt64(patched.Object, "spec", "size"); err != nil || size != 5 {
		t.Fatalf("merge patch: %v, size %d", err, size)
	}
	_, err = client.Patch(ctx, "g", types.StrategicMergePatchType, []byte(`{"spec":{"size":6}}`), metav1.PatchOptions{})
	mustStatus(t, "strategic merge patch on a custom resource", err, apierrors.IsUnsupportedMediaType, "UnsupportedMediaType (415)")

	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.GetResourceVersion() == "" {
		t.Fatalf("list: %v", err)
	}
	if err := client.Delete(ctx, "g", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = client.Get(ctx, "g", metav1.GetOptions{})
	mustStatus(t, "get after delete", err, apierrors.IsNotFound, "NotFound")
}

// Server-side apply with the typed apply configurations: field ownership, conflicts
// between managers, force, and extracting a manager's fields.
func TestServerSideApply(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, ctx)
	cms := cs.CoreV1().ConfigMaps(ns)

	first := corev1ac.ConfigMap("cfg", ns).WithData(map[string]string{"a": "1", "b": "2"})
	applied, err := cms.Apply(ctx, first, metav1.ApplyOptions{FieldManager: "first"})
	if err != nil {
		t.Fatalf("apply (create): %v", err)
	}
	if applied.Data["a"] != "1" || len(applied.ManagedFields) != 1 || applied.ManagedFields[0].Manager != "first" ||
		applied.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("apply (create): data %v managedFields %+v", applied.Data, applied.ManagedFields)
	}

	second := corev1ac.ConfigMap("cfg", ns).WithData(map[string]string{"a": "other"})
	_, err = cms.Apply(ctx, second, metav1.ApplyOptions{FieldManager: "second"})
	mustStatus(t, "a second manager applying an owned field", err, apierrors.IsConflict, "Conflict")

	forced, err := cms.Apply(ctx, second, metav1.ApplyOptions{FieldManager: "second", Force: true})
	if err != nil || forced.Data["a"] != "other" || forced.Data["b"] != "2" {
		t.Fatalf("forced apply: %v %v", err, forced.Data)
	}

	// The first manager's configuration now owns only b.
	extracted, err := corev1ac.ExtractConfigMap(forced, "first")
	if err != nil {
		t.Fatalf("extract: %v", err)
	}
	if len(extracted.Data) != 1 || extracted.Data["b"] != "2" {
		t.Fatalf("the first manager's extracted data = %v, want only b", extracted.Data)
	}

	// Applying without b: the first manager gives it up and the server removes it.
	again, err := cms.Apply(ctx, corev1ac.ConfigMap("cfg", ns).WithData(map[string]string{"c": "3"}),
		metav1.ApplyOptions{FieldManager: "first"})
	if err != nil {
		t.Fatalf("apply without b: %v", err)
	}
	if _, ok := again.Data["b"]; ok || again.Data["c"] != "3" || again.Data["a"] != "other" {
		t.Fatalf("apply without b: data %v, want a=other c=3", again.Data)
	}

	// Server-side apply of a custom resource through the dynamic client.
	g := gizmo("applied", 7)
	out, err := dyn.Resource(gizmos).Namespace(ns).Apply(ctx, "applied", g, metav1.ApplyOptions{FieldManager: "first"})
	if err != nil {
		t.Fatalf("dynamic apply: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(out.Object, "spec", "size"); size != 7 {
		t.Fatalf("dynamic apply: size %d", size)
	}
}
