//! The CEL validation rules (`x-kubernetes-validations`) of a custom resource's schema,
//! evaluated on create, update and patch as kube-apiserver evaluates them.
//!
//! Contract:
//! - [`CelRules::compile`] compiles every rule of a schema once; the store compiles a
//!   registration's rules when it is registered (a CRD version, each time its CRD
//!   changes), never per request. Only the branches of the schema that hold rules are
//!   kept, so an object is walked only where a rule can apply.
//! - Rules run at every level: the root, properties, list items (`spec.items[0]`) and map
//!   values (`spec.map[key]`), with `self` bound to the value at that level, converted as
//!   kube-apiserver does: declared property names escaped (`__dash__`, `__dot__`, ...),
//!   map keys kept, `format: date-time` and `duration` as CEL timestamps and durations,
//!   `number` as double, the root's and embedded resources' `metadata` reduced to
//!   `name` and `generateName`, and the Kubernetes CEL libraries (strings, lists, sets,
//!   regex, urls, ip/cidr, semver, format, quantity) of the `kube-cel` crate.
//! - A rule that reads `oldSelf` is a transition rule: it runs on updates only, where
//!   the old value correlates (object properties and map values by key, `map` lists by
//!   their keys, `set` lists by value; `atomic` list items never), unless
//!   `optionalOldSelf: true`, where `oldSelf` is an optional (`optional.none()` on create).
//! - Ratcheting (kube-apiserver 1.30+): on an update, a value equal to its old value is not
//!   validated again, so an unchanged invalid field does not fail the update.
//! - A rule that is false becomes a cause at the rule's level plus its `fieldPath`, with
//!   its `reason` (default `FieldValueInvalid`) and its `messageExpression`'s result,
//!   its `message`, or `failed rule: <rule>`. An evaluation error (an absent field the
//!   rule reads: `no such key`; a failed conversion) is a cause too, as kube-apiserver
//!   answers.
//! - Not done: the cost budget; a rule that uses a function or macro the interpreter does
//!   not have is skipped rather than failing every object, and logged (debug).

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::objects::{Key, Map as CelMap, OptionalValue};
use kube_cel::cel::{Context, ExecutionError, Program, Value as Cel};
use kube_cel::KubeCelExt;
use serde_json::Value;

use crate::errors::{cause, StatusCause};

/// The compiled rules of one schema (empty when it has none). Cloning shares them.
#[derive(Clone, Default)]
pub(crate) struct CelRules(Option<Arc<Node>>);

// The rules are derived from the schema that sits beside them in a `Registration`, which
// is what registrations are compared by.
impl PartialEq for CelRules {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for CelRules {}

impl std::fmt::Debug for CelRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CelRules").field(&self.0.is_some()).finish()
    }
}

/// The schema and compiled rules of each served version of a CRD, shared by the
/// registrations of its versions: a write through one version is validated against that
/// version's schema even when another version stores the objects, as kube-apiserver
/// validates against the version of the request.
#[derive(Clone, Default)]
pub(crate) struct VersionSchemas(Arc<Vec<(String, Value, CelRules)>>);

impl VersionSchemas {
    /// Compiles the rules of each `(apiVersion, schema)` once.
    pub(crate) fn compile(versions: Vec<(String, Value)>) -> Self {
        let compiled = versions
            .into_iter()
            .map(|(v, s)| {
                let rules = CelRules::compile(Some(&s));
                (v, s, rules)
            })
            .collect();
        VersionSchemas(Arc::new(compiled))
    }

    /// The schema and rules of `api_version`.
    pub(crate) fn get(&self, api_version: &str) -> Option<(&Value, &CelRules)> {
        self.0
            .iter()
            .find(|(v, _, _)| v == api_version)
            .map(|(_, s, r)| (s, r))
    }
}

impl PartialEq for VersionSchemas {
    fn eq(&self, other: &Self) -> bool {
        let key = |x: &Self| -> Vec<(String, Value)> {
            x.0.iter().map(|(v, s, _)| (v.clone(), s.clone())).collect()
        };
        Arc::ptr_eq(&self.0, &other.0) || key(self) == key(other)
    }
}

