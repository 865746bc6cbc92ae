//! OpenAPI documents, so that kubectl validates, applies and explains without
//! `--validate=false`.
//!
//! What kubectl 1.32 does with them (found by running it against this server):
//! - `apply`/`create -f` ask `/openapi/v3` for the group-version documents and look for a
//!   PATCH operation of the object's kind carrying the `fieldValidation` query
//!   parameter; finding it, they send `fieldValidation=Strict` and leave validation to
//!   the server. They also fetch `/openapi/v2` (as protobuf) for client-side validation,
//!   which is skipped for kinds the v2 document does not define.
//! - `explain` reads the v3 document of the kind's group-version and the schema whose
//!   `x-kubernetes-group-version-kind` names the kind.
//!
//! Contract:
//! - `/openapi/v3` lists one document per served group-version, each URL carrying a hash
//!   of the document; the documents are built from the registrations at request time, so
//!   a CRD created, changed or deleted shows at once (with a new hash).
//! - Each document has, per resource, the collection and item paths with their
//!   operations (`x-kubernetes-action`, `x-kubernetes-group-version-kind`, the
//!   `fieldValidation`, `dryRun`, `fieldManager` and `force` query parameters) and a
//!   schema per kind: a custom resource's `openAPIV3Schema` (with `apiVersion`, `kind`
//!   and `metadata` added), and for built-in kinds Kubernetes' own schema with every
//!   schema it references (from `openapi/builtin.json`, which
//!   `hack/update-builtin-openapi.sh` derives from k8s-openapi's copy of Kubernetes'
//!   OpenAPI document); a kind that document lacks (a registration of a kind Kubernetes
//!   does not have) gets a stub: an object preserving unknown fields.
//! - PATCH operations do not list `application/strategic-merge-patch+json`: kubectl then
//!   computes strategic merge patches of built-in kinds from its own compiled-in types
//!   rather than from (absent) schema patch metadata.
//! - `/openapi/v2` as JSON is a Swagger 2.0 document with the same definitions; asked for
//!   protobuf (kubectl always does), it is a document with no definitions, which makes
//!   kubectl skip its client-side schema validation (the server validates).

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::LazyLock;

use serde_json::{json, Map, Value};

use super::registry::Registration;

/// The media type client-go asks `/openapi/v2` for.
pub(crate) const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// `api/v1` or `apis/<group>/<version>`.
fn gv_path(reg: &Registration) -> String {
    if reg.group.is_empty() {
        format!("api/{}", reg.version)
    } else {
        format!("apis/{}/{}", reg.group, reg.version)
    }
}

/// The schemas of the built-in kinds and of everything they reference, by name
/// (`io.k8s.api.core.v1.Pod`), as Kubernetes' OpenAPI v3 documents name them.
///
/// The structural merge facts (`x-kubernetes-list-type`, `-list-map-keys`, `-map-type`,
/// `-patch-merge-key`, `-patch-strategy`) that k8s-openapi's schemas lack are laid over
/// them from `openapi/extensions.json`, which `hack/update-builtin-extensions.sh` reads
/// from a real kube-apiserver's `/openapi/v3`: server-side apply merges built-in lists
/// by them, and the served documents carry them as kube-apiserver's do.
static BUILTIN: LazyLock<Map<String, Value>> = LazyLock::new(|| {
    // Both documents are generated and checked in CI; were one ever unreadable, built-in
    // kinds would get stubs (or the built-in merge keys) rather than the server failing.
    let mut schemas: Map<String, Value> =
        serde_json::from_str(include_str!("openapi/builtin.json")).unwrap_or_default();
    let extensions: Value =
        serde_json::from_str(include_str!("openapi/extensions.json")).unwrap_or_default();
    if let Some(defs) = extensions.get("definitions").and_then(Value::as_object) {
        for (name, facts) in defs {
            if let Some(schema) = schemas.get_mut(name) {
                lay_over(schema, facts);
            }
        }
    }
    schemas
});

/// Adds extension keys of a definition (and, under `properties`, of its properties).
fn lay_over(schema: &mut Value, facts: &Value) {
    for (key, value) in facts.as_object().into_iter().flatten() {
        if key == "properties" {
            for (prop, prop_facts) in value.as_object().into_iter().flatten() {
                if let Some(target) = schema.get_mut("properties").and_then(|p| p.get_mut(prop)) {
                    lay_over(target, prop_facts);
                }
            }
        } else if let Some(m) = schema.as_object_mut() {
            m.insert(key.clone(), value.clone());
        }
    }
}

