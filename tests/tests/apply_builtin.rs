//! Typed server-side apply of built-in kinds with kubegen-kubernetes' apply
//! configurations (feature `applyconfigurations`): three managers share one Deployment,
//! as a user, a sidecar injector and a scaling controller do. The containers list is a
//! map keyed by `name` in Kubernetes' OpenAPI (`x-kubernetes-list-type: map`), so the
//! two containers merge and each manager owns its own; the controller owns
//! `spec.replicas` and one status condition. Each manager extracts exactly what it
//! applied; taking another manager's field is a 409 until forced. Container ports
//! merge by port and protocol, their keys in Kubernetes' OpenAPI. Over the fake
//! clientset's tower Service, over TCP, and against a real kube-apiserver (ignored unless
//! `hack/test.sh real`). A property test applies random ConfigMaps and Deployments and
//! extracts them back.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubegen_kubernetes::applyconfigurations::apps::v1::{
    deployment, extract_deployment, extract_deployment_from, extract_deployment_status,
    DeploymentApplyConfiguration, DeploymentConditionApplyConfiguration,
    DeploymentSpecApplyConfiguration, DeploymentStatusApplyConfiguration,
};
use kubegen_kubernetes::applyconfigurations::core::v1::{
    config_map, extract_config_map, ContainerApplyConfiguration, ContainerPortApplyConfiguration,
    EnvVarApplyConfiguration, PodSpecApplyConfiguration, PodTemplateSpecApplyConfiguration,
};
use kubegen_kubernetes::applyconfigurations::meta::v1::LabelSelectorApplyConfiguration;
use kubegen_kubernetes::clientset::Clientset;
use kubegen_runtime::apply::{ApplyOptions, ObjectMetaApplyConfiguration, ScaleApplyConfiguration};
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::ApiServer;
use proptest::prelude::*;

fn container(name: &str, image: &str) -> ContainerApplyConfiguration {
    ContainerApplyConfiguration::default()
        .with_name(name)
        .with_image(image)
}

/// What the user applies: the whole workload but the replica count.
fn user_config(ns: &str) -> DeploymentApplyConfiguration {
    let labels = [("app", "web")];
    deployment("web", ns).with_labels(labels).with_spec(
        DeploymentSpecApplyConfiguration::default()
            .with_selector(LabelSelectorApplyConfiguration::default().with_match_labels(labels))
            .with_template(
                PodTemplateSpecApplyConfiguration::default()
                    .with_metadata(ObjectMetaApplyConfiguration::default().with_labels(labels))
                    .with_spec(
                        PodSpecApplyConfiguration::default().with_containers([container(
                            "app",
                            "nginx:1.27",
                        )
                        // The port's key is containerPort and protocol: set both, as a key
                        // is part of what the manager owns.
                        .with_ports([ContainerPortApplyConfiguration::default()
                            .with_container_port(80)
                            .with_protocol("TCP")])
                        .with_env([EnvVarApplyConfiguration::default()
                            .with_name("MODE")
                            .with_value("production")])]),
                    ),
            ),
    )
}

fn sidecar_config(ns: &str) -> DeploymentApplyConfiguration {
    deployment("web", ns).with_spec(
        DeploymentSpecApplyConfiguration::default().with_template(
            PodTemplateSpecApplyConfiguration::default().with_spec(
                PodSpecApplyConfiguration::default()
                    .with_containers([container("proxy", "envoyproxy/envoy:v1.31")]),
            ),
        ),
    )
}

fn scaler_config(ns: &str, replicas: i32) -> DeploymentApplyConfiguration {
    deployment("web", ns)
        .with_spec(DeploymentSpecApplyConfiguration::default().with_replicas(replicas))
}

