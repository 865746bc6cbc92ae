//! CEL validation rules of a CRD (`x-kubernetes-validations`) as a client sees them
//! (SEMANTICS 13: custom resources validated against their CRD's schema), each test body
//! run over the in-process tower Service and over TCP via a kubeconfig: 422 Invalid with
//! kube-apiserver's causes on create, transition rules and ratcheting on update and patch.

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kubegen_apiserver::ApiServer;
use serde_json::{json, Value};

const RANGES: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ranges.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: ranges, singular: range, kind: Range}
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
            x-kubernetes-validations:
            - {rule: "self.min <= self.max", message: "min must not exceed max"}
            - {rule: "self.mode == oldSelf.mode", message: "mode is immutable"}
            properties:
              min: {type: integer}
              max: {type: integer}
              mode: {type: string, default: fast}
              hosts:
                type: array
                items:
                  type: string
                  x-kubernetes-validations:
                  - {rule: "self.endsWith('.example.com')", reason: FieldValueForbidden, messageExpression: "self + ' is not ours'"}
"#;

struct Env {
    server: ApiServer,
    ranges: Api<DynamicObject>,
}

async fn both(f: impl AsyncFn(Env)) {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Range"),
        "ranges",
    );
    let server = ApiServer::new();
    server.register_crd(RANGES).expect("register");
    let client = kube::Client::new(server.service(), "default");
    f(Env {
        server,
        ranges: Api::namespaced_with(client, "default", &ar),
    })
    .await;

    let server = ApiServer::new();
    server.register_crd(RANGES).expect("register");
    let tcp = server.serve_tcp().await.expect("listen");
    let client = tcp.client().await.expect("client");
    f(Env {
        server,
        ranges: Api::namespaced_with(client, "default", &ar),
    })
    .await;
    tcp.shutdown().await;
}

fn range(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Range",
        "metadata": {"name": name}, "spec": spec
    }))
    .expect("a Range")
}

/// The 422's causes as (field, reason), and its message.
fn invalid(e: kube::Error) -> (Vec<(String, String)>, String) {
    let kube::Error::Api(s) = e else {
        panic!("not an API error: {e}")
    };
    assert_eq!(s.code, 422, "{s:?}");
    assert_eq!(s.reason, "Invalid");
    let causes = s
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.field.clone(), c.reason.clone()))
                .collect()
        })
        .unwrap_or_default();
    (causes, s.message)
}

#[tokio::test]
async fn a_cr_breaking_a_rule_is_refused_with_the_rules_cause() {
    // SEMANTICS 13 (custom resources are validated against their schema on create)
    both(async |env: Env| {
        let pp = PostParams::default();
        let ok = env.ranges.create(&pp, &range("ok", json!({"min": 1, "max": 2}))).await;
        assert!(ok.is_ok(), "{ok:?}");
        let err = env
            .ranges
            .create(&pp, &range("bad", json!({"min": 3, "max": 2})))
            .await
            .unwrap_err();
        let (causes, message) = invalid(err);
        assert_eq!(causes, vec![("spec".to_owned(), "FieldValueInvalid".to_owned())]);
        assert_eq!(
            message,
            "Range.example.com \"bad\" is invalid: spec: Invalid value: \"object\": min must not exceed max"
        );
        let err = env
            .ranges
            .create(
                &pp,
                &range("hosts", json!({"min": 1, "max": 2, "hosts": ["a.example.com", "b.other.io"]})),
            )
            .await
            .unwrap_err();
        let (causes, message) = invalid(err);
        assert_eq!(
            causes,
            vec![("spec.hosts[1]".to_owned(), "FieldValueForbidden".to_owned())]
        );
        assert!(message.ends_with("spec.hosts[1]: Forbidden: b.other.io is not ours"), "{message}");
    })
    .await;
}

