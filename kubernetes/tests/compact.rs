//! The compact mirrors (`kubegen_kubernetes::compact`) are lossless against
//! k8s-openapi's types on every built-in kind they mirror, from JSON and from protobuf,
//! and the typed informers cache them by default from the in-memory server over tower
//! and over TCP (`k8s_openapi_informer()` caching k8s-openapi's type beside them).
//!
//! The objects are the protobuf corpus of kubegen-apimachinery (one random object of
//! every built-in kind written by apimachinery's serializers in Go, with encoding/json's
//! output beside it; `KUBEGEN_PROTOBUF_CORPUS` adds fresh corpora, as CI does).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, SecurityContext, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kubegen_apimachinery::protobuf;
use kubegen_kubernetes::clientset::Clientset;
use kubegen_kubernetes::compact;
use kubegen_kubernetes::informers::SharedInformerFactory;
use kubegen_runtime::client::WriteOptions;
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::ApiServer;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// What one corpus object showed for one mirrored kind.
enum Outcome {
    /// Lossless both ways, and the same from protobuf; whether the mirror's generated
    /// protobuf decoder decoded it (rather than handing it back).
    Exact { generated: bool },
    /// k8s-openapi's own type does not decode Go's JSON (random strings where a
    /// quantity or a time is expected): nothing to compare against.
    Undecodable,
}

/// The mirror `C` decoded from a protobuf body by its generated decoder
/// (`protobuf::fast`), and by the table-driven deserializer: the generated decoder
/// either hands the object back or gives exactly what the deserializer gives, which must
/// then have decoded it. Returns whether the generated decoder decoded it.
fn generated_agrees<C>(pb: &[u8]) -> Result<bool, String>
where
    C: DeserializeOwned + PartialEq + std::fmt::Debug + protobuf::fast::Message + Resource,
{
    let Ok(env) = protobuf::envelope(pb) else {
        return Ok(false);
    };
    let Ok(de) = protobuf::Deserializer::object(env) else {
        return Ok(false);
    };
    let Some(generated) = protobuf::fast::decode_object::<C>(de.message(), de.bytes(), false)
    else {
        return Ok(false);
    };
    // Leaving `metadata.managedFields` out (as informers ask) is the same decode without
    // them.
    let slim = protobuf::fast::decode_object::<C>(de.message(), de.bytes(), true);
    match slim {
        Some(mut slim) if slim.meta().managed_fields.is_none() => {
            slim.meta_mut().managed_fields = generated.meta().managed_fields.clone();
            if slim != generated {
                return Err(format!(
                    "without managedFields the decode differs:\n{slim:?}\n{generated:?}"
                ));
            }
        }
        other => return Err(format!("without managedFields: {other:?}")),
    }
    match protobuf::from_envelope::<C>(pb) {
        Ok(table) if table == generated => Ok(true),
        Ok(table) => Err(format!(
            "the generated decoder and the table-driven one differ:\n{generated:?}\n{table:?}"
        )),
        Err(e) => Err(format!(
            "the generated decoder decoded what the table-driven one rejects ({e}):\n{generated:?}"
        )),
    }
}

/// [`generated_agrees`] on every one-byte change of `pb` at a spread of positions (three
/// values each): odd input (a wrong wire type, a cut length, bad UTF-8, a repeated
/// singular field) is handed back or decoded exactly.
fn generated_agrees_on_changes<C>(pb: &[u8]) -> Result<(), String>
where
    C: DeserializeOwned + PartialEq + std::fmt::Debug + protobuf::fast::Message + Resource,
{
    let step = (pb.len() / 64).max(1);
    for i in (4..pb.len()).step_by(step) {
        for x in [0x01u8, 0x80, 0xff] {
            let mut changed = pb.to_vec();
            changed[i] ^= x;
            generated_agrees::<C>(&changed).map_err(|e| format!("byte {i} ^ {x:#x}: {e}"))?;
        }
    }
    Ok(())
}

