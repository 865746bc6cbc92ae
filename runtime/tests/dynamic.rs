//! Resources chosen at run time, end to end against the in-memory API server, each test
//! over the tower Service and over TCP: the dynamic client's verbs, the REST mapper
//! (including a miss that succeeds after a reset), a dynamic informer for a CRD created
//! while the program runs, and the metadata informer over Pods.

use std::sync::Arc;
use std::time::Duration;

use kubegen_runtime::cache::dynamic::{
    DynamicSharedInformerFactory, MetadataSharedInformerFactory,
};
use kubegen_runtime::cache::factory::FactoryOptions;
use kubegen_runtime::cache::informer::ResourceEventHandlerFuncs;
use kubegen_runtime::client::discovery::RestMapper;
use kubegen_runtime::client::dynamic::DynamicClient;
use kubegen_runtime::client::metadata::{MetadataClient, PartialObjectMetadata};
use kubegen_runtime::client::{
    DeleteOptions, ListOptions, Patch, PatchOptions, WatchEvent, WriteOptions,
};
use kubegen_runtime::labels::Selector;
use kubegen_runtime::object::{DynamicObject, GroupVersionKind, GroupVersionResource};
use kubegen_runtime::testing::ApiServer;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A server and a client on one transport.
struct Env {
    server: ApiServer,
    client: kube::Client,
}

async fn both(f: impl AsyncFn(Env)) {
    let s = ApiServer::new();
    let client = kube::Client::new(s.service(), "default");
    f(Env { server: s, client }).await;

    let s = ApiServer::new();
    let tcp = s.serve_tcp().await.expect("tcp");
    let client = tcp.client().await.expect("client");
    f(Env { server: s, client }).await;
    tcp.shutdown().await;
}

fn gvr(g: &str, v: &str, r: &str) -> GroupVersionResource {
    GroupVersionResource::gvr(g, v, r)
}

fn dynamic(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("a DynamicObject")
}

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.kubegen.dev"},
        "spec": {
            "group": "example.kubegen.dev",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget",
                      "listKind": "GadgetList", "shortNames": ["gd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
                    },
                }},
            }],
        },
    })
}

fn gadget(ns: &str, name: &str, size: i64) -> DynamicObject {
    dynamic(json!({
        "apiVersion": "example.kubegen.dev/v1", "kind": "Gadget",
        "metadata": {"name": name, "namespace": ns, "labels": {"tier": "web"}},
        "spec": {"size": size},
    }))
}

/// Creates the Gadget CRD through the dynamic client, as a program would.
async fn create_crd(client: &kube::Client) {
    DynamicClient::new(client.clone())
        .resource(&gvr(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
        ))
        .create(&dynamic(crd()), &WriteOptions::default())
        .await
        .expect("CRD created");
}

#[tokio::test]
async fn dynamic_client_has_every_verb() {
    both(async |env| {
        create_crd(&env.client).await;
        let gadgets = DynamicClient::new(env.client.clone())
            .resource(&gvr("example.kubegen.dev", "v1", "gadgets"));
        let ns = gadgets.namespace("ns");
        let wp = WriteOptions::default();

        let created = ns.create(&gadget("ns", "a", 1), &wp).await.expect("create");
        assert_eq!(created.types.as_ref().map(|t| t.kind.as_str()), Some("Gadget"));
        assert_eq!(created.data["spec"]["size"], 1);
        ns.create(&gadget("ns", "b", 2), &wp).await.expect("create b");

        let got = ns.get("a").await.expect("get");
        assert_eq!(got.metadata.uid, created.metadata.uid);
        let all = gadgets.list(&ListOptions::default()).await.expect("list");
        assert_eq!(all.items.len(), 2);
        let watch_from = all.resource_version.clone();

        let mut changed = got.clone();
        changed.data["spec"]["size"] = json!(3);
        let updated = ns.update(&changed, &wp).await.expect("update");
        assert_eq!(updated.data["spec"]["size"], 3);

        let mut with_status = updated.clone();
        with_status.data["status"] = json!({"ready": true});
        with_status.data["spec"]["size"] = json!(9);
        let st = ns.update_status(&with_status, &wp).await.expect("update_status");
        assert_eq!(st.data["status"]["ready"], true);
        assert_eq!(st.data["spec"]["size"], 3, "update_status leaves the spec");

        let patched = ns
            .patch("a", &Patch::Merge(json!({"spec": {"size": 5}})), &PatchOptions::default())
            .await
            .expect("patch");
        assert_eq!(patched.data["spec"]["size"], 5);

        let applied = ns
            .apply("c", &gadget("ns", "c", 7), &PatchOptions::apply("dynamic-test"))
            .await
            .expect("apply");
        assert_eq!(applied.data["spec"]["size"], 7);

        let mut events = ns
            .watch(&ListOptions::default().resource_version(&watch_from))
            .await
            .expect("watch");
        let first = futures::StreamExt::next(&mut events).await;
        assert!(
            matches!(&first, Some(WatchEvent::Modified(o)) if o.metadata.name.as_deref() == Some("a")),
            "{first:?}"
        );

        ns.delete("a", &DeleteOptions::default()).await.expect("delete");
        assert!(ns.get("a").await.expect_err("gone").is_not_found());
        let deleted = ns
            .delete_collection(&DeleteOptions::default(), &ListOptions::default())
            .await
            .expect("delete_collection");
        assert_eq!(deleted.object().map(|l| l.items.len()), Some(2));
        assert!(gadgets.list(&ListOptions::default()).await.expect("list").items.is_empty());
    })
    .await;
}

