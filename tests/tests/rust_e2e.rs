//! The tree generated from hand-written Rust types (fixtures/rust -> fixtures/golden-rust)
//! run against the in-memory API server, over its tower Service (the fake clientset) and
//! over TCP, and against a real kube-apiserver with the CRDs `kubegen crd` wrote
//! (fixtures/golden-crd; `hack/test.sh real` runs those, they are ignored otherwise): create, the informer sees it, the lister gets it, update_status, delete. Once
//! for a `+genclient` kind (sample-controller's `Foo`) and once for a kube-derive kind
//! (`Document`), plus the read-only, cluster-scoped and scale kinds.

use std::sync::Arc;
use std::time::Duration;

use kubegen_runtime::cache::delta_fifo::DeltaObject;
use kubegen_runtime::cache::informer::ResourceEventHandlerFuncs;
use kubegen_runtime::client::{DeleteOptions, Patch, PatchOptions, WriteOptions};
use kubegen_runtime::labels::Selector;
use kubegen_runtime::testing::transport::{Connection, Transport};
use kubegen_tests::apis::documents::v1::{Document, DocumentSpec, DocumentStatus};
use kubegen_tests::apis::samplecontroller::v1alpha1::{Bar, Foo, FooSpec, FooStatus};
use kubegen_tests::apis::scaling::v1::{Pool, PoolSpec, PoolStatus};
use kubegen_tests::apis::widgets::v1beta1::{Color, Gizmo, GizmoSpec, Shape};
use kubegen_tests::golden_rust::clientset::Clientset;
use kubegen_tests::golden_rust::fake::{new_simple_clientset, FakeClientset};
use kubegen_tests::golden_rust::informers::SharedInformerFactory;
use tokio::sync::mpsc;

/// The CRDs `kubegen crd` writes for these types: what the real control plane serves.
const GOLDEN_CRD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/golden-crd");

/// A fake clientset and the clientset a test drives: the fake's own (tower), one on the
/// same server through a real port (TCP), or one on a real control plane with the CRDs
/// `kubegen crd` wrote for these types installed (Real).
async fn clientset(transport: Transport) -> (FakeClientset, Clientset, Connection) {
    let fake = new_simple_clientset(Vec::new()).await.unwrap();
    let conn = transport
        .connect(fake.server(), [GOLDEN_CRD])
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let cs = match transport {
        Transport::Tower => fake.clientset().clone(),
        _ => Clientset::new(conn.client()),
    };
    (fake, cs, conn)
}

fn new_foo(name: &str) -> Foo {
    let mut obj = Foo {
        spec: FooSpec {
            deployment_name: format!("{name}-deployment"),
            replicas: Some(1),
        },
        ..Foo::default()
    };
    obj.metadata.name = Some(name.to_owned());
    obj.metadata.namespace = Some("default".to_owned());
    obj
}

async fn foo_lifecycle(transport: Transport) {
    let (_fake, cs, conn) = clientset(transport).await;
    let factory = SharedInformerFactory::new(cs.clone(), Duration::ZERO);
    let informer = factory.samplecontroller().v1alpha1().foos();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (add, delete) = (tx.clone(), tx);
    informer
        .informer()
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |f: &Arc<Foo>, _| {
                    let _ = add.send(("add", f.metadata.name.clone().unwrap_or_default()));
                })
                .delete_func(move |f: &DeltaObject<Foo>| {
                    let name = f.object().and_then(|f| f.metadata.name.clone());
                    let _ = delete.send(("delete", name.unwrap_or_default()));
                }),
        )
        .unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));

    let foos = cs.samplecontroller_v1alpha1().foos("default");
    let params = WriteOptions::default();
    let created = foos.create(&new_foo("web"), &params).await.unwrap();
    assert!(created.metadata.resource_version.is_some());
    assert_eq!(
        rx.recv().await,
        Some(("add", "web".to_owned())),
        "{transport:?}"
    );
    let cached = informer.lister().foos("default").get("web").unwrap();
    // The cache drops managedFields (which a real server writes on every create).
    let mut expected = created.clone();
    expected.metadata.managed_fields = None;
    assert_eq!(*cached, expected);

    let mut with_status = created.clone();
    with_status.status = Some(FooStatus {
        available_replicas: 1,
    });
    let updated = foos.update_status(&with_status, &params).await.unwrap();
    assert_eq!(updated.status, with_status.status);
    assert_eq!(foos.get("web").await.unwrap().status, with_status.status);

    foos.delete("web", &DeleteOptions::default()).await.unwrap();
    assert_eq!(rx.recv().await, Some(("delete", "web".to_owned())));
    assert!(informer
        .lister()
        .foos("default")
        .get("web")
        .unwrap_err()
        .is_not_found());
    factory.shutdown().await;
    conn.close().await;
}

