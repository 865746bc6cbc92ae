//! Behaviours the differential suite (hack/differential.sh) found different from
//! kube-apiserver 1.36 and that now agree with it, each checked here against what the
//! real server answered (SEMANTICS 9 and 13). Each test body runs over the in-process
//! tower Service and over TCP via a kubeconfig.

use http_body_util::BodyExt;
use kubegen_apiserver::ApiServer;
use serde_json::{json, Value};

async fn both(f: impl AsyncFn(kube::Client)) {
    let server = ApiServer::builder().strict_namespaces(true).build();
    f(kube::Client::new(server.service(), "default")).await;

    let server = ApiServer::builder().strict_namespaces(true).build();
    let tcp = server.serve_tcp().await.expect("listen");
    f(tcp.client().await.expect("client")).await;
    tcp.shutdown().await;
}

/// One request: the status code and the JSON body (Null when there is none).
async fn call(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(body.as_bytes().to_vec())
        .expect("request");
    let resp = client.send(req.map(Into::into)).await.expect("sent");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn json_call(client: &kube::Client, method: &str, path: &str, body: Value) -> (u16, Value) {
    call(client, method, path, "application/json", &body.to_string()).await
}

/// The (field, reason) of each cause of a Status, sorted.
fn causes(status: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (s("field"), s("reason"))
        })
        .collect();
    out.sort();
    out
}

fn pair(f: &str, r: &str) -> (String, String) {
    (f.to_owned(), r.to_owned())
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["name"].as_str())
        .collect()
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn strategic_merge_orders_lists_as_kube_apiserver() {
    // SEMANTICS 9 (PATCH content types: strategic merge lists merged by patchMergeKey)
    both(async |client: kube::Client| {
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "smp"},
            "spec": {"selector": {"matchLabels": {"app": "smp"}}, "template": {"metadata": {"labels": {"app": "smp"}},
            "spec": {"containers": [{"name": "main", "image": "nginx",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}}}});
        let coll = "/apis/apps/v1/namespaces/default/deployments";
        assert_eq!(json_call(&client, "POST", coll, deploy).await.0, 201);
        let smp = async |patch: Value| {
            let (code, out) = call(
                &client,
                "PATCH",
                &format!("{coll}/smp"),
                "application/strategic-merge-patch+json",
                &patch.to_string(),
            )
            .await;
            assert_eq!(code, 200, "{out}");
            out["spec"]["template"]["spec"]["containers"].clone()
        };
        // A new item comes first: [main] patched with [side, main] is [side, main].
        let c = smp(json!({"spec": {"template": {"spec": {"containers": [
            {"name": "side", "image": "busybox"}, {"name": "main", "image": "nginx"}]}}}}))
        .await;
        assert_eq!(names(&c), ["side", "main"]);
        // env [A, B] patched with [C, A] is [C, A, B].
        let c = smp(json!({"spec": {"template": {"spec": {"containers": [{"name": "main",
            "env": [{"name": "C", "value": "3"}, {"name": "A", "value": "9"}]}]}}}}))
        .await;
        assert_eq!(names(&c[1]["env"]), ["C", "A", "B"]);
        // $setElementOrder orders what it names.
        let c = smp(json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "main"}, {"name": "side"}]}}}}))
        .await;
        assert_eq!(names(&c), ["main", "side"]);
    })
    .await;
}

#[tokio::test]
async fn a_patch_that_breaks_the_type_is_invalid() {
    // SEMANTICS 9 (PATCH): kube-apiserver answers 422 with a `patch` cause
    both(async |client: kube::Client| {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "jp"}, "data": {"a": "1"}});
        assert_eq!(json_call(&client, "POST", CMS, cm).await.0, 201);
        let item = format!("{CMS}/jp");
        let patches = [
            ("application/json-patch+json", json!([{"op": "add", "path": "/data/n", "value": 5}])),
            ("application/merge-patch+json", json!({"kind": "Secret"})),
            ("application/strategic-merge-patch+json", json!({"data": {"x": true}})),
        ];
        for (ct, patch) in patches {
            let (code, out) = call(&client, "PATCH", &item, ct, &patch.to_string()).await;
            assert_eq!(code, 422, "{ct}: {out}");
            assert_eq!(causes(&out), [pair("patch", "FieldValueInvalid")], "{ct}");
        }
        // A JSON patch `test` of a missing field against null passes.
        let test = json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]);
        let (code, out) = call(&client, "PATCH", &item, "application/json-patch+json", &test.to_string()).await;
        assert_eq!(code, 200, "{out}");
    })
    .await;
}