#[tokio::test]
async fn rest_mapper_maps_kinds_resources_scopes_and_short_names() {
    both(async |env| {
        let mapper = RestMapper::new(env.client.clone());
        let deploy = mapper
            .rest_mapping("apps", "Deployment", &[])
            .await
            .expect("Deployment");
        assert_eq!(deploy.resource, gvr("apps", "v1", "deployments"));
        assert!(deploy.namespaced);
        let ns = mapper
            .rest_mapping("", "Namespace", &["v1"])
            .await
            .expect("Namespace");
        assert_eq!(
            (ns.resource.resource.as_str(), ns.namespaced),
            ("namespaces", false)
        );
        assert_eq!(
            mapper.kind_for(&gvr("", "", "pods")).await.expect("pods"),
            GroupVersionKind::gvk("", "v1", "Pod")
        );
        assert_eq!(
            mapper
                .resource_for(&gvr("", "", "pod"))
                .await
                .expect("singular"),
            gvr("", "v1", "pods")
        );
        assert_eq!(
            mapper
                .resource_for(&gvr("apps", "", "deploy"))
                .await
                .expect("short name"),
            gvr("apps", "v1", "deployments")
        );
        assert!(mapper
            .rest_mapping("apps", "Deployment", &["v9"])
            .await
            .expect_err("no such version")
            .is_no_match());

        // The cache is filled; a CRD created now is a miss, then found after the reset.
        create_crd(&env.client).await;
        let m = mapper
            .rest_mapping("example.kubegen.dev", "Gadget", &[])
            .await
            .expect("Gadget");
        assert_eq!(m.resource, gvr("example.kubegen.dev", "v1", "gadgets"));
        assert_eq!(m.info.short_names, vec!["gd".to_owned()]);
        assert_eq!(
            mapper
                .resource_for(&gvr("", "", "gd"))
                .await
                .expect("short name of a CRD"),
            gvr("example.kubegen.dev", "v1", "gadgets")
        );
        let missing = mapper
            .rest_mapping("example.kubegen.dev", "Nothing", &[])
            .await
            .expect_err("absent after a retry too");
        assert!(missing.is_no_match(), "{missing}");
        let _ = &env.server;
    })
    .await;
}

#[tokio::test]
async fn dynamic_informer_for_a_crd_created_at_run_time() {
    both(async |env| {
        let factory = DynamicSharedInformerFactory::new(
            env.client.clone(),
            FactoryOptions::new(Duration::ZERO),
        );
        // Discovery is read before the CRD exists.
        let pods = factory
            .for_resource(&gvr("", "v1", "pods"))
            .await
            .expect("pods");
        let gadgets_gvr = gvr("example.kubegen.dev", "v1", "gadgets");
        assert!(factory
            .for_resource(&gadgets_gvr)
            .await
            .expect_err("no CRD yet")
            .is_no_match());

        create_crd(&env.client).await;
        let client = DynamicClient::new(env.client.clone()).resource(&gadgets_gvr);
        client
            .namespace("ns")
            .create(&gadget("ns", "a", 1), &WriteOptions::default())
            .await
            .expect("create");
        let gadgets = factory
            .for_resource(&gadgets_gvr)
            .await
            .expect("found after reset");
        let again = factory
            .for_resource(&gvr("", "", "gd"))
            .await
            .expect("by short name");
        // The same informer: two informers in all (pods and gadgets), see below.
        assert_eq!(again.mapping().resource, gadgets_gvr);

        let (tx, mut added) = mpsc::unbounded_channel();
        gadgets
            .informer()
            .add_event_handler(ResourceEventHandlerFuncs::<DynamicObject>::new().add_func(
                move |o, _| {
                    let _ = tx.send(o.metadata.name.clone().unwrap_or_default());
                },
            ))
            .expect("handler");
        let stop = CancellationToken::new();
        factory.start(&stop);
        let synced = factory.wait_for_cache_sync(&stop).await;
        assert_eq!(synced.len(), 2, "one informer per resource: {synced:?}");
        assert!(synced.values().all(|s| *s), "{synced:?}");
        assert!(pods.informer().has_synced());

        let a = gadgets.lister().namespace("ns").get("a").expect("cached");
        let types = a.types.as_ref().expect("apiVersion and kind");
        assert_eq!(
            (types.api_version.as_str(), types.kind.as_str()),
            ("example.kubegen.dev/v1", "Gadget")
        );
        assert_eq!(a.data["spec"]["size"], 1);
        assert!(gadgets
            .lister()
            .namespace("ns")
            .get("zz")
            .expect_err("miss")
            .to_string()
            .contains("gadgets"));
        assert_eq!(added.recv().await.as_deref(), Some("a"));

        client
            .namespace("ns")
            .create(&gadget("ns", "b", 2), &WriteOptions::default())
            .await
            .expect("create b");
        assert_eq!(added.recv().await.as_deref(), Some("b"));
        let web = Selector::parse("tier=web").expect("selector");
        assert_eq!(gadgets.lister().list(&web).len(), 2);
        factory.shutdown().await;
        assert!(gadgets.informer().is_stopped());
        let _ = &env.server;
    })
    .await;
}