/// The schema of a built-in registration's kind (with its merge facts), whose
/// references name [`builtin_definition`]s.
pub(crate) fn builtin_kind_schema(reg: &Registration) -> Option<&'static Value> {
    builtin_name(reg).and_then(|n| BUILTIN.get(n))
}

/// The schema server-side apply merges a registration's objects by: a custom resource's
/// structural schema, or a built-in kind's OpenAPI schema with its merge facts.
pub(crate) fn merge_schema(reg: &Registration) -> Option<&Value> {
    reg.schema.as_ref().or_else(|| builtin_kind_schema(reg))
}

/// A built-in definition by name (`io.k8s.api.core.v1.Container`).
pub(crate) fn builtin_definition(name: &str) -> Option<&'static Value> {
    BUILTIN.get(name)
}

/// The name of the built-in schema of each group, version and kind.
static BUILTIN_KINDS: LazyLock<HashMap<(String, String, String), String>> = LazyLock::new(|| {
    let mut out = HashMap::new();
    for (name, s) in BUILTIN.iter() {
        let gvks = s
            .get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array);
        for g in gvks.into_iter().flatten() {
            let f = |k: &str| {
                g.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            out.insert((f("group"), f("version"), f("kind")), name.clone());
        }
    }
    out
});

/// The built-in schema name of a registration's kind, if Kubernetes has that kind.
fn builtin_name(reg: &Registration) -> Option<&'static String> {
    if reg.custom || reg.schema.is_some() {
        return None;
    }
    BUILTIN_KINDS.get(&(reg.group.clone(), reg.version.clone(), reg.kind.clone()))
}

/// Whether `openapi/builtin.json` has the schema of a built-in registration's kind.
#[cfg(test)]
pub(crate) fn builtin_schema_known(reg: &Registration) -> bool {
    builtin_name(reg).is_some()
}

/// The schema name of a kind, as kube-apiserver names them: the reversed group
/// (`com.example`), or `io.k8s.api.<group>` for built-in groups, then version and kind.
fn schema_name(reg: &Registration) -> String {
    if let Some(n) = builtin_name(reg) {
        return n.clone();
    }
    if reg.custom {
        let reversed: Vec<&str> = reg.group.split('.').rev().collect();
        format!("{}.{}.{}", reversed.join("."), reg.version, reg.kind)
    } else {
        let g = if reg.group.is_empty() {
            "core"
        } else {
            reg.group.split('.').next().unwrap_or_default()
        };
        format!("io.k8s.api.{g}.{}.{}", reg.version, reg.kind)
    }
}

fn gvk(reg: &Registration) -> Value {
    json!({"group": reg.group, "version": reg.version, "kind": reg.kind})
}

fn param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn write_params() -> Vec<Value> {
    vec![
        param("dryRun", "When present, indicates that modifications should not be persisted."),
        param("fieldManager", "The name of the actor making these changes."),
        param(
            "fieldValidation",
            "How the server treats unknown fields in the body: Ignore, Warn (the default) or Strict.",
        ),
    ]
}

fn operation(reg: &Registration, action: &str, params: Vec<Value>, body: &[&str]) -> Value {
    let schema = json!({"$ref": format!("#/components/schemas/{}", schema_name(reg))});
    let mut op = json!({
        "operationId": format!("{action}{}{}", reg.kind, reg.version),
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": schema}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(reg),
    });
    if !body.is_empty() {
        let content: Map<String, Value> = body
            .iter()
            .map(|t| ((*t).to_owned(), json!({"schema": schema})))
            .collect();
        op["requestBody"] = json!({"content": content, "required": true});
    }
    op
}

