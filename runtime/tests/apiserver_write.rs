//! The write side of the wire protocol (SEMANTICS 9) through `ResourceClient`, each test
//! body run over the in-process tower Service and over TCP via a kubeconfig: create,
//! update, status, patches, server-side apply, deletion with finalizers, garbage
//! collection, delete collection, strict namespaces, custom resources from a CRD, and
//! fault injection.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kubegen_runtime::client::{
    DeleteOptions, Deleted, ListOptions, Patch, PatchOptions, PropagationPolicy, ResourceClient,
    WatchEvent, WriteOptions,
};
use kubegen_runtime::errors::{cause, StatusError};
use kubegen_runtime::testing::{ApiServer, Reactor};
use serde_json::{json, Value};

const CRD: &str = include_str!("fixtures/widgets-crd.yaml");

struct Env {
    server: ApiServer,
    client: kube::Client,
}

fn server(strict: bool) -> ApiServer {
    let s = ApiServer::builder().strict_namespaces(strict).build();
    s.register_crd(CRD).unwrap();
    s
}

/// Runs the test body over the tower Service, then over TCP with a client built from the
/// kubeconfig file.
async fn both_with(strict: bool, f: impl AsyncFn(Env)) {
    let s = server(strict);
    let client = kube::Client::new(s.service(), "default");
    f(Env { server: s, client }).await;

    let s = server(strict);
    let tcp = s.serve_tcp().await.unwrap();
    let client = tcp.client().await.unwrap();
    f(Env { server: s, client }).await;
    tcp.shutdown().await;
}

async fn both(f: impl AsyncFn(Env)) {
    both_with(false, f).await
}

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

fn api_err<T: std::fmt::Debug>(r: Result<T, kubegen_runtime::client::Error>) -> StatusError {
    r.unwrap_err().status().cloned().expect("an API error")
}

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let data: std::collections::BTreeMap<_, _> = data.iter().cloned().collect();
    from(json!({"metadata": {"name": name}, "data": data}))
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    from(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}
        }
    }))
}

async fn next_change<K>(w: &mut (impl Stream<Item = WatchEvent<K>> + Unpin)) -> WatchEvent<K> {
    loop {
        let e = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .expect("an event within 10s")
            .expect("the stream goes on");
        if !matches!(e, WatchEvent::Bookmark(_)) {
            return e;
        }
    }
}

fn widgets(env: &Env) -> ResourceClient<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.kubegen.dev", "v1", "Widget"),
        "widgets",
    );
    ResourceClient::namespaced_with(env.client.clone(), "default", &ar)
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    from(json!({
        "apiVersion": "example.kubegen.dev/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec
    }))
}