/// The checks of one object: JSON into k8s-openapi's type `K` and into the mirror `C`
/// give values that convert into each other exactly, serialize to the same JSON, and
/// the mirror decodes the same from the protobuf.
fn exact<C, K>(pb: &[u8], json: &Value) -> Result<Outcome, String>
where
    C: DeserializeOwned
        + Serialize
        + Clone
        + PartialEq
        + std::fmt::Debug
        + From<K>
        + protobuf::fast::Message
        + Resource,
    K: DeserializeOwned + Serialize + Clone + PartialEq + std::fmt::Debug + From<C>,
{
    let generated = generated_agrees::<C>(pb)?;
    generated_agrees_on_changes::<C>(pb)?;
    let Ok(full) = serde_json::from_value::<K>(json.clone()) else {
        return Ok(Outcome::Undecodable);
    };
    let mirror = serde_json::from_value::<C>(json.clone())
        .map_err(|e| format!("the mirror does not decode what k8s-openapi's type does: {e}"))?;
    let back = K::from(mirror.clone());
    if back != full {
        return Err(format!(
            "mirror -> k8s-openapi differs:\n{back:?}\n{full:?}"
        ));
    }
    let there = C::from(full.clone());
    if there != mirror {
        return Err(format!(
            "k8s-openapi -> mirror differs:\n{there:?}\n{mirror:?}"
        ));
    }
    let (a, b) = (
        serde_json::to_value(&mirror).map_err(|e| e.to_string())?,
        serde_json::to_value(&full).map_err(|e| e.to_string())?,
    );
    if a != b {
        return Err(format!("the mirror serializes differently:\n{a}\n{b}"));
    }
    let from_pb = protobuf::from_envelope::<C>(pb).map_err(|e| format!("protobuf: {e}"))?;
    if from_pb != mirror {
        return Err(format!(
            "protobuf and JSON decode differently:\n{from_pb:?}\n{mirror:?}"
        ));
    }
    Ok(Outcome::Exact { generated })
}

