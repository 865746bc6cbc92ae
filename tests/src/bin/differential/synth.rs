//! Objects from a CRD version's schema: a valid one (required properties only, every
//! value within its constraints where a simple value can be), and mutations of it that
//! each break one constraint the schema states.
//!
//! Unlike `corpus-objects` (which fills every property to test round trips and ignores
//! patterns, bounds and rules), this aims at objects a server accepts, and at single
//! violations of them. Patterns are met by trying a list of common shapes against the
//! regular expression; a pattern none of them meets leaves the object invalid (both
//! servers should then reject it alike, which is still a comparison).

use serde_json::{json, Map, Value};

const MAX_DEPTH: usize = 24;

fn is_true(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

fn int_or_string(s: &Value) -> bool {
    is_true(s, "x-kubernetes-int-or-string")
}

fn ty(s: &Value) -> Option<&str> {
    match s.get("type").and_then(Value::as_str) {
        Some(t) => Some(t),
        None if s.get("properties").is_some() || s.get("additionalProperties").is_some() => {
            Some("object")
        }
        None if s.get("items").is_some() => Some("array"),
        None => None,
    }
}

fn num(s: &Value, key: &str) -> Option<f64> {
    s.get(key).and_then(Value::as_f64)
}

fn uint(s: &Value, key: &str) -> Option<usize> {
    s.get(key).and_then(Value::as_u64).map(|n| n as usize)
}

fn pattern(s: &Value) -> Option<regex::Regex> {
    s.get("pattern")
        .and_then(Value::as_str)
        .and_then(|p| regex::Regex::new(p).ok())
}

/// Strings of common shapes, tried in order against a string's constraints.
const CANDIDATES: &[&str] = &[
    "text",
    "a",
    "abc",
    "example",
    "example.com",
    "a-b",
    "v1",
    "1",
    "10",
    "1.0.0",
    "v1.0.0",
    "10s",
    "1m",
    "1h",
    "100Mi",
    "1Gi",
    "A",
    "Abc",
    "a.b",
    "a_b",
    "a/b",
    "https://example.com",
    "http://example.com/a",
    "10.0.0.1",
    "10.0.0.0/24",
    "::1",
    "default",
    "TCP",
    "foo=bar",
    "*",
    "/",
    "/path",
    "0",
    "example.com/a",
    "a@example.com",
    "00:00",
    "1.2",
    "1%",
    "50%",
    "key",
    "Always",
    "IfNotPresent",
    "sha256:abc",
    "a:b",
    "0 * * * *",
    "*/5 * * * *",
    "Ready",
    "True",
    "ABC",
    "a1",
    "1a",
    "ab-12",
    "x.y.z",
    "a.example.com",
    "example.com:443",
    "10.0.0.1:80",
    "1ms",
    "1.5",
    "true",
    "json",
    "#fff",
    "tcp://a:1",
    "grpc",
];

fn string_for(s: &Value) -> Value {
    let min = uint(s, "minLength").unwrap_or(0);
    let max = uint(s, "maxLength").unwrap_or(usize::MAX);
    let fits = |c: &str| c.chars().count() >= min && c.chars().count() <= max;
    let by_format = match s.get("format").and_then(Value::as_str) {
        Some("date-time") => Some("2024-05-06T07:08:09Z"),
        Some("date") => Some("2024-05-06"),
        Some("byte") => Some("aGVsbG8="),
        Some("uri") | Some("url") => Some("https://example.com"),
        Some("email") => Some("a@example.com"),
        Some("hostname") => Some("example.com"),
        Some("ipv4") | Some("ip") => Some("10.0.0.1"),
        Some("ipv6") => Some("::1"),
        Some("cidr") => Some("10.0.0.0/24"),
        Some("uuid") => Some("123e4567-e89b-12d3-a456-426614174000"),
        Some("duration") => Some("1s"),
        _ => None,
    };
    let re = pattern(s);
    let ok = |c: &str| fits(c) && re.as_ref().is_none_or(|r| r.is_match(c));
    if let Some(f) = by_format {
        if ok(f) {
            return json!(f);
        }
    }
    for c in CANDIDATES {
        if ok(c) {
            return json!(c);
        }
    }
    if re.is_none() && min > 0 && min <= 4096 {
        return json!("a".repeat(min));
    }
    json!("text")
}

fn number_for(s: &Value, integer: bool) -> Value {
    let mut v = 1.0f64;
    if let Some(min) = num(s, "minimum") {
        if v < min || (v == min && is_true(s, "exclusiveMinimum")) {
            v = if is_true(s, "exclusiveMinimum") {
                min + 1.0
            } else {
                min
            };
        }
    }
    if let Some(max) = num(s, "maximum") {
        if v > max || (v == max && is_true(s, "exclusiveMaximum")) {
            v = if is_true(s, "exclusiveMaximum") {
                max - 1.0
            } else {
                max
            };
        }
    }
    if let Some(m) = num(s, "multipleOf") {
        if m > 0.0 {
            v = (v / m).ceil() * m;
        }
    }
    if integer {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// A valid value for schema `s` (as far as simple values go).
pub fn valid(s: &Value, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return json!({});
    }
    if int_or_string(s) {
        return json!(1);
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        if let Some(first) = values.iter().find(|x| !x.is_null()) {
            return first.clone();
        }
    }
    match ty(s) {
        Some("string") => string_for(s),
        Some("integer") => number_for(s, true),
        Some("number") => number_for(s, false),
        Some("boolean") => json!(true),
        Some("array") => {
            let n = uint(s, "minItems").unwrap_or(0);
            let item = s
                .get("items")
                .map(|i| valid(i, depth + 1))
                .unwrap_or(json!("a"));
            json!((0..n).map(|i| vary(&item, i)).collect::<Vec<_>>())
        }
        Some("object") => valid_object(s, depth, false),
        _ => json!({}),
    }
}

/// An object with its required properties (or, `full`, every property).
fn valid_object(s: &Value, depth: usize, full: bool) -> Value {
    let props = s.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    let mut want: Vec<String> = required(s);
    if full {
        want.extend(props.into_iter().flatten().map(|(k, _)| k.clone()));
    }
    // A oneOf/anyOf of required groups: meet the first group when none is met.
    for key in ["oneOf", "anyOf"] {
        let groups: Vec<Vec<String>> = s
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(required)
            .filter(|g| !g.is_empty())
            .collect();
        if !groups.is_empty() && !groups.iter().any(|g| g.iter().all(|r| want.contains(r))) {
            want.extend(groups[0].iter().cloned());
        }
    }
    for name in want {
        if depth == 0 && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if out.contains_key(&name) {
            continue;
        }
        let child = props
            .and_then(|p| p.get(&name))
            .cloned()
            .unwrap_or(json!({}));
        out.insert(name, valid(&child, depth + 1));
    }
    if let Some(add) = s.get("additionalProperties").filter(|a| a.is_object()) {
        for i in 0..uint(s, "minProperties").unwrap_or(0).min(16) {
            out.insert(format!("k{i}"), valid(add, depth + 1));
        }
    }
    Value::Object(out)
}

fn required(s: &Value) -> Vec<String> {
    s.get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// The `i`th of several distinct items made from one (for sets and list-maps).
fn vary(item: &Value, i: usize) -> Value {
    if i == 0 {
        return item.clone();
    }
    match item {
        Value::String(s) => json!(format!("{s}{i}")),
        Value::Number(n) => json!(n.as_i64().unwrap_or(0) + i as i64),
        Value::Object(m) => {
            let mut m = m.clone();
            if let Some((_, v)) = m.iter_mut().find(|(_, v)| v.is_string() || v.is_number()) {
                *v = vary(v, i);
            }
            Value::Object(m)
        }
        other => other.clone(),
    }
}

/// A step into an object: a property or the first item of a list.
#[derive(Clone, Debug)]
pub enum Seg {
    Key(String),
    First,
}

/// What a mutation does at its path.
#[derive(Clone, Debug)]
pub enum Action {
    Set(Value),
    /// Removes these properties of the object at the path.
    RemoveAll(Vec<String>),
}

#[derive(Clone, Debug)]
pub struct Mutation<'a> {
    /// The constraint kind broken (`type`, `enum`, `pattern`, ...).
    pub kind: &'static str,
    /// Where, as a field path (`.spec.ports[0].name`).
    pub at: String,
    /// The path, each step with the schema of the node it reaches.
    path: Vec<(Seg, &'a Value)>,
    action: Action,
}

/// Every constraint kind the mutations know, in the order they are picked.
pub const KINDS: &[&str] = &[
    "required",
    "type",
    "enum",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "format",
    "oneOf",
    "anyOf",
    "list-set",
    "list-map",
    "minProperties",
    "maxProperties",
    "cel",
    "null",
];

/// The mutations of a schema, each breaking one constraint.
pub fn mutations(root: &Value) -> Vec<Mutation<'_>> {
    let mut out = Vec::new();
    let props = root.get("properties").and_then(Value::as_object);
    for (name, child) in props.into_iter().flatten() {
        if matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        walk(child, vec![(Seg::Key(name.clone()), child)], &mut out);
    }
    if let Some(req) = required(root)
        .into_iter()
        .find(|r| !matches!(r.as_str(), "apiVersion" | "kind" | "metadata"))
    {
        out.push(Mutation {
            kind: "required",
            at: format!(".{req}"),
            path: vec![],
            action: Action::RemoveAll(vec![req]),
        });
    }
    out
}

fn at(path: &[(Seg, &Value)]) -> String {
    let mut s = String::new();
    for (seg, _) in path {
        match seg {
            Seg::Key(k) => {
                s.push('.');
                s.push_str(k);
            }
            Seg::First => s.push_str("[0]"),
        }
    }
    s
}

fn walk<'a>(s: &'a Value, path: Vec<(Seg, &'a Value)>, out: &mut Vec<Mutation<'a>>) {
    if path.len() > MAX_DEPTH {
        return;
    }
    let m = |kind: &'static str, action: Action| Mutation {
        kind,
        at: at(&path),
        path: path.clone(),
        action,
    };
    let t = ty(s);
    if !int_or_string(s) {
        let wrong = match t {
            Some("string") => Some(json!(12345)),
            Some("integer") | Some("number") => Some(json!("not-a-number")),
            Some("boolean") => Some(json!("yes")),
            Some("object") => Some(json!("a-string")),
            Some("array") => Some(json!("a-string")),
            _ => None,
        };
        if let Some(w) = wrong {
            out.push(m("type", Action::Set(w)));
        }
        if t.is_some() && !is_true(s, "nullable") {
            out.push(m("null", Action::Set(Value::Null)));
        }
    }
    if s.get("enum").is_some() {
        let v = if t == Some("string") {
            json!("zz-not-listed")
        } else {
            json!(987654)
        };
        out.push(m("enum", Action::Set(v)));
    }
    if let Some(re) = pattern(s) {
        if let Some(bad) = ["!! not matching ##", "", "A", "0", "a"]
            .iter()
            .find(|c| !re.is_match(c))
        {
            out.push(m("pattern", Action::Set(json!(bad))));
        }
    }
    if let Some(min) = num(s, "minimum") {
        let v = if is_true(s, "exclusiveMinimum") {
            min
        } else {
            min - 1.0
        };
        out.push(m("minimum", Action::Set(number(v, t))));
    }
    if let Some(max) = num(s, "maximum") {
        let v = if is_true(s, "exclusiveMaximum") {
            max
        } else {
            max + 1.0
        };
        out.push(m("maximum", Action::Set(number(v, t))));
    }
    if let Some(n) = uint(s, "minLength").filter(|n| *n > 0 && *n < 4096) {
        out.push(m("minLength", Action::Set(json!("a".repeat(n - 1)))));
    }
    if let Some(n) = uint(s, "maxLength").filter(|n| *n < 8192) {
        out.push(m("maxLength", Action::Set(json!("a".repeat(n + 1)))));
    }
    if let Some(fmt) = s.get("format").and_then(Value::as_str) {
        let bad = match fmt {
            "date-time" | "date" | "uri" | "email" | "hostname" | "ipv4" | "ipv6" | "cidr"
            | "uuid" | "duration" | "byte" => Some(json!("not a valid value!")),
            "int32" if t == Some("integer") => Some(json!(4_294_967_296i64)),
            _ => None,
        };
        if let Some(b) = bad {
            out.push(m("format", Action::Set(b)));
        }
    }
    let items = s.get("items").filter(|i| i.is_object());
    if t == Some("array") {
        let item = items.map(|i| valid(i, path.len())).unwrap_or(json!("a"));
        if let Some(n) = uint(s, "minItems").filter(|n| *n > 0 && *n < 64) {
            out.push(m(
                "minItems",
                Action::Set(json!((0..n - 1)
                    .map(|i| vary(&item, i))
                    .collect::<Vec<_>>())),
            ));
        }
        if let Some(n) = uint(s, "maxItems").filter(|n| *n < 64) {
            out.push(m(
                "maxItems",
                Action::Set(json!((0..=n).map(|i| vary(&item, i)).collect::<Vec<_>>())),
            ));
        }
        match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => out.push(m(
                "list-set",
                Action::Set(json!([item.clone(), item.clone()])),
            )),
            Some("map") => out.push(m(
                "list-map",
                Action::Set(json!([item.clone(), item.clone()])),
            )),
            _ => {}
        }
        if let Some(i) = items {
            let mut p = path.clone();
            p.push((Seg::First, i));
            walk(i, p, out);
        }
    }
    if t == Some("object") {
        let add = s.get("additionalProperties").filter(|a| a.is_object());
        if let Some(add) = add {
            let v = valid(add, path.len());
            if let Some(n) = uint(s, "maxProperties").filter(|n| *n < 64) {
                let map: Map<String, Value> =
                    (0..=n).map(|i| (format!("k{i}"), v.clone())).collect();
                out.push(m("maxProperties", Action::Set(Value::Object(map))));
            }
            let mut p = path.clone();
            p.push((Seg::Key("k".into()), add));
            walk(add, p, out);
        }
        if let Some(n) = uint(s, "minProperties").filter(|n| *n > 0 && *n < 64) {
            let base = valid_object(s, path.len(), true);
            let map: Map<String, Value> = base
                .as_object()
                .into_iter()
                .flatten()
                .take(n - 1)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            out.push(m("minProperties", Action::Set(Value::Object(map))));
        }
        if let Some(req) = required(s).into_iter().next() {
            out.push(m("required", Action::RemoveAll(vec![req])));
        }
        for key in ["oneOf", "anyOf"] {
            let groups: Vec<Vec<String>> = s
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(required)
                .filter(|g| !g.is_empty())
                .collect();
            if groups.is_empty() {
                continue;
            }
            let all: Vec<String> = groups.concat();
            let kind = if key == "oneOf" { "oneOf" } else { "anyOf" };
            if key == "oneOf" && groups.len() > 1 {
                // Every group met at once: more than one.
                let mut obj = valid_object(s, path.len(), false);
                let props = s.get("properties").and_then(Value::as_object);
                for name in &all {
                    let child = props
                        .and_then(|p| p.get(name))
                        .cloned()
                        .unwrap_or(json!({}));
                    obj[name] = valid(&child, path.len() + 1);
                }
                out.push(m(kind, Action::Set(obj)));
            } else {
                out.push(m(kind, Action::RemoveAll(all)));
            }
        }
        for (name, child) in s
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let mut p = path.clone();
            p.push((Seg::Key(name.clone()), child));
            walk(child, p, out);
        }
    }
    let rules: Vec<&str> = s
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r["rule"].as_str())
        .filter(|r| !r.contains("oldSelf"))
        .collect();
    if !rules.is_empty() {
        // Every property set at once probes rules of the "at most one of" kind; an empty
        // or zero value probes "must not be empty" rules.
        let v = match t {
            Some("object") => valid_object(s, path.len(), true),
            Some("string") => json!(""),
            Some("integer") | Some("number") => json!(-1),
            Some("array") => json!([]),
            _ => json!({}),
        };
        out.push(m("cel", Action::Set(v)));
    }
}

