package conformance

import (
	"os"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// client-go's typed clients write built-in kinds as protobuf by default (Accept and
// Content-Type application/vnd.kubernetes.protobuf) and do not fall back to JSON on a
// 415, so a server has to decode protobuf for every kind a controller writes.
//
// kubegen-apiserver decodes protobuf only for the kinds kubectl's create subcommands
// send (Namespace, ConfigMap, Secret, ...); Pods and Leases get 415. Until it decodes
// every built-in kind, this test runs only with GO_CONFORMANCE_PROTOBUF=1 and
// hack/go-conformance.sh prints the gap.
func TestProtobufBodies(t *testing.T) {
	if os.Getenv("GO_CONFORMANCE_PROTOBUF") != "1" {
		t.Skip("KNOWN GAP: kubegen-apiserver does not decode protobuf Pods and Leases; set GO_CONFORMANCE_PROTOBUF=1 to run")
	}
	ctx := ctxFor(t)
	ns := namespace(t, ctx)
	pb := kubernetes.NewForConfigOrDie(protobufConfig)

	cm, err := pb.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "pb"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil || cm.Data["k"] != "v" {
		t.Fatalf("protobuf ConfigMap create: %v", err)
	}
	pod, err := pb.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pb"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	if err != nil || pod.Spec.Containers[0].Image != "nginx" {
		t.Fatalf("protobuf Pod create: %v", err)
	}
	holder := "x"
	lease, err := pb.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "pb"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "x" {
		t.Fatalf("protobuf Lease create: %v", err)
	}
}