impl Eq for VersionSchemas {}

impl std::fmt::Debug for VersionSchemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(v, _, _)| v))
            .finish()
    }
}

struct Rule {
    text: String,
    program: Program,
    message: Option<String>,
    message_expression: Option<Program>,
    reason: String,
    field_path: Option<String>,
    transition: bool,
    optional_old_self: bool,
}

/// A schema node that holds rules, or is above one that does.
#[derive(Default)]
struct Node {
    rules: Vec<Rule>,
    properties: Vec<(String, Node)>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
}

thread_local! {
    /// Functions of the CEL standard library and Kubernetes' libraries, registered once per
    /// thread (a `Context` is not shared between threads).
    static BASE: Context<'static> = Context::default().with_all();
}

impl CelRules {
    /// Compiles the rules of `schema` (an `openAPIV3Schema`).
    pub(crate) fn compile(schema: Option<&Value>) -> Self {
        CelRules(schema.and_then(compile_node).map(Arc::new))
    }

    /// Whether the schema has no rule.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Evaluates the rules on `obj` (the whole object, defaulted), `old` being the stored
    /// object on an update; a failed rule is pushed to `causes`.
    pub(crate) fn validate(
        &self,
        schema: &Value,
        obj: &Value,
        old: Option<&Value>,
        causes: &mut Vec<StatusCause>,
    ) {
        if let Some(node) = &self.0 {
            BASE.with(|base| {
                let mut w = Walk { base, causes };
                w.node(node, schema, obj, old, "", true, None)
            });
        }
    }
}

fn compile_node(s: &Value) -> Option<Node> {
    let mut node = Node::default();
    for r in s
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(rule) = compile_rule(r) {
            node.rules.push(rule);
        }
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            if let Some(n) = compile_node(p) {
                node.properties.push((k.clone(), n));
            }
        }
    }
    node.items = s.get("items").and_then(compile_node).map(Box::new);
    node.additional = s
        .get("additionalProperties")
        .filter(|a| a.is_object())
        .and_then(compile_node)
        .map(Box::new);
    let empty = node.rules.is_empty()
        && node.properties.is_empty()
        && node.items.is_none()
        && node.additional.is_none();
    (!empty).then_some(node)
}

fn compile_rule(r: &Value) -> Option<Rule> {
    let text = r.get("rule").and_then(Value::as_str)?;
    let str_of = |k: &str| {
        r.get(k)
            .and_then(Value::as_str)
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
    };
    // CRD creation already refused rules kube-apiserver cannot compile; what this
    // interpreter's parser cannot read is left out rather than failing every object.
    let program = match Program::compile(text) {
        Ok(p) => p,
        Err(e) => {
            tracing::debug!(rule = text, error = %e, "CEL rule not evaluated: the interpreter cannot parse it");
            return None;
        }
    };
    let transition = program.references().has_variable("oldSelf");
    Some(Rule {
        text: text.to_owned(),
        message_expression: str_of("messageExpression").and_then(|m| Program::compile(&m).ok()),
        message: str_of("message"),
        reason: str_of("reason").unwrap_or_else(|| cause::FIELD_VALUE_INVALID.to_owned()),
        field_path: str_of("fieldPath"),
        optional_old_self: r.get("optionalOldSelf").and_then(Value::as_bool) == Some(true),
        transition,
        program,
    })
}

struct Walk<'a> {
    base: &'a Context<'static>,
    causes: &'a mut Vec<StatusCause>,
}