#[tokio::test]
async fn server_side_apply_errors_are_kube_apiservers() {
    // SEMANTICS 9 (apply: fieldManager required; conflicts 409 with causes)
    both(async |client: kube::Client| {
        let item = format!("{CMS}/ssa");
        let apply = async |manager: Option<&str>, yaml: &str| {
            let path = match manager {
                Some(m) => format!("{item}?fieldManager={m}"),
                None => item.clone(),
            };
            call(
                &client,
                "PATCH",
                &path,
                "application/apply-patch+yaml",
                yaml,
            )
            .await
        };
        let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"1\"\n";
        let (code, out) = apply(None, body).await;
        assert_eq!(code, 422, "{out}");
        assert_eq!(causes(&out), [pair("fieldManager", "FieldValueRequired")]);
        assert_eq!(out["details"]["kind"], "PatchOptions");
        let (code, out) = apply(Some("m"), "kind: ConfigMap\nmetadata:\n  name: ssa\n").await;
        assert_eq!(
            (code, out["reason"].as_str()),
            (400, Some("BadRequest")),
            "{out}"
        );
        assert_eq!(apply(Some("alice"), body).await.0, 201);
        let other = body.replace("\"1\"", "\"2\"");
        let (code, out) = apply(Some("bob"), &other).await;
        assert_eq!(code, 409, "{out}");
        assert_eq!(causes(&out), [pair(".data.a", "FieldManagerConflict")]);
        assert!(out["details"].get("kind").is_none(), "{out}");
    })
    .await;
}

#[tokio::test]
async fn names_and_create_on_update_as_kube_apiserver() {
    // SEMANTICS 9 (create: generateName; update: PUT of a missing object) and 13
    both(async |client: kube::Client| {
        let (code, out) = json_call(
            &client,
            "POST",
            CMS,
            json!({"metadata": {"generateName": "Gen_"}}),
        )
        .await;
        assert_eq!(code, 422);
        assert_eq!(
            causes(&out),
            [
                pair("metadata.generateName", "FieldValueInvalid"),
                pair("metadata.name", "FieldValueInvalid")
            ]
        );
        // A Namespace's name is a DNS label.
        let (code, out) = json_call(
            &client,
            "POST",
            "/api/v1/namespaces",
            json!({"metadata": {"name": "has.dot"}}),
        )
        .await;
        assert_eq!(
            (code, causes(&out)),
            (422, vec![pair("metadata.name", "FieldValueInvalid")])
        );
        // A Service is created by a PUT to its name; a ConfigMap is not.
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "one"},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": "one"}}});
        let services = "/api/v1/namespaces/default/services";
        let (code, out) = json_call(&client, "PUT", &format!("{services}/one"), svc).await;
        assert_eq!(code, 201, "{out}");
        assert_eq!(out["spec"]["type"], "ClusterIP");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "absent"}});
        assert_eq!(
            json_call(&client, "PUT", &format!("{CMS}/absent"), cm)
                .await
                .0,
            404
        );
        // A dry-run create stores nothing and answers without a resourceVersion.
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}});
        let (code, out) = json_call(&client, "POST", &format!("{CMS}?dryRun=All"), cm).await;
        assert_eq!(code, 201);
        assert!(out["metadata"].get("resourceVersion").is_none(), "{out}");
        // Deleting a core object: no empty group in the Status details.
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gone"}});
        assert_eq!(json_call(&client, "POST", CMS, cm).await.0, 201);
        let (code, out) = call(
            &client,
            "DELETE",
            &format!("{CMS}/gone"),
            "application/json",
            "",
        )
        .await;
        assert_eq!((code, out["status"].as_str()), (200, Some("Success")));
        assert!(out["details"].get("group").is_none(), "{out}");
    })
    .await;
}