/// Checks `(apiVersion, kind)` if it has a mirror; `None` if it has none.
fn check_kind(av: &str, kind: &str, pb: &[u8], json: &Value) -> Option<Result<Outcome, String>> {
    macro_rules! kinds {
        ($($c:path => $k:path,)*) => {{
            $(
                {
                    use kubegen_kubernetes::compact;
                    use k8s_openapi::api;
                    type K = $k;
                    if <K as Resource>::api_version(&()) == av && <K as Resource>::kind(&()) == kind {
                        return Some(exact::<$c, $k>(pb, json));
                    }
                }
            )*
            None
        }};
    }
    kinds! {
        compact::admissionregistration::v1::MutatingAdmissionPolicy => api::admissionregistration::v1::MutatingAdmissionPolicy,
        compact::admissionregistration::v1::MutatingAdmissionPolicyBinding => api::admissionregistration::v1::MutatingAdmissionPolicyBinding,
        compact::admissionregistration::v1::MutatingWebhookConfiguration => api::admissionregistration::v1::MutatingWebhookConfiguration,
        compact::admissionregistration::v1::ValidatingAdmissionPolicy => api::admissionregistration::v1::ValidatingAdmissionPolicy,
        compact::admissionregistration::v1::ValidatingAdmissionPolicyBinding => api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        compact::admissionregistration::v1::ValidatingWebhookConfiguration => api::admissionregistration::v1::ValidatingWebhookConfiguration,
        compact::admissionregistration::v1alpha1::MutatingAdmissionPolicy => api::admissionregistration::v1alpha1::MutatingAdmissionPolicy,
        compact::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding => api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding,
        compact::admissionregistration::v1beta1::MutatingAdmissionPolicy => api::admissionregistration::v1beta1::MutatingAdmissionPolicy,
        compact::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding => api::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding,
        compact::apps::v1::ControllerRevision => api::apps::v1::ControllerRevision,
        compact::apps::v1::DaemonSet => api::apps::v1::DaemonSet,
        compact::apps::v1::Deployment => api::apps::v1::Deployment,
        compact::apps::v1::ReplicaSet => api::apps::v1::ReplicaSet,
        compact::apps::v1::StatefulSet => api::apps::v1::StatefulSet,
        compact::autoscaling::v1::HorizontalPodAutoscaler => api::autoscaling::v1::HorizontalPodAutoscaler,
        compact::autoscaling::v2::HorizontalPodAutoscaler => api::autoscaling::v2::HorizontalPodAutoscaler,
        compact::batch::v1::CronJob => api::batch::v1::CronJob,
        compact::batch::v1::Job => api::batch::v1::Job,
        compact::certificates::v1::CertificateSigningRequest => api::certificates::v1::CertificateSigningRequest,
        compact::certificates::v1::ClusterTrustBundle => api::certificates::v1::ClusterTrustBundle,
        compact::certificates::v1::PodCertificateRequest => api::certificates::v1::PodCertificateRequest,
        compact::certificates::v1beta1::ClusterTrustBundle => api::certificates::v1beta1::ClusterTrustBundle,
        compact::certificates::v1beta1::PodCertificateRequest => api::certificates::v1beta1::PodCertificateRequest,
        compact::coordination::v1::Lease => api::coordination::v1::Lease,
        compact::coordination::v1alpha2::LeaseCandidate => api::coordination::v1alpha2::LeaseCandidate,
        compact::coordination::v1beta1::LeaseCandidate => api::coordination::v1beta1::LeaseCandidate,
        compact::core::v1::ConfigMap => api::core::v1::ConfigMap,
        compact::core::v1::Endpoints => api::core::v1::Endpoints,
        compact::core::v1::Event => api::core::v1::Event,
        compact::core::v1::LimitRange => api::core::v1::LimitRange,
        compact::core::v1::Namespace => api::core::v1::Namespace,
        compact::core::v1::Node => api::core::v1::Node,
        compact::core::v1::PersistentVolume => api::core::v1::PersistentVolume,
        compact::core::v1::PersistentVolumeClaim => api::core::v1::PersistentVolumeClaim,
        compact::core::v1::Pod => api::core::v1::Pod,
        compact::core::v1::PodTemplate => api::core::v1::PodTemplate,
        compact::core::v1::ReplicationController => api::core::v1::ReplicationController,
        compact::core::v1::ResourceQuota => api::core::v1::ResourceQuota,
        compact::core::v1::Secret => api::core::v1::Secret,
        compact::core::v1::Service => api::core::v1::Service,
        compact::core::v1::ServiceAccount => api::core::v1::ServiceAccount,
        compact::discovery::v1::EndpointSlice => api::discovery::v1::EndpointSlice,
        compact::events::v1::Event => api::events::v1::Event,
        compact::flowcontrol::v1::FlowSchema => api::flowcontrol::v1::FlowSchema,
        compact::flowcontrol::v1::PriorityLevelConfiguration => api::flowcontrol::v1::PriorityLevelConfiguration,
        compact::internal::v1alpha1::StorageVersion => api::apiserverinternal::v1alpha1::StorageVersion,
        compact::lifecycle::v1alpha1::Eviction => api::lifecycle::v1alpha1::Eviction,
        compact::lifecycle::v1alpha1::EvictionRequest => api::lifecycle::v1alpha1::EvictionRequest,
        compact::networking::v1::IPAddress => api::networking::v1::IPAddress,
        compact::networking::v1::Ingress => api::networking::v1::Ingress,
        compact::networking::v1::IngressClass => api::networking::v1::IngressClass,
        compact::networking::v1::NetworkPolicy => api::networking::v1::NetworkPolicy,
        compact::networking::v1::ServiceCIDR => api::networking::v1::ServiceCIDR,
        compact::node::v1::RuntimeClass => api::node::v1::RuntimeClass,
        compact::policy::v1::PodDisruptionBudget => api::policy::v1::PodDisruptionBudget,
        compact::rbac::v1::ClusterRole => api::rbac::v1::ClusterRole,
        compact::rbac::v1::ClusterRoleBinding => api::rbac::v1::ClusterRoleBinding,
        compact::rbac::v1::Role => api::rbac::v1::Role,
        compact::rbac::v1::RoleBinding => api::rbac::v1::RoleBinding,
        compact::resource::v1::DeviceClass => api::resource::v1::DeviceClass,
        compact::resource::v1::DeviceTaintRule => api::resource::v1::DeviceTaintRule,
        compact::resource::v1::ResourceClaim => api::resource::v1::ResourceClaim,
        compact::resource::v1::ResourceClaimTemplate => api::resource::v1::ResourceClaimTemplate,
        compact::resource::v1::ResourceSlice => api::resource::v1::ResourceSlice,
        compact::resource::v1alpha3::DeviceTaintRule => api::resource::v1alpha3::DeviceTaintRule,
        compact::resource::v1alpha3::ResourcePoolStatusRequest => api::resource::v1alpha3::ResourcePoolStatusRequest,
        compact::resource::v1beta1::DeviceClass => api::resource::v1beta1::DeviceClass,
        compact::resource::v1beta1::ResourceClaim => api::resource::v1beta1::ResourceClaim,
        compact::resource::v1beta1::ResourceClaimTemplate => api::resource::v1beta1::ResourceClaimTemplate,
        compact::resource::v1beta1::ResourceSlice => api::resource::v1beta1::ResourceSlice,
        compact::resource::v1beta2::DeviceClass => api::resource::v1beta2::DeviceClass,
        compact::resource::v1beta2::DeviceTaintRule => api::resource::v1beta2::DeviceTaintRule,
        compact::resource::v1beta2::ResourceClaim => api::resource::v1beta2::ResourceClaim,
        compact::resource::v1beta2::ResourceClaimTemplate => api::resource::v1beta2::ResourceClaimTemplate,
        compact::resource::v1beta2::ResourceSlice => api::resource::v1beta2::ResourceSlice,
        compact::scheduling::v1::PriorityClass => api::scheduling::v1::PriorityClass,
        compact::scheduling::v1alpha3::CompositePodGroup => api::scheduling::v1alpha3::CompositePodGroup,
        compact::scheduling::v1alpha3::PodGroup => api::scheduling::v1alpha3::PodGroup,
        compact::scheduling::v1alpha3::Workload => api::scheduling::v1alpha3::Workload,
        compact::scheduling::v1beta1::PodGroup => api::scheduling::v1beta1::PodGroup,
        compact::scheduling::v1beta1::Workload => api::scheduling::v1beta1::Workload,
        compact::storage::v1::CSIDriver => api::storage::v1::CSIDriver,
        compact::storage::v1::CSINode => api::storage::v1::CSINode,
        compact::storage::v1::CSIStorageCapacity => api::storage::v1::CSIStorageCapacity,
        compact::storage::v1::StorageClass => api::storage::v1::StorageClass,
        compact::storage::v1::VolumeAttachment => api::storage::v1::VolumeAttachment,
        compact::storage::v1::VolumeAttributesClass => api::storage::v1::VolumeAttributesClass,
        compact::storagemigration::v1::StorageVersionMigration => api::storagemigration::v1::StorageVersionMigration,
        compact::storagemigration::v1beta1::StorageVersionMigration => api::storagemigration::v1beta1::StorageVersionMigration,
    }
}