impl Walk<'_> {
    #[allow(clippy::too_many_arguments)]
    fn node(
        &mut self,
        node: &Node,
        schema: &Value,
        v: &Value,
        old: Option<&Value>,
        path: &str,
        root: bool,
        conv: Option<&Cel>,
    ) {
        let w = self;
        // Ratcheting: an unchanged value is not validated again; nulls carry no rules.
        if v.is_null() || old == Some(v) {
            return;
        }
        // `v` as CEL sees it: converted once, by the highest node with rules, and
        // looked up (not converted again) by the nodes below it.
        let own;
        let conv = match conv {
            None if !node.rules.is_empty() => {
                own = to_cel(v, schema, root);
                Some(&own)
            }
            other => other,
        };
        if let Some(this) = conv.filter(|_| !node.rules.is_empty()) {
            w.rules(node, schema, v, this, old, path, root);
        }
        let entry = |key: &str| match conv {
            Some(Cel::Map(m)) => m.map.get(&self::key(key)),
            _ => None,
        };
        for (k, child) in &node.properties {
            if let (Some(x), Some(s)) = (v.get(k), schema.pointer(&prop_pointer(k))) {
                let o = old.and_then(|o| o.get(k));
                let c = escape(k).and_then(|e| entry(&e));
                w.node(child, s, x, o, &join(path, k), false, c);
            }
        }
        if let (Some(child), Some(s), Some(m)) = (
            &node.additional,
            schema.get("additionalProperties"),
            v.as_object(),
        ) {
            let declared = schema.get("properties").and_then(Value::as_object);
            for (k, x) in m {
                if declared.is_some_and(|d| d.contains_key(k)) {
                    continue;
                }
                let o = old.and_then(|o| o.get(k));
                w.node(child, s, x, o, &format!("{path}[{k}]"), false, entry(k));
            }
        }
        if let (Some(child), Some(s), Some(list)) = (&node.items, schema.get("items"), v.as_array())
        {
            let olds = old.and_then(Value::as_array);
            for (i, x) in list.iter().enumerate() {
                let o = olds.and_then(|olds| correlate(schema, x, olds));
                let c = match conv {
                    Some(Cel::List(l)) => l.get(i),
                    _ => None,
                };
                w.node(child, s, x, o, &format!("{path}[{i}]"), false, c);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rules(
        &mut self,
        node: &Node,
        schema: &Value,
        v: &Value,
        this: &Cel,
        old: Option<&Value>,
        path: &str,
        root: bool,
    ) {
        let before = old.map(|o| to_cel(o, schema, root));
        for rule in &node.rules {
            if rule.transition && before.is_none() && !rule.optional_old_self {
                continue;
            }
            let mut scope = self.base.new_inner_scope();
            scope.add_variable_from_value("self", this.clone());
            if rule.transition {
                let o = match (&before, rule.optional_old_self) {
                    (Some(b), false) => b.clone(),
                    (Some(b), true) => Cel::Opaque(Arc::new(OptionalValue::of(b.clone()))),
                    (None, _) => Cel::Opaque(Arc::new(OptionalValue::none())),
                };
                scope.add_variable_from_value("oldSelf", o);
            }
            let message = match rule.program.execute(&scope) {
                Ok(Cel::Bool(true)) => continue,
                Ok(Cel::Bool(false)) => rule
                    .message_expression
                    .as_ref()
                    .and_then(|m| match m.execute(&scope) {
                        Ok(Cel::String(s)) if !s.trim().is_empty() => Some(s.to_string()),
                        _ => None,
                    })
                    .or_else(|| rule.message.clone())
                    .unwrap_or_else(|| format!("failed rule: {}", rule.text)),
                Err(ExecutionError::UndeclaredReference(name)) => {
                    tracing::debug!(rule = %rule.text, %name, "CEL rule not evaluated: the interpreter lacks a function or macro it uses");
                    continue;
                }
                // An evaluation error fails the rule, with the error in the message.
                Err(e) => format!(
                    "{} evaluating rule: {}",
                    error_text(&e),
                    rule.message.as_deref().unwrap_or(&rule.text)
                ),
                Ok(other) => format!(
                    "rule did not evaluate to bool ({other:?}) evaluating rule: {}",
                    rule.text
                ),
            };
            let field = match &rule.field_path {
                Some(fp) => join(path, fp.trim_start_matches('.')),
                None => path.to_owned(),
            };
            let body = match rule.reason.as_str() {
                cause::FIELD_VALUE_FORBIDDEN => format!("Forbidden: {message}"),
                cause::FIELD_VALUE_REQUIRED => format!("Required value: {message}"),
                cause::FIELD_VALUE_DUPLICATE => format!("Duplicate value: {message}"),
                _ => format!("Invalid value: {}: {message}", shown(v)),
            };
            self.causes.push(StatusCause {
                reason: rule.reason.clone(),
                message: body,
                field,
            });
        }
    }
}

/// A value as kube-apiserver's "Invalid value" shows it: scalars as JSON, the rest by type.
fn shown(v: &Value) -> String {
    match v {
        Value::Object(_) => "\"object\"".into(),
        Value::Array(_) => "\"array\"".into(),
        other => other.to_string(),
    }
}

/// cel-go's wording of the evaluation errors kube-apiserver reports most.
fn error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        other => other.to_string(),
    }
}