fn paths(reg: &Registration, out: &mut Map<String, Value>) {
    let base = format!("/{}", gv_path(reg));
    let (coll, item) = if reg.namespaced {
        (
            format!("{base}/namespaces/{{namespace}}/{}", reg.plural),
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", reg.plural),
        )
    } else {
        (
            format!("{base}/{}", reg.plural),
            format!("{base}/{}/{{name}}", reg.plural),
        )
    };
    let object_types = ["application/json", "application/yaml"];
    let mut patch_params = write_params();
    patch_params.push(param(
        "force",
        "Force an apply, taking over conflicting fields.",
    ));
    out.insert(
        coll,
        json!({
            "get": operation(reg, "list", Vec::new(), &[]),
            "post": operation(reg, "post", write_params(), &object_types),
            "delete": operation(reg, "deletecollection", Vec::new(), &[]),
        }),
    );
    out.insert(
        item,
        json!({
            "get": operation(reg, "get", Vec::new(), &[]),
            "put": operation(reg, "put", write_params(), &object_types),
            "patch": operation(reg, "patch", patch_params, &[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ]),
            "delete": operation(reg, "delete", Vec::new(), &[]),
        }),
    );
}

fn schema(reg: &Registration) -> Value {
    if let Some(s) = builtin_name(reg).and_then(|n| BUILTIN.get(n)) {
        return s.clone();
    }
    let mut s = match &reg.schema {
        Some(s) => s.clone(),
        None => json!({
            "type": "object",
            "description": format!("{} (kubegen-apiserver serves no schema for built-in kinds; any field is accepted here and checked by the server).", reg.kind),
            "x-kubernetes-preserve-unknown-fields": true,
        }),
    };
    if let Some(m) = s.as_object_mut() {
        let props = m
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(p) = props.as_object_mut() {
            p.insert("apiVersion".into(), json!({"type": "string", "description": "The versioned schema of this representation of an object."}));
            p.insert("kind".into(), json!({"type": "string", "description": "The REST resource this object represents."}));
            p.insert(
                "metadata".into(),
                json!({"allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}], "description": "Standard object's metadata."}),
            );
        }
        m.entry("type").or_insert_with(|| json!("object"));
        m.insert("x-kubernetes-group-version-kind".into(), json!([gvk(reg)]));
    }
    s
}

fn object_meta() -> Value {
    let s = |d: &str| json!({"type": "string", "description": d});
    let map = |d: &str| json!({"type": "object", "additionalProperties": {"type": "string"}, "description": d});
    json!({
        "type": "object",
        "description": "Metadata that all persisted resources must have.",
        "properties": {
            "name": s("Name, unique within a namespace."),
            "generateName": s("Prefix the server uses to generate a unique name when name is empty."),
            "namespace": s("The namespace of the object."),
            "uid": s("Unique identifier set by the server."),
            "resourceVersion": s("Opaque version of this object, for optimistic concurrency and watches."),
            "generation": {"type": "integer", "format": "int64", "description": "Sequence number of the desired state."},
            "creationTimestamp": {"type": "string", "format": "date-time", "description": "When the object was created."},
            "deletionTimestamp": {"type": "string", "format": "date-time", "description": "When the object will be deleted."},
            "labels": map("Labels, for selecting objects."),
            "annotations": map("Annotations: unstructured metadata."),
            "finalizers": {"type": "array", "items": {"type": "string"}, "description": "Must be empty before the object is deleted."},
            "ownerReferences": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "description": "Objects this object depends on."},
            "managedFields": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "description": "Which manager owns which fields."},
        },
    })
}

/// The OpenAPI v3 document of one group-version (`api/v1`, `apis/apps/v1`), or `None`
/// when nothing is served there.
pub(crate) fn v3_document(regs: &[&Registration], gv: &str) -> Option<Value> {
    let regs: Vec<&&Registration> = regs.iter().filter(|r| gv_path(r) == gv).collect();
    if regs.is_empty() {
        return None;
    }
    let mut paths_map = Map::new();
    let mut schemas = Map::new();
    for r in regs {
        paths(r, &mut paths_map);
        schemas.insert(schema_name(r), schema(r));
    }
    referenced(&mut schemas);
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": super::discovery::GIT_VERSION},
        "paths": paths_map,
        "components": {"schemas": schemas},
    }))
}

/// A stable hash of a document, for the `?hash=` of its URL.
pub(crate) fn hash(doc: &Value) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    doc.to_string().hash(&mut h);
    format!("{:016X}", h.finish())
}

