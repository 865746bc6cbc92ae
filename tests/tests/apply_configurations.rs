//! Typed server-side apply with the generated apply configurations (fixtures/rust's `Foo`,
//! a Rust-input kind, as fixtures/golden-rust generates it): two managers apply
//! different fields, each extracts exactly what it applied, a conflict is a 409 until
//! forced, and the status subresource has its own owner. Over the fake clientset's tower
//! Service, over TCP, and against a real kube-apiserver with the CRD `kubegen crd` wrote
//! (ignored unless `hack/test.sh real`).

use kubegen_runtime::apply::{ApplyOptions, ObjectMetaApplyConfiguration};
use kubegen_runtime::testing::transport::Transport;
use kubegen_tests::golden_rust::applyconfigurations::samplecontroller::v1alpha1::{
    extract_foo, extract_foo_status, foo, FooSpecApplyConfiguration, FooStatusApplyConfiguration,
};
use kubegen_tests::golden_rust::clientset::Clientset;
use kubegen_tests::golden_rust::fake::new_simple_clientset;

const GOLDEN_CRD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/golden-crd");

async fn two_managers(transport: Transport) {
    let fake = new_simple_clientset(Vec::new()).await.unwrap();
    let conn = transport
        .connect(fake.server(), [GOLDEN_CRD])
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let cs = match transport {
        Transport::Tower => fake.clientset().clone(),
        _ => Clientset::new(conn.client()),
    };
    let ns = "default";
    let foos = cs.samplecontroller_v1alpha1().foos(ns);

    // alice owns the spec and one label; the object is created by the apply.
    let alice = foo("web", ns).with_labels([("app", "web")]).with_spec(
        FooSpecApplyConfiguration::default()
            .with_deployment_name("web-deployment")
            .with_replicas(2),
    );
    let created = foos
        .apply_config(&alice, &ApplyOptions::new("alice"))
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    assert_eq!(created.spec.replicas, Some(2), "{transport:?}");

    // bob owns another label only.
    let bob = foo("web", ns).with_labels([("team", "blue")]);
    let obj = foos
        .apply_config(&bob, &ApplyOptions::new("bob"))
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let labels = obj.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("app").map(String::as_str), Some("web"));
    assert_eq!(labels.get("team").map(String::as_str), Some("blue"));

    // Each extracts exactly what it applied.
    assert_eq!(extract_foo(&obj, "alice").unwrap(), alice, "{transport:?}");
    assert_eq!(extract_foo(&obj, "bob").unwrap(), bob, "{transport:?}");

    // bob taking alice's field is a conflict until forced; then alice no longer owns it.
    let take = foo("web", ns)
        .with_labels([("team", "blue")])
        .with_spec(FooSpecApplyConfiguration::default().with_replicas(5));
    let err = foos
        .apply_config(&take, &ApplyOptions::new("bob"))
        .await
        .expect_err("replicas belongs to alice");
    assert!(err.is_conflict(), "{transport:?}: {err}");
    let obj = foos
        .apply_config(&take, &ApplyOptions::new("bob").force())
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    assert_eq!(obj.spec.replicas, Some(5));
    let alice_now = extract_foo(&obj, "alice").unwrap();
    assert_eq!(
        alice_now.spec.and_then(|s| s.replicas),
        None,
        "{transport:?}: forced away"
    );
    assert_eq!(extract_foo(&obj, "bob").unwrap(), take, "{transport:?}");

    // The status subresource has its own manager.
    let status = foo("web", ns)
        .with_status(FooStatusApplyConfiguration::default().with_available_replicas(1));
    let obj = foos
        .apply_status_config(&status, &ApplyOptions::new("controller"))
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    assert_eq!(obj.status.as_ref().map(|s| s.available_replicas), Some(1));
    assert_eq!(extract_foo_status(&obj, "controller").unwrap(), status);
    assert_eq!(
        extract_foo(&obj, "controller").unwrap().metadata,
        Some(
            ObjectMetaApplyConfiguration::default()
                .with_name("web")
                .with_namespace(ns)
        ),
        "{transport:?}: the controller applied nothing outside status"
    );
    conn.close().await;
}

#[tokio::test]
async fn two_managers_over_tower() {
    two_managers(Transport::Tower).await;
}

#[tokio::test]
async fn two_managers_over_tcp() {
    two_managers(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn two_managers_on_a_real_apiserver() {
    two_managers(Transport::Real).await;
}

#[test]
fn an_apply_configuration_serializes_only_what_is_set() {
    let cfg =
        foo("web", "default").with_spec(FooSpecApplyConfiguration::default().with_replicas(3));
    assert_eq!(
        serde_json::to_value(&cfg).unwrap(),
        serde_json::json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 3}
        })
    );
}
