//! The checks kube-apiserver makes on a CRD's names and versions before it accepts one
//! (apiextensions' `ValidateCustomResourceDefinition`), made here so a CRD the server
//! would reject never becomes Rust modules and types:
//!
//! - `spec.group`: a DNS-1123 subdomain with at least one dot (`example.com`);
//! - `spec.names.kind` and `listKind`: DNS-1035 labels once lowercased (mixed case is
//!   fine), and different from each other;
//! - `spec.names.plural`, `singular`, every `shortNames` and `categories` entry: DNS-1035
//!   labels (lowercase letters, digits and `-`, starting with a letter);
//! - `metadata.name`: exactly `<plural>.<group>`;
//! - `spec.versions`: at least one, each name a DNS-1035 label, no name twice, exactly
//!   one marked `storage: true`.
//!
//! The rules kube-apiserver applies to schemas, printer columns and API approval are
//! `kubegen_apimachinery::crd_validation`'s, shared with the in-memory server:
//! [`validate_rules`] runs them and turns the first violation into an error here.
//!
//! Errors name the YAML path (relative to the document; the caller adds the document
//! index and the file).

use kubegen_apimachinery::crd_validation::{self, ErrorType, FieldError};

use super::document::Crd;
use crate::error::Error;

const DNS1035: &str = "lowercase letters, digits and `-`, starting with a letter and ending with a letter or digit, at most 63 characters";

/// Whether `s` is a DNS-1035 label: `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
pub fn is_dns1035_label(s: &str) -> bool {
    s.len() <= 63 && s.starts_with(|c: char| c.is_ascii_lowercase()) && is_label_body(s)
}

/// Whether `s` is a DNS-1123 subdomain: dot-separated `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
/// labels, at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            label.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && is_label_body(label)
        })
}

fn is_label_body(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.ends_with('-')
}

/// Checks a parsed CRD as kube-apiserver would; `prefix` is the document's path prefix
/// (`items[2].` inside a `List`, else empty).
pub fn validate(crd: &Crd, prefix: &str) -> Result<(), Error> {
    let sp = format!("{prefix}spec.");
    if !is_dns1123_subdomain(&crd.group) || !crd.group.contains('.') {
        return Err(Error::at(
            format!("{sp}group"),
            format!(
                "invalid group {:?}: kube-apiserver requires a DNS-1123 subdomain with at least one dot (lowercase labels of letters, digits and `-`, separated by `.`)",
                crd.group
            ),
            "use a domain you own, e.g. `samplecontroller.example.com`",
        ));
    }
    let np = format!("{sp}names.");
    let names = &crd.names;
    for (key, value) in [("kind", &names.kind), ("listKind", &names.list_kind)] {
        if !is_dns1035_label(&value.to_ascii_lowercase()) {
            return Err(Error::at(
                format!("{np}{key}"),
                format!("invalid {key} {value:?}: kube-apiserver requires a DNS-1035 label once lowercased (letters, digits and `-`, starting with a letter)"),
                "use an UpperCamelCase name of letters and digits, e.g. `Foo` / `FooList`",
            ));
        }
    }
    let mut labels = vec![
        ("plural".to_owned(), names.plural.as_str()),
        ("singular".to_owned(), names.singular.as_str()),
    ];
    for (key, list) in [
        ("shortNames", &names.short_names),
        ("categories", &names.categories),
    ] {
        labels.extend(
            list.iter()
                .enumerate()
                .map(|(i, s)| (format!("{key}[{i}]"), s.as_str())),
        );
    }
    for (key, value) in labels {
        if !is_dns1035_label(value) {
            return Err(Error::at(
                format!("{np}{key}"),
                format!(
                    "invalid name {value:?}: kube-apiserver requires a DNS-1035 label ({DNS1035})"
                ),
                format!("write it lowercase, e.g. {:?}", suggest_label(value)),
            ));
        }
    }
    if names.kind == names.list_kind {
        return Err(Error::at(
            format!("{np}listKind"),
            format!("listKind {:?} is the kind itself", names.list_kind),
            format!("remove `listKind` (it defaults to `{}List`)", names.kind),
        ));
    }
    let expected = format!("{}.{}", names.plural, crd.group);
    if crd.name != expected {
        return Err(Error::at(
            format!("{prefix}metadata.name"),
            format!(
                "metadata.name is {:?}; kube-apiserver requires `<spec.names.plural>.<spec.group>`",
                crd.name
            ),
            format!("set `metadata.name: {expected}`"),
        ));
    }
    validate_versions(crd, &sp)
}

