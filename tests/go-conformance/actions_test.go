package conformance

import (
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The subresources that act (eviction, binding, token) and a kind served at two
// versions from one storage (HorizontalPodAutoscaler), through client-go's typed
// clients with their default protobuf bodies.
func TestActingSubresourcesAndHPAVersions(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, ctx)

	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create serviceaccount: %v", err)
	}
	seconds := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"api"}, ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil || strings.Count(tr.Status.Token, ".") != 2 || tr.Status.ExpirationTimestamp.IsZero() {
		t.Fatalf("CreateToken: %v %+v", err, tr)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	if err := cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	got, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
	if err != nil || got.Spec.NodeName != "n1" {
		t.Fatalf("the pod is not on n1: %v", err)
	}
	got.Status.Phase = corev1.PodRunning
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pod running: %v", err)
	}
	one := intstr.FromInt32(1)
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pdb: %v", err)
	}
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}}
	if err := cs.PolicyV1().Evictions(ns).Evict(ctx, eviction); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("an eviction the budget does not allow must be 429, got %v", err)
	}
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 1,
		CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pdb status: %v", err)
	}
	if err := cs.PolicyV1().Evictions(ns).Evict(ctx, eviction); err != nil {
		t.Fatalf("Evict: %v", err)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the evicted pod is still there: %v", err)
	}

	target := int32(60)
	if _, err := cs.AutoscalingV1().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 4, TargetCPUUtilizationPercentage: &target,
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatalf("create hpa at autoscaling/v1: %v", err)
	}
	v2, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(v2.Spec.Metrics) != 1 || v2.Spec.Metrics[0].Resource == nil ||
		*v2.Spec.Metrics[0].Resource.Target.AverageUtilization != 60 {
		t.Fatalf("the v1 HPA read at v2: %v %+v", err, v2)
	}
}

// apiextensions' clientset also sends protobuf: a CRD with a nested schema (the
// JSONSchemaPropsOr* wrappers, defaults as raw JSON) written through it must be served.
func TestCRDThroughTheApiextensionsClientset(t *testing.T) {
	ctx := ctxFor(t)
	ax := apiextensionsclient.NewForConfigOrDie(config)
	min := 0.0
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.pb.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "pb.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer", Minimum: &min, Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
							"tags": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{
								Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
							"extra": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{
								Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
						}},
					},
				}},
			}},
		},
	}
	if _, err := ax.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the CRD through the apiextensions clientset (protobuf): %v", err)
	}
	if len(journal.matching("POST", "/customresourcedefinitions", "application/vnd.kubernetes.protobuf")) == 0 {
		t.Fatalf("the apiextensions clientset did not send protobuf: %v", journal.matching("POST", "/customresourcedefinitions"))
	}
	t.Cleanup(func() {
		_ = ax.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{})
	})
	var established bool
	for i := 0; i < 50 && !established; i++ {
		got, err := ax.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		s := got.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		if s.Properties["tags"].Items == nil || s.Properties["tags"].Items.Schema.Type != "string" ||
			string(s.Properties["size"].Default.Raw) != "3" || s.Properties["extra"].AdditionalProperties.Schema.Type != "string" {
			t.Fatalf("the schema changed on the way: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !established {
		t.Fatal("the CRD was not established")
	}
}
