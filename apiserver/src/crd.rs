//! Custom resources registered from their CustomResourceDefinition, and the structural
//! schema checks a real API server makes on them.
//!
//! Contract:
//! - [`Registration::from_crd`] reads an `apiextensions.k8s.io/v1` CRD (YAML or JSON)
//!   and returns one registration per served version: group, names, scope, the `status`
//!   and `scale` subresources, selectable fields, and the version's `openAPIV3Schema`.
//! - On every create, update and patch (status writes included) an object is, in this order:
//!   pruned (fields the schema does not name are dropped, except under
//!   `x-kubernetes-preserve-unknown-fields: true`; `additionalProperties` schemas keep
//!   every key; `x-kubernetes-embedded-resource` keeps `apiVersion`, `kind`,
//!   `metadata`; the root keeps `apiVersion`, `kind`, `metadata`), defaulted (`default`
//!   of absent properties, recursively) and validated: `type` (with `nullable` and
//!   `x-kubernetes-int-or-string`), `required`, `enum`, `minimum`/`maximum` (and their
//!   exclusive forms), `minLength`/`maxLength`, `pattern`, `minItems`/`maxItems`,
//!   `items`. Violations make a 422 Invalid whose causes carry the field path
//!   (`spec.replicas`, `spec.ports[0].name`) and apimachinery's cause types.
//! - A CRD kube-apiserver would reject for its CEL rules' syntax, list-map keys, printer
//!   column types, default types, root `metadata` schema or a protected group's missing
//!   approval is a 422 Invalid with kube-apiserver's causes (`crd_rule_causes`, the
//!   rules `kubegen_apimachinery::crd_validation` shares with the generator).
//! - A `null` where the schema is not `nullable` is dropped (or defaulted) before
//!   validation, as kube-apiserver does: absent, not of the wrong type.
//! - Then the schema's CEL rules (`x-kubernetes-validations`, the `cel_rules` module),
//!   unless a cause is a type error, an unsupported enum value or a missing required
//!   field (kube-apiserver's `<nil>` cause "some validation rules were not checked"
//!   instead). A write through a version that does not store the objects is validated
//!   against its own version's schema, as kube-apiserver does.
//! - Also `format`, `x-kubernetes-list-type` `set` and `map` duplicates, property counts
//!   and the composition keywords (`allOf`, `oneOf`, `anyOf`, `not`): the
//!   `schema_checks` module.
//! - Conversion between versions is the `conversion` and `versions` modules'.

use serde_json::{Map, Value};

use kubegen_apimachinery::crd_validation;

use crate::cel_rules::CelRules;
use crate::schema_checks;

use crate::errors::{cause, StatusCause, StatusError};

use super::registry::Registration;

impl Registration {
    /// The registrations (one per served version) of an `apiextensions.k8s.io/v1`
    /// CustomResourceDefinition given as YAML or JSON.
    ///
    /// ```
    /// use kubegen_apiserver::Registration;
    ///
    /// let regs = Registration::from_crd(r#"
    /// apiVersion: apiextensions.k8s.io/v1
    /// kind: CustomResourceDefinition
    /// metadata: {name: foos.example.com}
    /// spec:
    ///   group: example.com
    ///   scope: Namespaced
    ///   names: {plural: foos, singular: foo, kind: Foo}
    ///   versions:
    ///   - name: v1
    ///     served: true
    ///     storage: true
    ///     subresources: {status: {}}
    ///     schema:
    ///       openAPIV3Schema: {type: object}
    /// "#).unwrap();
    /// assert_eq!(regs[0].api_version(), "example.com/v1");
    /// assert!(regs[0].status && regs[0].custom);
    /// ```
    pub fn from_crd(crd: &str) -> Result<Vec<Registration>, StatusError> {
        let v: Value = serde_yaml::from_str(crd)
            .map_err(|e| StatusError::bad_request(format!("the CRD is not valid YAML: {e}")))?;
        Self::from_crd_value(&v)
    }