fn scaler_status(ns: &str) -> DeploymentApplyConfiguration {
    let at: Time = serde_json::from_value(serde_json::json!("2026-01-02T03:04:05Z"))
        .expect("an RFC 3339 time");
    deployment("web", ns).with_status(
        DeploymentStatusApplyConfiguration::default().with_conditions([
            DeploymentConditionApplyConfiguration::default()
                .with_type("example.com/Scaled")
                .with_status("True")
                .with_reason("AtTarget")
                .with_message("3 replicas wanted")
                .with_last_transition_time(at.clone())
                .with_last_update_time(at),
        ]),
    )
}

async fn three_managers(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<String>::new())
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let cs = Clientset::new(conn.client());
    let ns = "default";
    let deployments = cs.apps_v1().deployments(ns);
    let apply = |cfg: DeploymentApplyConfiguration, manager: &'static str, force: bool| {
        let deployments = deployments.clone();
        async move {
            let mut opts = ApplyOptions::new(manager);
            if force {
                opts = opts.force();
            }
            deployments.apply_config(&cfg, &opts).await
        }
    };

    let user = user_config(ns);
    apply(user.clone(), "user", false)
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: user: {e}"));
    let sidecar = sidecar_config(ns);
    apply(sidecar.clone(), "sidecar-injector", false)
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: sidecar: {e}"));
    let scaler = scaler_config(ns, 3);
    apply(scaler.clone(), "scaler", false)
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: scaler: {e}"));
    let status = scaler_status(ns);
    let obj = deployments
        .apply_status_config(&status, &ApplyOptions::new("scaler"))
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: scaler status: {e}"));

    // The containers merged by name; the replica count is the scaler's.
    let spec = obj.spec.clone();
    let names: Vec<&str> = spec
        .template
        .spec
        .as_ref()
        .map(|p| p.containers.iter().map(|c| c.name.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["app", "proxy"], "{transport:?}");
    assert_eq!(spec.replicas, Some(3), "{transport:?}");

    // Each manager extracts exactly what it applied.
    assert_eq!(
        extract_deployment(&obj, "user").unwrap(),
        user,
        "{transport:?}"
    );
    assert_eq!(
        extract_deployment(&obj, "sidecar-injector").unwrap(),
        sidecar,
        "{transport:?}"
    );
    assert_eq!(
        extract_deployment(&obj, "scaler").unwrap(),
        scaler,
        "{transport:?}"
    );
    let owned_status = extract_deployment_status(&obj, "scaler").unwrap();
    let wanted = status.status.as_ref().and_then(|s| s.conditions.clone());
    let got = owned_status
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone());
    assert_eq!(got, wanted, "{transport:?}: the scaler's condition");

    // The injector changing the user's image is a conflict until forced; then the user
    // no longer owns the image, and still owns the rest of its container.
    let take =
        deployment("web", ns).with_spec(DeploymentSpecApplyConfiguration::default().with_template(
            PodTemplateSpecApplyConfiguration::default().with_spec(
                PodSpecApplyConfiguration::default().with_containers([
                    container("app", "nginx:1.28"),
                    container("proxy", "envoyproxy/envoy:v1.31"),
                ]),
            ),
        ));
    let err = apply(take.clone(), "sidecar-injector", false)
        .await
        .expect_err("the image belongs to the user");
    assert!(err.is_conflict(), "{transport:?}: {err}");
    let obj = apply(take.clone(), "sidecar-injector", true)
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: forced: {e}"));
    assert_eq!(
        extract_deployment(&obj, "sidecar-injector").unwrap(),
        take,
        "{transport:?}"
    );
    let user_now = serde_json::to_value(extract_deployment(&obj, "user").unwrap()).unwrap();
    let app = &user_now["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(app["name"], "app", "{transport:?}: {user_now}");
    assert_eq!(
        app.get("image"),
        None,
        "{transport:?}: the image was forced away"
    );
    assert_eq!(app["env"][0]["value"], "production", "{transport:?}");
    conn.close().await;
}

#[tokio::test]
async fn three_managers_over_tower() {
    three_managers(Transport::Tower).await;
}

