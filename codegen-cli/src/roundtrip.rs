//! The CRD -> Rust -> CRD round trip: `kubegen generate` a CRD file, `kubegen crd` the
//! generated types, and compare the result with the source, version by version.
//!
//! # Normalization
//!
//! Only key order is normalized (objects compare as maps). Everything else must be
//! identical: the CRD's `metadata.annotations` and `metadata.labels`, every schema keyword, description, default, CEL rule, list and map type,
//! printer column, short name, category, selectable field and subresource; `served`,
//! `storage`, `deprecated` and `deprecationWarning`; group, scope and names. A few values
//! outside the schema are read as the API server reads them, since the generated types
//! cannot tell them apart and no client can either: an explicit `deprecated: false` or
//! printer column `priority: 0` equals its absence (both are Go `omitempty` zero values
//! the server drops), an empty `subresources: {}` equals none (no subresource is served
//! either way), and an absent `singular` or `listKind` is the server's default (the
//! lower-cased kind, `<kind>List`).

use std::path::Path;

use serde_json::Value;

use crate::error::Error;

/// The result for one version of one CRD.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionResult {
    /// `metadata.name` of the CRD.
    pub crd: String,
    /// The version.
    pub version: String,
    /// Where the round trip differs from the source (`path: source -> written`); empty
    /// when identical.
    pub differences: Vec<String>,
}

/// Round-trips every CRD of `file`, using `work` (an empty directory) for the
/// generated tree.
pub fn round_trip(file: &Path, work: &Path) -> Result<Vec<VersionResult>, Vec<Error>> {
    let generated = crate::generate(&crate::Config::new(vec![file.to_path_buf()]))?;
    crate::output::write_tree(work, &generated.files).map_err(|e| vec![e])?;
    let written = crate::crds(&[work.join("apis")])?;
    let sources = read_crds(file).map_err(|e| vec![e])?;
    let mut out = Vec::new();
    for source in &sources {
        let name = source
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let back = written
            .iter()
            .find(|c| c.crd.pointer("/metadata/name").and_then(Value::as_str) == Some(&name));
        let versions = source
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for v in versions {
            let version = v
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let mut differences = Vec::new();
            match back {
                None => differences.push(format!("no CRD named {name} was written")),
                Some(back) => {
                    // The CRD's own annotations and labels (API approval, bundle
                    // versions): an empty map is none, as the server stores it.
                    for key in ["annotations", "labels"] {
                        let non_empty = |v: Option<&Value>| {
                            v.filter(|m| m.as_object().is_none_or(|m| !m.is_empty()))
                                .cloned()
                        };
                        compare(
                            &format!("metadata.{key}"),
                            non_empty(source.pointer(&format!("/metadata/{key}"))).as_ref(),
                            non_empty(back.crd.pointer(&format!("/metadata/{key}"))).as_ref(),
                            &mut differences,
                        );
                    }
                    for key in ["group", "scope"] {
                        compare(
                            &format!("spec.{key}"),
                            source.pointer(&format!("/spec/{key}")),
                            back.crd.pointer(&format!("/spec/{key}")),
                            &mut differences,
                        );
                    }
                    compare(
                        "spec.names",
                        source.pointer("/spec/names").map(default_names).as_ref(),
                        back.crd.pointer("/spec/names"),
                        &mut differences,
                    );
                    let back_version = back
                        .crd
                        .pointer("/spec/versions")
                        .and_then(Value::as_array)
                        .and_then(|vs| {
                            vs.iter()
                                .find(|b| b.get("name").and_then(Value::as_str) == Some(&version))
                        });
                    compare(
                        &format!("spec.versions[{version}]"),
                        Some(&normalize(&v)),
                        back_version.map(normalize).as_ref(),
                        &mut differences,
                    );
                }
            }
            out.push(VersionResult {
                crd: name.clone(),
                version,
                differences,
            });
        }
    }
    Ok(out)
}

/// The CustomResourceDefinitions of a YAML file (every document, and the items of
/// `List` documents), as JSON values.
pub fn read_crds(file: &Path) -> Result<Vec<Value>, Error> {
    let mut crds = Vec::new();
    for value in read_objects(file)? {
        match value.get("kind").and_then(Value::as_str) {
            Some("CustomResourceDefinition") => crds.push(value),
            Some("List") | Some("CustomResourceDefinitionList") => {
                if let Some(items) = value.get("items").and_then(Value::as_array) {
                    crds.extend(items.iter().cloned());
                }
            }
            _ => {}
        }
    }
    Ok(crds)
}

/// Every document of a YAML file as JSON, in order (empty documents left out).
pub fn read_objects(file: &Path) -> Result<Vec<Value>, Error> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Error::at("", format!("cannot read: {e}"), "check the path").in_file(file))?;
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value =
            yaml_to_json(doc).map_err(|e| Error::at("", e, "fix the YAML").in_file(file))?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

fn yaml_to_json(doc: serde_yaml::Deserializer<'_>) -> Result<Value, String> {
    use serde::Deserialize;
    let yaml = serde_yaml::Value::deserialize(doc).map_err(|e| e.to_string())?;
    serde_json::to_value(yaml).map_err(|e| e.to_string())
}

/// `spec.names` as the API server defaults it: `singular` is the lower-cased kind and
/// `listKind` is `<kind>List` when absent.
fn default_names(names: &Value) -> Value {
    let mut names = names.clone();
    if let Some(m) = names.as_object_mut() {
        let kind = m
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        m.entry("singular")
            .or_insert_with(|| Value::String(kind.to_lowercase()));
        m.entry("listKind")
            .or_insert_with(|| Value::String(format!("{kind}List")));
    }
    names
}

fn normalize(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        if m.get("deprecated") == Some(&Value::Bool(false)) {
            m.remove("deprecated");
        }
        if m.get("subresources")
            .and_then(Value::as_object)
            .is_some_and(|s| s.is_empty())
        {
            m.remove("subresources");
        }
        if let Some(Value::Array(columns)) = m.get_mut("additionalPrinterColumns") {
            for c in columns.iter_mut().filter_map(Value::as_object_mut) {
                if c.get("priority").and_then(Value::as_i64) == Some(0) {
                    c.remove("priority");
                }
            }
        }
    }
    v
}

/// Appends `path: a -> b` for every leaf where `a` and `b` differ (at most 20 in
/// `out`); objects compare as maps (key order aside), arrays element by element.
pub fn compare(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<String>) {
    if out.len() >= 20 || a == b {
        return;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                compare(&format!("{path}.{k}"), x.get(k), y.get(k), out);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                compare(&format!("{path}[{i}]"), Some(p), Some(q), out);
            }
        }
        _ => {
            let show = |v: Option<&Value>| {
                let s = v.map(Value::to_string).unwrap_or_else(|| "(absent)".into());
                if s.chars().count() > 160 {
                    format!("{}...", s.chars().take(160).collect::<String>())
                } else {
                    s
                }
            };
            out.push(format!("{path}: {} -> {}", show(a), show(b)));
        }
    }
}
