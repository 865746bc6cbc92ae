//! Built-in kinds as a client sees them (SEMANTICS 13: the API server validates and
//! defaults what it stores): kube-apiserver's 422 causes for invalid Pods, Deployments,
//! Services, ConfigMaps and labels, 400 for a body of another kind, the defaults of Pods,
//! Deployments and Services, and `metadata.generation` only for kinds that have one.
//! Each test body runs over the in-process tower Service and over TCP via a kubeconfig.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::{Api, PostParams};
use kubegen_apiserver::ApiServer;
use serde_json::{json, Value};

async fn both(f: impl AsyncFn(kube::Client)) {
    let server = ApiServer::new();
    f(kube::Client::new(server.service(), "default")).await;

    let server = ApiServer::new();
    let tcp = server.serve_tcp().await.expect("listen");
    f(tcp.client().await.expect("client")).await;
    tcp.shutdown().await;
}

/// The status code and the (field, reason) of each cause of a refused create.
async fn refused<K>(api: &Api<K>, obj: Value) -> (u16, Vec<(String, String)>)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(obj).expect("decodes");
    let err = api
        .create(&PostParams::default(), &obj)
        .await
        .expect_err("refused");
    let kube::Error::Api(s) = err else {
        panic!("not an API error: {err}")
    };
    let mut causes: Vec<(String, String)> = s
        .details
        .map(|d| d.causes.into_iter().map(|c| (c.field, c.reason)).collect())
        .unwrap_or_default();
    causes.sort();
    (s.code, causes)
}

fn pair(f: &str, r: &str) -> (String, String) {
    (f.to_owned(), r.to_owned())
}

#[tokio::test]
async fn invalid_built_in_objects_get_kube_apiservers_causes() {
    // SEMANTICS 13 (validation of built-in kinds)
    both(async |client: kube::Client| {
        let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
        let pod = |spec: Value| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec});
        assert_eq!(
            refused(&pods, pod(json!({}))).await,
            (422, vec![pair("spec.containers", "FieldValueRequired")])
        );
        assert_eq!(
            refused(&pods, pod(json!({"containers": [{"name": "Main_1", "image": "x"}]}))).await,
            (422, vec![pair("spec.containers[0].name", "FieldValueInvalid")])
        );
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let mismatch = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "other"}}, "template": {"metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}});
        assert_eq!(
            refused(&deployments, mismatch).await,
            (422, vec![pair("spec.template.metadata.labels", "FieldValueInvalid")])
        );
        let services: Api<Service> = Api::namespaced(client.clone(), "default");
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80}], "type": "Magic"}});
        assert_eq!(
            refused(&services, svc).await,
            (422, vec![pair("spec.type", "FieldValueNotSupported")])
        );
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let labelled = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"bad key!": "v"}}});
        assert_eq!(
            refused(&cms, labelled).await,
            (422, vec![pair("metadata.labels", "FieldValueInvalid")])
        );
        let keys = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"bad key": "v"}});
        assert_eq!(
            refused(&cms, keys).await,
            (422, vec![pair("data[bad key]", "FieldValueInvalid")])
        );
    })
    .await;
}

#[tokio::test]
async fn a_body_of_another_kind_is_a_bad_request() {
    // SEMANTICS 13 (the body's kind and apiVersion must be the endpoint's)
    both(async |client: kube::Client| {
        let req = http::Request::post("/api/v1/namespaces/default/configmaps")
            .header("content-type", "application/json")
            .body(
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
                    .to_string()
                    .into_bytes(),
            )
            .expect("request");
        let err = client
            .request::<Value>(req)
            .await
            .expect_err("a Secret is not a ConfigMap");
        let kube::Error::Api(s) = err else {
            panic!("not an API error: {err}")
        };
        assert_eq!((s.code, s.reason.as_str()), (400, "BadRequest"));
        assert!(
            s.message.contains("cannot be handled as a ConfigMap"),
            "{}",
            s.message
        );
    })
    .await;
}

