//! Structural schemas (apiextensions-apiserver's `schema` package): every specified node
//! says its type, value validations (`allOf`, `anyOf`, `oneOf`, `not`) only restrict
//! values the structural part already specifies and carry no types, defaults,
//! descriptions or `x-kubernetes-*` extensions, and the few invariants on embedded
//! resources, int-or-string, the root and `metadata` hold. kube-apiserver reports these
//! sorted by their text; so does [`check`].
//!
//! The root `metadata` rule is `super::root_metadata`'s, sorted in with these as
//! kube-apiserver does; a `pattern` that is no RE2 regular expression is not checked.

use serde_json::{Map, Value};

use super::{ErrorType, FieldError};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The structural-schema violations of a version's `openAPIV3Schema` at `path`.
pub(super) fn check(schema: &Value, path: &str, errs: &mut Vec<FieldError>) {
    // kube-apiserver checks structure only on a schema it can convert; the nodes that
    // stop the conversion are schema errors of their own, reported instead.
    if !convertible(schema) {
        return;
    }
    let mut found = Vec::new();
    super::root_metadata(schema, path, &mut found);
    if let Value::Object(s) = schema {
        invariants(s, Level::Root, path, &mut found);
        // As kube-apiserver: the root's value validations against the structural part.
        value_validation_completeness(s, s, path, path, &mut found);
    }
    found.sort_by_key(ToString::to_string);
    errs.extend(found);
}

/// Whether apiextensions' structural conversion accepts the schema: no
/// `x-kubernetes-preserve-unknown-fields: false`, no `items` array, none of the keywords
/// it does not support.
fn convertible(v: &Value) -> bool {
    const UNSUPPORTED: [&str; 7] = [
        "id",
        "$schema",
        "$ref",
        "patternProperties",
        "dependencies",
        "additionalItems",
        "definitions",
    ];
    let Value::Object(m) = v else { return true };
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false))
        || m.get("items").is_some_and(Value::is_array)
        || UNSUPPORTED.iter().any(|k| m.contains_key(*k))
    {
        return false;
    }
    let properties = object(m, "properties").is_none_or(|p| p.values().all(convertible));
    let schemas = ["items", "additionalProperties", "not"]
        .iter()
        .filter_map(|k| m.get(*k))
        .all(convertible);
    let junctors = ["allOf", "anyOf", "oneOf"]
        .iter()
        .filter_map(|k| m.get(*k).and_then(Value::as_array))
        .flatten()
        .all(convertible);
    properties && schemas && junctors
}

fn text<'a>(s: &'a Map<String, Value>, k: &str) -> &'a str {
    s.get(k).and_then(Value::as_str).unwrap_or_default()
}

fn flag(s: &Map<String, Value>, k: &str) -> bool {
    s.get(k).and_then(Value::as_bool) == Some(true)
}

fn object<'a>(s: &'a Map<String, Value>, k: &str) -> Option<&'a Map<String, Value>> {
    s.get(k).and_then(Value::as_object)
}

fn err(field: String, error_type: ErrorType, value: Option<String>, detail: &str) -> FieldError {
    FieldError::new(field, error_type, value, detail.to_owned())
}

fn quoted(s: &str) -> Option<String> {
    Some(super::go_quote(s))
}

