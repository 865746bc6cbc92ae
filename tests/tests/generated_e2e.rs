//! The golden tree's generated clientset, fake clientset, listers and informer factory,
//! run against the in-memory API server (CRUD also over TCP and on a real kube-apiserver):
//! what a controller written on generated code does, end to end.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kubegen_runtime::cache::factory::FactoryOptions;
use kubegen_runtime::cache::informer::ResourceEventHandlerFuncs;
use kubegen_runtime::client::{DeleteOptions, ListOptions, Patch, PatchOptions, WriteOptions};
use kubegen_runtime::errors::StatusError;
use kubegen_runtime::labels::Selector;
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::{Answer, Reactor, SeedObject};
use kubegen_tests::golden::apis::multi::{v1 as multi_v1, v2 as multi_v2};
use kubegen_tests::golden::apis::samplecontroller::v1alpha1::{Foo, FooSpec, FooStatus};
use kubegen_tests::golden::apis::scaling::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use kubegen_tests::golden::apis::widgets::v1::{ClusterWidget, ClusterWidgetSpec};
use kubegen_tests::golden::clientset::Clientset;
use kubegen_tests::golden::fake::new_simple_clientset;
use kubegen_tests::golden::informers::SharedInformerFactory;

fn new_foo(namespace: &str, name: &str, labels: &[(&str, &str)]) -> Foo {
    let mut obj = Foo::new(
        name,
        FooSpec {
            deployment_name: Some(format!("{name}-deployment")),
            replicas: Some(1),
        },
    );
    obj.metadata.namespace = Some(namespace.to_owned());
    if !labels.is_empty() {
        obj.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
    }
    obj
}

fn names<'a>(objs: impl IntoIterator<Item = &'a Foo>) -> BTreeSet<String> {
    objs.into_iter()
        .map(|o| o.metadata.name.clone().unwrap_or_default())
        .collect()
}

/// The CRD the golden tree was generated from: what the real control plane serves.
const SAMPLE_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../fixtures/crds/samplecontroller.yaml"
);

#[tokio::test]
async fn foo_create_get_list_update_status_apply_delete_through_the_clientset() {
    foo_crud(Transport::Tower).await;
}

#[tokio::test]
async fn foo_crud_over_tcp() {
    foo_crud(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn foo_crud_on_a_real_apiserver() {
    foo_crud(Transport::Real).await;
}

/// Create, get, list by label, update (and a stale one), update_status, merge patch,
/// server-side apply, delete, list across namespaces: through the generated clientset.
async fn foo_crud(transport: Transport) {
    let fake = new_simple_clientset(Vec::new()).await.unwrap();
    let conn = transport
        .connect(fake.server(), [SAMPLE_CRD])
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let cs = Clientset::new(conn.client());
    let foos = cs.samplecontroller_v1alpha1().foos("default");
    let params = WriteOptions::default();

    let created = foos
        .create(&new_foo("default", "web", &[("app", "web")]), &params)
        .await
        .unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert!(created.metadata.resource_version.is_some());
    foos.create(&new_foo("default", "db", &[("app", "db")]), &params)
        .await
        .unwrap();

    let got = foos.get("web").await.unwrap();
    assert_eq!(got, created);
    let web = foos
        .list(&ListOptions::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(names(&web.items), BTreeSet::from(["web".to_owned()]));

    let mut scaled = got.clone();
    scaled.spec.as_mut().unwrap().replicas = Some(3);
    let updated = foos.update(&scaled, &params).await.unwrap();
    assert_eq!(updated.spec.as_ref().unwrap().replicas, Some(3));
    let stale = foos.update(&got, &params).await.unwrap_err();
    assert!(stale.is_conflict(), "{stale}");

    let mut with_status = updated.clone();
    with_status.status = Some(FooStatus {
        available_replicas: Some(3),
    });
    let status = foos.update_status(&with_status, &params).await.unwrap();
    assert_eq!(status.status.unwrap().available_replicas, Some(3));

    let patched = foos
        .patch(
            "db",
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 5}})),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(5));

    let applied = foos
        .apply(
            "cache",
            &new_foo("default", "cache", &[]),
            &PatchOptions::apply("e2e"),
        )
        .await
        .unwrap();
    assert_eq!(
        applied.spec.unwrap().deployment_name.as_deref(),
        Some("cache-deployment")
    );

    foos.delete("web", &DeleteOptions::default()).await.unwrap();
    let gone = foos.get("web").await.unwrap_err();
    assert!(gone.is_not_found(), "{gone}");

    let all = cs
        .samplecontroller_v1alpha1()
        .foos("")
        .list(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(
        names(&all.items),
        BTreeSet::from(["db".to_owned(), "cache".to_owned()])
    );
    conn.close().await;
}