async fn document_lifecycle(transport: Transport) {
    let (_fake, cs, conn) = clientset(transport).await;
    let factory = SharedInformerFactory::new(cs.clone(), Duration::ZERO);
    let informer = factory.documents().v1().documents();
    let (tx, mut rx) = mpsc::unbounded_channel();
    informer
        .informer()
        .add_event_handler(ResourceEventHandlerFuncs::new().add_func(
            move |d: &Arc<Document>, _| {
                let _ = tx.send(d.metadata.name.clone().unwrap_or_default());
            },
        ))
        .unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));

    let docs = cs.documents_v1().documents("default");
    let params = WriteOptions::default();
    let mut doc = Document::new(
        "guide",
        DocumentSpec {
            title: "Guide".to_owned(),
            pages: 3,
        },
    );
    doc.metadata.namespace = Some("default".to_owned());
    let created = docs.create(&doc, &params).await.unwrap();
    assert_eq!(created.spec, doc.spec);
    assert_eq!(rx.recv().await.as_deref(), Some("guide"), "{transport:?}");
    let cached = informer.lister().documents("default").get("guide").unwrap();
    let mut expected = created.clone();
    expected.metadata.managed_fields = None;
    assert_eq!(*cached, expected);

    let mut published = created.clone();
    published.status = Some(DocumentStatus { published: true });
    let updated = docs.update_status(&published, &params).await.unwrap();
    assert_eq!(updated.status, published.status);
    let patched = docs
        .patch(
            "guide",
            &Patch::Merge(serde_json::json!({"spec": {"pages": 4}})),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.pages, 4);
    assert_eq!(patched.status, published.status, "status kept");

    docs.delete("guide", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(docs
        .get("guide")
        .await
        .unwrap_err()
        .status()
        .unwrap()
        .is_not_found());
    factory.shutdown().await;
    conn.close().await;
}

#[tokio::test]
async fn marker_kind_lifecycle_over_tower() {
    foo_lifecycle(Transport::Tower).await;
}

#[tokio::test]
async fn marker_kind_lifecycle_over_tcp() {
    foo_lifecycle(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn marker_kind_lifecycle_on_a_real_apiserver() {
    foo_lifecycle(Transport::Real).await;
}

#[tokio::test]
async fn kube_derive_kind_lifecycle_over_tower() {
    document_lifecycle(Transport::Tower).await;
}

#[tokio::test]
async fn kube_derive_kind_lifecycle_over_tcp() {
    document_lifecycle(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn kube_derive_kind_lifecycle_on_a_real_apiserver() {
    document_lifecycle(Transport::Real).await;
}

#[tokio::test]
async fn read_only_kind_is_listed_and_watched_but_not_written() {
    let bar = serde_json::json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Bar",
        "metadata": {"name": "b", "namespace": "default"}, "spec": {"message": "hi"},
    });
    let fake = new_simple_clientset([bar.into()]).await.unwrap();
    let got = fake
        .samplecontroller_v1alpha1()
        .bars("default")
        .get("b")
        .await
        .unwrap();
    assert_eq!(got.spec.message, "hi");
    let factory = SharedInformerFactory::new(fake.clientset().clone(), Duration::ZERO);
    let bars = factory.samplecontroller().v1alpha1().bars();
    let _ = bars.informer();
    factory.start();
    assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));
    let listed: Vec<Arc<Bar>> = bars.lister().list(&Selector::everything());
    assert_eq!(listed.len(), 1);
    factory.shutdown().await;
}