    /// [`Registration::from_crd`] for a CRD already parsed. A CRD that breaks
    /// kube-apiserver's rules for CEL rules, list-map keys, printer columns, defaults,
    /// the root `metadata` schema or API approval (the rules of
    /// `kubegen_apimachinery::crd_validation`) is a 422 Invalid with its causes.
    pub fn from_crd_value(crd: &Value) -> Result<Vec<Registration>, StatusError> {
        let bad =
            |m: &str| StatusError::bad_request(format!("invalid CustomResourceDefinition: {m}"));
        let causes = crd_rule_causes(crd);
        if !causes.is_empty() {
            let name = crd
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Err(StatusError::invalid(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                name,
                causes,
            ));
        }
        let spec = crd.get("spec").ok_or_else(|| bad("no spec"))?;
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let group = s(spec, "group").ok_or_else(|| bad("spec.group is required"))?;
        let names = spec
            .get("names")
            .ok_or_else(|| bad("spec.names is required"))?;
        let plural = s(names, "plural").ok_or_else(|| bad("spec.names.plural is required"))?;
        let kind = s(names, "kind").ok_or_else(|| bad("spec.names.kind is required"))?;
        let namespaced = s(spec, "scope").as_deref() != Some("Cluster");
        let versions = spec
            .get("versions")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("spec.versions is required"))?;
        let storage = versions
            .iter()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .and_then(|v| s(v, "name"))
            .unwrap_or_default();
        // The version a deprecated one's default warning points to: the served,
        // not deprecated version of the highest priority.
        let preferred = versions
            .iter()
            .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
            .filter(|v| v.get("deprecated").and_then(Value::as_bool) != Some(true))
            .filter_map(|v| s(v, "name"))
            .min_by(|a, b| super::registry::version_priority(a, b));
        let mut out = Vec::new();
        for v in versions {
            if v.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let name = s(v, "name").ok_or_else(|| bad("a version needs a name"))?;
            let mut r = Registration::new(&group, &name, &plural, &kind)
                .custom(true)
                .list_items_type_meta(true);
            r.namespaced = namespaced;
            if let Some(x) = s(names, "singular") {
                r.singular = x;
            }
            if let Some(x) = s(names, "listKind") {
                r.list_kind = x;
            }
            if let Some(sn) = names.get("shortNames").and_then(Value::as_array) {
                r.short_names = sn
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect();
            }
            if let Some(cs) = names.get("categories").and_then(Value::as_array) {
                r.categories = cs
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect();
            }
            if let Some(cols) = v.get("additionalPrinterColumns").and_then(Value::as_array) {
                r.printer_columns = cols
                    .iter()
                    .map(|c| super::registry::PrinterColumn {
                        name: s(c, "name").unwrap_or_default(),
                        ty: s(c, "type").unwrap_or_default(),
                        format: s(c, "format").unwrap_or_default(),
                        description: s(c, "description").unwrap_or_default(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: s(c, "jsonPath").unwrap_or_default(),
                    })
                    .collect();
            }
            if name != storage {
                r.storage_version = storage.clone();
            }
            r.conversion = super::Conversion::from_crd_spec(spec);
            if v.get("deprecated").and_then(Value::as_bool) == Some(true) {
                let custom = v.get("deprecationWarning").and_then(Value::as_str);
                r.deprecation_warning = Some(match (custom, &preferred) {
                    (Some(w), _) => w.to_owned(),
                    (None, Some(p)) => {
                        format!("{group}/{name} {kind} is deprecated; use {group}/{p} {kind}")
                    }
                    (None, None) => format!("{group}/{name} {kind} is deprecated"),
                });
            }
            let subs = v.get("subresources");
            r.status = subs.and_then(|x| x.get("status")).is_some();
            if let Some(sc) = subs.and_then(|x| x.get("scale")) {
                r.scale = true;
                r.scale_paths = super::registry::ScalePaths {
                    spec_replicas: s(sc, "specReplicasPath")
                        .unwrap_or_else(|| ".spec.replicas".into()),
                    status_replicas: s(sc, "statusReplicasPath")
                        .unwrap_or_else(|| ".status.replicas".into()),
                    label_selector: s(sc, "labelSelectorPath").unwrap_or_default(),
                };
            }
            if let Some(fs) = v.get("selectableFields").and_then(Value::as_array) {
                for f in fs {
                    if let Some(p) = f.get("jsonPath").and_then(Value::as_str) {
                        r.selectable_fields
                            .push(p.trim_start_matches('.').to_owned());
                    }
                }
            }
            if let Some(schema) = v.pointer("/schema/openAPIV3Schema") {
                r.schema = Some(schema.clone());
            }
            out.push(r);
        }
        if out.is_empty() {
            return Err(bad("no served version"));
        }
        let schemas = crate::cel_rules::VersionSchemas::compile(
            out.iter()
                .filter_map(|r| Some((r.api_version(), r.schema.clone()?)))
                .collect(),
        );
        for r in &mut out {
            r.version_schemas = schemas.clone();
        }
        Ok(out)
    }
}

