//! The rules kube-apiserver applies to a CustomResourceDefinition itself, in its words:
//! one place for the checks that `kubegen crd` and `kubegen generate` (codegen-cli) and
//! the in-memory API server (kubegen-apiserver) make, so a CRD one of them accepts is a
//! CRD the others accept, and a CRD the real server rejects is rejected by all of them.
//!
//! [`validate`] takes an `apiextensions.k8s.io/v1` CRD as JSON and returns every
//! violation found as a [`FieldError`]: a field path in apimachinery's syntax
//! (`spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-list-map-keys`)
//! and the message kube-apiserver 1.36 gives (`Required value: must not be empty if
//! x-kubernetes-list-type is map`). Paths name the v1 object as written;
//! [`internal_path`] turns one into the path kube-apiserver reports, which names its
//! internal version (a schema or printer columns shared by every version are reported
//! at `spec.validation.openAPIV3Schema` / `spec.additionalPrinterColumns`).
//!
//! Checked (apiextensions-apiserver's `validation.go` and structural schema rules):
//!
//! - protected groups (`*.k8s.io`, `*.kubernetes.io`) carry the
//!   `api-approved.kubernetes.io` annotation, a URL or a reason starting `unapproved`;
//! - the root `metadata` schema says nothing but `type: object` (and `name` /
//!   `generateName` properties);
//! - `x-kubernetes-list-type` (`atomic`, `set`, `map`) only on arrays;
//!   `x-kubernetes-list-map-keys` only with `map` and never empty with it; a map list's
//!   items are objects whose properties include every key, scalar, required or
//!   defaulted, not nullable, without duplicates;
//! - every `x-kubernetes-validations[].rule` parses as CEL (syntax only: types, cost
//!   and the `self` bindings are not checked), with a message when it spans lines;
//! - printer columns' `type` (integer, number, string, boolean, date) and `format`;
//! - a `default` has the type its schema says (`type`, nullable, int-or-string;
//!   neither enum nor pattern nor bounds).
//!
//! - the schema is structural (the `structural` module: every specified node has a
//!   type, junctors (`allOf`, `anyOf`, `oneOf`, `not`) only restrict what the structural
//!   part specifies, the embedded-resource and int-or-string invariants), and
//!   `x-kubernetes-preserve-unknown-fields` is never `false`.
//!
//! Not checked here: names and versions, which the CRD reader and the server each check
//! on their own terms; `pattern` as an RE2 expression; CEL types and cost.

use std::fmt;

use serde_json::{Map, Value};

/// The annotation a CRD in a protected group must carry.
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// How a structural-schema error names the value validation that restricts a field the
/// structural part does not specify.
const DEFINED_IN: &str = "because it is defined in ";

/// Printer column types kube-apiserver accepts, in the order its messages list them.
pub const PRINTER_COLUMN_TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];

/// Printer column formats kube-apiserver accepts, in the order its messages list them.
pub const PRINTER_COLUMN_FORMATS: [&str; 8] = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// apimachinery's `field.ErrorType`, the kinds of violation kube-apiserver reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// `Required value`.
    Required,
    /// `Invalid value`.
    Invalid,
    /// `Forbidden`.
    Forbidden,
    /// `Unsupported value`.
    NotSupported,
}

impl ErrorType {
    /// The `StatusCause` reason (`FieldValueRequired`, ...).
    pub fn cause(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::NotSupported => "FieldValueNotSupported",
        }
    }
}

/// One violation: apimachinery's `field.Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field path, in apimachinery's syntax, of the v1 object.
    pub field: String,
    /// What kind of violation.
    pub error_type: ErrorType,
    /// The offending value as kube-apiserver prints it (`"int"`, `["nme"]`), for
    /// `Invalid` and `NotSupported`.
    pub value: Option<String>,
    /// The detail.
    pub detail: String,
}

impl FieldError {
    fn new(field: String, error_type: ErrorType, value: Option<String>, detail: String) -> Self {
        FieldError {
            field,
            error_type,
            value,
            detail,
        }
    }