#[tokio::test]
async fn container_resources_are_validated() {
    // SEMANTICS 13 (validation of built-in kinds)
    both(async |client: kube::Client| {
        let pods = "/api/v1/namespaces/default/pods";
        let pod = |name: &str, resources: Value| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"containers": [{"name": "a", "image": "x", "resources": resources}]}})
        };
        // The request defaults to the negative limit, so both are named.
        let (code, out) = json_call(&client, "POST", pods, pod("p5", json!({"limits": {"cpu": "-1"}}))).await;
        assert_eq!(code, 422);
        assert_eq!(
            causes(&out),
            [
                pair("spec.containers[0].resources.limits[cpu]", "FieldValueInvalid"),
                pair("spec.containers[0].resources.requests[cpu]", "FieldValueInvalid"),
            ]
        );
        let over = json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1500m", "memory": "512Mi"}});
        let (code, out) = json_call(&client, "POST", pods, pod("p6", over)).await;
        assert_eq!(code, 422);
        assert_eq!(causes(&out), [pair("spec.containers[0].resources.requests", "FieldValueInvalid")]);
        let fine = json!({"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1024Mi"}});
        assert_eq!(json_call(&client, "POST", pods, pod("p7", fine)).await.0, 201);
    })
    .await;
}

#[tokio::test]
async fn deletes_mark_as_kube_apiserver() {
    // SEMANTICS 9 (DELETE: the response is the object) and 13 (Namespaces)
    both(async |client: kube::Client| {
        let pods = "/api/v1/namespaces/default/pods";
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "x"}]}});
        assert_eq!(json_call(&client, "POST", pods, pod).await.0, 201);
        // A Pod on no node goes at once, answered marked with grace 0 and one more
        // generation.
        let (code, out) = call(
            &client,
            "DELETE",
            &format!("{pods}/p"),
            "application/json",
            "",
        )
        .await;
        assert_eq!(code, 200, "{out}");
        assert_eq!(out["metadata"]["deletionGracePeriodSeconds"], 0);
        assert!(out["metadata"]["deletionTimestamp"].is_string(), "{out}");
        assert_eq!(out["metadata"]["generation"], 2);
        let (code, _) = call(&client, "GET", &format!("{pods}/p"), "application/json", "").await;
        assert_eq!(code, 404);
        // A Namespace's first DELETE marks it without a grace period.
        let ns = json!({"metadata": {"name": "doomed"}});
        assert_eq!(
            json_call(&client, "POST", "/api/v1/namespaces", ns).await.0,
            201
        );
        let (code, out) = call(
            &client,
            "DELETE",
            "/api/v1/namespaces/doomed",
            "application/json",
            "",
        )
        .await;
        assert_eq!(code, 200, "{out}");
        assert!(out["metadata"]["deletionTimestamp"].is_string(), "{out}");
        assert!(
            out["metadata"].get("deletionGracePeriodSeconds").is_none(),
            "{out}"
        );
    })
    .await;
}

#[tokio::test]
async fn custom_resources_as_the_apiextensions_server() {
    // SEMANTICS 9 (lists; update without resourceVersion) and 13 (CRDs)
    both(async |client: kube::Client| {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}});
        let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        assert_eq!(json_call(&client, "POST", crds, crd).await.0, 201);
        let widgets = "/apis/example.com/v1/namespaces/default/widgets";
        let (code, out) = call(&client, "GET", widgets, "application/json", "").await;
        assert_eq!(code, 200, "{out}");
        assert_eq!(out["metadata"]["continue"], "", "{out}");
        // Without a resourceVersion, a missing custom resource is 404, not 422.
        let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "one"}, "spec": {"size": 3}});
        let (code, out) = json_call(&client, "PUT", &format!("{widgets}/one"), w.clone()).await;
        assert_eq!((code, out["reason"].as_str()), (404, Some("NotFound")), "{out}");
        assert_eq!(json_call(&client, "POST", widgets, w.clone()).await.0, 201);
        let (code, out) = json_call(&client, "PUT", &format!("{widgets}/one"), w).await;
        assert_eq!(code, 422, "{out}");
        assert_eq!(causes(&out), [pair("metadata.resourceVersion", "FieldValueInvalid")]);
    })
    .await;
}