#[tokio::test]
async fn metadata_client_and_informer_over_pods() {
    both(async |env| {
        for (ns, name) in [("a", "p1"), ("a", "p2"), ("b", "p3")] {
            env.server
                .create(
                    "pods",
                    json!({
                        "metadata": {"name": name, "namespace": ns, "labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    }),
                )
                .expect("pod");
        }
        let pods_gvr = gvr("", "v1", "pods");
        let client = MetadataClient::new(env.client.clone());
        let one = client
            .resource(&pods_gvr)
            .namespace("a")
            .get("p1")
            .await
            .expect("get");
        let types = one.types.as_ref().expect("types");
        assert_eq!(
            (types.api_version.as_str(), types.kind.as_str()),
            ("meta.k8s.io/v1", "PartialObjectMetadata")
        );

        let factory = MetadataSharedInformerFactory::new(
            env.client.clone(),
            FactoryOptions::new(Duration::ZERO),
        );
        let pods = factory.for_resource(&pods_gvr).await.expect("pods");
        let (tx, mut seen) = mpsc::unbounded_channel::<Arc<PartialObjectMetadata>>();
        let tx2 = tx.clone();
        pods.informer()
            .add_event_handler(
                ResourceEventHandlerFuncs::<PartialObjectMetadata>::new()
                    .add_func(move |o, _| {
                        let _ = tx.send(o.clone());
                    })
                    .update_func(move |_, o| {
                        let _ = tx2.send(o.clone());
                    }),
            )
            .expect("handler");
        let stop = CancellationToken::new();
        factory.start(&stop);
        assert!(factory
            .wait_for_cache_sync(&stop)
            .await
            .values()
            .all(|s| *s));
        assert_eq!(pods.lister().list(&Selector::everything()).len(), 3);
        assert_eq!(
            pods.lister()
                .namespace("a")
                .list(&Selector::everything())
                .len(),
            2
        );
        let p3 = pods.lister().namespace("b").get("p3").expect("p3");
        assert_eq!(
            p3.types.as_ref().map(|t| t.kind.as_str()),
            Some("PartialObjectMetadata")
        );
        assert_eq!(
            p3.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .map(String::as_str),
            Some("web")
        );
        assert!(p3.metadata.managed_fields.is_none());
        for _ in 0..3 {
            seen.recv().await.expect("initial add");
        }
        // A change arrives through the watch, as metadata too.
        env.server.touch("pods", "a", "p2").expect("touch");
        let changed = seen.recv().await.expect("update");
        assert_eq!(changed.metadata.name.as_deref(), Some("p2"));
        assert_eq!(
            changed.types.as_ref().map(|t| t.api_version.as_str()),
            Some("meta.k8s.io/v1")
        );
        factory.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn typed_metadata_client_and_factory_namespace_and_selector() {
    both(async |env| {
        for (ns, name, app) in [("a", "p1", "web"), ("a", "p2", "db"), ("b", "p3", "web")] {
            env.server
                .create(
                    "pods",
                    json!({
                        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    }),
                )
                .expect("pod");
        }
        // The typed form needs no resource: PartialObjectMeta<Pod> names Pods.
        let typed = kubegen_runtime::client::ResourceClient::<
            kube::core::PartialObjectMeta<k8s_openapi::api::core::v1::Pod>,
        >::namespaced(env.client.clone(), "a");
        let list = typed.list(&ListOptions::default()).await.expect("list");
        assert_eq!(list.items.len(), 2);
        assert!(list
            .items
            .iter()
            .all(|p| p.types.as_ref().map(|t| t.kind.as_str()) == Some("PartialObjectMetadata")));

        let options = FactoryOptions::new(Duration::ZERO)
            .namespace("a")
            .tweak_list_options(|o| o.label_selector = Some("app=web".into()));
        let factory = MetadataSharedInformerFactory::new(env.client.clone(), options);
        let pods = factory
            .for_resource(&gvr("", "v1", "pods"))
            .await
            .expect("pods");
        let namespaces = factory
            .for_resource(&gvr("", "v1", "namespaces"))
            .await
            .expect("namespaces");
        assert!(!namespaces.mapping().namespaced);
        let stop = CancellationToken::new();
        factory.start(&stop);
        assert!(factory
            .wait_for_cache_sync(&stop)
            .await
            .values()
            .all(|s| *s));
        let names: Vec<String> = pods
            .lister()
            .list(&Selector::everything())
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        assert_eq!(names, vec!["p1".to_owned()], "namespace a, app=web only");
        factory.shutdown().await;
        factory.start(&stop);
        assert!(
            pods.informer().is_stopped(),
            "nothing starts after shutdown"
        );
    })
    .await;
}