/// The number of kinds listed in `check_kind`.
const LISTED: usize = 90;

fn base64_decode(s: &str) -> Vec<u8> {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = T.iter().position(|&t| t == c).expect("base64") as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// (objects of mirrored kinds checked exactly, those of them the generated decoder
/// decoded, undecodable ones) of one corpus.
fn check_corpus(text: &str, failures: &mut Vec<String>) -> (usize, usize, usize) {
    let (mut exact, mut generated, mut undecodable) = (0, 0, 0);
    for line in text.lines().filter(|l| !l.is_empty()) {
        let case: Value = serde_json::from_str(line).expect("a corpus line is JSON");
        let av = case["apiVersion"].as_str().unwrap_or_default();
        let kind = case["kind"].as_str().unwrap_or_default();
        let pb = base64_decode(case["protobuf"].as_str().expect("protobuf"));
        match check_kind(av, kind, &pb, &case["json"]) {
            Some(Ok(Outcome::Exact { generated: g })) => {
                exact += 1;
                generated += usize::from(g);
            }
            Some(Ok(Outcome::Undecodable)) => undecodable += 1,
            Some(Err(e)) => failures.push(format!("{av} {kind}: {e}")),
            None => {}
        }
    }
    (exact, generated, undecodable)
}

#[test]
fn every_mirrored_kind_is_lossless_from_json_and_protobuf() {
    let mut failures = Vec::new();
    let (exact, generated, undecodable) = check_corpus(
        include_str!("../../apimachinery/src/protobuf/corpus.jsonl"),
        &mut failures,
    );
    eprintln!(
        "committed corpus: {exact} exact ({generated} by the generated decoder), \
         {undecodable} not decodable by k8s-openapi"
    );
    // The committed corpus has one object of each kind; most random objects decode.
    assert!(exact >= 60, "{exact} exact, {undecodable} undecodable");
    // The generated decoders decode most of them themselves (the kinds newer than the
    // protobuf table hand every object back).
    assert!(
        generated * 10 >= exact * 7,
        "{generated} of {exact} by the generated decoder"
    );
    if let Ok(paths) = std::env::var("KUBEGEN_PROTOBUF_CORPUS") {
        for path in paths.split(':') {
            let text = std::fs::read_to_string(path).expect("KUBEGEN_PROTOBUF_CORPUS names files");
            let (e, g, u) = check_corpus(&text, &mut failures);
            eprintln!("{path}: {e} exact ({g} by the generated decoder), {u} not decodable by k8s-openapi");
            assert!(e + u > 0, "{path} has no mirrored kind");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_list_covers_every_generated_mirror() {
    // Every kind the generator mirrored is a `projection!` in the generated tree.
    fn count(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .expect("the generated compact tree")
            .map(|e| e.expect("a directory entry").path())
            .map(|p| {
                if p.is_dir() {
                    count(&p)
                } else {
                    std::fs::read_to_string(&p)
                        .expect("a generated file")
                        .matches("::kubegen_runtime::projection!(")
                        .count()
                }
            })
            .sum()
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/generated/compact");
    assert_eq!(count(&dir), LISTED);
}

#[test]
fn unset_optional_structs_cost_a_pointer() {
    // The reason for the mirror: an unset optional struct is 8 bytes, not its size.
    use std::mem::size_of;
    assert_eq!(
        size_of::<Option<Box<compact::core::v1::SecurityContext>>>(),
        8
    );
    assert!(size_of::<compact::core::v1::Container>() * 3 < size_of::<Container>());
    assert!(size_of::<compact::core::v1::Volume>() * 5 < size_of::<Volume>());
    assert!(size_of::<compact::core::v1::PodSpec>() * 2 < size_of::<PodSpec>());
    // Fields read as k8s-openapi's do, through the box.
    let pod = compact::core::v1::Pod::from(Pod {
        metadata: ObjectMeta {
            name: Some("web-0".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                security_context: Some(SecurityContext {
                    privileged: Some(true),
                    ..SecurityContext::default()
                }),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    });
    let spec = pod.spec.as_ref().expect("spec");
    let sc = spec.containers[0].security_context.as_ref().expect("set");
    assert_eq!(sc.privileged, Some(true));
    // And it serializes as the Pod it came from, apiVersion and kind included.
    let json = serde_json::to_value(&pod).expect("serializes");
    assert_eq!(json["apiVersion"], "v1");
    assert_eq!(json["kind"], "Pod");
    assert_eq!(
        json,
        serde_json::to_value(Pod::from(pod.clone())).expect("serializes")
    );
}

/// The mirrors' written-out `Deserialize` decodes what k8s-openapi's decodes, and fails
/// where it fails: `null` and absent required fields (their defaults), `null` optional
/// ones, unknown keys, a duplicate key, a wrong type, an array where an object belongs.
#[test]
fn edge_cases_decode_as_k8s_openapi_decodes_them() {
    use k8s_openapi::api::apps::v1::DaemonSet;
    for json in [
        // Go writes `null` for a nil pointer without omitempty (a DaemonSet's selector).
        r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d"},"spec":{"selector":null,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}"#,
        r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":null,"spec":{"template":{}}}"#,
        r#"{"kind":"DaemonSet","spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":null}},"status":null}"#,
        r#"{"metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80,"protocol":null}]}]}}},"unknown":{"deep":[1,{"x":null}]}}"#,
        r#"{"metadata":{"name":"d"},"status":{"currentNumberScheduled":1,"desiredNumberScheduled":2,"numberMisscheduled":0,"numberReady":1}}"#,
        r#"{"metadata":{"name":"d"},"status":{"currentNumberScheduled":1}}"#,
        r#"{"metadata":{"name":"d"},"metadata":{"name":"e"}}"#,
        r#"{"metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":7}]}}}}"#,
        r#"{"metadata":[1,2]}"#,
        r#"[1,2]"#,
        r#"{}"#,
    ] {
        let full: Result<DaemonSet, String> = serde_json::from_str(json).map_err(|e| e.to_string());
        let slim: Result<compact::apps::v1::DaemonSet, String> =
            serde_json::from_str(json).map_err(|e| e.to_string());
        match (full, slim) {
            (Ok(full), Ok(slim)) => assert_eq!(DaemonSet::from(slim), full, "{json}"),
            (Err(_), Err(_)) => {}
            (full, slim) => panic!("{json}: k8s-openapi {full:?}, mirror {slim:?}"),
        }
    }
}

fn pod(name: &str, image: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            labels: Some([("app".to_owned(), "web".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// The typed informer of Pods caches the compact mirror by default, and holds what the
/// informer of k8s-openapi's `Pod` (the opt-out) holds, converted.
async fn compact_informer_caches_pods(transport: Transport) {
    let server = ApiServer::new();
    for registration in kubegen_kubernetes::fake::registrations().expect("registrations") {
        server.register_if_absent(registration);
    }
    let conn = transport
        .connect(&server, Vec::<std::path::PathBuf>::new())
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let cs = Clientset::new(conn.client());
    let pods = cs.core_v1().pods("ns");
    let wo = WriteOptions::default();
    pods.create(&pod("web-0", "nginx:1"), &wo)
        .await
        .expect("create");
    pods.create(&pod("web-1", "nginx:2"), &wo)
        .await
        .expect("create");

    let factory = SharedInformerFactory::new(cs.clone(), Duration::from_secs(0));
    let typed = factory.core().v1().pods();
    let (full, slim) = (typed.k8s_openapi_informer(), typed.informer());
    factory.start();
    let synced = factory.wait_for_cache_sync().await;
    assert_eq!(
        synced.len(),
        2,
        "two informers of pods, named apart: {synced:?}"
    );
    assert!(synced.values().all(|s| *s), "{synced:?}");

    let lister = typed.lister();
    let cached: Arc<compact::core::v1::Pod> = lister.pods("ns").get("web-1").expect("cached");
    let image = cached
        .spec
        .as_ref()
        .and_then(|s| s.containers[0].image.clone());
    assert_eq!(image.as_deref(), Some("nginx:2"));
    let from_full = typed
        .k8s_openapi_lister()
        .namespaced("ns")
        .get("web-1")
        .expect("cached");
    assert_eq!(
        from_full,
        full.lister().namespaced("ns").get("web-1").expect("cached")
    );
    assert_eq!(Pod::from((*cached).clone()), *from_full);

    // Watch events reach the compact cache too.
    pods.create(&pod("web-2", "nginx:3"), &wo)
        .await
        .expect("create");
    let mut seen = false;
    for _ in 0..200 {
        if slim.lister().namespaced("ns").get("web-2").is_ok() {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen, "the compact informer saw the watch event");
    assert_eq!(
        slim.lister()
            .list(&kubegen_runtime::labels::Selector::everything())
            .len(),
        3
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn compact_informer_over_tower() {
    compact_informer_caches_pods(Transport::Tower).await;
}

#[tokio::test]
async fn compact_informer_over_tcp() {
    compact_informer_caches_pods(Transport::Tcp).await;
}

/// A Pod with what real Pods carry: volumes (an inlined `VolumeSource`), containers
/// with ports, probes (`IntOrString`), resources (`Quantity`), environment, a security
/// context, tolerations, a finalizer and annotations. (No owner reference: on a real
/// control plane the garbage collector would delete a Pod whose owner does not exist.)
fn rich_pod(ns: &str, name: &str) -> Pod {
    let json = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns,
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"kubegen.dev/note": "generated decoders"},
            "finalizers": ["kubegen.dev/hold"],
        },
        "spec": {
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 5,
            "volumes": [
                {"name": "cache", "emptyDir": {"sizeLimit": "64Mi"}},
                {"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}},
                {"name": "token", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                ]}},
            ],
            "containers": [{
                "name": "app", "image": "nginx:1.27", "args": ["-g", "daemon off;"],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [
                    {"name": "MODE", "value": "prod"},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                ],
                "resources": {
                    "requests": {"cpu": "250m", "memory": "64Mi"},
                    "limits": {"cpu": "1", "memory": "128Mi"},
                },
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
                "livenessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 3},
                "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]}},
            }],
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web",
                "effect": "NoSchedule"}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
        },
    });
    serde_json::from_value(json).expect("a Pod")
}

/// The typed informer decodes protobuf with the mirrors' generated decoders: the Pods it
/// caches, and those a later watch event brings, are the Pods a JSON-only client reads.
/// With `informer_json`, the informer's own client asks for JSON, as against a server
/// without protobuf: it decodes with the JSON decoders the mirror hands out
/// (`GeneratedDecoders::json_decoders`), lists and watch events alike.
async fn generated_decoders_cache_what_json_reads(transport: Transport, informer_json: bool) {
    use kubegen_runtime::client::{protobuf as wire, ListOptions, ResourceClient};
    let server = ApiServer::builder().protobuf_responses(true).build();
    for registration in kubegen_kubernetes::fake::registrations().expect("registrations") {
        server.register_if_absent(registration);
    }
    let conn = transport
        .connect(&server, Vec::<std::path::PathBuf>::new())
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let ns = "generated-decoders";
    let cs = Clientset::new(conn.client());
    let wo = WriteOptions::default();
    let namespace = k8s_openapi::api::core::v1::Namespace {
        metadata: ObjectMeta {
            name: Some(ns.into()),
            ..ObjectMeta::default()
        },
        ..Default::default()
    };
    cs.core_v1()
        .namespaces()
        .create(&namespace, &wo)
        .await
        .expect("namespace");
    let pods = cs.core_v1().pods(ns);
    for name in ["web-0", "web-1", "web-2"] {
        // A real kube-apiserver refuses Pods until the namespace's service account
        // exists (kube-controller-manager creates it): retry for a while.
        let mut created = Err(String::new());
        for _ in 0..100 {
            created = pods
                .create(&rich_pod(ns, name), &wo)
                .await
                .map_err(|e| e.to_string());
            if created.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        created.unwrap_or_else(|e| panic!("{transport:?}: create {name}: {e}"));
    }

    let informer_cs = if informer_json {
        Clientset::new(wire::json_only(conn.client()))
    } else {
        cs.clone()
    };
    let factory = SharedInformerFactory::new(informer_cs, Duration::from_secs(0));
    let typed = factory.core().v1().pods();
    let informer = typed.informer();
    factory.start();
    assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));

    // What the same Pods read as over JSON, through k8s-openapi's type, without their
    // managedFields (informers leave them out).
    let json = ResourceClient::<Pod>::namespaced(wire::json_only(conn.client()), ns);
    let same_as_json = |pods: Vec<Pod>| {
        assert_eq!(pods.len(), 3, "{transport:?}");
        for mut p in pods {
            p.metadata.managed_fields = None;
            let name = p.metadata.name.clone().expect("a name");
            let cached = informer.lister().namespaced(ns).get(&name).expect("cached");
            assert_eq!(
                Pod::from(compact::core::v1::Pod::clone(&cached)),
                p,
                "{transport:?}: {name}"
            );
        }
    };
    let listed = json.list(&ListOptions::default()).await.expect("list");
    same_as_json(listed.items);

    // A watch event: a label added to web-1.
    let mut web1 = pods.get("web-1").await.expect("get");
    web1.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("rollout".into(), "2".into());
    let updated = pods.update(&web1, &wo).await.expect("update");
    let rv = updated.metadata.resource_version.clone();
    let mut seen = false;
    for _ in 0..300 {
        let cached = informer
            .lister()
            .namespaced(ns)
            .get("web-1")
            .expect("cached");
        if cached.metadata.resource_version == rv {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen, "{transport:?}: the watch event reached the cache");
    let listed = json.list(&ListOptions::default()).await.expect("list");
    same_as_json(listed.items);

    factory.shutdown().await;
    if transport == Transport::Real {
        for name in ["web-0", "web-1", "web-2"] {
            let mut p = pods.get(name).await.expect("get");
            p.metadata.finalizers = None;
            pods.update(&p, &wo).await.expect("release the finalizer");
        }
    }
    conn.close().await;
}

#[tokio::test]
async fn generated_decoders_over_tower() {
    generated_decoders_cache_what_json_reads(Transport::Tower, false).await;
}

#[tokio::test]
async fn generated_decoders_over_tcp() {
    generated_decoders_cache_what_json_reads(Transport::Tcp, false).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn generated_decoders_on_a_real_apiserver() {
    generated_decoders_cache_what_json_reads(Transport::Real, false).await;
}

#[tokio::test]
async fn generated_json_decoders_over_tower() {
    generated_decoders_cache_what_json_reads(Transport::Tower, true).await;
}

#[tokio::test]
async fn generated_json_decoders_over_tcp() {
    generated_decoders_cache_what_json_reads(Transport::Tcp, true).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn generated_json_decoders_on_a_real_apiserver() {
    generated_decoders_cache_what_json_reads(Transport::Real, true).await;
}