#[tokio::test]
async fn factory_syncs_and_its_listers_see_objects_by_namespace() {
    let seed = [
        new_foo("a", "one", &[("app", "web")]),
        new_foo("b", "two", &[]),
    ];
    let cs = new_simple_clientset(seed.iter().map(SeedObject::from))
        .await
        .unwrap();
    let factory = SharedInformerFactory::new(cs.clientset().clone(), Duration::ZERO);
    let foos = factory.samplecontroller().v1alpha1().foos();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    foos.informer()
        .add_event_handler(
            ResourceEventHandlerFuncs::new().add_func(move |f: &Arc<Foo>, _| {
                let _ = tx.send(f.metadata.name.clone().unwrap_or_default());
            }),
        )
        .unwrap();
    factory.start();
    let synced = factory.wait_for_cache_sync().await;
    // The sync report names the informer (`resource.group`), as the factory does (SEMANTICS 14.1).
    assert_eq!(
        synced.keys().collect::<Vec<_>>(),
        ["foos.samplecontroller.k8s.io"],
        "{synced:?}"
    );
    assert!(synced.values().all(|s| *s));

    let lister = foos.lister();
    let everything = Selector::everything();
    assert_eq!(lister.list(&everything).len(), 2);
    let in_a = lister.foos("a");
    assert_eq!(in_a.list(&everything).len(), 1);
    assert_eq!(
        in_a.get("one").unwrap().metadata.name.as_deref(),
        Some("one")
    );
    assert!(lister.foos("b").get("one").unwrap_err().is_not_found());
    assert_eq!(
        in_a.get("missing").unwrap_err().to_string(),
        r#"foo.samplecontroller.k8s.io "missing" not found"#
    );
    let web = Selector::parse("app=web").unwrap();
    assert_eq!(lister.list(&web).len(), 1);

    // A write through the clientset reaches the lister (the handler hears it after the
    // cache has it).
    cs.samplecontroller_v1alpha1()
        .foos("b")
        .create(&new_foo("b", "three", &[]), &WriteOptions::default())
        .await
        .unwrap();
    while rx.recv().await.as_deref() != Some("three") {}
    assert_eq!(lister.foos("b").list(&everything).len(), 2);

    // for_resource: the generic informer of the same kind shares its cache.
    let generic = factory
        .for_resource(&Foo::group_version_resource())
        .unwrap();
    assert_eq!(generic.lister().list_namespaced("b", &everything).len(), 2);
    assert!(generic.informer::<Foo>().is_some());
    factory.shutdown().await;
}

#[tokio::test]
async fn factory_options_namespace_tweak_resync_and_transform_reach_the_informers() {
    let seed = [new_foo("a", "one", &[]), new_foo("b", "two", &[])];
    let cs = new_simple_clientset(seed.iter().map(SeedObject::from))
        .await
        .unwrap();
    let options = FactoryOptions::new(Duration::ZERO)
        .namespace("a")
        .tweak_list_options(|o| o.label_selector = Some("!skip".into()))
        .custom_resync::<Foo>(Duration::from_secs(7))
        .transform(|obj| match obj.downcast::<Foo>() {
            Ok(mut f) => {
                Arc::make_mut(&mut f).metadata.annotations =
                    Some([("seen".to_owned(), "yes".to_owned())].into());
                Ok(f)
            }
            Err(other) => Ok(other),
        });
    let factory = SharedInformerFactory::with_options(cs.clientset().clone(), options);
    let foos = factory.samplecontroller().v1alpha1().foos();
    let _ = foos.informer();
    factory.start();
    assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));
    let cached = foos.lister().list(&Selector::everything());
    assert_eq!(
        names(cached.iter().map(Arc::as_ref)),
        BTreeSet::from(["one".to_owned()])
    );
    assert_eq!(
        cached[0].metadata.annotations.as_ref().unwrap()["seen"],
        "yes",
        "the factory's transform ran"
    );
    assert_eq!(
        factory.factory().resync_period_for::<Foo>(),
        Duration::from_secs(7)
    );
    let requests: Vec<_> = cs
        .actions()
        .into_iter()
        .filter(|r| r.resource == "foos")
        .collect();
    assert!(!requests.is_empty());
    for r in requests {
        assert_eq!(r.namespace, "a", "{r:?}");
        assert!(r.query.contains("labelSelector=%21skip"), "{r:?}");
    }
    let unknown = kube::core::GroupVersionResource::gvr("example.com", "v1", "nothings");
    assert!(factory.for_resource(&unknown).is_err());
    factory.shutdown().await;
}

