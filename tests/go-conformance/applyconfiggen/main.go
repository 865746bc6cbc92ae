// Command applyconfiggen prints, as one JSON object keyed by case name, the JSON of
// client-go's apply configurations built by a fixed list of builder calls. kubegen's
// tests/tests/apply_wire_go.rs makes the same calls on kubegen-kubernetes' generated
// apply configurations and requires the same JSON (hack/go-conformance.sh runs both).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

func main() {
	labels := map[string]string{"app": "web"}
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cases := map[string]any{
		"deployment": appsv1ac.Deployment("web", "default").
			WithLabels(labels).
			WithAnnotations(map[string]string{"example.com/owner": "team-a"}).
			WithSpec(appsv1ac.DeploymentSpec().
				WithReplicas(3).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
				WithStrategy(appsv1ac.DeploymentStrategy().
					WithType(appsv1.RollingUpdateDeploymentStrategyType).
					WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
						WithMaxSurge(intstr.FromString("25%")).
						WithMaxUnavailable(intstr.FromInt32(0)))).
				WithTemplate(corev1ac.PodTemplateSpec().
					WithLabels(labels).
					WithSpec(corev1ac.PodSpec().
						WithContainers(corev1ac.Container().
							WithName("app").
							WithImage("nginx:1.27").
							WithArgs("--port", "8080").
							WithPorts(corev1ac.ContainerPort().
								WithName("http").
								WithContainerPort(8080).
								WithProtocol(corev1.ProtocolTCP)).
							WithEnv(corev1ac.EnvVar().WithName("MODE").WithValue("production"),
								corev1ac.EnvVar().WithName("POD").
									WithValueFrom(corev1ac.EnvVarSource().
										WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name")))).
							WithResources(corev1ac.ResourceRequirements().
								WithLimits(corev1.ResourceList{
									corev1.ResourceCPU:    resource.MustParse("500m"),
									corev1.ResourceMemory: resource.MustParse("128Mi"),
								})))))),
		"deploymentStatus": appsv1ac.Deployment("web", "default").
			WithStatus(appsv1ac.DeploymentStatus().
				WithObservedGeneration(4).
				WithConditions(appsv1ac.DeploymentCondition().
					WithType(appsv1.DeploymentAvailable).
					WithStatus(corev1.ConditionTrue).
					WithReason("MinimumReplicasAvailable").
					WithLastTransitionTime(at).
					WithLastUpdateTime(at))),
		"pod": corev1ac.Pod("job-1", "batch").
			WithSpec(corev1ac.PodSpec().
				WithRestartPolicy(corev1.RestartPolicyNever).
				WithNodeSelector(map[string]string{"disk": "ssd"}).
				WithTolerations(corev1ac.Toleration().
					WithKey("dedicated").
					WithOperator(corev1.TolerationOpEqual).
					WithValue("batch").
					WithEffect(corev1.TaintEffectNoSchedule)).
				WithVolumes(corev1ac.Volume().
					WithName("config").
					WithConfigMap(corev1ac.ConfigMapVolumeSource().
						WithName("settings").
						WithItems(corev1ac.KeyToPath().WithKey("a").WithPath("a.yaml")))).
				WithContainers(corev1ac.Container().
					WithName("main").
					WithImage("busybox:1").
					WithCommand("sh", "-c", "echo hi").
					WithVolumeMounts(corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/config").WithReadOnly(true)))),
		"service": corev1ac.Service("web", "default").
			WithSpec(corev1ac.ServiceSpec().
				WithType(corev1.ServiceTypeClusterIP).
				WithSelector(labels).
				WithPorts(corev1ac.ServicePort().
					WithName("http").
					WithPort(80).
					WithTargetPort(intstr.FromString("http")).
					WithProtocol(corev1.ProtocolTCP))),
		"configMap": corev1ac.ConfigMap("settings", "default").
			WithData(map[string]string{"a.yaml": "x: 1"}).
			WithFinalizers("example.com/cleanup"),
	}
	out, err := json.Marshal(cases)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
