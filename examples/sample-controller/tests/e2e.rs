//! sample-controller end to end against the in-memory API server (with the Foo CRD),
//! over the tower Service and over TCP, and on a real kube-apiserver (`hack/test.sh real`): a Foo gets its Deployment, owned by it, with its
//! replicas; drifted replicas are brought back; the Foo's status follows the
//! Deployment's available replicas; a Deployment the Foo does not own records
//! `ErrResourceExists` events, retried through the rate limiter (the event's count
//! grows); a Foo without `deploymentName` gets nothing; `Synced` events are recorded; the
//! controller shuts down cleanly.

// The kind is `Foo`: `foo` names one, as in sample-controller's Go code.
#![allow(clippy::disallowed_names)]

use std::time::Duration;

use kubegen_runtime::client::{ListOptions, WriteOptions};
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::ApiServer;
use sample_controller::apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use sample_controller::controller::{self, Clients};
use tokio_util::sync::CancellationToken;

fn foo(name: &str, deployment: &str, replicas: i32) -> Foo {
    let mut foo = Foo {
        spec: FooSpec {
            deployment_name: deployment.into(),
            replicas: Some(replicas),
        },
        ..Foo::default()
    };
    foo.metadata.name = Some(name.into());
    foo.metadata.namespace = Some("ns".into());
    foo
}

async fn eventually<T>(what: &str, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn scenario(client: kube::Client) {
    let clients = Clients::new(client);
    let stop = CancellationToken::new();
    let standin = tokio::spawn(sample_controller::standin::run(
        clients.kube.clone(),
        Duration::from_millis(100),
        stop.clone(),
    ));
    let run = tokio::spawn(controller::run(clients.clone(), 2, stop.clone()));
    let foos = clients.foos.samplecontroller_v1alpha1().foos("ns");
    let deployments = clients.kube.apps_v1().deployments("ns");
    let wp = WriteOptions::default();

    let created = foos
        .create(&foo("web", "web-deploy", 2), &wp)
        .await
        .unwrap();
    let d = eventually("the Deployment", async || {
        deployments.get("web-deploy").await.ok()
    })
    .await;
    assert_eq!(d.spec.replicas, Some(2));
    let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Foo", "web"));
    assert_eq!(Some(&owner.uid), created.metadata.uid.as_ref());
    assert_eq!(owner.controller, Some(true));
    eventually("status.availableReplicas = 2", async || {
        let f = foos.get("web").await.ok()?;
        (f.status?.available_replicas == 2).then_some(())
    })
    .await;

    // Drift: someone scales the Deployment; the controller brings it back.
    let mut drifted = deployments.get("web-deploy").await.unwrap();
    drifted.spec.replicas = Some(5);
    deployments.update(&drifted, &wp).await.unwrap();
    eventually("replicas back at 2", async || {
        let d = deployments.get("web-deploy").await.ok()?;
        (d.spec.replicas == Some(2)).then_some(())
    })
    .await;

    // A Deployment the Foo does not own: Warning events, retried with backoff.
    let mut squatter = controller::new_deployment(&foo("x", "taken", 1));
    squatter.metadata.owner_references = None;
    deployments.create(&squatter, &wp).await.unwrap();
    foos.create(&foo("clash", "taken", 1), &wp).await.unwrap();
    // A Foo without a deployment name: reported, nothing created, not retried.
    foos.create(&foo("nameless", "", 1), &wp).await.unwrap();

    let events = clients.kube.core_v1().events("ns");
    let exists = eventually("ErrResourceExists counted at least twice", async || {
        let list = events.list(&ListOptions::default()).await.ok()?;
        list.items.into_iter().find(|e| {
            e.reason.as_deref() == Some(controller::ERR_RESOURCE_EXISTS)
                && e.count.unwrap_or(0) >= 2
        })
    })
    .await;
    assert_eq!(exists.type_.as_deref(), Some("Warning"));
    assert_eq!(exists.involved_object.name.as_deref(), Some("clash"));
    assert_eq!(
        exists.message.as_deref(),
        Some("Resource \"taken\" already exists and is not managed by Foo")
    );
    let list = events.list(&ListOptions::default()).await.unwrap();
    let synced = list
        .items
        .iter()
        .find(|e| e.reason.as_deref() == Some(controller::SUCCESS_SYNCED))
        .expect("a Synced event");
    assert_eq!(
        synced.message.as_deref(),
        Some(controller::MESSAGE_RESOURCE_SYNCED)
    );
    assert_eq!(synced.involved_object.name.as_deref(), Some("web"));
    assert!(
        !list
            .items
            .iter()
            .any(|e| e.involved_object.name.as_deref() == Some("nameless")),
        "a Foo without deploymentName records nothing"
    );
    let names: Vec<String> = deployments
        .list(&ListOptions::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|d| d.metadata.name)
        .collect();
    assert_eq!(names.len(), 2, "only web-deploy and taken: {names:?}");

    stop.cancel();
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the controller shuts down")
        .unwrap()
        .unwrap();
    standin.await.unwrap();
}

/// The in-memory server with the Foo CRD (Tower, Tcp), or a real control plane with the
/// CRD file installed and the namespace the scenario writes into (Real).
async fn run(transport: Transport) {
    let server = ApiServer::new();
    server.register_crd(sample_controller::CRD).unwrap();
    let crd = concat!(env!("CARGO_MANIFEST_DIR"), "/crd");
    let conn = transport
        .connect(&server, [crd])
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    if transport == Transport::Real {
        let ns = k8s_openapi::api::core::v1::Namespace {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        kubegen_kubernetes::clientset::Clientset::new(conn.client())
            .core_v1()
            .namespaces()
            .create(&ns, &WriteOptions::default())
            .await
            .unwrap();
    }
    scenario(conn.client()).await;
    conn.close().await;
}

#[tokio::test]
async fn sample_controller_over_tower() {
    run(Transport::Tower).await;
}

#[tokio::test]
async fn sample_controller_over_tcp() {
    run(Transport::Tcp).await;
}

/// On kube-apiserver with `kubectl apply`'s CRD (no deployment controller runs there:
/// the stand-in plays it, as on the in-memory server).
#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn sample_controller_on_a_real_apiserver() {
    run(Transport::Real).await;
}

/// The checked-in CRD serves exactly the kind the Rust types describe.
#[test]
fn the_crd_matches_the_generated_registration() {
    let regs = kubegen_runtime::testing::Registration::from_crd(sample_controller::CRD).unwrap();
    let info = &Foo::RESOURCE_INFO;
    assert_eq!(regs.len(), 1);
    let reg = &regs[0];
    assert_eq!(
        (
            reg.group.as_str(),
            reg.version.as_str(),
            reg.plural.as_str(),
            reg.kind.as_str()
        ),
        (info.group, info.version, info.plural, info.kind)
    );
    assert_eq!(reg.namespaced, info.namespaced);
    assert_eq!(reg.status, info.status_subresource);
}