#[tokio::test]
async fn aggregated_discovery_is_served() {
    // SEMANTICS 9 (discovery): kubectl 1.30+ and kube's `run_aggregated` ask for
    // apidiscovery.k8s.io/v2 first
    both(async |client: kube::Client| {
        let req = http::Request::builder()
            .uri("/apis")
            .header("accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
            .body(Vec::new())
            .expect("request");
        let resp = client.send(req.map(Into::into)).await.expect("sent");
        let ct = resp.headers()["content-type"].to_str().unwrap_or_default().to_owned();
        assert_eq!(ct, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        let list: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(list["kind"], "APIGroupDiscoveryList");
        let apps = list["items"].as_array().into_iter().flatten().find(|g| g["metadata"]["name"] == "apps");
        let deployments = apps
            .and_then(|g| g["versions"][0]["resources"].as_array())
            .into_iter()
            .flatten()
            .find(|r| r["resource"] == "deployments")
            .cloned()
            .expect("deployments in apps/v1");
        assert_eq!(deployments["responseKind"]["kind"], "Deployment");
        assert_eq!(deployments["scope"], "Namespaced");
        let subs: Vec<&str> = deployments["subresources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["subresource"].as_str())
            .collect();
        assert!(subs.contains(&"status") && subs.contains(&"scale"), "{subs:?}");
        // kube's own aggregated discovery reads it, the core group included.
        let discovery = kube::Discovery::new(client.clone()).run_aggregated().await.expect("discovery");
        assert!(discovery.has_group("apps"));
        let core = discovery.get("").expect("core group");
        let (pods, caps) = core
            .recommended_resources()
            .into_iter()
            .find(|(r, _)| r.plural == "pods")
            .expect("pods");
        assert_eq!((pods.kind.as_str(), caps.scope), ("Pod", kube::discovery::Scope::Namespaced));
    })
    .await;
}

/// One request with its response headers.
async fn call_with_headers(
    client: &kube::Client,
    method: &str,
    path: &str,
) -> (u16, http::HeaderMap) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .body(Vec::new())
        .expect("request");
    let resp = client.send(req.map(Into::into)).await.expect("sent");
    (resp.status().as_u16(), resp.headers().clone())
}

#[tokio::test]
async fn a_deprecated_crd_version_warns_on_every_answer() {
    // SEMANTICS 13 (CustomResourceDefinitions: versions)
    both(async |client: kube::Client| {
        let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "deps.d.example.com"},
            "spec": {"group": "d.example.com", "scope": "Namespaced", "names": {"plural": "deps", "kind": "Dep"},
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true, "schema": schema},
                    {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                        "deprecationWarning": "use v1", "schema": schema},
                    {"name": "v1", "served": true, "storage": true, "schema": schema}]}});
        let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        assert_eq!(json_call(&client, "POST", crds, crd).await.0, 201);
        let warning = |h: &http::HeaderMap| {
            h.get("warning").and_then(|v| v.to_str().ok()).map(str::to_owned)
        };
        let (code, h) = call_with_headers(&client, "GET", "/apis/d.example.com/v1alpha1/namespaces/default/deps").await;
        assert_eq!(code, 200);
        assert_eq!(
            warning(&h).as_deref(),
            Some("299 - \"d.example.com/v1alpha1 Dep is deprecated; use d.example.com/v1 Dep\"")
        );
        // Errors too, and a version's own warning replaces the default.
        let (code, h) = call_with_headers(&client, "GET", "/apis/d.example.com/v1beta1/namespaces/default/deps/nope").await;
        assert_eq!((code, warning(&h).as_deref()), (404, Some("299 - \"use v1\"")));
        let (_, h) = call_with_headers(&client, "GET", "/apis/d.example.com/v1/namespaces/default/deps").await;
        assert_eq!(warning(&h), None);
    })
    .await;
}

#[tokio::test]
async fn a_watch_sees_an_object_leave_its_selector_as_it_was() {
    // SEMANTICS 9 (watch with a label selector)
    use futures::{StreamExt, TryStreamExt};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, Patch, PatchParams, WatchEvent, WatchParams};
    both(async |client: kube::Client| {
        let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": "a", "labels": {"app": "web"}}, "data": {"k": "old"}}),
        )
        .expect("decodes");
        let created = cms.create(&Default::default(), &cm).await.expect("created");
        let rv = created
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        let mut events = cms
            .watch(&WatchParams::default().labels("app=web").timeout(5), &rv)
            .await
            .expect("watch")
            .boxed();
        let moved = json!({"metadata": {"labels": {"app": "db"}}, "data": {"k": "new"}});
        let after = cms
            .patch("a", &PatchParams::default(), &Patch::Merge(&moved))
            .await
            .expect("patched");
        let Some(WatchEvent::Deleted(gone)) = events.try_next().await.expect("event") else {
            panic!("no DELETED event");
        };
        // The content it had while it matched, at the change's resourceVersion.
        assert_eq!(gone.metadata.labels.unwrap_or_default()["app"], "web");
        assert_eq!(gone.data.unwrap_or_default()["k"], "old");
        assert_eq!(
            gone.metadata.resource_version,
            after.metadata.resource_version
        );
    })
    .await;
}