/// The structural part: a node, its items, properties and additional properties.
fn invariants(s: &Map<String, Value>, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    let ty = text(s, "type");
    let int_or_string = flag(s, "x-kubernetes-int-or-string");
    let preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    if ty == "array" && object(s, "items").is_none() {
        errs.push(err(
            format!("{path}.items"),
            ErrorType::Required,
            None,
            "must be specified",
        ));
    }
    if let Some(items) = object(s, "items") {
        invariants(items, Level::Item, &format!("{path}.items"), errs);
    }
    if let Some(props) = object(s, "properties") {
        for (k, p) in props {
            if let Value::Object(p) = p {
                invariants(p, Level::Field, &format!("{path}.properties[{k}]"), errs);
            }
        }
    }
    let additional = s.get("additionalProperties");
    if let Some(a) = additional {
        if lvl == Level::Root {
            let at = format!("{path}.additionalProperties");
            errs.push(err(
                at,
                ErrorType::Forbidden,
                None,
                "must not be used at the root",
            ));
        }
        if let Value::Object(a) = a {
            invariants(
                a,
                Level::Field,
                &format!("{path}.additionalProperties"),
                errs,
            );
        }
    }
    if int_or_string && preserve {
        errs.push(err(
            format!("{path}.x-kubernetes-preserve-unknown-fields"),
            ErrorType::Invalid,
            Some("true".into()),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(err(
            format!("{path}.x-kubernetes-embedded-resource"),
            ErrorType::Invalid,
            Some("true".into()),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    value_validation(
        s,
        int_or_string_any_of(s),
        int_or_string_all_of(s),
        path,
        errs,
    );

    let type_path = format!("{path}.type");
    if embedded && ty != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        if ty.is_empty() {
            errs.push(err(type_path.clone(), ErrorType::Required, None, detail));
        } else {
            errs.push(err(
                type_path.clone(),
                ErrorType::Invalid,
                quoted(ty),
                detail,
            ));
        }
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(err(type_path.clone(), ErrorType::Required, None, detail));
    }
    if embedded && additional.is_some() {
        errs.push(err(
            format!("{path}.additionalProperties"),
            ErrorType::Forbidden,
            None,
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(err(
            type_path,
            ErrorType::Invalid,
            quoted(ty),
            "must be object at the root",
        ));
    }
    let props = object(s, "properties");
    let check_metadata = lvl == Level::Root || embedded;
    if check_metadata {
        for key in ["kind", "apiVersion"] {
            if let Some(p) = props.and_then(|p| object(p, key)) {
                let t = text(p, "type");
                if t != "string" {
                    let at = format!("{path}.properties[{key}].type");
                    errs.push(err(at, ErrorType::Invalid, quoted(t), "must be string"));
                }
            }
        }
        if let Some(m) = props.and_then(|p| object(p, "metadata")) {
            let t = text(m, "type");
            if t != "object" {
                let at = format!("{path}.properties[metadata].type");
                errs.push(err(at, ErrorType::Invalid, quoted(t), "must be object"));
            }
        }
    }
    if embedded && !preserve && props.is_none_or(Map::is_empty) {
        errs.push(err(
            format!("{path}.properties"),
            ErrorType::Required,
            None,
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// `anyOf: [{type: integer}, {type: string}]`, exactly: the one place a value
/// validation may name types (int-or-string).
fn is_int_or_string_pair(v: Option<&Value>) -> bool {
    let Some(Value::Array(list)) = v else {
        return false;
    };
    let only_type = |x: &Value, t: &str| {
        x.as_object()
            .is_some_and(|m| m.len() == 1 && m.get("type").and_then(Value::as_str) == Some(t))
    };
    list.len() == 2 && only_type(&list[0], "integer") && only_type(&list[1], "string")
}

fn int_or_string_any_of(s: &Map<String, Value>) -> bool {
    is_int_or_string_pair(s.get("anyOf"))
}

fn int_or_string_all_of(s: &Map<String, Value>) -> bool {
    s.get("allOf")
        .and_then(Value::as_array)
        .and_then(|l| l.first())
        .is_some_and(|first| is_int_or_string_pair(first.get("anyOf")))
}

/// The junctors of a node: each branch is a nested value validation.
fn value_validation(
    s: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let branches = |key: &str| -> Vec<&Map<String, Value>> {
        s.get(key)
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_object).collect())
            .unwrap_or_default()
    };
    if !skip_any_of {
        for (i, b) in branches("anyOf").into_iter().enumerate() {
            nested(b, false, &format!("{path}.anyOf[{i}]"), errs);
        }
    }
    for (i, b) in branches("allOf").into_iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(b, skip, &format!("{path}.allOf[{i}]"), errs);
    }
    for (i, b) in branches("oneOf").into_iter().enumerate() {
        nested(b, false, &format!("{path}.oneOf[{i}]"), errs);
    }
    if let Some(not) = object(s, "not") {
        nested(not, false, &format!("{path}.not"), errs);
    }
}

/// A branch of a junctor: it may restrict values, never specify them.
fn nested(v: &Map<String, Value>, skip_any_of: bool, path: &str, errs: &mut Vec<FieldError>) {
    value_validation(v, skip_any_of, false, path, errs);
    if let Some(items) = object(v, "items") {
        nested(items, false, &format!("{path}.items"), errs);
    }
    if let Some(props) = object(v, "properties") {
        for (k, p) in props {
            if let Value::Object(p) = p {
                nested(p, false, &format!("{path}.properties[{k}]"), errs);
            }
        }
    }
    let forbid = |errs: &mut Vec<FieldError>, key: &str, detail: &str| {
        errs.push(err(
            format!("{path}.{key}"),
            ErrorType::Forbidden,
            None,
            detail,
        ));
    };
    let non_empty = |k: &str| !text(v, k).is_empty();
    if non_empty("type") {
        forbid(errs, "type", "must be empty to be structural");
    }
    if v.contains_key("additionalProperties") {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if v.get("default").is_some_and(|d| !d.is_null()) {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if non_empty("title") {
        forbid(errs, "title", "must be empty to be structural");
    }
    if non_empty("description") {
        forbid(errs, "description", "must be empty to be structural");
    }
    if flag(v, "nullable") {
        forbid(errs, "nullable", "must be false to be structural");
    }
    for key in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(v, key) {
            forbid(errs, key, "must be false to be structural");
        }
    }
    let non_empty_list = |k: &str| {
        v.get(k)
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
    };
    if non_empty_list("x-kubernetes-list-map-keys") {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    for key in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if v.get(key).is_some_and(|t| !t.is_null()) {
            forbid(errs, key, "must be undefined to be structural");
        }
    }
    if non_empty_list("x-kubernetes-validations") {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if object(v, "properties").is_some_and(|p| p.contains_key("metadata")) {
        forbid(
            errs,
            "properties[metadata]",
            "must not be specified in a nested context",
        );
    }
}

fn undefined_in_structure(s_path: &str, v_path: &str) -> FieldError {
    err(
        s_path.to_owned(),
        ErrorType::Required,
        None,
        &format!("{}{v_path}", super::DEFINED_IN),
    )
}

/// Every property and items a junctor branch restricts exists in the structural part.
fn value_validation_completeness(
    v: &Map<String, Value>,
    s: &Map<String, Value>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    if let Some(not) = object(v, "not") {
        nested_completeness(not, Some(s), s_path, &format!("{v_path}.not"), errs);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, b) in v
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Value::Object(b) = b {
                nested_completeness(b, Some(s), s_path, &format!("{v_path}.{key}[{i}]"), errs);
            }
        }
    }
}

fn nested_completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(undefined_in_structure(s_path, v_path));
        return;
    };
    value_validation_completeness(v, s, s_path, v_path, errs);
    if let Some(items) = object(v, "items") {
        nested_completeness(
            items,
            object(s, "items"),
            &format!("{s_path}.items"),
            &format!("{v_path}.items"),
            errs,
        );
    }
    if let Some(props) = object(v, "properties") {
        let structural = object(s, "properties");
        for (k, p) in props {
            let Value::Object(p) = p else { continue };
            let sp = format!("{s_path}.properties[{k}]");
            let vp = format!("{v_path}.properties[{k}]");
            match structural.and_then(|m| object(m, k)) {
                Some(sf) => nested_completeness(p, Some(sf), &sp, &vp, errs),
                None => errs.push(undefined_in_structure(&sp, &vp)),
            }
        }
    }
}