/// The `/openapi/v3` index: one entry per group-version.
pub(crate) fn v3_index(regs: &[&Registration]) -> Value {
    let gvs: std::collections::BTreeSet<String> = regs.iter().map(|r| gv_path(r)).collect();
    let mut paths_map = BTreeMap::new();
    for gv in gvs {
        if let Some(doc) = v3_document(regs, &gv) {
            let url = format!("/openapi/v3/{gv}?hash={}", hash(&doc));
            paths_map.insert(gv, json!({"serverRelativeURL": url}));
        }
    }
    json!({"paths": paths_map})
}

/// The Swagger 2.0 document (JSON): the same schemas as definitions.
pub(crate) fn v2_document(regs: &[&Registration]) -> Value {
    let mut defs = Map::new();
    for r in regs {
        defs.insert(schema_name(r), schema(r));
    }
    referenced(&mut defs);
    for s in defs.values_mut() {
        // v2 references definitions, not components.
        rewrite_refs(s);
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": super::discovery::GIT_VERSION},
        "paths": {},
        "definitions": defs,
    })
}

/// Adds every schema the schemas reference, transitively: the built-in ones, and the
/// stub `ObjectMeta` when the built-in document is missing.
fn referenced(schemas: &mut Map<String, Value>) {
    let mut todo: Vec<String> = Vec::new();
    for s in schemas.values() {
        refs(s, &mut todo);
    }
    while let Some(name) = todo.pop() {
        if schemas.contains_key(&name) {
            continue;
        }
        let s = match BUILTIN.get(&name) {
            Some(s) => s.clone(),
            None if name == OBJECT_META => object_meta(),
            None => continue,
        };
        refs(&s, &mut todo);
        schemas.insert(name, s);
    }
}

/// The schema names `v` references.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => {
                        if let Some(n) = r.strip_prefix("#/components/schemas/") {
                            out.push(n.to_owned());
                        }
                    }
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k == "$ref" {
                    if let Value::String(s) = x {
                        *s = s.replace("#/components/schemas/", "#/definitions/");
                    }
                } else {
                    rewrite_refs(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// The protobuf (gnostic `openapi_v2.Document`) answer: `swagger: "2.0"` and `info`,
/// no definitions.
pub(crate) fn v2_protobuf() -> Vec<u8> {
    fn field(out: &mut Vec<u8>, num: u8, payload: &[u8]) {
        out.push(num << 3 | 2);
        // Every payload here is shorter than 128 bytes: one length byte.
        out.push(payload.len() as u8);
        out.extend_from_slice(payload);
    }
    let mut info = Vec::new();
    field(&mut info, 1, b"Kubernetes");
    field(&mut info, 2, super::discovery::GIT_VERSION.as_bytes());
    let mut doc = Vec::new();
    field(&mut doc, 1, b"2.0");
    field(&mut doc, 2, &info);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_kinds_carry_kubernetes_schemas() {
        let pods = crate::registry::builtin()
            .into_iter()
            .find(|r| r.plural == "pods" && r.group.is_empty())
            .expect("pods are built in");
        let doc = v3_document(&[&pods], "api/v1").expect("a document for api/v1");
        let schemas = &doc["components"]["schemas"];
        let pod = &schemas["io.k8s.api.core.v1.Pod"];
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
        assert_eq!(
            pod["properties"]["spec"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.PodSpec"
        );
        // Every reference resolves within the document, down to a container's fields.
        let container = &schemas["io.k8s.api.core.v1.Container"];
        assert_eq!(container["properties"]["image"]["type"], "string");
        assert!(container["properties"]["image"]["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Container image name.")));
        let mut names = Vec::new();
        refs(schemas, &mut names);
        assert!(names.iter().all(|n| schemas.get(n).is_some()), "{names:?}");
        assert!(schemas.get(OBJECT_META).is_some());
        // v2 refers to definitions.
        let v2 = v2_document(&[&pods]);
        assert_eq!(
            v2["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["allOf"][0]["$ref"],
            "#/definitions/io.k8s.api.core.v1.PodSpec"
        );
    }

    #[test]
    fn every_built_in_registration_has_a_schema() {
        let missing: Vec<String> = crate::registry::builtin()
            .iter()
            .filter(|r| builtin_name(r).is_none())
            .map(|r| format!("{}/{} {}", r.group, r.version, r.kind))
            .collect();
        assert!(missing.is_empty(), "no Kubernetes schema for {missing:?}");
    }
}