fn validate_versions(crd: &Crd, sp: &str) -> Result<(), Error> {
    if crd.versions.is_empty() {
        return Err(Error::at(
            format!("{sp}versions"),
            "the CRD has no versions",
            "list at least one version under `spec.versions`, with `served: true` and `storage: true`",
        ));
    }
    for (i, v) in crd.versions.iter().enumerate() {
        let vp = format!("{sp}versions[{i}].name");
        if !is_dns1035_label(&v.name) {
            return Err(Error::at(
                vp,
                format!(
                    "invalid version name {:?}: kube-apiserver requires a DNS-1035 label ({DNS1035})",
                    v.name
                ),
                "name versions like `v1`, `v1alpha1`, `v2beta3`",
            ));
        }
        if let Some(first) = crd.versions[..i].iter().position(|o| o.name == v.name) {
            return Err(Error::at(
                vp,
                format!("version {:?} is also spec.versions[{first}]", v.name),
                "give each version a distinct name (or remove the duplicate)",
            ));
        }
    }
    let storage: Vec<usize> = (0..crd.versions.len())
        .filter(|&i| crd.versions[i].storage)
        .collect();
    match storage.as_slice() {
        [_] => Ok(()),
        [] => Err(Error::at(
            format!("{sp}versions"),
            "no version is marked `storage: true`",
            "mark exactly one version `storage: true` (the one objects are stored in)",
        )),
        [first, second, ..] => Err(Error::at(
            format!("{sp}versions[{second}].storage"),
            format!(
                "spec.versions[{first}] ({}) and spec.versions[{second}] ({}) are both marked `storage: true`",
                crd.versions[*first].name, crd.versions[*second].name
            ),
            "mark exactly one version `storage: true`",
        )),
    }
}

/// kube-apiserver's rules for schemas, printer columns and API approval
/// (`crd_validation`) over one CRD document `v`; `prefix` as for [`validate`].
pub fn validate_rules(v: &serde_yaml::Value, prefix: &str) -> Result<(), Error> {
    let Ok(json) = serde_json::to_value(v) else {
        // Keys that are not strings: the schema reader reports them with their path.
        return Ok(());
    };
    match crd_validation::validate(&json).into_iter().next() {
        None => Ok(()),
        Some(e) => Err(Error::at(
            format!("{prefix}{}", yaml_path(&e.field)),
            kube_message(&e),
            rule_fix(&e),
        )),
    }
}

