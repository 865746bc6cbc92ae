//! The admin API a test drives the server with: typed objects (`ApiServer::objects`)
//! and reactors matching on the body and query and answering with objects. Each test
//! body runs over the in-process tower Service and over TCP via a kubeconfig.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use kubegen_apiserver::errors::StatusError;
use kubegen_apiserver::{Answer, ApiServer, Reactor};
use serde_json::json;

struct Env {
    server: ApiServer,
    client: kube::Client,
}

/// Runs the test body over the tower Service, then over TCP with a client built from the
/// kubeconfig file.
async fn both(f: impl AsyncFn(Env)) {
    let server = ApiServer::new();
    let client = kube::Client::new(server.service(), "default");
    f(Env { server, client }).await;

    let server = ApiServer::new();
    let tcp = server.serve_tcp().await.expect("listen");
    let client = tcp.client().await.expect("client");
    f(Env { server, client }).await;
    tcp.shutdown().await;
}

fn config_map(ns: &str, name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some(ns.into());
    cm.data = Some([("k".to_owned(), value.to_owned())].into());
    cm
}

fn api_status(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn typed_objects_round_trip_and_clients_see_them() {
    both(async |env: Env| {
        let cms = env.server.objects::<ConfigMap>();
        let a = cms.create(&config_map("default", "a", "1")).unwrap();
        assert!(a.metadata.uid.is_some());
        assert!(a.metadata.resource_version.is_some());
        cms.create(&config_map("other", "b", "2")).unwrap();

        // The client reads what the typed API wrote.
        let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
        let seen = api.get("a").await.unwrap();
        assert_eq!(seen.metadata.uid, a.metadata.uid);

        // And the typed API reads what the client wrote.
        api.create(&PostParams::default(), &config_map("default", "c", "3"))
            .await
            .unwrap();
        let c = cms.get("default", "c").unwrap().expect("c is stored");
        assert_eq!(c.data.unwrap()["k"], "3");
        assert_eq!(cms.get("default", "missing").unwrap(), None);

        let names = |v: Vec<ConfigMap>| -> Vec<String> {
            v.into_iter().filter_map(|c| c.metadata.name).collect()
        };
        assert_eq!(names(cms.list(Some("default")).unwrap()), ["a", "c"]);
        assert_eq!(names(cms.list(None).unwrap()), ["a", "c", "b"]);

        // Update: optimistic concurrency as over HTTP.
        let mut next = a.clone();
        next.data = Some([("k".to_owned(), "changed".to_owned())].into());
        let updated = cms.update(&next).unwrap();
        assert_ne!(
            updated.metadata.resource_version,
            a.metadata.resource_version
        );
        let stale = cms.update(&next).unwrap_err();
        assert!(stale.is_conflict(), "{stale:?}");
        assert_eq!(api.get("a").await.unwrap().data.unwrap()["k"], "changed");

        // Delete: an object with finalizers stays, marked; one without goes.
        let mut held = config_map("default", "held", "x");
        held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
        cms.create(&held).unwrap();
        let pending = cms.delete("default", "held").unwrap().expect("pending");
        assert!(pending.metadata.deletion_timestamp.is_some());
        assert_eq!(cms.delete("default", "c").unwrap(), None);
        assert!(api.get_opt("c").await.unwrap().is_none());
        assert!(cms.delete("default", "c").unwrap_err().is_not_found());
    })
    .await;
}

#[tokio::test]
async fn typed_status_updates_touch_only_the_status() {
    let server = ApiServer::new();
    let deployments = server.objects::<Deployment>();
    let mut d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}}},
    }))
    .unwrap();
    d = deployments.create(&d).unwrap();

    let mut change = d.clone();
    change.spec.replicas = Some(5);
    change.status = Some(serde_json::from_value(json!({"readyReplicas": 1})).unwrap());
    let after = deployments.update_status(&change).unwrap();
    assert_eq!(after.status.unwrap().ready_replicas, Some(1));
    assert_eq!(after.spec.replicas, Some(1), "spec is not the status");

    // The main resource ignores status, as on a cluster.
    let mut change = deployments.get("default", "web").unwrap().unwrap();
    change.status = None;
    change.spec.replicas = Some(3);
    let after = deployments.update(&change).unwrap();
    assert_eq!(after.spec.replicas, Some(3));
    assert_eq!(after.status.unwrap().ready_replicas, Some(1));
}