/// Prunes, defaults and validates a custom resource against its schema, then evaluates
/// its CEL rules (`prev`: the stored object of an update, for transition rules and
/// ratcheting). As kube-apiserver, the rules are not evaluated on an object with a type
/// error, an unsupported enum value or a missing required field: a `<nil>` cause says so
/// instead.
pub(crate) fn admit(
    reg: &Registration,
    (schema, rules): (&Value, &CelRules),
    obj: &mut Map<String, Value>,
    prev: Option<&Map<String, Value>>,
) -> Result<(), StatusError> {
    let mut v = Value::Object(std::mem::take(obj));
    prune(&mut v, schema, true);
    default(&mut v, schema);
    let mut causes = Vec::new();
    let old = prev.map(|p| Value::Object(p.clone()));
    validate(&v, schema, "", &mut causes, true, old.as_ref());
    if reg.scale {
        scale_replicas(&v, &reg.scale_paths.spec_replicas, &mut causes);
    }
    if !rules.is_empty() {
        let blocking = [
            cause::FIELD_VALUE_TYPE_INVALID,
            cause::FIELD_VALUE_NOT_SUPPORTED,
            cause::FIELD_VALUE_REQUIRED,
            cause::FIELD_VALUE_TOO_LONG,
            cause::FIELD_VALUE_TOO_MANY,
        ];
        if causes.iter().any(|c| blocking.contains(&c.reason.as_str())) {
            // kube-apiserver's field is a nil path, printed as such.
            causes.push(StatusCause {
                reason: cause::FIELD_VALUE_INVALID.into(),
                message: "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
                field: "<nil>".into(),
            });
        } else {
            rules.validate(schema, &v, old.as_ref(), &mut causes);
        }
    }
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Value::Object(m) = v {
        *obj = m;
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(StatusError::invalid(&reg.group, &reg.kind, &name, causes))
    }
}

/// What a read shows of a stored custom resource under the current schema: pruned and
/// defaulted, not validated (stored objects are not rewritten when a CRD changes).
pub(crate) fn read_view(v: &mut Value, schema: &Value) {
    prune(v, schema, true);
    default(v, schema);
}

/// Prunes an object as [`admit`] does, without defaulting or validating: what is left
/// is what the schema knows.
pub(crate) fn prune_value(v: &mut Value, schema: &Value) {
    prune(v, schema, true);
}

fn truthy(s: &Value, k: &str) -> bool {
    s.get(k).and_then(Value::as_bool) == Some(true)
}

fn prune(v: &mut Value, schema: &Value, root: bool) {
    match v {
        Value::Object(m) => {
            let keep_meta = root || truthy(schema, "x-kubernetes-embedded-resource");
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            let preserve = truthy(schema, "x-kubernetes-preserve-unknown-fields");
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if keep_meta && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let sub = props
                    .and_then(|p| p.get(&k))
                    .or(additional.filter(|a| a.is_object()));
                match sub {
                    Some(s) => {
                        if let Some(x) = m.get_mut(&k) {
                            prune(x, s, false);
                        }
                    }
                    None if preserve || additional == Some(&Value::Bool(true)) => {}
                    None => {
                        m.remove(&k);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for i in items {
                    prune(i, s, false);
                }
            }
        }
        _ => {}
    }
}

/// Defaults absent properties, as kube-apiserver does after pruning; a `null` where the
/// schema is not `nullable` counts as absent (defaulted, or dropped when there is no
/// default, so that a required one is then `Required value`).
fn default(v: &mut Value, schema: &Value) {
    match v {
        Value::Object(m) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, s) in props {
                    if m.get(k).is_some_and(|x| x.is_null()) && !truthy(s, "nullable") {
                        m.remove(k);
                    }
                    if !m.contains_key(k) {
                        if let Some(d) = s.get("default") {
                            m.insert(k.clone(), d.clone());
                        }
                    }
                    if let Some(x) = m.get_mut(k) {
                        default(x, s);
                    }
                }
            }
            if let Some(a) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                let declared = schema.get("properties").and_then(Value::as_object);
                let is_declared = |k: &String| declared.is_some_and(|d| d.contains_key(k));
                if !truthy(a, "nullable") {
                    m.retain(|k, x| is_declared(k) || !x.is_null());
                }
                for (k, x) in m.iter_mut() {
                    if !is_declared(k) {
                        default(x, a);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for i in items {
                    default(i, s);
                }
            }
        }
        _ => {}
    }
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_owned()
    } else {
        format!("{path}.{k}")
    }
}

fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn push(causes: &mut Vec<StatusCause>, reason: &str, field: &str, message: String) {
    causes.push(StatusCause {
        reason: reason.into(),
        message,
        field: field.into(),
    });
}

fn type_ok(v: &Value, ty: &str) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

/// Validates `v` against its schema `s`. `old` is the value's correlated old value on an
/// update (object properties and map values by key, `map` and `set` list items by key
/// and value): an unchanged value is not validated again (kube-apiserver's ratcheting).
/// The scale subresource's replicas (`specReplicasPath`) must be a non-negative int32
/// when present; kube-apiserver names the field by the path as written (`.spec.replicas`).
fn scale_replicas(v: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    let mut at = v;
    let parts: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let Some(m) = at.as_object() else {
            let walked = parts[..i].join(".");
            push(
                causes,
                cause::FIELD_VALUE_INVALID,
                path,
                format!("Invalid value: 0: .{walked} accessor error: {at} is of the type {}, expected map[string]interface{{}}", go_type(at)),
            );
            return;
        };
        match m.get(*part) {
            Some(x) => at = x,
            None => return,
        }
    }
    let why = match at.as_i64() {
        None => format!(
            "{path} accessor error: {at} is of the type {}, expected int64",
            go_type(at)
        ),
        Some(n) if n < 0 => "should be a non-negative integer".to_owned(),
        Some(n) if n > i64::from(i32::MAX) => {
            format!("should be less than or equal to {}", i32::MAX)
        }
        Some(_) => return,
    };
    push(
        causes,
        cause::FIELD_VALUE_INVALID,
        path,
        format!("Invalid value: {at}: {why}"),
    );
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "map[string]interface {}",
        Value::Array(_) => "[]interface {}",
        Value::String(_) => "string",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::Bool(_) => "bool",
        Value::Null => "<nil>",
    }
}

fn check_enum(v: &Value, s: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    if let Some(allowed) = s.get("enum").and_then(Value::as_array) {
        if !allowed.contains(v) {
            let list: Vec<String> = allowed.iter().map(shown).collect();
            push(
                causes,
                cause::FIELD_VALUE_NOT_SUPPORTED,
                path,
                format!(
                    "Unsupported value: {}: supported values: {}",
                    shown(v),
                    list.join(", ")
                ),
            );
        }
    }
}