/// A field path (`properties[spec].items`) as the YAML path errors name
/// (`properties.spec.items`).
pub fn yaml_path(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('[') {
        out.push_str(&rest[..at]);
        let inner = &rest[at + 1..];
        let end = inner.find(']').unwrap_or(inner.len());
        let key = &inner[..end];
        if key.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!("[{key}]"));
        } else {
            out.push('.');
            out.push_str(key);
        }
        rest = inner.get(end + 1..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

/// The violation in kube-apiserver's words, said to be its.
pub fn kube_message(e: &FieldError) -> String {
    format!("kube-apiserver rejects this CRD: {}", e.body())
}

/// How to fix a violation of a `crd_validation` rule.
pub fn rule_fix(e: &FieldError) -> String {
    let d = e.detail.as_str();
    let fix = if e.field.starts_with("metadata.annotations") {
        "annotate the CRD `api-approved.kubernetes.io: <URL of the PR that approved the API>`, or `unapproved, <reason>` for an API outside kubernetes/kubernetes (kubegen crd: `+kubebuilder:metadata:annotations=\"api-approved.kubernetes.io=...\"` on the root type)"
    } else if d.contains("other than name and generateName") {
        "give the root `metadata` property only `type: object`"
    } else if e.field.contains("x-kubernetes-list") || d.contains("x-kubernetes-list") {
        "for `x-kubernetes-list-type: map`, list `x-kubernetes-list-map-keys` naming scalar properties of the items that are required or have a default (or use `x-kubernetes-list-type: atomic`/`set` for lists of scalars)"
    } else if e.field.ends_with(".optionalOldSelf") {
        "drop `optionalOldSelf`, or use `oldSelf` in the rule (it is for transition rules)"
    } else if e.field.ends_with(".rule") && e.error_type == ErrorType::Invalid {
        "fix the CEL expression's syntax (https://kubernetes.io/docs/reference/using-api/cel/)"
    } else if e.field.contains(".x-kubernetes-validations[") {
        "give every validation rule a `rule`, and a one-line `message` when the rule spans lines"
    } else if e.field.contains("additionalPrinterColumns") {
        "use a printer column type kube-apiserver knows: integer, number, string, boolean or date (and a format among int32, int64, float, double, byte, date, date-time, password)"
    } else if d.contains("structural")
        || d.starts_with("must not be empty for specified")
        || d.starts_with("because it is defined in")
        || (d == "must be specified" && e.field.ends_with(".items"))
    {
        "make the schema structural: give every property a `type` (or `x-kubernetes-preserve-unknown-fields: true` for any JSON), every array `items`, and keep `type`, `default`, `description`, `nullable` and `x-kubernetes-*` out of allOf/anyOf/oneOf/not, which may only restrict fields the schema already specifies (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema)"
    } else if e.field.ends_with(".uniqueItems") {
        "drop `uniqueItems: true` (`+kubebuilder:validation:UniqueItems`); for a list of unique scalars use `x-kubernetes-list-type: set` (`+listType=set`)"
    } else if d.contains("additionalProperties and properties") {
        "give an object either `properties` (a struct) or `additionalProperties` (a map), not both"
    } else if d.contains("in body must be of type") {
        "give the default a value of the schema's type"
    } else {
        "change the CRD as kube-apiserver's message says"
    };
    fix.to_owned()
}

/// A DNS-1035 label close to `s`, for the fix.
fn suggest_label(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    out = out.trim_matches('-').to_owned();
    if !out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.insert(0, 'x');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        assert!(is_dns1035_label("foos"));
        assert!(is_dns1035_label("foo-bars2"));
        assert!(!is_dns1035_label("Foos"));
        assert!(!is_dns1035_label("2foos"));
        assert!(!is_dns1035_label("foo-"));
        assert!(!is_dns1035_label(""));
        assert!(!is_dns1035_label(&"a".repeat(64)));
        assert!(is_dns1123_subdomain("example.com"));
        assert!(is_dns1123_subdomain("1password.com"));
        assert!(!is_dns1123_subdomain("../../etc"));
        assert!(!is_dns1123_subdomain("example..com"));
        assert!(!is_dns1123_subdomain("Example.com"));
        assert!(!is_dns1123_subdomain(""));
    }

    #[test]
    fn field_paths_become_yaml_paths() {
        assert_eq!(
            yaml_path("spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule"),
            "spec.versions[0].schema.openAPIV3Schema.properties.spec.x-kubernetes-validations[1].rule"
        );
        assert_eq!(
            yaml_path("metadata.annotations[api-approved.kubernetes.io]"),
            "metadata.annotations.api-approved.kubernetes.io"
        );
    }

    #[test]
    fn suggestions_are_labels() {
        assert_eq!(suggest_label("My_Foos"), "my-foos");
        assert!(is_dns1035_label(&suggest_label("9lives")));
    }
}
