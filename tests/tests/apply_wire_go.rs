//! Wire equality with client-go: the same builder calls on kubegen-kubernetes' apply
//! configurations and on client-go's (tests/go-conformance/applyconfiggen) give the same
//! JSON, case by case. The Go program's output is checked in beside it
//! (`applyconfiggen/client-go.json`); hack/go-conformance.sh runs the program in CI and
//! fails when the file is not what client-go prints.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubegen_kubernetes::applyconfigurations::apps::v1::{
    deployment, DeploymentConditionApplyConfiguration, DeploymentSpecApplyConfiguration,
    DeploymentStatusApplyConfiguration, DeploymentStrategyApplyConfiguration,
    RollingUpdateDeploymentApplyConfiguration,
};
use kubegen_kubernetes::applyconfigurations::core::v1::{
    config_map, pod, service, ConfigMapVolumeSourceApplyConfiguration, ContainerApplyConfiguration,
    ContainerPortApplyConfiguration, EnvVarApplyConfiguration, EnvVarSourceApplyConfiguration,
    KeyToPathApplyConfiguration, ObjectFieldSelectorApplyConfiguration, PodSpecApplyConfiguration,
    PodTemplateSpecApplyConfiguration, ResourceRequirementsApplyConfiguration,
    ServicePortApplyConfiguration, ServiceSpecApplyConfiguration, TolerationApplyConfiguration,
    VolumeApplyConfiguration, VolumeMountApplyConfiguration,
};
use kubegen_kubernetes::applyconfigurations::meta::v1::LabelSelectorApplyConfiguration;
use serde_json::Value;

/// The cases, built with the same calls as applyconfiggen/main.go.
fn cases() -> BTreeMap<&'static str, Value> {
    let labels = [("app", "web")];
    let at: Time = serde_json::from_value(serde_json::json!("2026-01-02T03:04:05Z"))
        .expect("an RFC 3339 time");
    let json = |v: &dyn erased::Ser| v.value();
    let mut out = BTreeMap::new();
    out.insert(
        "deployment",
        json(
            &deployment("web", "default")
                .with_labels(labels)
                .with_annotations([("example.com/owner", "team-a")])
                .with_spec(
                    DeploymentSpecApplyConfiguration::default()
                        .with_replicas(3)
                        .with_selector(
                            LabelSelectorApplyConfiguration::default().with_match_labels(labels),
                        )
                        .with_strategy(
                            DeploymentStrategyApplyConfiguration::default()
                                .with_type("RollingUpdate")
                                .with_rolling_update(
                                    RollingUpdateDeploymentApplyConfiguration::default()
                                        .with_max_surge(IntOrString::String("25%".into()))
                                        .with_max_unavailable(IntOrString::Int(0)),
                                ),
                        )
                        .with_template(
                            PodTemplateSpecApplyConfiguration::default()
                                .with_labels(labels)
                                .with_spec(
                                    PodSpecApplyConfiguration::default()
                                        .with_containers([ContainerApplyConfiguration::default()
                                        .with_name("app")
                                        .with_image("nginx:1.27")
                                        .with_args(["--port", "8080"])
                                        .with_ports([ContainerPortApplyConfiguration::default()
                                            .with_name("http")
                                            .with_container_port(8080)
                                            .with_protocol("TCP")])
                                        .with_env([
                                            EnvVarApplyConfiguration::default()
                                                .with_name("MODE")
                                                .with_value("production"),
                                            EnvVarApplyConfiguration::default()
                                                .with_name("POD")
                                                .with_value_from(
                                                EnvVarSourceApplyConfiguration::default()
                                                    .with_field_ref(
                                                    ObjectFieldSelectorApplyConfiguration::default(
                                                    )
                                                    .with_field_path("metadata.name"),
                                                ),
                                            ),
                                        ])
                                        .with_resources(
                                            ResourceRequirementsApplyConfiguration::default()
                                                .with_limits([
                                                    ("cpu", Quantity("500m".into())),
                                                    ("memory", Quantity("128Mi".into())),
                                                ]),
                                        )]),
                                ),
                        ),
                ),
        ),
    );
    out.insert(
        "deploymentStatus",
        json(
            &deployment("web", "default").with_status(
                DeploymentStatusApplyConfiguration::default()
                    .with_observed_generation(4)
                    .with_conditions([DeploymentConditionApplyConfiguration::default()
                        .with_type("Available")
                        .with_status("True")
                        .with_reason("MinimumReplicasAvailable")
                        .with_last_transition_time(at.clone())
                        .with_last_update_time(at)]),
            ),
        ),
    );
    out.insert(
        "pod",
        json(
            &pod("job-1", "batch").with_spec(
                PodSpecApplyConfiguration::default()
                    .with_restart_policy("Never")
                    .with_node_selector([("disk", "ssd")])
                    .with_tolerations([TolerationApplyConfiguration::default()
                        .with_key("dedicated")
                        .with_operator("Equal")
                        .with_value("batch")
                        .with_effect("NoSchedule")])
                    .with_volumes([VolumeApplyConfiguration::default()
                        .with_name("config")
                        .with_config_map(
                            ConfigMapVolumeSourceApplyConfiguration::default()
                                .with_name("settings")
                                .with_items([KeyToPathApplyConfiguration::default()
                                    .with_key("a")
                                    .with_path("a.yaml")]),
                        )])
                    .with_containers([ContainerApplyConfiguration::default()
                        .with_name("main")
                        .with_image("busybox:1")
                        .with_command(["sh", "-c", "echo hi"])
                        .with_volume_mounts([VolumeMountApplyConfiguration::default()
                            .with_name("config")
                            .with_mount_path("/etc/config")
                            .with_read_only(true)])]),
            ),
        ),
    );
    out.insert(
        "service",
        json(
            &service("web", "default").with_spec(
                ServiceSpecApplyConfiguration::default()
                    .with_type("ClusterIP")
                    .with_selector(labels)
                    .with_ports([ServicePortApplyConfiguration::default()
                        .with_name("http")
                        .with_port(80)
                        .with_target_port(IntOrString::String("http".into()))
                        .with_protocol("TCP")]),
            ),
        ),
    );
    out.insert(
        "configMap",
        json(
            &config_map("settings", "default")
                .with_data([("a.yaml", "x: 1")])
                .with_finalizers(["example.com/cleanup"]),
        ),
    );
    out
}

/// Serializes any apply configuration to JSON (object-safe, so the cases share a map).
mod erased {
    pub trait Ser {
        fn value(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Ser for T {
        fn value(&self) -> serde_json::Value {
            serde_json::to_value(self).expect("apply configurations serialize")
        }
    }
}

#[test]
fn apply_configurations_serialize_as_client_go_does() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/go-conformance/applyconfiggen/client-go.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let go: BTreeMap<String, Value> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let ours = cases();
    let go_names: Vec<&str> = go.keys().map(String::as_str).collect();
    let our_names: Vec<&str> = ours.keys().copied().collect();
    assert_eq!(go_names, our_names, "the same cases on both sides");
    for (name, value) in &ours {
        assert_eq!(
            Some(value),
            go.get(*name),
            "case {name}: kubegen (left) and client-go (right) differ"
        );
    }
}