fn prop_pointer(k: &str) -> String {
    format!("/properties/{}", k.replace('~', "~0").replace('/', "~1"))
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_owned()
    } else {
        format!("{path}.{k}")
    }
}

/// The old list item `x` is compared with, by the list's type.
pub(crate) fn correlate<'a>(schema: &Value, x: &Value, olds: &'a [Value]) -> Option<&'a Value> {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => olds.iter().find(|o| *o == x),
        Some("map") => {
            let keys: Vec<&str> = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            olds.iter()
                .find(|o| keys.iter().all(|k| o.get(k) == x.get(k)))
        }
        _ => None,
    }
}

const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A declared property's name as CEL sees it, or `None` when CEL cannot name it.
fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '.' | '-' | '/'));
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
    {
        return None;
    }
    Some(
        name.replace("__", "__underscores__")
            .replace('.', "__dot__")
            .replace('-', "__dash__")
            .replace('/', "__slash__"),
    )
}

/// A JSON value as CEL sees it under its schema.
fn to_cel(v: &Value, s: &Value, root: bool) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            let number = s.get("type").and_then(Value::as_str) == Some("number");
            match (n.as_i64(), n.as_u64()) {
                (Some(i), _) if !number => Cel::Int(i),
                (None, Some(u)) if !number => Cel::UInt(u),
                _ => Cel::Float(n.as_f64().unwrap_or_default()),
            }
        }
        Value::String(x) => string_to_cel(x, s),
        Value::Array(items) => {
            let is = s.get("items").unwrap_or(&Value::Null);
            Cel::List(Arc::new(
                items.iter().map(|i| to_cel(i, is, false)).collect(),
            ))
        }
        Value::Object(m) => {
            let mut out: HashMap<Key, Cel> = HashMap::with_capacity(m.len());
            let props = s.get("properties").and_then(Value::as_object);
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            let embedded = root
                || s.get("x-kubernetes-embedded-resource")
                    .and_then(Value::as_bool)
                    == Some(true);
            for (k, x) in m {
                if embedded && k == "metadata" {
                    out.insert(key("metadata"), metadata(x));
                    continue;
                }
                if embedded && matches!(k.as_str(), "apiVersion" | "kind") {
                    out.insert(key(k), to_cel(x, &Value::Null, false));
                    continue;
                }
                match (props.and_then(|p| p.get(k)), additional) {
                    (Some(ps), _) => {
                        if let Some(name) = escape(k) {
                            out.insert(key(&name), to_cel(x, ps, false));
                        }
                    }
                    (None, Some(a)) => {
                        out.insert(key(k), to_cel(x, a, false));
                    }
                    // Under x-kubernetes-preserve-unknown-fields: every field, untyped.
                    (None, None) => {
                        out.insert(key(k), to_cel(x, &Value::Null, false));
                    }
                }
            }
            Cel::Map(CelMap { map: Arc::new(out) })
        }
    }
}

fn key(k: &str) -> Key {
    Key::String(Arc::new(k.to_owned()))
}

/// What CEL sees of an object's `metadata`: `name` and `generateName`.
fn metadata(m: &Value) -> Cel {
    let mut out = HashMap::new();
    for k in ["name", "generateName"] {
        if let Some(Value::String(x)) = m.get(k) {
            out.insert(key(k), Cel::String(Arc::new(x.clone())));
        }
    }
    Cel::Map(CelMap { map: Arc::new(out) })
}

