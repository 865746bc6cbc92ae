package conformance

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// client-go's typed clients write built-in kinds as protobuf by default (Content-Type
// application/vnd.kubernetes.protobuf) and do not fall back to JSON on a 415, so a
// server has to decode protobuf for every kind a controller writes. This test writes
// kinds whose fields use each protobuf special case (quantities, int-or-string, times
// with and without microseconds, byte maps, pointers set to zero), then reads them back
// as JSON through the dynamic client.
func TestProtobufBodies(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, ctx)
	replicas := int32(0)
	deploy, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "pb", Labels: map[string]string{"app": "pb"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pb"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "pb"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil || deploy.Spec.Replicas == nil || *deploy.Spec.Replicas != 0 {
		t.Fatalf("protobuf Deployment create (replicas 0 must stay 0, not default to 1): %v %+v", err, deploy)
	}
	if got := journal.matching("POST", "/apis/apps/v1/namespaces/"+ns+"/deployments", "application/vnd.kubernetes.protobuf"); len(got) == 0 {
		t.Fatalf("client-go did not send the Deployment as protobuf: %v", journal.matching("POST", "/deployments"))
	}

	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pb"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "nginx",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil || pod.Spec.Containers[0].Image != "nginx" || pod.Status.Phase != corev1.PodPending {
		t.Fatalf("protobuf Pod create: %v", err)
	}
	raw, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(ns).Get(ctx, "pb", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the Pod as JSON: %v", err)
	}
	c := raw.Object["spec"].(map[string]interface{})["containers"].([]interface{})[0].(map[string]interface{})
	limits := c["resources"].(map[string]interface{})["limits"].(map[string]interface{})
	port := c["readinessProbe"].(map[string]interface{})["httpGet"].(map[string]interface{})["port"]
	if limits["cpu"] != "250m" || limits["memory"] != "64Mi" || port != "http" {
		t.Fatalf("the Pod's quantities or int-or-string port changed: %v %v", limits, port)
	}

	holder := "x"
	now := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC))
	lease, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "pb"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil || *lease.Spec.HolderIdentity != "x" ||
		!lease.Spec.RenewTime.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)) {
		t.Fatalf("protobuf Lease create (renewTime keeps microseconds): %v %+v", err, lease)
	}
	lease.Spec.HolderIdentity = nil
	if lease, err = cs.CoordinationV1().Leases(ns).Update(ctx, lease, metav1.UpdateOptions{}); err != nil || lease.Spec.HolderIdentity != nil {
		t.Fatalf("protobuf Lease update: %v", err)
	}

	secret, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pb"},
		Data:       map[string][]byte{"bin": {0, 1, 2, 255}, "empty": {}},
	}, metav1.CreateOptions{})
	if err != nil || string(secret.Data["bin"]) != "\x00\x01\x02\xff" {
		t.Fatalf("protobuf Secret create: %v", err)
	}

	event, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "pb"},
		EventTime:  now, ReportingController: "kubegen.dev/test", ReportingInstance: "i",
		Action: "Test", Reason: "Tested", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "pb"},
	}, metav1.CreateOptions{})
	if err != nil || event.Reason != "Tested" || event.EventTime.IsZero() {
		t.Fatalf("protobuf events.k8s.io Event create: %v", err)
	}

	// A typed delete sends protobuf DeleteOptions.
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "pb", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("protobuf DeleteOptions: %v", err)
	}
	for _, r := range journal.matching("/namespaces/" + ns + "/") {
		if strings.HasPrefix(r, "POST") && !strings.HasSuffix(r, "application/vnd.kubernetes.protobuf") {
			t.Errorf("a typed write was not protobuf: %s", r)
		}
	}
}