#[tokio::test]
async fn foreground_deletion_waits_only_for_blocking_dependents() {
    // SEMANTICS 9 (DELETE with propagationPolicy Foreground)
    both(async |client: kube::Client| {
        let owner = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}});
        let (_, owner) = json_call(&client, "POST", CMS, owner).await;
        let uid = owner["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let dependent = |name: &str, block: bool| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name,
                "finalizers": ["example.com/hold"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                    "uid": uid, "blockOwnerDeletion": block}]}})
        };
        assert_eq!(
            json_call(&client, "POST", CMS, dependent("free", false))
                .await
                .0,
            201
        );
        let foreground = r#"{"propagationPolicy": "Foreground"}"#;
        let (code, _) = call(
            &client,
            "DELETE",
            &format!("{CMS}/owner"),
            "application/json",
            foreground,
        )
        .await;
        assert_eq!(code, 200);
        // The only dependent does not block: the owner is gone while it still waits for
        // its own finalizer.
        let (code, _) = call(
            &client,
            "GET",
            &format!("{CMS}/owner"),
            "application/json",
            "",
        )
        .await;
        assert_eq!(code, 404);
        let (_, free) = call(
            &client,
            "GET",
            &format!("{CMS}/free"),
            "application/json",
            "",
        )
        .await;
        assert!(free["metadata"]["deletionTimestamp"].is_string(), "{free}");
        // A blocking dependent holds its owner under foregroundDeletion.
        let owner = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}});
        let (_, owner) = json_call(&client, "POST", CMS, owner).await;
        let uid2 = owner["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut held = dependent("held", true);
        held["metadata"]["ownerReferences"][0]["uid"] = json!(uid2);
        assert_eq!(json_call(&client, "POST", CMS, held).await.0, 201);
        call(
            &client,
            "DELETE",
            &format!("{CMS}/owner"),
            "application/json",
            foreground,
        )
        .await;
        let (code, waiting) = call(
            &client,
            "GET",
            &format!("{CMS}/owner"),
            "application/json",
            "",
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(
            waiting["metadata"]["finalizers"],
            json!(["foregroundDeletion"])
        );
    })
    .await;
}

#[tokio::test]
async fn server_side_apply_by_kubectl_keeps_last_applied_current() {
    // SEMANTICS 9 (apply): client-side apply upgraded to server-side apply
    both(async |client: kube::Client| {
        let last = r#"{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"name":"la","namespace":"default"}}"#;
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
            "metadata": {"name": "la", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": format!("{last}\n")}}});
        assert_eq!(json_call(&client, "POST", CMS, cm).await.0, 201);
        let apply = async |manager: &str, value: &str| {
            let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: la\ndata:\n  a: \"{value}\"\n");
            let path = format!("{CMS}/la?fieldManager={manager}&force=true");
            let (code, out) = call(&client, "PATCH", &path, "application/apply-patch+yaml", &yaml).await;
            assert_eq!(code, 200, "{out}");
            out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].clone()
        };
        // Another manager leaves it; kubectl's server-side apply rewrites it.
        assert_eq!(apply("other", "2").await, json!(format!("{last}\n")));
        assert_eq!(
            apply("kubectl", "3").await,
            json!("{\"apiVersion\":\"v1\",\"data\":{\"a\":\"3\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"la\"}}\n")
        );
    })
    .await;
}