#[tokio::test]
async fn built_in_objects_come_back_defaulted() {
    // SEMANTICS 13 (defaults a client reads back)
    both(async |client: kube::Client| {
        let pp = PostParams::default();
        let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}))
        .expect("a pod");
        let pod = pods.create(&pp, &pod).await.expect("created");
        let spec = pod.spec.expect("spec");
        assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
        assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
        assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        assert_eq!(spec.service_account_name.as_deref(), Some("default"));
        let c = &spec.containers[0];
        assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
        assert_eq!(c.termination_message_path.as_deref(), Some("/dev/termination-log"));
        assert_eq!(pod.metadata.generation, Some(1));

        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}}))
        .expect("a deployment");
        let d = deployments.create(&pp, &d).await.expect("created");
        let spec = d.spec;
        assert_eq!(spec.replicas, Some(1));
        assert_eq!(spec.revision_history_limit, Some(10));
        assert_eq!(spec.progress_deadline_seconds, Some(600));
        assert_eq!(
            spec.strategy.and_then(|s| s.type_).as_deref(),
            Some("RollingUpdate")
        );

        let services: Api<Service> = Api::namespaced(client.clone(), "default");
        let s: Service = serde_json::from_value(json!({"metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80}], "selector": {"app": "d"}}}))
        .expect("a service");
        let s = services.create(&pp, &s).await.expect("created");
        assert_eq!(s.metadata.generation, None);
        let spec = s.spec.expect("spec");
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        assert_eq!(spec.session_affinity.as_deref(), Some("None"));
        assert!(spec.cluster_ip.is_some_and(|ip| ip.starts_with("10.")));
        let port = &spec.ports.expect("ports")[0];
        assert_eq!(port.protocol.as_deref(), Some("TCP"));

        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": "c"}})).expect("a config map");
        let cm = cms.create(&pp, &cm).await.expect("created");
        assert_eq!(cm.metadata.generation, None, "ConfigMaps have no generation");
    })
    .await;
}

#[tokio::test]
async fn field_validation_values_and_duplicate_fields() {
    // SEMANTICS 13 (fieldValidation on writes)
    both(async |client: kube::Client| {
        let post = |query: &str, body: &str| {
            http::Request::post(format!("/api/v1/namespaces/default/configmaps?{query}"))
                .header("content-type", "application/json")
                .body(body.as_bytes().to_vec())
                .expect("request")
        };
        let err = client
            .request::<Value>(post(
                "fieldValidation=Bogus",
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
            ))
            .await
            .expect_err("an unknown fieldValidation");
        let kube::Error::Api(s) = err else {
            panic!("not an API error: {err}")
        };
        assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
        let details = s.details.expect("details");
        assert_eq!((details.group.as_str(), details.kind.as_str()), ("meta.k8s.io", "CreateOptions"));
        assert_eq!(details.causes[0].field, "fieldValidation");
        assert_eq!(details.causes[0].reason, "FieldValueNotSupported");

        let dup = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"a":"1","a":"2"}}"#;
        let err = client
            .request::<Value>(post("fieldValidation=Strict", dup))
            .await
            .expect_err("a field named twice");
        let kube::Error::Api(s) = err else {
            panic!("not an API error: {err}")
        };
        assert_eq!(s.code, 400);
        assert!(s.message.ends_with("strict decoding error: duplicate field \"data.a\""), "{}", s.message);
        let ok = client
            .request::<Value>(post("fieldValidation=Warn", dup))
            .await
            .expect("Warn takes the last value");
        assert_eq!(ok["data"]["a"], "2");
    })
    .await;
}

#[tokio::test]
async fn seeded_fixtures_are_stored_as_given_and_their_status_can_be_written() {
    // SEMANTICS 13 (status writes go through the status strategy)
    let server = ApiServer::new();
    server
        .create(
            "pods",
            json!({"metadata": {"name": "bare", "namespace": "default"}}),
        )
        .expect("the admin API seeds a Pod without containers");
    let tcp = server.serve_tcp().await.expect("listen");
    for client in [
        kube::Client::new(server.service(), "default"),
        tcp.client().await.expect("client"),
    ] {
        let pods: Api<Pod> = Api::namespaced(client, "default");
        let status = json!({"status": {"phase": "Running"}});
        let patched = pods
            .patch_status(
                "bare",
                &Default::default(),
                &kube::api::Patch::Merge(&status),
            )
            .await
            .expect("a status write does not validate the spec");
        assert_eq!(
            patched.status.and_then(|s| s.phase).as_deref(),
            Some("Running")
        );
        let spec = json!({"metadata": {"labels": {"a": "b"}}});
        let err = pods
            .patch("bare", &Default::default(), &kube::api::Patch::Merge(&spec))
            .await
            .expect_err("a write of the object validates it");
        let kube::Error::Api(s) = err else {
            panic!("not an API error: {err}")
        };
        assert_eq!(s.code, 422);
    }
    tcp.shutdown().await;
}