#[test]
fn typed_objects_of_an_unserved_kind_are_not_found() {
    let server = ApiServer::builder().without_builtins().build();
    let err = server
        .objects::<ConfigMap>()
        .create(&config_map("default", "a", "1"))
        .unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    assert!(server
        .objects::<ConfigMap>()
        .list(None)
        .unwrap_err()
        .is_not_found());
}

#[tokio::test]
async fn reactors_match_the_body_and_the_query() {
    both(async |env: Env| {
        let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
        // Only creates whose body carries k=boom fail.
        env.server.react(
            Reactor::new("create", "configmaps")
                .body_contains(json!({"data": {"k": "boom"}}))
                .error(StatusError::bad_request("no booms")),
        );
        let e = api_status(
            api.create(&PostParams::default(), &config_map("default", "a", "boom"))
                .await
                .unwrap_err(),
        );
        assert_eq!((e.code, e.message.as_str()), (400, "no booms"));
        api.create(&PostParams::default(), &config_map("default", "a", "fine"))
            .await
            .unwrap();
        env.server.clear_reactors();

        // Only lists with this label selector fail.
        env.server.react(
            Reactor::new("list", "configmaps")
                .query_param("labelSelector", "app=web")
                .error(StatusError::too_many_requests("slow down", 1)),
        );
        let e = api
            .list(&ListParams::default().labels("app=web"))
            .await
            .unwrap_err();
        assert_eq!(api_status(e).code, 429);
        assert_eq!(
            api.list(&ListParams::default()).await.unwrap().items.len(),
            1
        );
        env.server.clear_reactors();

        // A predicate over the whole request.
        env.server.react(
            Reactor::new("*", "configmaps")
                .when(|r| r.verb == "get" && r.name.starts_with("secret-"))
                .error(StatusError::new(403, "Forbidden", "not yours")),
        );
        assert_eq!(api_status(api.get("secret-a").await.unwrap_err()).code, 403);
        assert_eq!(api_status(api.get("other").await.unwrap_err()).code, 404);
        env.server.clear_reactors();
    })
    .await;
}

#[tokio::test]
async fn reactors_answer_with_objects_without_storing_them() {
    both(async |env: Env| {
        let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
        let canned = config_map("default", "canned", "from-the-reactor");
        env.server.react(
            Reactor::new("get", "configmaps")
                .name("canned")
                .respond(serde_json::to_value(&canned).unwrap()),
        );
        let got = api.get("canned").await.unwrap();
        assert_eq!(got.data.unwrap()["k"], "from-the-reactor");
        assert!(env
            .server
            .objects::<ConfigMap>()
            .get("default", "canned")
            .unwrap()
            .is_none());

        // A create answered by a reactor stores nothing.
        env.server.react(
            Reactor::new("create", "configmaps").respond(serde_json::to_value(&canned).unwrap()),
        );
        let created = api
            .create(&PostParams::default(), &config_map("default", "real", "v"))
            .await
            .unwrap();
        assert_eq!(created.metadata.name.as_deref(), Some("canned"));
        assert!(env
            .server
            .objects::<ConfigMap>()
            .list(None)
            .unwrap()
            .is_empty());
        env.server.clear_reactors();
    })
    .await;
}

#[tokio::test]
async fn reaction_functions_decide_per_request_and_may_pass() {
    both(async |env: Env| {
        let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
        env.server
            .objects()
            .create(&config_map("default", "a", "stored"))
            .unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        // Handles gets of "b" with an object made from the request, fails "c", and
        // passes everything else to the next reactor or the server. Passing does not
        // use up `times`.
        env.server.react(
            Reactor::new("get", "configmaps")
                .times(2)
                .reaction(move |r| {
                    seen.fetch_add(1, Ordering::SeqCst);
                    match r.name.as_str() {
                        "b" => Answer::Object(
                            serde_json::to_value(config_map(&r.namespace, "b", "made")).unwrap(),
                        ),
                        "c" => Answer::Error(StatusError::new(500, "InternalError", "broken")),
                        _ => Answer::Pass,
                    }
                }),
        );
        for _ in 0..3 {
            assert_eq!(api.get("a").await.unwrap().data.unwrap()["k"], "stored");
        }
        assert_eq!(api.get("b").await.unwrap().data.unwrap()["k"], "made");
        assert_eq!(api_status(api.get("c").await.unwrap_err()).code, 500);
        // Two uses spent (b and c): the reactor is done, the server answers now.
        assert_eq!(api_status(api.get("b").await.unwrap_err()).code, 404);
        assert_eq!(calls.load(Ordering::SeqCst), 5);
        env.server.clear_reactors();
    })
    .await;
}
