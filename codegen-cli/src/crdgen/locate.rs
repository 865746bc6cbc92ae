//! Where in the Rust input a violation of kube-apiserver's CRD rules comes from: the
//! marker that wrote the offending key (a printer column, a CEL rule, `+listType`,
//! `+listMapKey`, a default), else the field the schema node belongs to, else the kind.
//!
//! The schema path names JSON property names, not Rust types, so the field is found by
//! its wire name among the package's structs; where two structs have a field of that
//! name, the one whose markers wrote the offending key wins (else the first).

use kubegen_apimachinery::crd_validation::FieldError;
use serde_json::Value;

use crate::error::Error;
use crate::input::rust::fields::{serde_attrs, wire_name};
use crate::input::rust::markers::{self, Marker};
use crate::input::rust::source::{Item, ItemKind, Source};

/// The error for `e` (a violation in `crd`, the CRD built from `root` and the types
/// of `package`), at the Rust line that caused it; `None` when nothing more precise
/// than the kind is found.
pub fn locate(
    e: &FieldError,
    crd: &Value,
    source: &Source,
    package: &[String],
    root: &Item,
    problem: &str,
    fix: &str,
) -> Option<Error> {
    if let Some(j) = index_after(&e.field, ".additionalPrinterColumns[") {
        return root
            .markers
            .iter()
            .filter(|m| m.name.starts_with("kubebuilder:printcolumn"))
            .nth(j)
            .map(|m| m.error(&root.file, problem, fix));
    }
    // The marker family that wrote the offending key, to pick the marker (and, among
    // fields of the same name, the field).
    let rule = index_after(&e.field, ".x-kubernetes-validations[").and_then(|i| {
        let node = &e.field[..e.field.find(".x-kubernetes-validations[")?];
        crd.pointer(&format!(
            "{}/x-kubernetes-validations/{i}/rule",
            pointer(node)
        ))
        .and_then(Value::as_str)
        .map(str::to_owned)
    });
    let wrote = |m: &Marker| -> bool {
        let name = m.name.as_str();
        if let Some(rule) = &rule {
            return name.contains("XValidation")
                && m.value
                    .as_deref()
                    .is_some_and(|v| v.contains(rule.as_str()));
        }
        if e.field.contains("x-kubernetes-list") || e.detail.contains("x-kubernetes-list") {
            return name == "listType" || name == "listMapKey";
        }
        if e.field.contains(".default") {
            return name == "kubebuilder:default" || name == "default";
        }
        false
    };
    // The type-level rule of a root type (`self` is the object).
    if rule.is_some() {
        if let Some(m) = root.markers.iter().find(|m| wrote(m)) {
            return Some(m.error(&root.file, problem, fix));
        }
    }
    let name = property(&e.field)?;
    let mut first = None;
    for item in source.items.iter().filter(|i| i.package == package) {
        let ItemKind::Struct(s) = &item.kind else {
            continue;
        };
        let Ok(container) = serde_attrs(&s.attrs, item) else {
            continue;
        };
        if rule.is_some() {
            if let Some(m) = item.markers.iter().find(|m| wrote(m)) {
                return Some(m.error(&item.file, problem, fix));
            }
        }
        let syn::Fields::Named(fields) = &s.fields else {
            continue;
        };
        for f in &fields.named {
            let Some(ident) = &f.ident else { continue };
            let Ok(attrs) = serde_attrs(&f.attrs, item) else {
                continue;
            };
            let json = wire_name(&ident.to_string(), &attrs, &container);
            if json != name {
                continue;
            }
            let Ok((field_markers, _)) = markers::read(&f.attrs, &item.file) else {
                continue;
            };
            if let Some(m) = field_markers.iter().find(|m| wrote(m)) {
                return Some(m.error(&item.file, problem, fix));
            }
            if first.is_none() {
                first = Some(item.error_at(ident.span(), problem, fix));
            }
        }
    }
    first
}

/// The number in `[n]` right after `marker` in `path`.
fn index_after(path: &str, marker: &str) -> Option<usize> {
    let at = path.find(marker)? + marker.len();
    path[at..].split(']').next()?.parse().ok()
}

/// The last property name in a field path (`properties[spec].properties[items]` ->
/// `items`).
fn property(path: &str) -> Option<&str> {
    let at = path.rfind("properties[")? + "properties[".len();
    path[at..].split(']').next()
}

/// A field path as a JSON pointer (`spec.versions[0].schema.openAPIV3Schema
/// .properties[spec]` -> `/spec/versions/0/schema/openAPIV3Schema/properties/spec`).
fn pointer(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while !rest.is_empty() {
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        if end > 0 {
            out.push('/');
            out.push_str(&rest[..end]);
        }
        rest = &rest[end..];
        if let Some(r) = rest.strip_prefix('.') {
            rest = r;
        } else if let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']').unwrap_or(r.len());
            out.push('/');
            out.push_str(&r[..close].replace('~', "~0").replace('/', "~1"));
            rest = r.get(close + 1..).unwrap_or_default();
            rest = rest.strip_prefix('.').unwrap_or(rest);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            pointer("spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[a/b]"),
            "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/a~1b"
        );
        assert_eq!(
            property("x.properties[spec].properties[items].items.type"),
            Some("items")
        );
        assert_eq!(
            index_after(
                "spec.versions[1].additionalPrinterColumns[2].type",
                ".additionalPrinterColumns["
            ),
            Some(2)
        );
    }
}