#[tokio::test]
async fn three_managers_over_tcp() {
    three_managers(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn three_managers_on_a_real_apiserver() {
    three_managers(Transport::Real).await;
}

/// Container ports are a map keyed by containerPort *and* protocol in Kubernetes'
/// OpenAPI (not by the strategic-merge key, containerPort, alone): two managers each
/// applying port 53, one TCP and one UDP, both keep theirs.
async fn ports_by_port_and_protocol(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<String>::new())
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let deployments = Clientset::new(conn.client())
        .apps_v1()
        .deployments("default");
    let port = |protocol: &str| {
        ContainerPortApplyConfiguration::default()
            .with_container_port(53)
            .with_protocol(protocol)
    };
    let labels = [("app", "dns")];
    let tcp = deployment("dns", "default").with_spec(
        DeploymentSpecApplyConfiguration::default()
            .with_selector(LabelSelectorApplyConfiguration::default().with_match_labels(labels))
            .with_template(
                PodTemplateSpecApplyConfiguration::default()
                    .with_labels(labels)
                    .with_spec(PodSpecApplyConfiguration::default().with_containers([
                        container("dns", "coredns/coredns:1.12.0").with_ports([port("TCP")]),
                    ])),
            ),
    );
    let udp = deployment("dns", "default").with_spec(
        DeploymentSpecApplyConfiguration::default().with_template(
            PodTemplateSpecApplyConfiguration::default().with_spec(
                PodSpecApplyConfiguration::default().with_containers([
                    ContainerApplyConfiguration::default()
                        .with_name("dns")
                        .with_ports([port("UDP")]),
                ]),
            ),
        ),
    );
    deployments
        .apply_config(&tcp, &ApplyOptions::new("tcp"))
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let obj = deployments
        .apply_config(&udp, &ApplyOptions::new("udp"))
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let protocols: Vec<String> = obj
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
        .and_then(|c| c.ports.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|p| p.protocol.unwrap_or_default())
        .collect();
    assert_eq!(protocols, ["TCP", "UDP"], "{transport:?}");
    assert_eq!(
        extract_deployment(&obj, "tcp").unwrap(),
        tcp,
        "{transport:?}"
    );
    assert_eq!(
        extract_deployment(&obj, "udp").unwrap(),
        udp,
        "{transport:?}"
    );
    conn.close().await;
}

#[tokio::test]
async fn ports_by_port_and_protocol_over_tower() {
    ports_by_port_and_protocol(Transport::Tower).await;
}

#[tokio::test]
async fn ports_by_port_and_protocol_over_tcp() {
    ports_by_port_and_protocol(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn ports_by_port_and_protocol_on_a_real_apiserver() {
    ports_by_port_and_protocol(Transport::Real).await;
}

/// client-go's ApplyScale: a manager applying replicas through the `scale` subresource
/// conflicts with the manager of the object's own replicas until forced, then owns them
/// with subresource `scale` (`extract_deployment_from(obj, manager, "scale")`), as
/// kube-apiserver records it.
async fn scale_owner(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<String>::new())
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let deployments = Clientset::new(conn.client())
        .apps_v1()
        .deployments("default");
    let user = user_config("default").with_spec(
        user_config("default")
            .spec
            .unwrap_or_default()
            .with_replicas(2),
    );
    deployments
        .apply_config(&user, &ApplyOptions::new("user"))
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let hpa = ScaleApplyConfiguration::new("web").with_replicas(4);
    let err = deployments
        .apply_scale("web", &hpa, &ApplyOptions::new("hpa"))
        .await
        .expect_err("the user owns spec.replicas");
    assert!(err.is_conflict(), "{transport:?}: {err}");
    let scale = deployments
        .apply_scale("web", &hpa, &ApplyOptions::new("hpa").force())
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    assert_eq!(
        scale.spec.and_then(|s| s.replicas),
        Some(4),
        "{transport:?}"
    );
    let obj = deployments.get("web").await.unwrap();
    assert_eq!(obj.spec.replicas, Some(4), "{transport:?}");
    assert_eq!(
        extract_deployment_from(&obj, "hpa", "scale").unwrap(),
        deployment("web", "default")
            .with_spec(DeploymentSpecApplyConfiguration::default().with_replicas(4)),
        "{transport:?}"
    );
    let user_now = extract_deployment(&obj, "user").unwrap();
    assert_eq!(
        user_now.spec.and_then(|s| s.replicas),
        None,
        "{transport:?}: forced away from the user"
    );
    // Applying to the scale of a missing object does not create it.
    let err = deployments
        .apply_scale(
            "nope",
            &ScaleApplyConfiguration::new("nope").with_replicas(1),
            &ApplyOptions::new("hpa"),
        )
        .await
        .expect_err("no such Deployment");
    assert!(err.is_not_found(), "{transport:?}: {err}");
    conn.close().await;
}

#[tokio::test]
async fn scale_owner_over_tower() {
    scale_owner(Transport::Tower).await;
}

#[tokio::test]
async fn scale_owner_over_tcp() {
    scale_owner(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn scale_owner_on_a_real_apiserver() {
    scale_owner(Transport::Real).await;
}

/// A random valid name (DNS label).
fn label() -> impl Strategy<Value = String> {
    "[a-z]([a-z0-9]{0,6})"
}

/// Random apply configurations of a ConfigMap and a Deployment.
fn configs() -> impl Strategy<Value = (DeploymentApplyConfiguration, ObjectValue)> {
    (
        proptest::collection::btree_map(label(), "[a-z0-9]{0,5}", 0..4),
        proptest::collection::btree_map(label(), "[a-zA-Z0-9 ]{0,8}", 0..4),
        proptest::collection::btree_set(label(), 1..4),
        proptest::collection::btree_map(label(), "[a-z0-9]{1,6}", 0..3),
        proptest::option::of(0..5i32),
    )
        .prop_map(|(labels, data, containers, env, replicas)| {
            let pod_labels = [("app", "prop")];
            let mut spec = DeploymentSpecApplyConfiguration::default()
                .with_selector(
                    LabelSelectorApplyConfiguration::default().with_match_labels(pod_labels),
                )
                .with_template(
                    PodTemplateSpecApplyConfiguration::default()
                        .with_metadata(
                            ObjectMetaApplyConfiguration::default().with_labels(pod_labels),
                        )
                        .with_spec(PodSpecApplyConfiguration::default().with_containers(
                            containers.iter().map(|name| {
                                container(name, "busybox:1").with_env(env.iter().map(|(k, v)| {
                                    EnvVarApplyConfiguration::default()
                                        .with_name(k.to_uppercase())
                                        .with_value(v.clone())
                                }))
                            }),
                        )),
                );
            if let Some(r) = replicas {
                spec = spec.with_replicas(r);
            }
            let d = deployment("prop", "default")
                .with_labels(labels.clone())
                .with_spec(spec);
            let c = config_map("prop", "default")
                .with_labels(labels)
                .with_data(data);
            (d, ObjectValue(c))
        })
}

/// A ConfigMap apply configuration (a newtype so the strategy's tuple prints).
#[derive(Debug, Clone)]
struct ObjectValue(kubegen_kubernetes::applyconfigurations::core::v1::ConfigMapApplyConfiguration);

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// Whatever a manager applies, it extracts back, field for field (in-memory server).
    #[test]
    fn extract_returns_what_was_applied((d, c) in configs()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let server = ApiServer::new();
            let cs = Clientset::new(kube::Client::new(server.service(), "default"));
            let opts = ApplyOptions::new("prop");
            let obj = cs.apps_v1().deployments("default").apply_config(&d, &opts).await.unwrap();
            prop_assert_eq!(extract_deployment(&obj, "prop").unwrap(), d);
            let cm = cs.core_v1().config_maps("default").apply_config(&c.0, &opts).await.unwrap();
            prop_assert_eq!(extract_config_map(&cm, "prop").unwrap(), c.0);
            Ok(())
        })?;
    }
}