fn validate(
    v: &Value,
    s: &Value,
    path: &str,
    causes: &mut Vec<StatusCause>,
    root: bool,
    old: Option<&Value>,
) {
    if old == Some(v) {
        return;
    }
    if v.is_null() {
        if !truthy(s, "nullable") && !root {
            push(
                causes,
                cause::FIELD_VALUE_TYPE_INVALID,
                path,
                format!(
                    "Invalid value: \"null\": {path} in body must be of type {}: \"null\"",
                    s.get("type").and_then(Value::as_str).unwrap_or("object")
                ),
            );
        }
        return;
    }
    let int_or_string = truthy(s, "x-kubernetes-int-or-string");
    if int_or_string && !(v.is_string() || v.is_i64() || v.is_u64()) {
        push(
            causes,
            cause::FIELD_VALUE_TYPE_INVALID,
            path,
            format!(
                "Invalid value: {}: {path} in body must be of type integer,string",
                shown(v)
            ),
        );
        return;
    }
    if let Some(ty) = s
        .get("type")
        .and_then(Value::as_str)
        .filter(|_| !int_or_string)
    {
        if !type_ok(v, ty) {
            let got = match v {
                Value::Object(_) => "object",
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
                Value::Number(_) => "number",
                Value::Bool(_) => "boolean",
                Value::Null => "null",
            };
            push(
                causes,
                cause::FIELD_VALUE_TYPE_INVALID,
                path,
                format!(
                    "Invalid value: {:?}: {path} in body must be of type {ty}: {got:?}",
                    got
                ),
            );
            // kube-apiserver checks the enum of a value of the wrong type too.
            check_enum(v, s, path, causes);
            return;
        }
    }
    check_enum(v, s, path, causes);
    if let Some(c) = schema_checks::format(v, s, path) {
        causes.push(c);
    }
    for branch in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        validate(v, branch, path, causes, root, old);
    }
    let fits = |branch: &Value| {
        let mut found = Vec::new();
        validate(v, branch, path, &mut found, root, None);
        found.is_empty()
    };
    schema_checks::composition(s, path, fits, causes);
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or_default();
            if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
                let excl = truthy(s, "exclusiveMinimum");
                if x < min || (excl && x == min) {
                    let op = if excl {
                        "greater than"
                    } else {
                        "greater than or equal to"
                    };
                    push(
                        causes,
                        cause::FIELD_VALUE_INVALID,
                        path,
                        format!(
                            "Invalid value: {v}: {path} in body should be {op} {}",
                            s["minimum"]
                        ),
                    );
                }
            }
            if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
                let excl = truthy(s, "exclusiveMaximum");
                if x > max || (excl && x == max) {
                    let op = if excl {
                        "less than"
                    } else {
                        "less than or equal to"
                    };
                    push(
                        causes,
                        cause::FIELD_VALUE_INVALID,
                        path,
                        format!(
                            "Invalid value: {v}: {path} in body should be {op} {}",
                            s["maximum"]
                        ),
                    );
                }
            }
        }
        Value::String(st) => {
            let len = st.chars().count() as u64;
            let mut too_long = false;
            if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
                if len > max {
                    too_long = true;
                    push(
                        causes,
                        cause::FIELD_VALUE_TOO_LONG,
                        path,
                        format!("Too long: may not be more than {max} bytes"),
                    );
                }
            }
            if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
                if len < min {
                    push(
                        causes,
                        cause::FIELD_VALUE_INVALID,
                        path,
                        format!("Invalid value: {st:?}: {path} in body should be at least {min} chars long"),
                    );
                }
            }
            // kube-apiserver does not match a pattern against a string already too long.
            if let Some(p) = s
                .get("pattern")
                .and_then(Value::as_str)
                .filter(|_| !too_long)
            {
                match regex::Regex::new(p) {
                    Ok(re) if !re.is_match(st) => push(
                        causes,
                        cause::FIELD_VALUE_INVALID,
                        path,
                        format!("Invalid value: {st:?}: {path} in body should match '{p}'"),
                    ),
                    _ => {}
                }
            }
        }
        Value::Array(items) => {
            let n = items.len() as u64;
            if let Some(max) = s.get("maxItems").and_then(Value::as_u64) {
                if n > max {
                    push(
                        causes,
                        cause::FIELD_VALUE_TOO_MANY,
                        path,
                        format!(
                            "Too many: {n}: must have at most {max} {}",
                            if max == 1 { "item" } else { "items" }
                        ),
                    );
                }
            }
            if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
                if n < min {
                    push(
                        causes,
                        cause::FIELD_VALUE_INVALID,
                        path,
                        format!(
                            "Invalid value: {n}: {path} in body should have at least {min} items"
                        ),
                    );
                }
            }
            if let Some(is) = s.get("items") {
                for (i, x) in items.iter().enumerate() {
                    let o = old
                        .and_then(Value::as_array)
                        .and_then(|olds| crate::cel_rules::correlate(s, x, olds));
                    validate(x, is, &format!("{path}[{i}]"), causes, false, o);
                }
            }
            schema_checks::list_type(items, s, path, causes);
        }
        Value::Object(m) => {
            if let Some(req) = s.get("required").and_then(Value::as_array) {
                for r in req.iter().filter_map(Value::as_str) {
                    if !m.contains_key(r) {
                        push(
                            causes,
                            cause::FIELD_VALUE_REQUIRED,
                            &join(path, r),
                            "Required value".into(),
                        );
                    }
                }
            }
            schema_checks::property_count(m.len(), s, path, causes);
            let props = s.get("properties").and_then(Value::as_object);
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            for (k, x) in m {
                if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(sub) = props.and_then(|p| p.get(k)).or(additional) {
                    let o = old.and_then(|o| o.get(k));
                    validate(x, sub, &join(path, k), causes, false, o);
                }
            }
        }
        _ => {}
    }
}

/// kube-apiserver's rules for a CRD that `kubegen crd` and the CRD reader hold too
/// (`kubegen_apimachinery::crd_validation`), as causes with kube-apiserver's field
/// paths (its internal version's: a schema every version shares is
/// `spec.validation.openAPIV3Schema`) and messages.
pub(crate) fn crd_rule_causes(crd: &Value) -> Vec<StatusCause> {
    crd_validation::validate(crd)
        .into_iter()
        .map(|e| e.internal(crd))
        .map(|e| StatusCause {
            reason: e.error_type.cause().to_owned(),
            message: e.body(),
            field: e.field,
        })
        .collect()
}