    /// The error with kube-apiserver's paths ([`internal_path`]): its field's, and the
    /// one a structural-schema detail names (`because it is defined in <path>`).
    pub fn internal(mut self, crd: &Value) -> FieldError {
        self.field = internal_path(crd, &self.field);
        if let Some(p) = self.detail.strip_prefix(DEFINED_IN) {
            self.detail = format!("{DEFINED_IN}{}", internal_path(crd, p));
        }
        self
    }

    /// The message without the path, as a `StatusCause` carries it
    /// (`Invalid value: "int": must be one of ...`).
    pub fn body(&self) -> String {
        let value = self.value.as_deref().unwrap_or("null");
        match self.error_type {
            ErrorType::Required if self.detail.is_empty() => "Required value".to_owned(),
            ErrorType::Required => format!("Required value: {}", self.detail),
            ErrorType::Forbidden if self.detail.is_empty() => "Forbidden".to_owned(),
            ErrorType::Forbidden => format!("Forbidden: {}", self.detail),
            ErrorType::Invalid => format!("Invalid value: {value}: {}", self.detail),
            ErrorType::NotSupported => format!("Unsupported value: {value}: {}", self.detail),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Whether kube-apiserver requires API approval for CRDs of `group`.
pub fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// Every violation of the rules this module holds (see the module docs), in the order
/// found. An object that is no CRD at all yields nothing: shape errors are the
/// caller's.
pub fn validate(crd: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(e) = api_approval(group, crd.pointer("/metadata/annotations")) {
        errs.push(e);
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, v) in versions.iter().enumerate() {
        let vp = format!("spec.versions[{i}]");
        if let Some(cols) = v.get("additionalPrinterColumns").and_then(Value::as_array) {
            for (j, c) in cols.iter().enumerate() {
                printer_column(c, &format!("{vp}.additionalPrinterColumns[{j}]"), &mut errs);
            }
        }
        if let Some(schema) = v.pointer("/schema/openAPIV3Schema") {
            let sp = format!("{vp}.schema.openAPIV3Schema");
            // kube-apiserver's order: the structural checks (the root metadata among
            // them), sorted, then the schema's own rules.
            structural::check(schema, &sp, &mut errs);
            walk(schema, &sp, &mut errs);
        }
    }
    errs
}

/// The approval rule for protected groups (`validateAPIApproval`); `None` when the CRD
/// passes. `annotations` is the CRD's `metadata.annotations`.
pub fn api_approval(group: &str, annotations: Option<&Value>) -> Option<FieldError> {
    if !is_protected_group(group) {
        return None;
    }
    let field = format!("metadata.annotations[{API_APPROVED_ANNOTATION}]");
    let value = annotations
        .and_then(|a| a.get(API_APPROVED_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if value.is_empty() {
        return Some(FieldError::new(
            field,
            ErrorType::Required,
            None,
            format!("protected groups must have approval annotation \"{API_APPROVED_ANNOTATION}\", see https://github.com/kubernetes/enhancements/pull/1111"),
        ));
    }
    if value.starts_with("unapproved") || is_url(value) {
        return None;
    }
    Some(FieldError::new(
        field,
        ErrorType::Invalid,
        Some(go_quote(value)),
        format!("protected groups must have approval annotation \"{API_APPROVED_ANNOTATION}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
    ))
}

/// Go's `url.ParseRequestURI` with a scheme and a host: `scheme://host...`.
fn is_url(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    scheme_ok && !host.is_empty() && !s.contains(char::is_whitespace)
}

/// The path kube-apiserver reports for `path` (a [`FieldError::field`] of `crd`): its
/// internal version keeps a schema, and printer columns, that every version shares
/// once, at `spec.validation.openAPIV3Schema` and `spec.additionalPrinterColumns`.
pub fn internal_path(crd: &Value, path: &str) -> String {
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let shared = |pointer: &str| {
        let first = versions.first().and_then(|v| v.pointer(pointer));
        versions.iter().all(|v| v.pointer(pointer) == first)
    };
    let Some(rest) = path.strip_prefix("spec.versions[") else {
        return path.to_owned();
    };
    let Some((_, after)) = rest.split_once("].") else {
        return path.to_owned();
    };
    if let Some(tail) = after.strip_prefix("schema.openAPIV3Schema") {
        if shared("/schema") {
            return format!("spec.validation.openAPIV3Schema{tail}");
        }
    }
    if let Some(tail) = after.strip_prefix("additionalPrinterColumns") {
        if shared("/additionalPrinterColumns") {
            return format!("spec.additionalPrinterColumns{tail}");
        }
    }
    path.to_owned()
}

fn printer_column(c: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let ty = c.get("type").and_then(Value::as_str).unwrap_or_default();
    let types = PRINTER_COLUMN_TYPES.join(",");
    if ty.is_empty() {
        errs.push(FieldError::new(
            format!("{path}.type"),
            ErrorType::Required,
            None,
            format!("must be one of {types}"),
        ));
    } else if !PRINTER_COLUMN_TYPES.contains(&ty) {
        errs.push(FieldError::new(
            format!("{path}.type"),
            ErrorType::Invalid,
            Some(go_quote(ty)),
            format!("must be one of {types}"),
        ));
    }
    let format = c.get("format").and_then(Value::as_str).unwrap_or_default();
    if !format.is_empty() && !PRINTER_COLUMN_FORMATS.contains(&format) {
        errs.push(FieldError::new(
            format!("{path}.format"),
            ErrorType::Invalid,
            Some(go_quote(format)),
            format!("must be one of {}", PRINTER_COLUMN_FORMATS.join(",")),
        ));
    }
}

/// `validateStructuralMetadataInvariants` at the root: `metadata` may say `type: object`
/// and restrict `name` and `generateName`, nothing else.
fn root_metadata(schema: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(Value::Object(meta)) = schema.pointer("/properties/metadata") else {
        return;
    };
    let field = format!("{path}.properties[metadata]");
    if let Some(t) = meta.get("type").and_then(Value::as_str) {
        if t != "object" {
            errs.push(FieldError::new(
                format!("{field}.type"),
                ErrorType::Invalid,
                Some(go_quote(t)),
                "must be object".into(),
            ));
        }
    }
    let only_names = match meta.get("properties") {
        None => true,
        Some(Value::Object(p)) => {
            p.is_empty() || p.keys().all(|k| k == "name" || k == "generateName")
        }
        Some(_) => false,
    };
    let other = meta
        .keys()
        .any(|k| !matches!(k.as_str(), "type" | "default" | "properties"));
    if other || !only_names {
        errs.push(FieldError::new(
            field,
            ErrorType::Forbidden,
            None,
            "must not specify anything other than name and generateName, but metadata is implicitly specified".into(),
        ));
    }
}

/// The per-node rules, then the node's children.
fn walk(schema: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Value::Object(s) = schema else { return };
    if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::new(
            format!("{path}.x-kubernetes-preserve-unknown-fields"),
            ErrorType::Invalid,
            Some("false".into()),
            "must be true or undefined".into(),
        ));
    }
    if s.get("uniqueItems") == Some(&Value::Bool(true)) {
        errs.push(FieldError::new(
            format!("{path}.uniqueItems"),
            ErrorType::Forbidden,
            None,
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
                .into(),
        ));
    }
    let has_properties = s
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    match s.get("additionalProperties") {
        Some(Value::Bool(true)) | None => {}
        Some(_) if has_properties => errs.push(FieldError::new(
            format!("{path}.additionalProperties"),
            ErrorType::Forbidden,
            None,
            "additionalProperties and properties are mutual exclusive".into(),
        )),
        Some(_) => {}
    }
    if s.get("x-kubernetes-map-type").is_some_and(|t| !t.is_null()) {
        let ty = s.get("type").and_then(Value::as_str).unwrap_or_default();
        let detail = "must be object if x-kubernetes-map-type is specified".to_owned();
        if ty.is_empty() {
            errs.push(FieldError::new(
                format!("{path}.type"),
                ErrorType::Required,
                None,
                detail,
            ));
        } else if ty != "object" {
            let value = Some(go_quote(ty));
            errs.push(FieldError::new(
                format!("{path}.type"),
                ErrorType::Invalid,
                value,
                detail,
            ));
        }
    }
    list_type(s, path, errs);
    validations(s, path, errs);
    if let Some(d) = s.get("default") {
        default_value(schema, d, &format!("{path}.default"), "", errs);
    }
    if let Some(Value::Object(props)) = s.get("properties") {
        for (k, p) in props {
            walk(p, &format!("{path}.properties[{k}]"), errs);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child @ Value::Object(_)) = s.get(key) {
            walk(child, &format!("{path}.{key}"), errs);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = s.get(key) {
            for (i, child) in list.iter().enumerate() {
                walk(child, &format!("{path}.{key}[{i}]"), errs);
            }
        }
    }
}

fn list_type(s: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    let ty = s.get("type").and_then(Value::as_str).unwrap_or_default();
    let list_type = s.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let keys_value = || Some(serde_json::to_string(&keys).unwrap_or_default());
    if let Some(lt) = list_type {
        if ty.is_empty() {
            errs.push(FieldError::new(
                format!("{path}.type"),
                ErrorType::Required,
                None,
                "must be array if x-kubernetes-list-type is specified".into(),
            ));
        } else if ty != "array" {
            errs.push(FieldError::new(
                format!("{path}.type"),
                ErrorType::Invalid,
                Some(go_quote(ty)),
                "must be array if x-kubernetes-list-type is specified".into(),
            ));
        }
        if !matches!(lt, "atomic" | "set" | "map") {
            errs.push(FieldError::new(
                format!("{path}.x-kubernetes-list-type"),
                ErrorType::NotSupported,
                Some(go_quote(lt)),
                "supported values: \"atomic\", \"map\", \"set\"".into(),
            ));
        }
    }
    if !keys.is_empty() {
        match list_type {
            None => errs.push(FieldError::new(
                format!("{path}.x-kubernetes-list-type"),
                ErrorType::Required,
                None,
                "must be map if x-kubernetes-list-map-keys is non-empty".into(),
            )),
            Some("map") => {}
            Some(other) => errs.push(FieldError::new(
                format!("{path}.x-kubernetes-list-type"),
                ErrorType::Invalid,
                Some(go_quote(other)),
                "must be map if x-kubernetes-list-map-keys is non-empty".into(),
            )),
        }
    }
    if list_type != Some("map") {
        if let (Some("set"), Some(true)) = (
            list_type,
            s.get("items")
                .and_then(|i| i.get("nullable"))
                .and_then(Value::as_bool),
        ) {
            errs.push(FieldError::new(
                format!("{path}.items.nullable"),
                ErrorType::Forbidden,
                None,
                "cannot be nullable when x-kubernetes-list-type is set".into(),
            ));
        }
        return;
    }
    if keys.is_empty() {
        errs.push(FieldError::new(
            format!("{path}.x-kubernetes-list-map-keys"),
            ErrorType::Required,
            None,
            "must not be empty if x-kubernetes-list-type is map".into(),
        ));
    }
    let Some(items) = s.get("items") else {
        errs.push(FieldError::new(
            format!("{path}.items"),
            ErrorType::Required,
            None,
            "must have a schema if x-kubernetes-list-type is map".into(),
        ));
        return;
    };
    let item_type = items
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if item_type != "object" {
        errs.push(FieldError::new(
            format!("{path}.items.type"),
            ErrorType::Invalid,
            Some(go_quote(item_type)),
            "must be object if parent array's x-kubernetes-list-type is map".into(),
        ));
    } else {
        let props = items.get("properties").and_then(Value::as_object);
        for (i, k) in keys.iter().enumerate() {
            match props.and_then(|p| p.get(*k)) {
                Some(p) => {
                    let t = p.get("type").and_then(Value::as_str).unwrap_or_default();
                    if t == "array" || t == "object" {
                        errs.push(FieldError::new(
                            format!("{path}.items.properties[{k}].type"),
                            ErrorType::Invalid,
                            Some(go_quote(item_type)),
                            "must be a scalar type if parent array's x-kubernetes-list-type is map"
                                .into(),
                        ));
                    }
                }
                None => errs.push(FieldError::new(
                    format!("{path}.x-kubernetes-list-map-keys"),
                    ErrorType::Invalid,
                    keys_value(),
                    "entries must all be names of item properties".into(),
                )),
            }
            if keys[..i].contains(k) {
                errs.push(FieldError::new(
                    format!("{path}.x-kubernetes-list-map-keys"),
                    ErrorType::Invalid,
                    keys_value(),
                    "must not contain duplicate entries".into(),
                ));
            }
        }
    }
    // validateMapListKeysMapSet
    if items.get("nullable").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::new(
            format!("{path}.items.nullable"),
            ErrorType::Forbidden,
            None,
            "cannot be nullable when x-kubernetes-list-type is map".into(),
        ));
    }
    let required: Vec<&str> = items
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for k in &keys {
        let Some(p) = items.pointer(&format!("/properties/{}", pointer_escape(k))) else {
            continue;
        };
        if !required.contains(k) && p.get("default").is_none() {
            errs.push(FieldError::new(
                format!("{path}.items.properties[{k}].default"),
                ErrorType::Required,
                None,
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property".into(),
            ));
        }
        if p.get("nullable").and_then(Value::as_bool) == Some(true) {
            errs.push(FieldError::new(
                format!("{path}.items.properties[{k}].nullable"),
                ErrorType::Forbidden,
                None,
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable".into(),
            ));
        }
    }
}

fn pointer_escape(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

/// `x-kubernetes-validations`: each rule present, one line unless a message says what
/// it checks, and CEL that parses.
fn validations(s: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    let Some(Value::Array(rules)) = s.get("x-kubernetes-validations") else {
        return;
    };
    for (i, r) in rules.iter().enumerate() {
        let rp = format!("{path}.x-kubernetes-validations[{i}]");
        let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
        let (rule, message) = (text("rule"), text("message"));
        let newline = |s: &str| s.contains(['\n', '\r']);
        if rule.trim().is_empty() {
            errs.push(FieldError::new(
                format!("{rp}.rule"),
                ErrorType::Required,
                None,
                "rule is not specified".into(),
            ));
            continue;
        } else if !message.is_empty() && message.trim().is_empty() {
            errs.push(FieldError::new(
                format!("{rp}.message"),
                ErrorType::Invalid,
                Some(go_quote(message)),
                "message must be non-empty if specified".into(),
            ));
        } else if newline(message.trim()) {
            errs.push(FieldError::new(
                format!("{rp}.message"),
                ErrorType::Invalid,
                Some(go_quote(message)),
                "message must not contain line breaks".into(),
            ));
        } else if newline(rule.trim()) && message.trim().is_empty() {
            errs.push(FieldError::new(
                format!("{rp}.message"),
                ErrorType::Required,
                None,
                "message must be specified if rule contains line breaks".into(),
            ));
        }
        if let Err(issues) = cel_syntax(rule) {
            errs.push(FieldError::new(
                format!("{rp}.rule"),
                ErrorType::Invalid,
                Some(rule_value(r)),
                format!("compilation failed: {issues}"),
            ));
        } else if r.get("optionalOldSelf") == Some(&Value::Bool(true)) && !uses_old_self(rule) {
            errs.push(FieldError::new(
                format!("{rp}.optionalOldSelf"),
                ErrorType::Invalid,
                Some("true".into()),
                "may not be set if oldSelf is not used in rule".into(),
            ));
        }
    }
}

/// Whether a rule names the `oldSelf` variable (outside string literals): what makes it
/// a transition rule.
fn uses_old_self(rule: &str) -> bool {
    let mut code = String::with_capacity(rule.len());
    let mut chars = rule.chars();
    while let Some(c) = chars.next() {
        if c == '"' || c == '\'' {
            // A string literal: skipped, escapes included.
            while let Some(d) = chars.next() {
                if d == '\\' {
                    chars.next();
                } else if d == c {
                    break;
                }
            }
            code.push(' ');
        } else {
            code.push(c);
        }
    }
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|word| word == "oldSelf")
}

/// Whether `rule` is CEL as kube-apiserver parses it (optional syntax `a.?b`, `[?x]`
/// and backquoted identifiers enabled), and the syntax errors as cel-go prints them:
/// `ERROR: <input>:1:10: Syntax error: ...` with the line and a caret under the column.
///
/// The parser recurses once per level of the expression's tree, so it runs on a thread
/// of its own with a large stack, after [`nesting`] has refused what cel-go refuses for
/// depth (which also bounds that recursion).
pub fn cel_syntax(rule: &str) -> Result<(), String> {
    let size = rule.chars().count();
    if size > CEL_SIZE_LIMIT {
        return Err(format!(
            "ERROR: <input>:-1:0: expression code point size exceeds limit: size: {size}, limit {CEL_SIZE_LIMIT}"
        ));
    }
    match nesting(rule) {
        Nesting::Brackets => {
            return Err(format!(
                "ERROR: <input>:-1:0: expression recursion limit exceeded: {CEL_DEPTH_LIMIT}"
            ))
        }
        Nesting::Chain => return Err("ERROR: <input>:-1:0: max recursion depth exceeded".into()),
        Nesting::Within => {}
    }
    let parse = || {
        cel::parser::Parser::new()
            .max_recursion_depth(CEL_DEPTH_LIMIT as u16)
            .enable_optional_syntax(true)
            .enable_ident_escape_syntax(true)
            .parse(rule)
            .map(drop)
    };
    let parsed = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("cel-parse".into())
            .stack_size(256 << 20)
            .spawn_scoped(s, parse)
            .ok()
            .map(|h| h.join())
    });
    let parsed = match parsed {
        Some(Ok(result)) => result,
        // No thread to be had, or the parser panicked: nothing is known against the
        // rule, and kube-apiserver is the judge.
        _ => return Ok(()),
    };
    let Err(errors) = parsed else { return Ok(()) };
    let lines: Vec<&str> = rule.split('\n').collect();
    let issues: Vec<String> = errors
        .errors
        .iter()
        .map(|e| {
            let (line, col) = (e.pos.0.max(1) as usize, e.pos.1.max(1) as usize);
            let mut out = format!("ERROR: <input>:{line}:{col}: {}", e.msg);
            if let Some(text) = lines.get(line - 1) {
                out.push_str(&format!("\n | {text}\n | {}^", ".".repeat(col - 1)));
            }
            out
        })
        .collect();
    Err(issues.join("\n"))
}

/// cel-go's limits, which kube-apiserver keeps: 250 levels of nesting, 100,000 code
/// points.
const CEL_DEPTH_LIMIT: usize = 250;
const CEL_SIZE_LIMIT: usize = 100_000;

/// How deep a rule nests, as far as cel-go's limits go.
#[derive(Debug, PartialEq, Eq)]
enum Nesting {
    /// Within the limits.
    Within,
    /// More than 250 levels of brackets (cel-go: "expression recursion limit exceeded").
    Brackets,
    /// A chain of left-associative operators and member accesses deeper than 250
    /// levels (cel-go: "max recursion depth exceeded"). Counted over-generously (every
    /// `.`, `[` and arithmetic or relational operator between two `&&`, `||`, `?`, `:`
    /// or `,`), which kube-apiserver's rules stay far below.
    Chain,
}

/// Scans `rule` (strings and backquoted names skipped) for [`Nesting`].
fn nesting(rule: &str) -> Nesting {
    let chars: Vec<char> = rule.chars().collect();
    // The chain count of each open bracket level, outermost first.
    let mut levels = vec![0usize];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '"' => {
                let raw = i > 0 && matches!(chars[i - 1], 'r' | 'R');
                let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
                let quote = if triple { 3 } else { 1 };
                i += quote;
                while i < chars.len() {
                    if chars[i] == '\\' && !raw {
                        i += 2;
                        continue;
                    }
                    if chars[i] == c && (!triple || chars[i..].starts_with(&[c, c, c])) {
                        i += quote;
                        break;
                    }
                    i += 1;
                }
                continue;
            }
            '`' => {
                i += 1;
                while i < chars.len() && chars[i] != '`' {
                    i += 1;
                }
            }
            '(' | '[' | '{' => {
                if c == '[' {
                    if let Some(n) = levels.last_mut() {
                        *n += 1;
                    }
                }
                levels.push(0);
                if levels.len() - 1 > CEL_DEPTH_LIMIT {
                    return Nesting::Brackets;
                }
            }
            ')' | ']' | '}' if levels.len() > 1 => {
                levels.pop();
            }
            '&' | '|' | '?' | ':' | ',' => {
                if let Some(n) = levels.last_mut() {
                    *n = 0;
                }
            }
            '=' if i > 0 && matches!(chars[i - 1], '<' | '>' | '=' | '!') => {}
            '.' | '+' | '-' | '*' | '/' | '%' | '<' | '>' | '=' => {
                if let Some(n) = levels.last_mut() {
                    *n += 1;
                }
            }
            '!' if chars.get(i + 1) == Some(&'=') => {
                if let Some(n) = levels.last_mut() {
                    *n += 1;
                }
            }
            _ => {}
        }
        if levels.iter().sum::<usize>() + levels.len() - 1 > CEL_DEPTH_LIMIT {
            return Nesting::Chain;
        }
        i += 1;
    }
    Nesting::Within
}

