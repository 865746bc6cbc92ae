//! A controller's built-in and custom informers from one factory and one client, as
//! kubernetes/sample-controller watches Deployments beside its Foos: the custom tree
//! (generated from a CRD) and the built-in API (`kubegen-kubernetes`) share one runtime
//! factory, so one `start` and one `wait_for_cache_sync` cover both, and asking either
//! tree for an informer of a type never creates a second one.

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubegen_kubernetes::clientset::Clientset as KubeClientset;
use kubegen_kubernetes::informers::SharedInformerFactory as KubeInformerFactory;
use kubegen_runtime::client::WriteParams;
use kubegen_runtime::labels::Selector;
use kubegen_tests::golden::apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use kubegen_tests::golden::clientset::Clientset;
use kubegen_tests::golden::informers::SharedInformerFactory;

async fn one_factory_for_foos_and_deployments(client: kube::Client) {
    let kube_cs = KubeClientset::new(client.clone());
    let cs = Clientset::new(client);
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
        .create(&example, &WriteParams::default())
        .await
        .unwrap();
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some("example-web".into()),
            namespace: Some("ns".into()),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec::default(),
        status: None,
    };
    kube_cs
        .apps_v1()
        .deployments("ns")
        .create(&deployment, &WriteParams::default())
        .await
        .unwrap();

    let builtin = KubeInformerFactory::new(kube_cs, Duration::from_secs(30));
    let custom =
        SharedInformerFactory::from_shared(builtin.factory().clone(), builtin.stop_token().clone());
    let foos = custom.samplecontroller().v1alpha1().foos();
    let deployments = builtin.apps().v1().deployments();
    // The same type asked for through either tree is one informer: the factory holds
    // exactly two (checked below by what one wait reports).
    let _ = custom.factory().informer::<Deployment>();
    let _ = deployments.informer();
    let _ = foos.informer();

    builtin.start();
    let synced = custom.wait_for_cache_sync().await;
    assert_eq!(synced.len(), 2, "{synced:?}");
    assert!(synced.values().all(|s| *s), "{synced:?}");
    assert_eq!(foos.lister().list(&Selector::everything()).len(), 1);
    assert!(deployments
        .lister()
        .deployments("ns")
        .get("example-web")
        .is_ok());
    custom.shutdown().await;
}

#[tokio::test]
async fn one_factory_over_tower() {
    let server = kubegen_runtime::testing::ApiServer::new();
    for r in kubegen_tests::golden::fake::registrations().unwrap() {
        server.register_if_absent(r);
    }
    one_factory_for_foos_and_deployments(kube::Client::new(server.service(), "default")).await;
}

#[tokio::test]
async fn one_factory_over_tcp() {
    let server = kubegen_runtime::testing::ApiServer::new();
    for r in kubegen_tests::golden::fake::registrations().unwrap() {
        server.register_if_absent(r);
    }
    let tcp = server.serve_tcp().await.unwrap();
    one_factory_for_foos_and_deployments(tcp.client().await.unwrap()).await;
    tcp.shutdown().await;
}
