//! Server-side apply on a custom resource's list types, as kube-apiserver merges them:
//! a `listType=map` list (two keys) gets one entry per manager, a `set` list the union
//! of their values, and a list without a type is atomic (one owner, a conflict for the
//! other). The same sequence runs on the in-memory server (tower and TCP) and on a real
//! kube-apiserver, and each manager's fields are read back with
//! `kubegen_runtime::apply::extract`.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::ApiServer;
use serde_json::{json, Value};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gateways.listtypes.example.com
spec:
  group: listtypes.example.com
  scope: Namespaced
  names: {kind: Gateway, listKind: GatewayList, plural: gateways, singular: gateway}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              listeners:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name, port]
                items:
                  type: object
                  required: [name, port]
                  properties:
                    name: {type: string}
                    port: {type: integer}
                    tls: {type: boolean}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              args:
                type: array
                items: {type: string}
"#;

fn applied(spec: Value) -> Value {
    json!({
        "apiVersion": "listtypes.example.com/v1",
        "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": "default"},
        "spec": spec,
    })
}

async fn list_types(transport: Transport) {
    let dir = tempfile::tempdir().unwrap();
    let crd = dir.path().join("gateways.yaml");
    std::fs::write(&crd, CRD).unwrap();
    let server = ApiServer::new();
    server.register_crd(CRD).unwrap();
    let conn = transport
        .connect(&server, [&crd])
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let gvk = GroupVersionKind::gvk("listtypes.example.com", "v1", "Gateway");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "gateways");
    let api: Api<DynamicObject> = Api::namespaced_with(conn.client(), "default", &ar);
    let apply = |who: &str| PatchParams::apply(who);
    let send = |v: Value| Patch::Apply(v);

    api.patch(
        "gw",
        &apply("alice"),
        &send(applied(json!({
            "listeners": [{"name": "web", "port": 80}],
            "tags": ["a"],
            "args": ["x"],
        }))),
    )
    .await
    .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let obj = api
        .patch(
            "gw",
            &apply("bob"),
            &send(applied(json!({
                "listeners": [{"name": "web", "port": 443, "tls": true}],
                "tags": ["b"],
            }))),
        )
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let obj = serde_json::to_value(&obj).unwrap();
    assert_eq!(
        obj["spec"]["listeners"],
        json!([{"name": "web", "port": 80}, {"name": "web", "port": 443, "tls": true}]),
        "{transport:?}: one entry per manager, by both keys"
    );
    assert_eq!(obj["spec"]["tags"], json!(["a", "b"]), "{transport:?}");
    let bob = kubegen_runtime::apply::extract(&obj, "bob", "");
    assert_eq!(
        bob["spec"],
        json!({"listeners": [{"name": "web", "port": 443, "tls": true}], "tags": ["b"]}),
        "{transport:?}"
    );

    // The untyped list is atomic: alice owns it, bob's apply conflicts.
    let err = api
        .patch(
            "gw",
            &apply("bob"),
            &send(applied(json!({"tags": ["b"], "args": ["y"]}))),
        )
        .await
        .expect_err("args belongs to alice");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409),
        "{transport:?}: {err}"
    );

    // alice drops her listener and tag: they go, bob's stay.
    let obj = api
        .patch(
            "gw",
            &apply("alice"),
            &send(applied(json!({"args": ["x"]}))),
        )
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let obj = serde_json::to_value(&obj).unwrap();
    assert_eq!(
        obj["spec"],
        json!({"listeners": [{"name": "web", "port": 443, "tls": true}], "tags": ["b"], "args": ["x"]}),
        "{transport:?}"
    );
    conn.close().await;
}

#[tokio::test]
async fn list_types_over_tower() {
    list_types(Transport::Tower).await;
}

#[tokio::test]
async fn list_types_over_tcp() {
    list_types(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn list_types_on_a_real_apiserver() {
    list_types(Transport::Real).await;
}