#[tokio::test]
async fn fake_clientset_records_actions_and_reactor_errors_reach_the_caller() {
    let cs = new_simple_clientset([SeedObject::from(&new_foo("default", "web", &[]))])
        .await
        .unwrap();
    cs.add_reactor(
        Reactor::new("update", "foos")
            .times(1)
            .error(StatusError::too_many_requests("slow down", 1)),
    );
    let foos = cs.samplecontroller_v1alpha1().foos("default");
    let web = foos.get("web").await.unwrap();
    let err = foos
        .update(&web, &WriteOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.status().unwrap().code(), 429, "{err}");
    // The reactor acted once; the retry goes through.
    foos.update(&web, &WriteOptions::default()).await.unwrap();

    let actions: Vec<(String, String, String, String)> = cs
        .actions()
        .into_iter()
        .map(|r| (r.verb, r.resource, r.namespace, r.name))
        .collect();
    let expected = |verb: &str| {
        (
            verb.to_owned(),
            "foos".to_owned(),
            "default".to_owned(),
            "web".to_owned(),
        )
    };
    assert_eq!(
        actions,
        vec![expected("get"), expected("update"), expected("update")]
    );
}

#[tokio::test]
async fn fake_clientset_seeds_typed_and_json_objects_of_several_kinds() {
    let widget = ClusterWidget::new("w", ClusterWidgetSpec::default());
    let cs = new_simple_clientset([
        SeedObject::from(&new_foo("default", "typed", &[])),
        SeedObject::from(&widget),
        SeedObject::from(serde_json::json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
            "metadata": {"name": "json", "namespace": "default"},
            "spec": {"deploymentName": "d", "replicas": 1},
        })),
    ])
    .await
    .unwrap();
    let foos = cs
        .samplecontroller_v1alpha1()
        .foos("default")
        .list(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(
        names(&foos.items),
        BTreeSet::from(["json".to_owned(), "typed".to_owned()])
    );
    let w = cs.widgets_v1().cluster_widgets().get("w").await.unwrap();
    assert!(w.metadata.uid.is_some());
    // The typed admin API reads the same storage.
    let stored = cs
        .server()
        .objects::<Foo>()
        .get("default", "typed")
        .unwrap();
    assert_eq!(
        stored.and_then(|f| f.metadata.name).as_deref(),
        Some("typed")
    );

    // A kind the fake does not serve is an error, not a silent drop.
    let unknown = new_simple_clientset([SeedObject::from(serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Nothing", "metadata": {"name": "x"},
    }))])
    .await;
    assert!(unknown.is_err());
}

#[tokio::test]
async fn fake_clientset_reactors_answer_with_typed_objects() {
    let cs = new_simple_clientset([SeedObject::from(&new_foo("default", "web", &[]))])
        .await
        .unwrap();
    let foos = cs.samplecontroller_v1alpha1().foos("default");
    // A later-added reactor that fails every get...
    cs.add_reactor(Reactor::new("get", "foos").error(StatusError::new(
        500,
        "InternalError",
        "broken",
    )));
    // ...is consulted after a prepended reaction, which answers gets of "ghost" with a
    // typed object (nothing is stored) and passes every other request on.
    cs.prepend_reactor("get", "foos", |r| {
        if r.name == "ghost" {
            let mut ghost = new_foo(&r.namespace, "ghost", &[]);
            ghost.spec.get_or_insert_with(Default::default).replicas = Some(7);
            Answer::object(&ghost)
        } else {
            Answer::Pass
        }
    });
    let ghost = foos.get("ghost").await.unwrap();
    assert_eq!(ghost.spec.and_then(|s| s.replicas), Some(7));
    assert!(cs
        .server()
        .objects::<Foo>()
        .get("default", "ghost")
        .unwrap()
        .is_none());
    let err = foos.get("web").await.unwrap_err();
    assert_eq!(err.status().unwrap().code(), 500, "{err}");

    // A reactor answering an update with an object: the caller gets it, storage keeps
    // the old state.
    cs.server().clear_reactors();
    let web = foos.get("web").await.unwrap();
    let mut answered = web.clone();
    answered.spec.get_or_insert_with(Default::default).replicas = Some(42);
    cs.add_reactor(
        Reactor::new("update", "foos")
            .body_contains(serde_json::json!({"spec": {"replicas": 3}}))
            .respond(serde_json::to_value(&answered).unwrap()),
    );
    let mut change = web.clone();
    change.spec.get_or_insert_with(Default::default).replicas = Some(3);
    let got = foos
        .update(&change, &WriteOptions::default())
        .await
        .unwrap();
    assert_eq!(got.spec.and_then(|s| s.replicas), Some(42));
    assert_eq!(
        foos.get("web").await.unwrap().spec.and_then(|s| s.replicas),
        Some(1)
    );
    // Another body does not match: the server stores it.
    change.spec.get_or_insert_with(Default::default).replicas = Some(2);
    let got = foos
        .update(&change, &WriteOptions::default())
        .await
        .unwrap();
    assert_eq!(got.spec.and_then(|s| s.replicas), Some(2));
}