#[tokio::test]
async fn cluster_scoped_kind_has_no_namespace_and_no_status_verbs() {
    let fake = new_simple_clientset(Vec::new()).await.unwrap();
    let gizmos = fake.widgets_v1beta1().gizmos();
    let mut gizmo = Gizmo {
        spec: GizmoSpec {
            color: Color::Blue,
            enabled: true,
            size_millis: 12,
            shape: Some(Shape::Rectangle {
                width: 2,
                height: 3,
                label: "r".to_owned(),
            }),
        },
        ..Gizmo::default()
    };
    gizmo.metadata.name = Some("g".to_owned());
    let created = gizmos
        .create(&gizmo, &WriteOptions::default())
        .await
        .unwrap();
    assert_eq!(created.metadata.namespace, None);
    assert_eq!(created.spec, gizmo.spec);
    assert_eq!(
        gizmos.resource_client().object_url("g"),
        "/apis/widgets.example.com/v1beta1/gizmos/g"
    );
    // The generated Clone copies every field, and clone_from reuses the target.
    let mut copy = Gizmo::default();
    copy.clone_from(&created);
    assert_eq!(copy, created);
    for shape in [Shape::Point, Shape::Circle(4)] {
        assert_eq!(shape.clone(), shape);
    }
}

#[tokio::test]
async fn scale_methods_read_and_write_the_declared_paths() {
    let fake = new_simple_clientset(Vec::new()).await.unwrap();
    let pools = fake.scaling_v1().pools("default");
    let params = WriteOptions::default();
    let mut pool = Pool {
        spec: PoolSpec { replicas: Some(2) },
        ..Pool::default()
    };
    pool.metadata.name = Some("p".to_owned());
    let created = pools.create(&pool, &params).await.unwrap();
    let mut with_status = created.clone();
    with_status.status = Some(PoolStatus {
        replicas: 2,
        selector: Some("app=p".to_owned()),
    });
    pools.update_status(&with_status, &params).await.unwrap();
    let scale = pools.get_scale("p").await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(2));
    let status = scale.status.clone().unwrap();
    assert_eq!(
        (status.replicas, status.selector.as_deref()),
        (2, Some("app=p"))
    );
    let mut up = scale.clone();
    up.spec.as_mut().unwrap().replicas = Some(5);
    pools.update_scale("p", &up, &params).await.unwrap();
    assert_eq!(pools.get("p").await.unwrap().spec.replicas, Some(5));
}

/// The fake clientset generated from Rust types registers each kind's schema as `kubegen
/// crd` derives it (the one model): its server validates and defaults with it, as a
/// cluster with the CRD installed does. No CRD is loaded here: the schema comes from the
/// generated `fake::registrations()` alone.
async fn fake_from_rust_types_validates_and_defaults(transport: Transport) {
    let fake = new_simple_clientset(Vec::new()).await.unwrap();
    let conn = transport
        .connect(fake.server(), std::iter::empty::<&str>())
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let cs = match transport {
        Transport::Tower => fake.clientset().clone(),
        _ => Clientset::new(conn.client()),
    };
    let foos = cs.samplecontroller_v1alpha1().foos("default");
    let params = WriteOptions::default();

    // `+kubebuilder:default=1` on replicas.
    let mut unset = new_foo("defaulted");
    unset.spec.replicas = None;
    let created = foos
        .create(&unset, &params)
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    assert_eq!(created.spec.replicas, Some(1), "{transport:?}");

    // `+kubebuilder:validation:Maximum=10` on replicas: 422 at the field's path.
    let mut too_many = new_foo("too-many");
    too_many.spec.replicas = Some(11);
    let err = foos
        .create(&too_many, &params)
        .await
        .expect_err("replicas 11 violates Maximum=10");
    let status = err.status().expect("an API status");
    assert!(status.is_invalid(), "{transport:?}: {status:?}");
    assert!(
        format!("{status:?}").contains("spec.replicas"),
        "{transport:?}: the 422 names the field: {status:?}"
    );

    // `+kubebuilder:validation:Pattern` on deploymentName.
    let mut bad = new_foo("bad-name");
    bad.spec.deployment_name = "Not_A_Name".to_owned();
    let err = foos
        .create(&bad, &params)
        .await
        .expect_err("the pattern refuses upper case and underscores");
    let status = err.status().expect("an API status");
    assert!(
        status.is_invalid() && format!("{status:?}").contains("spec.deploymentName"),
        "{transport:?}: {status:?}"
    );
    conn.close().await;
}

#[tokio::test]
async fn fake_from_rust_types_validates_and_defaults_over_tower() {
    fake_from_rust_types_validates_and_defaults(Transport::Tower).await;
}

#[tokio::test]
async fn fake_from_rust_types_validates_and_defaults_over_tcp() {
    fake_from_rust_types_validates_and_defaults(Transport::Tcp).await;
}