/// A rule as kube-apiserver prints it in an `Invalid value`: Go's JSON of its
/// `ValidationRule`, with `<`, `>` and `&` escaped as Go escapes them.
fn rule_value(r: &Value) -> String {
    let text = |k: &str| Value::String(r.get(k).and_then(Value::as_str).unwrap_or_default().into());
    let opt = |k: &str| r.get(k).cloned().unwrap_or(Value::Null);
    let fields = [
        ("Rule", text("rule")),
        ("Message", text("message")),
        ("MessageExpression", text("messageExpression")),
        ("Reason", opt("reason")),
        ("FieldPath", text("fieldPath")),
        ("OptionalOldSelf", opt("optionalOldSelf")),
    ];
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("\"{k}\":{}", go_json(v)))
        .collect();
    format!("{{{}}}", body.join(","))
}

fn go_json(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// Go's `%q` for the strings these messages print (JSON quoting is the same for them).
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The JSON type go-openapi names for a value.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A default's type against its schema, recursively (go-openapi's type check, as the
/// server's defaulting validation reports it: `<sub> in body must be of type <t>`).
fn default_value(schema: &Value, value: &Value, path: &str, sub: &str, errs: &mut Vec<FieldError>) {
    let flag = |k: &str| schema.get(k).and_then(Value::as_bool) == Some(true);
    let actual = json_type(value);
    if value.is_null() && flag("nullable") {
        return;
    }
    if flag("x-kubernetes-int-or-string") {
        if !matches!(actual, "integer" | "string") {
            errs.push(type_error(path, sub, "integer,string", actual));
        }
        return;
    }
    let Some(want) = schema.get("type").and_then(Value::as_str) else {
        return;
    };
    let ok = match (want, value) {
        ("integer", Value::Number(n)) => n.as_f64().is_some_and(|f| f.fract() == 0.0),
        ("number", Value::Number(_)) => true,
        _ => want == actual,
    };
    if !ok {
        errs.push(type_error(path, sub, want, actual));
        return;
    }
    let at = |next: &str| {
        if sub.is_empty() || next.starts_with('[') {
            format!("{sub}{next}")
        } else {
            format!("{sub}.{next}")
        }
    };
    match value {
        Value::Object(m) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (k, v) in m {
                if let Some(p) = props.and_then(|p| p.get(k)).or(additional) {
                    default_value(p, v, path, &at(k), errs);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
                for (i, v) in a.iter().enumerate() {
                    default_value(items, v, path, &at(&format!("[{i}]")), errs);
                }
            }
        }
        _ => {}
    }
}

fn type_error(path: &str, sub: &str, want: &str, actual: &str) -> FieldError {
    let field = if sub.is_empty() {
        path.to_owned()
    } else {
        format!("{path}.{sub}")
    };
    FieldError::new(
        field,
        ErrorType::Invalid,
        Some(go_quote(actual)),
        format!("{sub} in body must be of type {want}: {}", go_quote(actual)),
    )
}

mod structural;

#[cfg(test)]
mod tests;