#[tokio::test]
async fn transition_rules_on_update_and_patch() {
    // SEMANTICS 13 (validation on update)
    both(async |env: Env| {
        let pp = PostParams::default();
        env.ranges
            .create(&pp, &range("r", json!({"min": 1, "max": 2})))
            .await
            .expect("create: the transition rule does not run, mode is defaulted");
        let patch = |spec: Value| Patch::Merge(json!({"spec": spec}));
        let err = env
            .ranges
            .patch(
                "r",
                &PatchParams::default(),
                &patch(json!({"mode": "slow"})),
            )
            .await
            .unwrap_err();
        let (causes, message) = invalid(err);
        assert_eq!(
            causes,
            vec![("spec".to_owned(), "FieldValueInvalid".to_owned())]
        );
        assert!(message.ends_with("mode is immutable"), "{message}");
        let ok = env
            .ranges
            .patch("r", &PatchParams::default(), &patch(json!({"max": 5})))
            .await;
        assert!(ok.is_ok(), "{ok:?}");
        let mut obj = env.ranges.get("r").await.expect("get");
        obj.data["spec"]["min"] = json!(9);
        let err = env.ranges.replace("r", &pp, &obj).await.unwrap_err();
        assert_eq!(
            invalid(err).0,
            vec![("spec".to_owned(), "FieldValueInvalid".to_owned())]
        );
    })
    .await;
}

#[tokio::test]
async fn an_unchanged_invalid_field_does_not_fail_an_update() {
    // SEMANTICS 13 (validation ratcheting: objects stored under an older schema)
    both(async |env: Env| {
        let loose = RANGES.replace("self.min <= self.max", "true");
        env.server.register_crd(&loose).expect("loosen the CRD");
        let pp = PostParams::default();
        env.ranges
            .create(&pp, &range("old", json!({"min": 3, "max": 2})))
            .await
            .expect("valid under the loose schema");
        env.server.register_crd(RANGES).expect("tighten the CRD");
        let labels = Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}}));
        let ok = env
            .ranges
            .patch("old", &PatchParams::default(), &labels)
            .await;
        assert!(ok.is_ok(), "spec unchanged: {ok:?}");
        let touch = Patch::Merge(json!({"spec": {"max": 1}}));
        let err = env
            .ranges
            .patch("old", &PatchParams::default(), &touch)
            .await
            .unwrap_err();
        assert_eq!(
            invalid(err).0,
            vec![("spec".to_owned(), "FieldValueInvalid".to_owned())]
        );
    })
    .await;
}

/// Two versions of one kind with different rules; v1 stores the objects.
const TWO_VERSIONS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: dials.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: dials, singular: dial, kind: Dial}
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
            x-kubernetes-validations: [{rule: "self.level <= 10"}]
            properties: {level: {type: integer}}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations: [{rule: "self.level <= 5"}]
            properties: {level: {type: integer}}
"#;

#[tokio::test]
async fn a_write_is_validated_against_the_schema_of_its_version() {
    // SEMANTICS 13 (versions of a CRD: each version's schema validates its writes)
    let dials = |client: kube::Client, version: &str| {
        let gvk = GroupVersionKind::gvk("example.com", version, "Dial");
        Api::<DynamicObject>::namespaced_with(
            client,
            "default",
            &ApiResource::from_gvk_with_plural(&gvk, "dials"),
        )
    };
    let dial = |version: &str, name: &str, level: i64| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": format!("example.com/{version}"), "kind": "Dial",
            "metadata": {"name": name}, "spec": {"level": level}
        }))
        .expect("a Dial")
    };
    let server = ApiServer::new();
    server.register_crd(TWO_VERSIONS).expect("register");
    let tcp = server.serve_tcp().await.expect("listen");
    for client in [
        kube::Client::new(server.service(), "default"),
        tcp.client().await.expect("client"),
    ] {
        let pp = PostParams::default();
        let (v1, v1beta1) = (dials(client.clone(), "v1"), dials(client, "v1beta1"));
        let ok = v1.create(&pp, &dial("v1", "eight", 8)).await;
        assert!(ok.is_ok(), "{ok:?}");
        let err = v1beta1
            .create(&pp, &dial("v1beta1", "eight-beta", 8))
            .await
            .unwrap_err();
        assert_eq!(
            invalid(err).0,
            vec![("spec".to_owned(), "FieldValueInvalid".to_owned())]
        );
        let ok = v1beta1.create(&pp, &dial("v1beta1", "four", 4)).await;
        assert!(ok.is_ok(), "{ok:?}");
        v1.delete_collection(&Default::default(), &Default::default())
            .await
            .expect("clean up");
    }
    tcp.shutdown().await;
}