#[tokio::test]
async fn scale_subresource_through_the_generated_client() {
    let cs = new_simple_clientset(Vec::new()).await.unwrap();
    let sets = cs.scaling_v1().replica_sets("default");
    let params = WriteOptions::default();
    let created = sets
        .create(
            &ReplicaSet::new(
                "web",
                ReplicaSetSpec {
                    replicas: Some(2),
                    ..Default::default()
                },
            ),
            &params,
        )
        .await
        .unwrap();
    let mut with_status = created.clone();
    with_status.status = Some(ReplicaSetStatus {
        replicas: Some(2),
        selector: Some("app=web".to_owned()),
    });
    let created = sets.update_status(&with_status, &params).await.unwrap();

    // The Scale reads the CRD's specReplicasPath, statusReplicasPath and
    // labelSelectorPath.
    let scale = sets.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(2));
    let status = scale.status.clone().unwrap();
    assert_eq!(status.replicas, 2);
    assert_eq!(status.selector.as_deref(), Some("app=web"));
    assert_eq!(
        scale.metadata.resource_version,
        created.metadata.resource_version
    );

    // An update changes the replicas on the object itself.
    let mut up = scale.clone();
    up.spec.as_mut().unwrap().replicas = Some(3);
    let scaled = sets.update_scale("web", &up, &params).await.unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(3));
    let web = sets.get("web").await.unwrap();
    assert_eq!(web.spec.as_ref().unwrap().replicas, Some(3));
    assert_eq!(web.status, created.status);
    assert_ne!(
        web.metadata.resource_version,
        created.metadata.resource_version
    );
    let stale = sets.update_scale("web", &up, &params).await.unwrap_err();
    assert!(stale.is_conflict(), "{stale}");

    let patched = sets
        .patch_scale(
            "web",
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 4}})),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(4));
    assert_eq!(
        sets.get("web").await.unwrap().spec.unwrap().replicas,
        Some(4)
    );

    // The fake clientset saw the scale requests as such.
    let scale_verbs: Vec<String> = cs
        .actions()
        .into_iter()
        .filter(|r| r.resource == "replicasets" && r.subresource == "scale")
        .map(|r| r.verb)
        .collect();
    assert_eq!(scale_verbs, ["get", "update", "update", "patch"]);

    // A kind without the subresource has no scale verbs in its generated client; the
    // server answers 404 to the runtime client's request.
    cs.samplecontroller_v1alpha1()
        .foos("default")
        .create(&new_foo("default", "f", &[]), &params)
        .await
        .unwrap();
    let err = cs
        .samplecontroller_v1alpha1()
        .foos("default")
        .resource_client()
        .get_scale("f")
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

#[tokio::test]
async fn cluster_scoped_kind_end_to_end() {
    let cs = new_simple_clientset(Vec::new()).await.unwrap();
    let widgets = cs.widgets_v1().cluster_widgets();
    let created = widgets
        .create(
            &ClusterWidget::new("blue", ClusterWidgetSpec::default()),
            &WriteOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.namespace, None);
    assert_eq!(
        widgets.resource_client().object_url("blue"),
        "/apis/widgets.example.com/v1/clusterwidgets/blue"
    );

    let factory = SharedInformerFactory::new(cs.clientset().clone(), Duration::ZERO);
    let informer = factory.widgets().v1().cluster_widgets();
    let _ = informer.informer();
    factory.start();
    assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));
    assert_eq!(informer.lister().get("blue").unwrap().as_ref(), &created);
    assert!(informer.lister().get("red").unwrap_err().is_not_found());
    widgets
        .delete("blue", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(widgets
        .get("blue")
        .await
        .unwrap_err()
        .status()
        .unwrap()
        .is_not_found());
    factory.shutdown().await;
}