fn number(v: f64, t: Option<&str>) -> Value {
    if t == Some("integer") {
        json!(v as i64)
    } else {
        json!(v)
    }
}

impl Mutation<'_> {
    /// `base` with the mutation applied (missing parents created valid).
    pub fn apply(&self, base: &Value) -> Value {
        let mut obj = base.clone();
        let mut cur = &mut obj;
        let n = self.path.len();
        for (i, (seg, schema)) in self.path.iter().enumerate() {
            let last = i + 1 == n;
            match seg {
                Seg::Key(k) => {
                    if !cur.is_object() {
                        *cur = json!({});
                    }
                    let Some(map) = cur.as_object_mut() else {
                        return obj;
                    };
                    if last {
                        if let Action::Set(v) = &self.action {
                            map.insert(k.clone(), v.clone());
                            return obj;
                        }
                    }
                    cur = map.entry(k.clone()).or_insert_with(|| valid(schema, i + 1));
                }
                Seg::First => {
                    if !cur.is_array() {
                        *cur = json!([]);
                    }
                    let Some(list) = cur.as_array_mut() else {
                        return obj;
                    };
                    if list.is_empty() {
                        list.push(valid(schema, i + 1));
                    }
                    if last {
                        if let Action::Set(v) = &self.action {
                            list[0] = v.clone();
                            return obj;
                        }
                    }
                    cur = &mut list[0];
                }
            }
        }
        if let (Action::RemoveAll(names), Some(map)) = (&self.action, cur.as_object_mut()) {
            for name in names {
                map.remove(name);
            }
        }
        obj
    }
}

/// At most `n` mutations, taken round-robin over [`KINDS`] so that every kind present
/// appears before any kind appears twice.
pub fn pick(all: Vec<Mutation<'_>>, n: usize) -> Vec<Mutation<'_>> {
    let mut by_kind: Vec<std::collections::VecDeque<Mutation<'_>>> = KINDS
        .iter()
        .map(|k| all.iter().filter(|m| m.kind == *k).cloned().collect())
        .collect();
    let mut out = Vec::new();
    while out.len() < n && by_kind.iter().any(|q| !q.is_empty()) {
        for q in by_kind.iter_mut() {
            if out.len() >= n {
                break;
            }
            if let Some(m) = q.pop_front() {
                out.push(m);
            }
        }
    }
    out
}