#[tokio::test]
async fn create_update_conflict_generate_name() {
    both(async |env: Env| {
        let cms = ResourceClient::<ConfigMap>::namespaced(env.client.clone(), "default");
        let w = WriteOptions::default();
        let a = cms.create(&cm("a", &[("k", "1")]), &w).await.unwrap();
        let meta = &a.metadata;
        assert!(meta.uid.as_deref().is_some_and(|u| u.len() == 36));
        assert!(meta.creation_timestamp.is_some());
        assert_eq!(meta.namespace.as_deref(), Some("default"));
        let rv1: u64 = meta.resource_version.as_deref().unwrap().parse().unwrap();

        // SEMANTICS 9.13
        let e = api_err(cms.create(&cm("a", &[]), &w).await);
        assert!(e.is_already_exists() && !e.is_conflict());
        assert_eq!(e.code(), 409);
        assert_eq!(e.message(), "configmaps \"a\" already exists");

        // Update with the current RV works and bumps the RV.
        let mut b = a.clone();
        b.data = Some([("k".to_owned(), "2".to_owned())].into());
        let b = cms.update(&b, &w).await.unwrap();
        let rv2: u64 = b
            .metadata
            .resource_version
            .as_deref()
            .unwrap()
            .parse()
            .unwrap();
        assert!(rv2 > rv1);

        // SEMANTICS 9.12
        let e = api_err(cms.update(&a, &w).await);
        assert!(e.is_conflict());
        assert_eq!(e.reason(), "Conflict");
        assert!(e.message().contains("the object has been modified"));

        // Without a resourceVersion the update is unconditional.
        let mut c = a.clone();
        c.metadata.resource_version = None;
        c.data = Some([("k".to_owned(), "3".to_owned())].into());
        let c = cms.update(&c, &w).await.unwrap();
        assert_eq!(c.data.unwrap()["k"], "3");
        assert_eq!(c.metadata.uid, a.metadata.uid);

        // A write that changes nothing stores nothing.
        let cur = cms.get("a").await.unwrap();
        let same = cms.update(&cur, &w).await.unwrap();
        assert_eq!(
            same.metadata.resource_version,
            cur.metadata.resource_version
        );

        // SEMANTICS 9.15
        let g = cms
            .create(&from(json!({"metadata": {"generateName": "web-"}})), &w)
            .await
            .unwrap();
        let name = g.metadata.name.unwrap();
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert!(name[4..]
            .chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
        let long = "a".repeat(60);
        let g = cms
            .create(&from(json!({"metadata": {"generateName": long}})), &w)
            .await
            .unwrap();
        let name = g.metadata.name.unwrap();
        assert_eq!(name.len(), 63);
        assert!(name.starts_with(&"a".repeat(58)));

        // Dry run: answered, not stored.
        let dry = WriteOptions {
            dry_run: true,
            ..Default::default()
        };
        cms.create(&cm("dry", &[]), &dry).await.unwrap();
        assert!(api_err(cms.get("dry").await).is_not_found());
    })
    .await;
}

#[tokio::test]
async fn invalid_objects_get_422_with_causes() {
    both(async |env: Env| {
        let cms = ResourceClient::<ConfigMap>::namespaced(env.client.clone(), "default");
        // SEMANTICS 9.14
        let e = api_err(
            cms.create(&cm("Not_A_Name", &[]), &WriteOptions::default())
                .await,
        );
        assert!(e.is_invalid());
        assert_eq!(e.code(), 422);
        let causes = &e.details().unwrap().causes;
        assert_eq!(causes[0].field, "metadata.name");
        assert_eq!(causes[0].reason, cause::FIELD_VALUE_INVALID);
        assert!(e
            .message()
            .starts_with("ConfigMap \"Not_A_Name\" is invalid: metadata.name"));
        let e = api_err(
            cms.create(&from(json!({"metadata": {}})), &WriteOptions::default())
                .await,
        );
        assert_eq!(
            e.details().unwrap().causes[0].reason,
            cause::FIELD_VALUE_REQUIRED
        );
    })
    .await;
}

#[tokio::test]
async fn status_subresource_and_generation() {
    both(async |env: Env| {
        let deps = ResourceClient::<Deployment>::namespaced(env.client.clone(), "default");
        let w = WriteOptions::default();
        let d = deps.create(&deployment("web", 1), &w).await.unwrap();
        assert_eq!(d.metadata.generation, Some(1));

        // A metadata-only change keeps the generation.
        let mut m = d.clone();
        m.metadata.labels = Some([("x".to_owned(), "y".to_owned())].into());
        let m = deps.update(&m, &w).await.unwrap();
        assert_eq!(m.metadata.generation, Some(1));

        // The main resource ignores status; a spec change bumps the generation.
        let mut s = m.clone();
        s.spec.replicas = Some(3);
        s.status = Some(from(json!({"replicas": 7})));
        let s = deps.update(&s, &w).await.unwrap();
        assert_eq!(s.metadata.generation, Some(2));
        // The status a Deployment was created with (empty), not the client's.
        assert_eq!(s.status, Some(from(json!({}))));

        // The status subresource ignores everything else.
        let mut st = s.clone();
        st.spec.replicas = Some(9);
        st.status = Some(from(json!({"replicas": 3, "observedGeneration": 2})));
        let st = deps.update_status(&st, &w).await.unwrap();
        assert_eq!(st.spec.replicas, Some(3));
        assert_eq!(st.status.unwrap().replicas, Some(3));
        assert_eq!(st.metadata.generation, Some(2));

        // patch_status changes only the status.
        let p = deps
            .patch_status(
                "web",
                &Patch::Merge(json!({"spec": {"replicas": 5}, "status": {"readyReplicas": 2}})),
                &PatchOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(p.spec.replicas, Some(3));
        assert_eq!(p.status.unwrap().ready_replicas, Some(2));
    })
    .await;
}

#[tokio::test]
async fn patches_of_each_type() {
    both(async |env: Env| {
        let deps = ResourceClient::<Deployment>::namespaced(env.client.clone(), "default");
        let pp = PatchOptions::default();
        deps.create(&deployment("web", 1), &WriteOptions::default())
            .await
            .unwrap();

        // Merge patch: null deletes, lists replace.
        let d = deps
            .patch(
                "web",
                &Patch::Merge(json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 2}})),
                &pp,
            )
            .await
            .unwrap();
        assert_eq!(d.spec.replicas, Some(2));
        assert_eq!(d.metadata.generation, Some(2));
        let d = deps
            .patch(
                "web",
                &Patch::Merge(json!({"metadata": {"labels": {"a": null}}})),
                &pp,
            )
            .await
            .unwrap();
        assert!(d.metadata.labels.unwrap_or_default().is_empty());

        // JSON patch.
        let d = deps
            .patch(
                "web",
                &Patch::Json(json!([
                    {"op": "test", "path": "/spec/replicas", "value": 2},
                    {"op": "replace", "path": "/spec/replicas", "value": 4}
                ])),
                &pp,
            )
            .await
            .unwrap();
        assert_eq!(d.spec.replicas, Some(4));
        let e = api_err(
            deps.patch(
                "web",
                &Patch::Json(json!([{"op": "test", "path": "/spec/replicas", "value": 1}])),
                &pp,
            )
            .await,
        );
        assert!(e.is_invalid());

        // Strategic merge: containers merge by name.
        let d = deps
            .patch(
                "web",
                &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                    {"name": "sidecar", "image": "busybox"}
                ]}}}})),
                &pp,
            )
            .await
            .unwrap();
        let names: Vec<String> = d
            .spec
            .template
            .spec
            .unwrap()
            .containers
            .iter()
            .map(|c| c.name.clone())
            .collect();
        // As kube-apiserver: an item new to the list comes before the stored ones.
        assert_eq!(names, ["sidecar", "app"]);
        // The same patch as a merge patch replaces the list.
        let d = deps
            .patch(
                "web",
                &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [
                    {"name": "only", "image": "busybox"}
                ]}}}})),
                &pp,
            )
            .await
            .unwrap();
        assert_eq!(d.spec.template.spec.unwrap().containers.len(), 1);

        // A patch carrying a stale resourceVersion conflicts; a missing object is 404.
        let e = api_err(
            deps.patch(
                "web",
                &Patch::Merge(json!({"metadata": {"resourceVersion": "1"}})),
                &pp,
            )
            .await,
        );
        assert!(e.is_conflict());
        let e = api_err(deps.patch("nope", &Patch::Merge(json!({})), &pp).await);
        assert!(e.is_not_found());

        // Strategic merge on a custom resource: 415.
        let ws = widgets(&env);
        ws.create(&widget("w", json!({"size": 1})), &WriteOptions::default())
            .await
            .unwrap();
        let e = api_err(
            ws.patch("w", &Patch::Strategic(json!({"spec": {"size": 2}})), &pp)
                .await,
        );
        assert!(e.is_unsupported_media_type());
        assert_eq!(e.code(), 415);
        let ok = ws
            .patch("w", &Patch::Merge(json!({"spec": {"size": 2}})), &pp)
            .await
            .unwrap();
        assert_eq!(ok.data["spec"]["size"], 2);

        // SEMANTICS 9.23
        deps.apply(
            "web",
            &deployment("web", 1),
            &PatchOptions::apply("t").force(),
        )
        .await
        .unwrap();
        let types: Vec<String> = env
            .server
            .requests()
            .into_iter()
            .filter(|r| r.verb == "patch")
            .map(|r| r.content_type)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(
            types,
            [
                "application/apply-patch+yaml",
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn server_side_apply_create_update_conflict_force() {
    both(async |env: Env| {
        let deps = ResourceClient::<Deployment>::namespaced(env.client.clone(), "default");
        // fieldManager is required: 422 naming it, as kube-apiserver answers.
        let e = api_err(
            deps.apply("web", &deployment("web", 1), &PatchOptions::default())
                .await,
        );
        assert!(e.is_invalid(), "{e:?}");

        // Create if absent, with a managedFields entry.
        let d = deps
            .apply("web", &deployment("web", 1), &PatchOptions::apply("alice"))
            .await
            .unwrap();
        assert_eq!(d.spec.replicas, Some(1));
        let mf = d.metadata.managed_fields.clone().unwrap();
        assert_eq!(mf.len(), 1);
        assert_eq!(mf[0].manager.as_deref(), Some("alice"));
        assert_eq!(mf[0].operation.as_deref(), Some("Apply"));
        let f = serde_json::to_value(&mf[0].fields_v1).unwrap();
        assert_eq!(f["f:spec"]["f:replicas"], json!({}));

        // Another manager changing alice's field conflicts.
        let e = api_err(
            deps.apply("web", &deployment("web", 5), &PatchOptions::apply("bob"))
                .await,
        );
        assert!(e.is_conflict());
        assert!(e.has_cause(cause::FIELD_MANAGER_CONFLICT));
        assert!(e.message().contains("conflict with \"alice\""));
        assert!(e
            .details()
            .unwrap()
            .causes
            .iter()
            .any(|c| c.field == ".spec.replicas"));

        // Force takes the field.
        let d = deps
            .apply(
                "web",
                &deployment("web", 5),
                &PatchOptions::apply("bob").force(),
            )
            .await
            .unwrap();
        assert_eq!(d.spec.replicas, Some(5));
        let managers: Vec<String> = d
            .metadata
            .managed_fields
            .unwrap()
            .iter()
            .filter_map(|m| m.manager.clone())
            .collect();
        assert!(managers.contains(&"bob".to_owned()));

        // alice re-applies without replicas: no conflict, bob's value stays.
        let mut no_replicas = deployment("web", 1);
        no_replicas.spec.replicas = None;
        let d = deps
            .apply("web", &no_replicas, &PatchOptions::apply("alice"))
            .await
            .unwrap();
        assert_eq!(d.spec.replicas, Some(5));

        // An update with a field manager takes ownership as an Update entry.
        let leases = ResourceClient::<Lease>::namespaced(env.client.clone(), "default");
        let l: Lease = from(json!({"metadata": {"name": "lock"}, "spec": {"holderIdentity": "a"}}));
        let l = leases
            .create(
                &l,
                &WriteOptions {
                    field_manager: Some("elector".into()),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let mf = l.metadata.managed_fields.unwrap();
        assert_eq!(mf[0].operation.as_deref(), Some("Update"));
        let applied: Lease = from(
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "lock"}, "spec": {"holderIdentity": "b"}}),
        );
        let e = api_err(
            leases
                .apply("lock", &applied, &PatchOptions::apply("other"))
                .await,
        );
        assert!(e.is_conflict());
    })
    .await;
}

#[tokio::test]
async fn finalizers_and_delete_options() {
    both(async |env: Env| {
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let cms = ResourceClient::<ConfigMap>::namespaced(env.client.clone(), "default");
        let w = WriteOptions::default();

        // SEMANTICS 9.16
        let p: Pod = from(json!({"metadata": {"name": "f", "finalizers": ["x"]},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}));
        pods.create(&p, &w).await.unwrap();
        let rv = env.server.resource_version().to_string();
        let mut watch = pods
            .watch(&ListOptions::default().resource_version(&rv))
            .await
            .unwrap();
        let res = pods.delete("f", &DeleteOptions::default()).await.unwrap();
        let Deleted::Object(pending) = res else {
            panic!("a pending deletion answers the object")
        };
        assert!(pending.metadata.deletion_timestamp.is_some());
        assert_eq!(pending.metadata.deletion_grace_period_seconds, Some(0));
        assert!(matches!(
            next_change(&mut watch).await,
            WatchEvent::Modified(_)
        ));
        // No new finalizers on an object being deleted.
        let mut more = pods.get("f").await.unwrap();
        more.metadata.finalizers = Some(vec!["x".into(), "y".into()]);
        let e = api_err(pods.update(&more, &w).await);
        assert!(e.is_invalid());
        assert_eq!(e.details().unwrap().causes[0].field, "metadata.finalizers");
        let mut done = pods.get("f").await.unwrap();
        done.metadata.finalizers = None;
        pods.update(&done, &w).await.unwrap();
        assert!(matches!(
            next_change(&mut watch).await,
            WatchEvent::Deleted(_)
        ));
        assert!(api_err(pods.get("f").await).is_not_found());

        // SEMANTICS 9.17
        pods.create(
            &from(json!({"metadata": {"name": "fg", "finalizers": ["keep"]},
                "spec": {"containers": [{"name": "c", "image": "i"}]}})),
            &w,
        )
        .await
        .unwrap();
        let res = pods
            .delete(
                "fg",
                &DeleteOptions::default().propagation(PropagationPolicy::Foreground),
            )
            .await
            .unwrap()
            .object()
            .unwrap();
        assert!(res.metadata.deletion_timestamp.is_some());
        assert!(res
            .metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_owned()));

        // Preconditions.
        let c = cms.create(&cm("c", &[]), &w).await.unwrap();
        let e = api_err(
            cms.delete("c", &DeleteOptions::default().precondition_uid("other"))
                .await,
        );
        assert!(e.is_conflict());
        assert!(e
            .message()
            .contains("Precondition failed: UID in precondition: other"));
        let e = api_err(
            cms.delete(
                "c",
                &DeleteOptions::default().precondition_resource_version("1"),
            )
            .await,
        );
        assert!(e.is_conflict());
        // Dry run deletes nothing.
        let dry = DeleteOptions {
            dry_run: true,
            ..Default::default()
        };
        cms.delete("c", &dry).await.unwrap();
        cms.get("c").await.unwrap();
        // Immediate deletion: configmaps answer a Status, pods the object.
        let ok = DeleteOptions::default().precondition_uid(c.metadata.uid.as_deref().unwrap());
        match cms.delete("c", &ok).await.unwrap() {
            Deleted::Status(s) => assert_eq!(s.status.as_deref(), Some("Success")),
            Deleted::Object(o) => panic!("expected a Status, got {o:?}"),
        }
        pods.create(
            &from(json!({"metadata": {"name": "now"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}})),
            &w,
        )
        .await
        .unwrap();
        assert!(matches!(
            pods.delete("now", &DeleteOptions::default()).await.unwrap(),
            Deleted::Object(_)
        ));
    })
    .await;
}