/// The `default` values of a CRD's schemas that break their own property's schema, as
/// kube-apiserver reports them (at its internal paths: one schema every version shares
/// is `spec.validation.openAPIV3Schema`, otherwise each version's).
pub(crate) fn default_causes(crd: &Value) -> Vec<StatusCause> {
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let schema = |v: &Value| v.pointer("/schema/openAPIV3Schema").cloned();
    let shared = versions
        .first()
        .and_then(schema)
        .filter(|first| versions.iter().all(|v| schema(v).as_ref() == Some(first)));
    let mut causes = Vec::new();
    match shared {
        Some(s) => defaults_in(&s, "spec.validation.openAPIV3Schema", &mut causes),
        None => {
            for (i, v) in versions.iter().enumerate() {
                if let Some(s) = schema(v) {
                    let at = format!("spec.versions[{i}].schema.openAPIV3Schema");
                    defaults_in(&s, &at, &mut causes);
                }
            }
        }
    }
    causes
}

fn defaults_in(s: &Value, at: &str, causes: &mut Vec<StatusCause>) {
    if let Some(d) = s.get("default") {
        // The default's type is crd_validation's (crd_rule_causes); its bounds, enum
        // and format are checked here.
        let mut found = Vec::new();
        validate(d, s, &format!("{at}.default"), &mut found, false, None);
        causes.extend(
            found
                .into_iter()
                .filter(|c| c.reason != cause::FIELD_VALUE_TYPE_INVALID),
        );
    }
    for (name, p) in s
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        defaults_in(p, &format!("{at}.properties[{name}]"), causes);
    }
    if let Some(items) = s.get("items").filter(|i| i.is_object()) {
        defaults_in(items, &format!("{at}.items"), causes);
    }
    if let Some(extra) = s.get("additionalProperties").filter(|a| a.is_object()) {
        defaults_in(extra, &format!("{at}.additionalProperties"), causes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_that_break_their_schema_are_named() {
        let crd = |color: Value| {
            json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "color": {"type": "string", "enum": ["red", "blue"], "default": color},
                "ports": {"type": "array", "items": {"type": "integer", "minimum": 1, "default": 0}}
            }}}}}}]}})
        };
        let at = "spec.validation.openAPIV3Schema.properties[spec].properties";
        let fields: Vec<(String, String)> = default_causes(&crd(json!("green")))
            .into_iter()
            .map(|c| (c.field, c.reason))
            .collect();
        assert_eq!(
            fields,
            [
                (
                    format!("{at}[color].default"),
                    cause::FIELD_VALUE_NOT_SUPPORTED.to_owned()
                ),
                (
                    format!("{at}[ports].items.default"),
                    cause::FIELD_VALUE_INVALID.to_owned()
                ),
            ]
        );
        assert_eq!(default_causes(&crd(json!("red"))).len(), 1);
    }

    #[test]
    fn prune_default_validate() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "required": ["size"],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 5},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 4}
        }}}});
        let reg = Registration::new("example.com", "v1", "foos", "Foo");
        let mut ok = json!({"metadata": {"name": "x"}, "spec": {"size": 2, "junk": 1, "free": {"any": 1}}, "top": 1});
        let m = ok.as_object_mut().unwrap();
        admit(&reg, (&schema, &reg.cel), m, None).unwrap();
        assert_eq!(
            Value::Object(m.clone()),
            json!({"metadata": {"name": "x"}, "spec": {"size": 2, "mode": "a", "free": {"any": 1}}})
        );
        let mut bad = json!({"metadata": {"name": "x"}, "spec": {"mode": "c", "name": "ABCDE"}});
        let err = admit(
            &reg,
            (&schema, &reg.cel),
            bad.as_object_mut().unwrap(),
            None,
        )
        .unwrap_err();
        let fields: Vec<(String, String)> = err
            .details()
            .unwrap()
            .causes
            .iter()
            .map(|c| (c.field.clone(), c.reason.clone()))
            .collect();
        assert!(fields.contains(&("spec.size".into(), cause::FIELD_VALUE_REQUIRED.into())));
        assert!(fields.contains(&("spec.mode".into(), cause::FIELD_VALUE_NOT_SUPPORTED.into())));
        assert!(fields.contains(&("spec.name".into(), cause::FIELD_VALUE_TOO_LONG.into())));
        // kube-apiserver does not match the pattern of a string already too long.
        assert!(!fields.contains(&("spec.name".into(), cause::FIELD_VALUE_INVALID.into())));
        let mut pattern = json!({"metadata": {"name": "x"}, "spec": {"size": 2, "name": "AB"}});
        let err = admit(
            &reg,
            (&schema, &reg.cel),
            pattern.as_object_mut().unwrap(),
            None,
        )
        .unwrap_err();
        assert_eq!(err.details().unwrap().causes[0].field, "spec.name");
        assert_eq!(
            err.details().unwrap().causes[0].reason,
            cause::FIELD_VALUE_INVALID
        );
        let mut big = json!({"metadata": {"name": "x"}, "spec": {"size": 9}});
        let err = admit(
            &reg,
            (&schema, &reg.cel),
            big.as_object_mut().unwrap(),
            None,
        )
        .unwrap_err();
        assert!(err.message().contains("spec.size"));
    }

    /// kube-apiserver drops a `null` where the schema is not nullable (or defaults it), so
    /// it is absent rather than of the wrong type.
    #[test]
    fn nulls_of_non_nullable_fields_are_absent() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "required": ["size"],
        "properties": {
            "size": {"type": "integer"},
            "mode": {"type": "string", "default": "a"},
            "note": {"type": "string", "nullable": true},
            "extra": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }}}});
        let reg = Registration::new("example.com", "v1", "foos", "Foo");
        let mut obj = json!({"metadata": {"name": "x"}, "spec": {"size": 1, "mode": null,
            "note": null, "extra": null, "labels": {"a": null, "b": "c"}}});
        admit(
            &reg,
            (&schema, &reg.cel),
            obj.as_object_mut().unwrap(),
            None,
        )
        .unwrap();
        assert_eq!(
            obj["spec"],
            json!({"size": 1, "mode": "a", "note": null, "labels": {"b": "c"}})
        );
        let mut missing = json!({"metadata": {"name": "x"}, "spec": {"size": null}});
        let err = admit(
            &reg,
            (&schema, &reg.cel),
            missing.as_object_mut().unwrap(),
            None,
        )
        .unwrap_err();
        let causes = &err.details().unwrap().causes;
        assert_eq!(causes.len(), 1);
        assert_eq!(
            (causes[0].field.as_str(), causes[0].reason.as_str()),
            ("spec.size", cause::FIELD_VALUE_REQUIRED)
        );
    }

    /// An update keeps a field that was invalid before and is unchanged (validation
    /// ratcheting, kube-apiserver 1.30+); a changed one is validated.
    #[test]
    fn unchanged_invalid_fields_ratchet_on_update() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {
            "size": {"type": "integer", "maximum": 5},
            "name": {"type": "string", "format": "hostname"},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "other": {"type": "integer"}
        }}}});
        let reg = Registration::new("example.com", "v1", "foos", "Foo");
        let old = json!({"metadata": {"name": "x"}, "spec": {"size": 9, "name": "-bad-",
            "tags": ["a", "a"], "other": 1}});
        let prev = old.as_object().unwrap();
        let mut new = old.clone();
        new["spec"]["other"] = json!(2);
        admit(
            &reg,
            (&schema, &reg.cel),
            new.as_object_mut().unwrap(),
            Some(prev),
        )
        .unwrap();
        let mut changed = old.clone();
        changed["spec"]["size"] = json!(8);
        let err = admit(
            &reg,
            (&schema, &reg.cel),
            changed.as_object_mut().unwrap(),
            Some(prev),
        )
        .unwrap_err();
        let fields: Vec<&str> = err
            .details()
            .unwrap()
            .causes
            .iter()
            .map(|c| c.field.as_str())
            .collect();
        assert_eq!(fields, vec!["spec.size"]);
        let mut created = old.clone();
        let err = admit(
            &reg,
            (&schema, &reg.cel),
            created.as_object_mut().unwrap(),
            None,
        )
        .unwrap_err();
        assert_eq!(err.details().unwrap().causes.len(), 3);
    }

    /// As kube-apiserver, CEL rules do not run on an object with a type error.
    #[test]
    fn cel_rules_wait_for_a_well_typed_object() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.size > 1"}],
            "properties": {"size": {"type": "integer"}, "name": {"type": "string"}}}}});
        let mut reg = Registration::new("example.com", "v1", "foos", "Foo");
        reg.cel = crate::cel_rules::CelRules::compile(Some(&schema));
        let fields = |obj: Value| -> Vec<String> {
            let mut obj = obj;
            let err = admit(
                &reg,
                (&schema, &reg.cel),
                obj.as_object_mut().unwrap(),
                None,
            )
            .unwrap_err();
            let causes = &err.details().unwrap().causes;
            causes
                .iter()
                .map(|c| format!("{}: {}", c.field, c.reason))
                .collect()
        };
        assert_eq!(
            fields(json!({"metadata": {"name": "x"}, "spec": {"size": 1}})),
            vec!["spec: FieldValueInvalid"]
        );
        assert_eq!(
            fields(json!({"metadata": {"name": "x"}, "spec": {"size": 1, "name": 5}})),
            vec![
                "spec.name: FieldValueTypeInvalid",
                "<nil>: FieldValueInvalid"
            ]
        );
    }

    /// A one-version CRD whose root schema has `properties`, in `group`.
    fn crd(group: &str, properties: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("foos.{group}")},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": properties}}}]
            }
        })
    }

    /// The 422's message, as `kubectl` shows it after "The ".
    fn rejected(crd: &Value) -> String {
        let by_registration = Registration::from_crd_value(crd).unwrap_err();
        assert_eq!(by_registration.code(), 422);
        let obj = crd.as_object().unwrap();
        let by_create = crate::crd_lifecycle::validate(obj).unwrap_err();
        assert_eq!(by_create.message(), by_registration.message());
        let causes = &by_registration.details().unwrap().causes;
        assert!(causes.iter().all(|c| c.reason.starts_with("FieldValue")));
        by_registration.message().to_owned()
    }

    /// The CRDs kube-apiserver rejects, with its messages (kube-apiserver 1.36.3,
    /// `kubectl create --dry-run=server`).
    #[test]
    fn crds_kube_apiserver_rejects_are_rejected_with_its_messages() {
        let pre = "CustomResourceDefinition.apiextensions.k8s.io \"foos.example.com\" is invalid: ";
        let cel = crd(
            "example.com",
            json!({"spec": {"type": "object", "x-kubernetes-validations": [{"rule": "self.a =="}]}}),
        );
        assert_eq!(rejected(&cel), format!("{pre}spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {{\"Rule\":\"self.a ==\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}}: compilation failed: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>' expecting {{'[', '{{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}}\n | self.a ==\n | .........^"));
        let item = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
        let no_keys = crd(
            "example.com",
            json!({"items": {"type": "array", "x-kubernetes-list-type": "map", "items": item}}),
        );
        assert_eq!(rejected(&no_keys), format!("{pre}spec.validation.openAPIV3Schema.properties[items].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"));
        let bad_key = crd(
            "example.com",
            json!({"items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["nme"], "items": item}}),
        );
        assert_eq!(rejected(&bad_key), format!("{pre}spec.validation.openAPIV3Schema.properties[items].x-kubernetes-list-map-keys: Invalid value: [\"nme\"]: entries must all be names of item properties"));
        let optional = crd(
            "example.com",
            json!({"items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
        );
        assert_eq!(rejected(&optional), format!("{pre}spec.validation.openAPIV3Schema.properties[items].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"));
        let strings = crd(
            "example.com",
            json!({"items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "string"}}}),
        );
        assert_eq!(rejected(&strings), format!("{pre}spec.validation.openAPIV3Schema.properties[items].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map"));
        let mut column = crd("example.com", json!({}));
        column["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Size", "type": "int", "jsonPath": ".spec.size"}]);
        assert_eq!(rejected(&column), format!("{pre}spec.additionalPrinterColumns[0].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string"));
        let default = crd(
            "example.com",
            json!({"spec": {"type": "object", "properties": {"size": {"type": "integer", "default": "big"}}}}),
        );
        assert_eq!(rejected(&default), format!("{pre}spec.validation.openAPIV3Schema.properties[spec].properties[size].default: Invalid value: \"string\":  in body must be of type integer: \"string\""));
        let meta = crd(
            "example.com",
            json!({"metadata": {"type": "object", "description": "meta"}}),
        );
        assert_eq!(rejected(&meta), format!("{pre}spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"));
        let protected = crd("samplecontroller.k8s.io", json!({}));
        assert_eq!(rejected(&protected), "CustomResourceDefinition.apiextensions.k8s.io \"foos.samplecontroller.k8s.io\" is invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111");
        let mut approved = protected.clone();
        approved["metadata"]["annotations"] =
            json!({"api-approved.kubernetes.io": "unapproved, experimental-only"});
        assert_eq!(Registration::from_crd_value(&approved).unwrap().len(), 1);
    }
}
