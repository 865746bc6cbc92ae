//! A controller's built-in and custom informers from one factory and one client, as
//! kubernetes/sample-controller watches Deployments beside its Foos: the custom tree
//! (generated from a CRD) and the built-in API (`kubegen-kubernetes`) share one runtime
//! factory, so one `start` and one `wait_for_cache_sync` cover both, and asking either
//! tree for an informer of a type never creates a second one.

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, Namespace, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubegen_kubernetes::clientset::Clientset as KubeClientset;
use kubegen_kubernetes::informers::SharedInformerFactory as KubeInformerFactory;
use kubegen_runtime::client::WriteOptions;
use kubegen_runtime::labels::Selector;
use kubegen_runtime::testing::transport::Transport;
use kubegen_tests::golden::apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use kubegen_tests::golden::clientset::Clientset;
use kubegen_tests::golden::informers::SharedInformerFactory;

async fn one_factory_for_foos_and_deployments(client: kube::Client) {
    let kube_cs = KubeClientset::new(client.clone());
    let cs = Clientset::new(client);
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("ns".into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    kube_cs
        .core_v1()
        .namespaces()
        .create(&ns, &WriteOptions::default())
        .await
        .unwrap();
    let mut example = Foo::new(
        "example",
        FooSpec {
            deployment_name: Some("example-web".into()),
            replicas: Some(1),
        },
    );
    example.metadata.namespace = Some("ns".into());
    cs.samplecontroller_v1alpha1()
        .foos("ns")
        .create(&example, &WriteOptions::default())
        .await
        .unwrap();
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some("example-web".into()),
            namespace: Some("ns".into()),
            ..ObjectMeta::default()
        },
        // Valid as a real API server validates it: a selector matching the template's
        // labels, and a container.
        spec: DeploymentSpec {
            selector: LabelSelector {
                match_labels: Some([("app".to_owned(), "web".to_owned())].into()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some([("app".to_owned(), "web".to_owned())].into()),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "web".into(),
                        image: Some("nginx".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        status: None,
    };
    kube_cs
        .apps_v1()
        .deployments("ns")
        .create(&deployment, &WriteOptions::default())
        .await
        .unwrap();

    let builtin = KubeInformerFactory::new(kube_cs, Duration::from_secs(30));
    let custom =
        SharedInformerFactory::from_shared(builtin.factory().clone(), builtin.stop_token().clone());
    let foos = custom.samplecontroller().v1alpha1().foos();
    let deployments = builtin.apps().v1().deployments();
    // The same type asked for through either tree is one informer: the factory holds
    // exactly two (checked below by what one wait reports). The typed informer of
    // Deployments caches the compact mirror, so that is the type asked for here.
    let _ = custom
        .factory()
        .informer::<kubegen_kubernetes::compact::apps::v1::Deployment>();
    let _ = deployments.informer();
    let _ = foos.informer();

    builtin.start();
    let synced = custom.wait_for_cache_sync().await;
    assert_eq!(
        synced.keys().map(String::as_str).collect::<Vec<_>>(),
        ["deployments.apps", "foos.samplecontroller.k8s.io"],
        "by informer name: {synced:?}"
    );
    assert!(synced.values().all(|s| *s), "{synced:?}");
    assert_eq!(foos.lister().list(&Selector::everything()).len(), 1);
    assert!(deployments
        .lister()
        .deployments("ns")
        .get("example-web")
        .is_ok());
    custom.shutdown().await;
}

/// The server with the golden tree's kinds (Tower, Tcp), or a real control plane with
/// the CRDs the golden tree was generated from (Real).
async fn one_factory(transport: Transport) {
    let server = kubegen_runtime::testing::ApiServer::new();
    for r in kubegen_tests::golden::fake::registrations().unwrap() {
        server.register_if_absent(r);
    }
    let crd = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/crds/samplecontroller.yaml"
    );
    let conn = transport
        .connect(&server, [crd])
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    one_factory_for_foos_and_deployments(conn.client()).await;
    conn.close().await;
}

#[tokio::test]
async fn one_factory_over_tower() {
    one_factory(Transport::Tower).await;
}

#[tokio::test]
async fn one_factory_over_tcp() {
    one_factory(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn one_factory_on_a_real_apiserver() {
    one_factory(Transport::Real).await;
}