#[tokio::test]
async fn each_crd_version_shows_its_own_printer_columns() {
    // SEMANTICS 13 (CustomResourceDefinitions: additionalPrinterColumns per version)
    both(async |client: kube::Client| {
        let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
        let version = |name: &str, storage: bool, column: &str| {
            json!({"name": name, "served": true, "storage": storage, "schema": schema,
                "additionalPrinterColumns": [{"name": column, "type": "string", "jsonPath": ".spec.a"}]})
        };
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "pcs.p.example.com"},
            "spec": {"group": "p.example.com", "scope": "Namespaced", "names": {"plural": "pcs", "kind": "Pc"},
                "versions": [version("v1alpha1", false, "Old"), version("v1", true, "New")]}});
        let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        assert_eq!(json_call(&client, "POST", crds, crd).await.0, 201);
        let pc = json!({"apiVersion": "p.example.com/v1", "kind": "Pc", "metadata": {"name": "x"}, "spec": {"a": "hello"}});
        assert_eq!(json_call(&client, "POST", "/apis/p.example.com/v1/namespaces/default/pcs", pc).await.0, 201);
        let table = async |version: &str, include: &str| {
            let req = http::Request::builder()
                .uri(format!("/apis/p.example.com/{version}/namespaces/default/pcs{include}"))
                .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
                .body(Vec::new())
                .expect("request");
            let resp = client.send(req.map(Into::into)).await.expect("sent");
            let body = resp.into_body().collect().await.expect("body").to_bytes();
            serde_json::from_slice::<Value>(&body).expect("json")
        };
        for (version, column) in [("v1alpha1", "Old"), ("v1", "New")] {
            let t = table(version, "").await;
            let names: Vec<&str> = t["columnDefinitions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str())
                .collect();
            assert_eq!(names, ["Name", column], "{t}");
            assert_eq!(t["rows"][0]["cells"], json!(["x", "hello"]));
            // The default includeObject is Metadata, whatever the storage handler read.
            assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata", "{t}");
        }
        let t = table("v1alpha1", "?includeObject=Object").await;
        assert_eq!(t["rows"][0]["object"]["apiVersion"], "p.example.com/v1alpha1", "{t}");
    })
    .await;
}

#[tokio::test]
async fn invalid_crds_get_kube_apiservers_causes() {
    // SEMANTICS 13 (CustomResourceDefinitions: validation)
    both(async |client: kube::Client| {
        let crd = |edit: &dyn Fn(&mut Value)| {
            let mut c = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.z.example.com"},
                "spec": {"group": "z.example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "properties": {
                            "color": {"type": "string", "enum": ["red", "blue"]}}}}}}}]}});
            edit(&mut c);
            c
        };
        let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All";
        let refused = async |c: Value| {
            let (code, out) = json_call(&client, "POST", crds, c).await;
            assert_eq!(code, 422, "{out}");
            causes(&out)
        };
        assert_eq!(
            refused(crd(&|c| {
                c["spec"]["names"]["plural"] = json!("Widgets");
                c["metadata"]["name"] = json!("Widgets.z.example.com");
            }))
            .await,
            [pair("metadata.name", "FieldValueInvalid"), pair("spec.names.plural", "FieldValueInvalid")]
        );
        assert_eq!(
            refused(crd(&|c| c["spec"]["scope"] = json!("Galaxy"))).await,
            [pair("spec.scope", "FieldValueNotSupported")]
        );
        assert_eq!(
            refused(crd(&|c| c["spec"]["versions"][0]["storage"] = json!(false))).await,
            [pair("spec.versions", "FieldValueInvalid"), pair("status.storedVersions", "FieldValueInvalid")]
        );
        let default_at = "spec.validation.openAPIV3Schema.properties[spec].properties[color].default";
        assert_eq!(
            refused(crd(&|c| {
                c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"]
                    ["default"] = json!("green")
            }))
            .await,
            [pair(default_at, "FieldValueNotSupported")]
        );
        assert_eq!(json_call(&client, "POST", crds, crd(&|_| {})).await.0, 201);
    })
    .await;
}

#[tokio::test]
async fn kubectl_get_events_has_the_event_columns() {
    // SEMANTICS 11 (events as kubectl shows them): Table columns of core/v1 Events
    both(async |client: kube::Client| {
        let events = "/api/v1/namespaces/default/events";
        let e = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Started", "message": "hi", "type": "Normal", "source": {"component": "kubelet"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z", "count": 1});
        let (code, out) = json_call(&client, "POST", events, e).await;
        assert_eq!(code, 201, "{out}");
        let req = http::Request::builder()
            .uri(events)
            .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
            .body(Vec::new())
            .expect("request");
        let resp = client.send(req.map(Into::into)).await.expect("sent");
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        let t: Value = serde_json::from_slice(&body).expect("json");
        let shown: Vec<(&str, i64)> = t["columnDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| Some((c["name"].as_str()?, c["priority"].as_i64()?)))
            .filter(|(_, p)| *p == 0)
            .collect();
        assert_eq!(
            shown,
            [("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Message", 0)]
        );
        assert_eq!(t["rows"][0]["cells"][3], "pod/p");
    })
    .await;
}