fn string_to_cel(x: &str, s: &Value) -> Cel {
    match s.get("format").and_then(Value::as_str) {
        Some("date-time") => {
            if let Ok(t) = chrono::DateTime::parse_from_rfc3339(x) {
                return Cel::Timestamp(t);
            }
        }
        Some("duration") => {
            if let Some(d) = go_duration(x) {
                return Cel::Duration(d);
            }
        }
        _ => {}
    }
    Cel::String(Arc::new(x.to_owned()))
}

/// A Go duration (`1h30m`, `-1.5s`, `300ms`), as `format: duration` holds one.
pub(crate) fn go_duration(x: &str) -> Option<chrono::Duration> {
    let (neg, mut rest) = match x.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, x.strip_prefix('+').unwrap_or(x)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..end].parse().ok()?;
        rest = &rest[end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let per = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        nanos += n * per;
    }
    let d = chrono::Duration::nanoseconds(nanos as i64);
    Some(if neg { -d } else { d })
}

#[cfg(test)]
mod tests;

/// The outcome of a webhook's `matchConditions`.
#[derive(Debug, PartialEq)]
pub(crate) enum Matched {
    /// Every condition is true (or there is none): the webhook is called.
    Yes,
    /// A condition is false: the webhook is skipped, whatever the others give.
    No,
    /// No condition is false and one could not be evaluated (or is not a bool): the
    /// webhook's `failurePolicy` decides. The text names the expression and the error,
    /// as kube-apiserver words it.
    Error(String),
}

/// A webhook's `matchConditions`, compiled once when its configuration is read (the
/// configuration is cached until it changes), as kube-apiserver compiles them when its
/// informer sees the configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct MatchConditions(Vec<MatchCondition>);

#[derive(Debug, Clone)]
struct MatchCondition {
    expression: String,
    /// The program, or why the expression does not compile (an evaluation error of every
    /// request it is asked about).
    program: Result<Arc<Program>, String>,
}

impl MatchConditions {
    /// Compiles each expression (name, CEL expression) of a `matchConditions` list.
    pub(crate) fn compile(conditions: impl IntoIterator<Item = (String, String)>) -> Self {
        MatchConditions(
            conditions
                .into_iter()
                .map(|(_, expression)| MatchCondition {
                    program: Program::compile(&expression)
                        .map(Arc::new)
                        .map_err(|e| format!("compilation failed: {e}")),
                    expression,
                })
                .collect(),
        )
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Evaluates the conditions with `variables` bound (`object`, `oldObject`,
    /// `request`; a missing value is `null`), as kube-apiserver evaluates a webhook's
    /// `matchConditions`: a false one wins over errors. Objects are seen whole and
    /// untyped (no schema), with the Kubernetes CEL libraries.
    pub(crate) fn evaluate(&self, variables: &[(&str, Option<&Value>)]) -> Matched {
        if self.0.is_empty() {
            return Matched::Yes;
        }
        BASE.with(|base| {
            let mut scope = base.new_inner_scope();
            for (name, v) in variables {
                scope.add_variable_from_value(*name, v.map_or(Cel::Null, json_to_cel));
            }
            let mut error = None;
            for MatchCondition {
                expression,
                program,
            } in &self.0
            {
                let outcome = program
                    .as_ref()
                    .map_err(String::clone)
                    .and_then(|p| p.execute(&scope).map_err(|e| error_text(&e)));
                match outcome {
                    Ok(Cel::Bool(true)) => {}
                    Ok(Cel::Bool(false)) => return Matched::No,
                    Ok(other) => {
                        error.get_or_insert(format!(
                            "expression '{expression}' resulted in a {} value, not a bool",
                            other.type_of()
                        ));
                    }
                    Err(e) => {
                        error.get_or_insert(format!(
                            "expression '{expression}' resulted in error: {e}"
                        ));
                    }
                }
            }
            error.map_or(Matched::Yes, Matched::Error)
        })
    }
}

/// A JSON value as CEL sees it without a schema: integers as `int` (or `uint` past
/// `i64`), other numbers as `double`, objects as maps with their keys unchanged.
fn json_to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(x) => Cel::String(Arc::new(x.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(json_to_cel).collect())),
        Value::Object(m) => Cel::Map(CelMap {
            map: Arc::new(m.iter().map(|(k, x)| (key(k), json_to_cel(x))).collect()),
        }),
    }
}