#[tokio::test]
async fn each_version_of_a_multi_version_kind_has_its_own_client_and_informer() {
    let cs = new_simple_clientset(Vec::new()).await.unwrap();
    let v2 = multi_v2::Gadget::new(
        "g",
        multi_v2::GadgetSpec {
            parts: Some(vec![multi_v2::GadgetSpecParts {
                name: "wheel".into(),
                count: Some(4),
            }]),
        },
    );
    let stored = cs
        .multi_v2()
        .gadgets("default")
        .create(&v2, &WriteOptions::default())
        .await
        .unwrap();
    assert_eq!(stored.spec, v2.spec);
    let v1 = multi_v1::Gadget::new(
        "g",
        multi_v1::GadgetSpec {
            part_names: Some(vec!["wheel".into()]),
        },
    );
    cs.multi_v1()
        .gadgets("default")
        .create(&v1, &WriteOptions::default())
        .await
        .unwrap();
    let factory = SharedInformerFactory::new(cs.clientset().clone(), Duration::ZERO);
    let (i1, i2) = (
        factory.multi().v1().gadgets(),
        factory.multi().v2().gadgets(),
    );
    let _ = (i1.informer(), i2.informer());
    factory.start();
    let synced = factory.wait_for_cache_sync().await;
    // Unique informer names: the second version asked for carries its version.
    assert_eq!(
        synced.keys().map(String::as_str).collect::<Vec<_>>(),
        ["gadgets.multi.example.com", "gadgets.v2.multi.example.com"],
        "{synced:?}"
    );
    assert!(synced.values().all(|s| *s));
    assert_eq!(
        i1.lister().gadgets("default").get("g").unwrap().spec,
        v1.spec
    );
    assert_eq!(
        i2.lister().gadgets("default").get("g").unwrap().spec,
        v2.spec
    );
    factory.shutdown().await;

    // A v2 object never reads as a v1 one: the apiVersion is checked.
    let wire = serde_json::to_value(&stored).unwrap();
    let err = serde_json::from_value::<multi_v1::Gadget>(wire).unwrap_err();
    assert!(err.to_string().contains("multi.example.com/v2"), "{err}");
}

#[test]
fn mismatched_kind_is_rejected_and_absent_type_meta_accepted() {
    let json = serde_json::json!({"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Bar", "metadata": {}});
    assert!(serde_json::from_value::<Foo>(json).is_err());
    let bare: Foo = serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}})).unwrap();
    assert_eq!(bare.metadata.name.as_deref(), Some("x"));
    assert_eq!(
        Foo::new("x", FooSpec::default()).metadata.name.as_deref(),
        Some("x")
    );
}

/// The fake clientset registers each kind from its `RESOURCE_INFO` with the CRD's schema,
/// so a test sees what the API server would do with the real CRD: out-of-range values
/// are rejected with the field's path, and unknown fields are pruned.
#[tokio::test]
async fn the_fake_clientset_validates_and_prunes_with_the_crd_schema() {
    let cs = new_simple_clientset(Vec::new()).await.unwrap();
    let mut foo = new_foo("ns", "too-many", &[]);
    foo.spec.as_mut().unwrap().replicas = Some(11);
    let err = cs
        .samplecontroller_v1alpha1()
        .foos("ns")
        .create(&foo, &WriteOptions::default())
        .await
        .unwrap_err();
    let status = err.status().expect("an API error");
    assert_eq!(status.code(), 422, "{status:?}");
    assert!(status.message().contains("spec.replicas"), "{status:?}");

    let stored = cs
        .server()
        .create_object(serde_json::json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "metadata": {"name": "pruned", "namespace": "ns"},
            "spec": {"replicas": 2, "unknownField": "dropped"},
        }))
        .unwrap();
    assert_eq!(stored["spec"], serde_json::json!({"replicas": 2}));
    let read = cs
        .samplecontroller_v1alpha1()
        .foos("ns")
        .get("pruned")
        .await
        .unwrap();
    assert_eq!(read.spec.unwrap().replicas, Some(2));
}
