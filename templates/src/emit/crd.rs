//! The model -> CustomResourceDefinition objects, as controller-gen's `crd` generator
//! writes them: one CRD per group and kind, every version of the kind in it (sorted by
//! name, as controller-gen orders them; the API server orders them by priority itself
//! wherever it lists them), named `<plural>.<group>`. Each version carries the kind's
//! schema from the model (derived from Rust types, or as a CRD had it), its
//! subresources, printer columns, selectable fields, served/storage/deprecation; the
//! CRD's own annotations and labels are merged over the versions.
//!
//! This is a value, not a file: the output layer (`kubegen crd`) checks it against
//! kube-apiserver's rules and writes it as YAML.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::model::{Api, CrdMetadata, Kind, Scope};

/// One CRD of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Crd {
    /// The API group.
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The versions in the CRD, in its order.
    pub versions: Vec<String>,
    /// `<group>_<plural>.yaml`, controller-gen's file name.
    pub file_name: String,
    /// The CustomResourceDefinition object.
    pub object: Value,
}

/// Every CRD of `api`, sorted by file name. Kinds of the built-in API (no schema) are
/// left out.
pub fn crds(api: &Api) -> Vec<Crd> {
    let mut by_kind: BTreeMap<(&str, &str), Vec<(&str, &Kind)>> = BTreeMap::new();
    for g in &api.groups {
        for v in &g.versions {
            for k in v.kinds.iter().filter(|k| k.schema_json.is_some()) {
                by_kind
                    .entry((g.name.as_str(), k.names.kind.as_str()))
                    .or_default()
                    .push((v.name.as_str(), k));
            }
        }
    }
    let mut out: Vec<Crd> = by_kind
        .into_iter()
        .map(|((group, kind), mut versions)| {
            versions.sort_by(|a, b| a.0.cmp(b.0));
            crd(group, kind, &versions)
        })
        .collect();
    out.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    out
}

fn crd(group: &str, kind: &str, versions: &[(&str, &Kind)]) -> Crd {
    let first = versions[0].1;
    let mut names = Map::new();
    names.insert("kind".into(), json!(first.names.kind));
    names.insert("listKind".into(), json!(first.names.list_kind));
    names.insert("plural".into(), json!(first.names.plural));
    names.insert("singular".into(), json!(first.names.singular));
    if !first.names.short_names.is_empty() {
        names.insert("shortNames".into(), json!(first.names.short_names));
    }
    if !first.names.categories.is_empty() {
        names.insert("categories".into(), json!(first.names.categories));
    }
    let mut metadata = Map::new();
    metadata.insert(
        "name".into(),
        json!(format!("{}.{group}", first.names.plural)),
    );
    // Every version's root type may carry them, as with controller-gen.
    let mut meta = CrdMetadata::default();
    for (_, k) in versions {
        meta.annotations.extend(k.crd_metadata.annotations.clone());
        meta.labels.extend(k.crd_metadata.labels.clone());
    }
    if !meta.annotations.is_empty() {
        metadata.insert("annotations".into(), json!(meta.annotations));
    }
    if !meta.labels.is_empty() {
        metadata.insert("labels".into(), json!(meta.labels));
    }
    let object = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": group,
            "names": names,
            "scope": match first.scope { Scope::Namespaced => "Namespaced", Scope::Cluster => "Cluster" },
            "versions": versions.iter().map(|(v, k)| version(v, k)).collect::<Vec<_>>(),
        }
    });
    Crd {
        group: group.to_owned(),
        kind: kind.to_owned(),
        versions: versions.iter().map(|(v, _)| (*v).to_owned()).collect(),
        file_name: format!("{group}_{}.yaml", first.names.plural),
        object,
    }
}

/// One `spec.versions[]` entry.
fn version(name: &str, k: &Kind) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(name));
    m.insert("served".into(), json!(k.served));
    m.insert("storage".into(), json!(k.storage));
    if k.deprecated {
        m.insert("deprecated".into(), json!(true));
        if let Some(w) = &k.deprecation_warning {
            m.insert("deprecationWarning".into(), json!(w));
        }
    }
    let schema = k
        .schema_json
        .as_deref()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .unwrap_or_else(|| json!({"type": "object"}));
    m.insert("schema".into(), json!({ "openAPIV3Schema": schema }));
    let mut sub = Map::new();
    if k.status_subresource {
        sub.insert("status".into(), json!({}));
    }
    if let Some(s) = &k.scale {
        let mut scale = Map::new();
        scale.insert("specReplicasPath".into(), json!(s.spec_replicas_path));
        scale.insert("statusReplicasPath".into(), json!(s.status_replicas_path));
        if let Some(l) = &s.label_selector_path {
            scale.insert("labelSelectorPath".into(), json!(l));
        }
        sub.insert("scale".into(), Value::Object(scale));
    }
    if !sub.is_empty() {
        m.insert("subresources".into(), Value::Object(sub));
    }
    if !k.printer_columns.is_empty() {
        let cols: Vec<Value> = k
            .printer_columns
            .iter()
            .map(|c| {
                let mut col = Map::new();
                col.insert("name".into(), json!(c.name));
                col.insert("type".into(), json!(c.type_));
                col.insert("jsonPath".into(), json!(c.json_path));
                if let Some(d) = &c.description {
                    col.insert("description".into(), json!(d));
                }
                if let Some(f) = &c.format {
                    col.insert("format".into(), json!(f));
                }
                if c.priority != 0 {
                    col.insert("priority".into(), json!(c.priority));
                }
                Value::Object(col)
            })
            .collect();
        m.insert("additionalPrinterColumns".into(), Value::Array(cols));
    }
    if !k.selectable_fields.is_empty() {
        let fields: Vec<Value> = k
            .selectable_fields
            .iter()
            .map(|p| json!({ "jsonPath": p }))
            .collect();
        m.insert("selectableFields".into(), Value::Array(fields));
    }
    Value::Object(m)
}