fn owned(name: &str, owner: &ReplicaSet, block: bool) -> Pod {
    from(json!({"metadata": {"name": name, "ownerReferences": [{
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": owner.metadata.name, "uid": owner.metadata.uid,
        "controller": true, "blockOwnerDeletion": block
    }]}, "spec": {"containers": [{"name": "c", "image": "i"}]}}))
}

fn replicaset(name: &str) -> ReplicaSet {
    from(
        json!({"metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    )
}

#[tokio::test]
async fn garbage_collection_by_propagation_policy() {
    both(async |env: Env| {
        let rss = ResourceClient::<ReplicaSet>::namespaced(env.client.clone(), "default");
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let w = WriteOptions::default();
        let names = async || -> Vec<String> {
            pods.list(&ListOptions::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect()
        };

        // Background: the owner goes, then its dependents.
        let rs = rss.create(&replicaset("bg"), &w).await.unwrap();
        pods.create(&owned("bg-1", &rs, false), &w).await.unwrap();
        pods.create(&owned("bg-2", &rs, false), &w).await.unwrap();
        rss.delete(
            "bg",
            &DeleteOptions::default().propagation(PropagationPolicy::Background),
        )
        .await
        .unwrap();
        assert!(names().await.is_empty());

        // Orphan: dependents stay without the owner reference; the owner goes.
        let rs = rss.create(&replicaset("or"), &w).await.unwrap();
        pods.create(&owned("or-1", &rs, false), &w).await.unwrap();
        rss.delete(
            "or",
            &DeleteOptions::default().propagation(PropagationPolicy::Orphan),
        )
        .await
        .unwrap();
        assert!(api_err(rss.get("or").await).is_not_found());
        let p = pods.get("or-1").await.unwrap();
        assert!(p.metadata.owner_references.unwrap_or_default().is_empty());

        // Foreground: dependents first (one held by a finalizer), then the owner.
        let rs = rss.create(&replicaset("fg"), &w).await.unwrap();
        pods.create(&owned("fg-1", &rs, true), &w).await.unwrap();
        let mut held = owned("fg-2", &rs, true);
        held.metadata.finalizers = Some(vec!["hold".into()]);
        pods.create(&held, &w).await.unwrap();
        rss.delete(
            "fg",
            &DeleteOptions::default().propagation(PropagationPolicy::Foreground),
        )
        .await
        .unwrap();
        let waiting = rss.get("fg").await.unwrap();
        assert!(waiting.metadata.deletion_timestamp.is_some());
        assert_eq!(
            waiting.metadata.finalizers,
            Some(vec!["foregroundDeletion".to_owned()])
        );
        assert!(api_err(pods.get("fg-1").await).is_not_found());
        let mut fg2 = pods.get("fg-2").await.unwrap();
        assert!(fg2.metadata.deletion_timestamp.is_some());
        fg2.metadata.finalizers = None;
        pods.update(&fg2, &w).await.unwrap();
        assert!(api_err(rss.get("fg").await).is_not_found());
        assert_eq!(names().await, ["or-1"]);
    })
    .await;
}

#[tokio::test]
async fn delete_collection_with_selectors() {
    both(async |env: Env| {
        let cms = ResourceClient::<ConfigMap>::namespaced(env.client.clone(), "default");
        for (n, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
            let c: ConfigMap = from(json!({"metadata": {"name": n, "labels": {"app": app}}}));
            cms.create(&c, &WriteOptions::default()).await.unwrap();
        }
        let gone = cms
            .delete_collection(
                &DeleteOptions::default(),
                &ListOptions::default().labels("app=web"),
            )
            .await
            .unwrap()
            .object()
            .unwrap();
        let mut names: Vec<String> = gone
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        names.sort();
        assert_eq!(names, ["a", "b"]);
        let left = cms.list(&ListOptions::default()).await.unwrap().items;
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].metadata.name.as_deref(), Some("c"));
    })
    .await;
}

#[tokio::test]
async fn strict_namespaces_reject_writes_into_missing_namespaces() {
    both_with(true, async |env: Env| {
        let cms = ResourceClient::<ConfigMap>::namespaced(env.client.clone(), "x");
        let e = api_err(cms.create(&cm("a", &[]), &WriteOptions::default()).await);
        assert!(e.is_not_found());
        assert_eq!(e.message(), "namespaces \"x\" not found");
        env.server
            .create("namespaces", json!({"metadata": {"name": "x"}}))
            .unwrap();
        cms.create(&cm("a", &[]), &WriteOptions::default())
            .await
            .unwrap();
    })
    .await;
}

#[tokio::test]
async fn concurrent_updates_have_one_winner_per_version() {
    both(async |env: Env| {
        let cms = ResourceClient::<ConfigMap>::namespaced(env.client.clone(), "default");
        cms.create(&cm("counter", &[("n", "0")]), &WriteOptions::default())
            .await
            .unwrap();
        let tasks = 8;
        let increments = 5;
        let wins = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..tasks {
            let cms = cms.clone();
            let wins = wins.clone();
            set.spawn(async move {
                let mut conflicts = 0;
                let mut done = 0;
                while done < increments {
                    let cur = cms.get("counter").await.unwrap();
                    let n: u64 = cur.data.as_ref().unwrap()["n"].parse().unwrap();
                    let read_rv = cur.metadata.resource_version.clone().unwrap();
                    let mut next = cur.clone();
                    next.data = Some([("n".to_owned(), (n + 1).to_string())].into());
                    match cms.update(&next, &WriteOptions::default()).await {
                        Ok(_) => {
                            wins.lock().push(read_rv);
                            done += 1;
                        }
                        Err(e) => {
                            assert!(e.status().unwrap().is_conflict(), "{e}");
                            conflicts += 1;
                        }
                    }
                    tokio::task::yield_now().await;
                }
                conflicts
            });
        }
        let mut _conflicts = 0;
        while let Some(r) = set.join_next().await {
            _conflicts += r.unwrap();
        }
        let final_cm = cms.get("counter").await.unwrap();
        // No lost update: every successful write is counted.
        assert_eq!(
            final_cm.data.unwrap()["n"],
            (tasks * increments).to_string()
        );
        // Exactly one winner per version read.
        let wins = wins.lock().clone();
        let distinct: BTreeSet<&String> = wins.iter().collect();
        assert_eq!(distinct.len(), wins.len());
    })
    .await;
}

#[tokio::test]
async fn custom_resources_are_pruned_defaulted_and_validated() {
    both(async |env: Env| {
        let ws = widgets(&env);
        let w = WriteOptions::default();
        let created = ws
            .create(
                &widget(
                    "w1",
                    json!({"size": 3, "unknown": true, "extra": {"free": 1},
                        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t"}, "junk": 1}}),
                ),
                &w,
            )
            .await
            .unwrap();
        let spec = &created.data["spec"];
        assert!(spec.get("unknown").is_none(), "unknown field pruned");
        assert_eq!(spec["color"], "red", "default filled");
        assert_eq!(spec["extra"], json!({"free": 1}), "preserved unknown fields kept");
        assert_eq!(spec["template"]["kind"], "Pod", "embedded resource keeps kind");
        assert!(spec["template"].get("junk").is_none());

        let e = api_err(
            ws.create(
                &widget("w2", json!({"size": 0, "color": "pink", "label": "UPPER"})),
                &w,
            )
            .await,
        );
        assert!(e.is_invalid());
        assert_eq!(e.details().unwrap().kind, "Widget");
        let causes: Vec<(String, String)> = e
            .details()
            .unwrap()
            .causes
            .iter()
            .map(|c| (c.field.clone(), c.reason.clone()))
            .collect();
        assert!(causes.contains(&("spec.size".into(), cause::FIELD_VALUE_INVALID.into())));
        assert!(causes.contains(&("spec.color".into(), cause::FIELD_VALUE_NOT_SUPPORTED.into())));
        assert!(causes.contains(&("spec.label".into(), cause::FIELD_VALUE_INVALID.into())));
        let e = api_err(ws.create(&widget("w3", json!({"color": "red"})), &w).await);
        assert_eq!(e.details().unwrap().causes[0].field, "spec.size");
        assert_eq!(e.details().unwrap().causes[0].reason, cause::FIELD_VALUE_REQUIRED);
        let e = api_err(ws.create(&widget("w4", json!({"size": "big"})), &w).await);
        assert_eq!(e.details().unwrap().causes[0].reason, cause::FIELD_VALUE_TYPE_INVALID);

        // Updates are validated too; the status subresource is served.
        let mut bad = created.clone();
        bad.data["spec"]["size"] = json!(11);
        assert!(api_err(ws.update(&bad, &w).await).is_invalid());
        let mut st = created.clone();
        st.data["status"] = json!({"ready": true});
        st.data["status"]["unknown"] = json!(1);
        let st = ws.update_status(&st, &w).await.unwrap();
        assert_eq!(st.data["status"], json!({"ready": true}), "status is pruned too");
        let mut bad_status = st.clone();
        bad_status.data["status"]["ready"] = json!("yes");
        assert!(api_err(ws.update_status(&bad_status, &w).await).is_invalid());
        // The selectable field from the CRD works in field selectors.
        let l = ws
            .list(&ListOptions::default().fields("spec.color=red"))
            .await
            .unwrap();
        assert_eq!(l.items.len(), 1);
        // The second served version is registered too, and serves the storage version's
        // objects as its own (conversion strategy None: only apiVersion differs).
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.kubegen.dev", "v1beta1", "Widget"),
            "widgets",
        );
        let beta = ResourceClient::<DynamicObject>::namespaced_with(env.client.clone(), "default", &ar);
        let stored = ws.list(&ListOptions::default()).await.unwrap().items;
        let seen = beta.list(&ListOptions::default()).await.unwrap().items;
        assert_eq!(seen.len(), stored.len());
        assert!(seen.iter().all(|w| w
            .types
            .as_ref()
            .is_some_and(|t| t.api_version == "example.kubegen.dev/v1beta1")));
    })
    .await;
}

#[tokio::test]
async fn request_log_and_reactors() {
    both(async |env: Env| {
        let cms = ResourceClient::<ConfigMap>::namespaced(env.client.clone(), "default");
        let w = WriteOptions::default();
        env.server.clear_requests();
        cms.create(&cm("a", &[("k", "v")]), &w).await.unwrap();
        cms.get("a").await.unwrap();
        let log = env.server.requests();
        assert_eq!(log.len(), 2);
        assert_eq!(log[0].verb, "create");
        assert_eq!(log[0].resource, "configmaps");
        assert_eq!(log[0].namespace, "default");
        assert_eq!(log[0].body.as_ref().unwrap()["data"]["k"], "v");
        assert_eq!((log[1].verb.as_str(), log[1].name.as_str()), ("get", "a"));
        env.server.clear_requests();
        assert!(env.server.requests().is_empty());

        // An error the first two times, then through.
        env.server.react(
            Reactor::new("update", "configmaps")
                .name("a")
                .times(2)
                .error(StatusError::too_many_requests("slow down", 1)),
        );
        let cur = cms.get("a").await.unwrap();
        for _ in 0..2 {
            let e = api_err(cms.update(&cur, &w).await);
            assert!(e.is_too_many_requests());
            assert_eq!(e.retry_after_seconds(), Some(1));
        }
        let mut next = cur.clone();
        next.data = Some([("k".to_owned(), "w".to_owned())].into());
        cms.update(&next, &w).await.unwrap();

        // A delay for every get.
        env.server
            .react(Reactor::new("get", "*").delay(Duration::from_millis(5)));
        cms.get("a").await.unwrap();
        env.server.clear_reactors();
        assert_eq!(
            env.server
                .requests()
                .iter()
                .filter(|r| r.verb == "update")
                .count(),
            3
        );
    })
    .await;
}

#[tokio::test]
async fn dropped_and_expired_watches() {
    both(async |env: Env| {
        let cms = ResourceClient::<ConfigMap>::namespaced(env.client.clone(), "default");
        let mut w1 = cms.watch(&ListOptions::default()).await.unwrap();
        env.server.drop_watches();
        let end = tokio::time::timeout(Duration::from_secs(10), w1.next())
            .await
            .unwrap();
        assert!(end.is_none(), "a dropped watch ends");

        // Watches started after the drop are unaffected.
        let mut w2 = cms.watch(&ListOptions::default()).await.unwrap();
        cms.create(&cm("a", &[]), &WriteOptions::default())
            .await
            .unwrap();
        assert!(matches!(next_change(&mut w2).await, WatchEvent::Added(_)));

        env.server.expire_next_watch();
        let rv = env.server.resource_version().to_string();
        let mut w3 = cms
            .watch(&ListOptions::default().resource_version(&rv))
            .await
            .unwrap();
        match next_change(&mut w3).await {
            WatchEvent::Error(e) => {
                assert!(e.is_expired());
                assert!(e.message().starts_with("too old resource version:"));
            }
            other => panic!("expected a 410, got {other:?}"),
        }
        // Watches from an RV at or below a bound, until cleared.
        env.server.expire_watches_up_to(Some(rv.parse().unwrap()));
        let mut w5 = cms
            .watch(&ListOptions::default().resource_version(&rv))
            .await
            .unwrap();
        assert!(matches!(next_change(&mut w5).await, WatchEvent::Error(e) if e.is_expired()));
        env.server.expire_watches_up_to(None);
        // Only the next one.
        let mut w4 = cms
            .watch(&ListOptions::default().resource_version(&rv))
            .await
            .unwrap();
        cms.create(&cm("b", &[]), &WriteOptions::default())
            .await
            .unwrap();
        assert!(matches!(next_change(&mut w4).await, WatchEvent::Added(_)));
    })
    .await;
}

#[tokio::test]
async fn apply_status_and_leases() {
    both(async |env: Env| {
        let deps = ResourceClient::<Deployment>::namespaced(env.client.clone(), "default");
        deps.apply("web", &deployment("web", 2), &PatchOptions::apply("user"))
            .await
            .unwrap();
        let status: Deployment = from(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"}, "spec": {"replicas": 9}, "status": {"replicas": 2}}));
        let d = deps
            .apply_status("web", &status, &PatchOptions::apply("controller"))
            .await
            .unwrap();
        assert_eq!(d.status.unwrap().replicas, Some(2));
        assert_eq!(d.spec.replicas, Some(2), "status apply ignores the spec");
        let mf = d.metadata.managed_fields.unwrap();
        let ctrl = mf
            .iter()
            .find(|m| m.manager.as_deref() == Some("controller"))
            .unwrap();
        assert_eq!(ctrl.subresource.as_deref(), Some("status"));

        // A Lease keeps MicroTime precision and takes optimistic concurrency.
        let leases = ResourceClient::<Lease>::namespaced(env.client.clone(), "default");
        let l: Lease = from(json!({"metadata": {"name": "lock"}, "spec": {
            "holderIdentity": "a", "leaseDurationSeconds": 10,
            "renewTime": "2024-01-01T00:00:00.123456Z", "leaseTransitions": 0}}));
        let l = leases.create(&l, &WriteOptions::default()).await.unwrap();
        let raw = env
            .server
            .get("leases.coordination.k8s.io", "default", "lock")
            .unwrap()
            .unwrap();
        assert_eq!(raw["spec"]["renewTime"], "2024-01-01T00:00:00.123456Z");
        let mut a = l.clone();
        a.spec.as_mut().unwrap().holder_identity = Some("b".into());
        leases.update(&a, &WriteOptions::default()).await.unwrap();
        let mut b = l.clone();
        b.spec.as_mut().unwrap().holder_identity = Some("c".into());
        assert!(api_err(leases.update(&b, &WriteOptions::default()).await).is_conflict());
    })
    .await;
}

#[tokio::test]
async fn scale_subresource_of_builtin_and_custom_resources() {
    both(async |env: Env| {
        let deps = ResourceClient::<Deployment>::namespaced(env.client.clone(), "default");
        deps.create(&deployment("web", 2), &WriteOptions::default())
            .await
            .unwrap();
        let api: kube::Api<Deployment> = kube::Api::namespaced(env.client.clone(), "default");
        let s = api.get_scale("web").await.unwrap();
        assert_eq!(s.spec.unwrap().replicas, Some(2));
        assert_eq!(s.status.unwrap().selector.as_deref(), Some("app=web"));
        let mut s = api.get_scale("web").await.unwrap();
        s.spec.as_mut().unwrap().replicas = Some(4);
        let s = api
            .replace_scale("web", &Default::default(), &s)
            .await
            .unwrap();
        assert_eq!(s.spec.unwrap().replicas, Some(4));
        let d = deps.get("web").await.unwrap();
        assert_eq!(d.spec.replicas, Some(4));
        assert_eq!(d.metadata.generation, Some(2));
        // A stale resourceVersion in the Scale conflicts.
        let stale: k8s_openapi::api::autoscaling::v1::Scale =
            from(json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "web", "resourceVersion": "1"}, "spec": {"replicas": 1}}));
        let e = api
            .replace_scale("web", &Default::default(), &stale)
            .await
            .unwrap_err();
        assert!(matches!(e, kube::Error::Api(s) if s.code == 409));

        // A custom resource's scale follows the CRD's paths.
        let ws = widgets(&env);
        let w = ws
            .create(&widget("w", json!({"size": 1})), &WriteOptions::default())
            .await
            .unwrap();
        let mut st = w.clone();
        st.data["status"] = json!({"replicas": 1, "selector": "app=w"});
        ws.update_status(&st, &WriteOptions::default())
            .await
            .unwrap();
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.kubegen.dev", "v1", "Widget"),
            "widgets",
        );
        let wapi: kube::Api<DynamicObject> =
            kube::Api::namespaced_with(env.client.clone(), "default", &ar);
        let s = wapi
            .patch_scale(
                "w",
                &Default::default(),
                &kube::api::Patch::Merge(json!({"spec": {"replicas": 3}})),
            )
            .await
            .unwrap();
        assert_eq!(s.spec.unwrap().replicas, Some(3));
        assert_eq!(s.status.unwrap().selector.as_deref(), Some("app=w"));
        assert_eq!(ws.get("w").await.unwrap().data["spec"]["size"], 3);
    })
    .await;
}

#[tokio::test]
async fn resource_client_scale_verbs() {
    both(async |env: Env| {
        let deps = ResourceClient::<Deployment>::namespaced(env.client.clone(), "default");
        let w = WriteOptions::default();
        let d = deps.create(&deployment("web", 2), &w).await.unwrap();
        let mut st = d.clone();
        st.status = Some(from(json!({"replicas": 2})));
        let d = deps.update_status(&st, &w).await.unwrap();

        // GET reflects the object's spec.replicas, status.replicas and selector.
        let s = deps.get_scale("web").await.unwrap();
        assert_eq!(s.metadata.name.as_deref(), Some("web"));
        assert_eq!(s.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(s.metadata.resource_version, d.metadata.resource_version);
        assert_eq!(s.spec.as_ref().unwrap().replicas, Some(2));
        let status = s.status.clone().unwrap();
        assert_eq!(status.replicas, 2);
        assert_eq!(status.selector.as_deref(), Some("app=web"));

        // PUT changes the replicas on the main object, which gets a new resourceVersion
        // (the answered Scale's) and a new generation.
        let mut up = s.clone();
        up.spec.as_mut().unwrap().replicas = Some(4);
        let s4 = deps.update_scale("web", &up, &w).await.unwrap();
        assert_eq!(s4.spec.as_ref().unwrap().replicas, Some(4));
        let d4 = deps.get("web").await.unwrap();
        assert_eq!(d4.spec.replicas, Some(4));
        assert_ne!(d4.metadata.resource_version, d.metadata.resource_version);
        assert_eq!(s4.metadata.resource_version, d4.metadata.resource_version);
        assert_eq!(d4.metadata.generation, Some(2));
        assert_eq!(
            d4.spec.template, d.spec.template,
            "only the replicas change"
        );

        // The Scale read before that write is stale now: 409, and nothing changes.
        let e = api_err(deps.update_scale("web", &up, &w).await);
        assert!(e.is_conflict(), "{e:?}");
        assert_eq!(
            deps.get("web").await.unwrap().metadata.resource_version,
            d4.metadata.resource_version
        );

        // Without a resourceVersion the update is unconditional.
        let mut blind = up.clone();
        blind.metadata.resource_version = None;
        blind.spec.as_mut().unwrap().replicas = Some(1);
        let s1 = deps.update_scale("web", &blind, &w).await.unwrap();
        assert_eq!(s1.spec.unwrap().replicas, Some(1));

        // Negative replicas are invalid; dry run stores nothing.
        blind.spec.as_mut().unwrap().replicas = Some(-1);
        assert!(api_err(deps.update_scale("web", &blind, &w).await).is_invalid());
        blind.spec.as_mut().unwrap().replicas = Some(8);
        let dry = WriteOptions {
            dry_run: true,
            ..Default::default()
        };
        let s8 = deps.update_scale("web", &blind, &dry).await.unwrap();
        assert_eq!(s8.spec.unwrap().replicas, Some(8));
        assert_eq!(deps.get("web").await.unwrap().spec.replicas, Some(1));

        // PATCH, merge and JSON.
        let p = PatchOptions::default();
        let s6 = deps
            .patch_scale("web", &Patch::Merge(json!({"spec": {"replicas": 6}})), &p)
            .await
            .unwrap();
        assert_eq!(s6.spec.unwrap().replicas, Some(6));
        let s7 = deps
            .patch_scale(
                "web",
                &Patch::Json(json!([{"op": "replace", "path": "/spec/replicas", "value": 7}])),
                &p,
            )
            .await
            .unwrap();
        assert_eq!(s7.spec.unwrap().replicas, Some(7));
        assert_eq!(deps.get("web").await.unwrap().spec.replicas, Some(7));

        // Every one of those requests went to deployments/web/scale, with the verb,
        // options and Content-Type client-go sends.
        let scale_requests: Vec<_> = env
            .server
            .requests()
            .into_iter()
            .filter(|r| r.subresource == "scale")
            .map(|r| {
                assert_eq!(
                    (r.resource.as_str(), r.name.as_str()),
                    ("deployments", "web")
                );
                (r.verb, r.query, r.content_type)
            })
            .collect();
        let json = "application/json".to_owned();
        assert!(scale_requests.contains(&("get".into(), String::new(), String::new())));
        assert!(scale_requests.contains(&("update".into(), String::new(), json.clone())));
        assert!(scale_requests.contains(&("update".into(), "dryRun=All".into(), json)));
        assert!(scale_requests.contains(&(
            "patch".into(),
            String::new(),
            "application/merge-patch+json".into()
        )));
        assert!(scale_requests.contains(&(
            "patch".into(),
            String::new(),
            "application/json-patch+json".into()
        )));

        // A missing object, and a kind without the subresource, are 404 NotFound.
        assert!(api_err(deps.get_scale("absent").await).is_not_found());
        let cms = ResourceClient::<ConfigMap>::namespaced(env.client.clone(), "default");
        cms.create(&cm("c", &[]), &w).await.unwrap();
        assert!(api_err(cms.get_scale("c").await).is_not_found());
        assert!(api_err(cms.update_scale("c", &up, &w).await).is_not_found());
        assert!(api_err(
            cms.patch_scale("c", &Patch::Merge(json!({"spec": {"replicas": 1}})), &p)
                .await
        )
        .is_not_found());

        // A custom resource's Scale follows its CRD's paths (.spec.size here).
        let ws = widgets(&env);
        let wd = ws
            .create(&widget("w", json!({"size": 2})), &w)
            .await
            .unwrap();
        let mut wst = wd.clone();
        wst.data["status"] = json!({"replicas": 2, "selector": "app=w"});
        ws.update_status(&wst, &w).await.unwrap();
        let mut s = ws.get_scale("w").await.unwrap();
        assert_eq!(s.spec.as_ref().unwrap().replicas, Some(2));
        assert_eq!(
            s.status.as_ref().unwrap().selector.as_deref(),
            Some("app=w")
        );
        s.spec.as_mut().unwrap().replicas = Some(5);
        let s5 = ws.update_scale("w", &s, &w).await.unwrap();
        assert_eq!(s5.spec.unwrap().replicas, Some(5));
        assert_eq!(ws.get("w").await.unwrap().data["spec"]["size"], 5);
        // The CRD's schema still applies to the object (size <= 10).
        let big = ws
            .patch_scale("w", &Patch::Merge(json!({"spec": {"replicas": 11}})), &p)
            .await;
        assert!(api_err(big).is_invalid());
    })
    .await;
}
