//! `corpus-objects`: the corpus check's object synthesizer, runner writer and comparator.
//!
//! It reads the raw CRD YAML as `serde_yaml::Value` and never uses kubegen's model, so a
//! generator bug cannot hide in its own test data. Subcommands (used by
//! `hack/check-corpus.sh`):
//!
//! - `synth FILE...`: one JSON line per object on stdout, with the id `MODULE#n`. For every CRD version four
//!   objects: `full-int` (every property set, int-or-string as a number, listed enum
//!   values, a date-time with nanoseconds and a `+02:00` offset), `full-str` (every
//!   property set, int-or-string as a string, string enums at a value the schema does not
//!   list, a date-time with one fractional digit and a `-07:30` offset), `nulls` (every
//!   nullable property, item and map value an explicit `null`, wherever the schema allows
//!   one) and `minimal` (optional properties left out). Objects that
//!   keep unknown fields get one undeclared key.
//! - `versions FILE...`: `FILE VERSION` lines (for the kopium benchmark).
//! - `dispatch GEN_ROOT MODULE...`: the round-trip runner's `main.rs` on stdout; it maps
//!   (module, apiVersion, kind) to the generated type found in each tree's `register.rs`.
//! - `compare FILE... < results`: compares each runner result with the object sent,
//!   numbers by value, `null` and absent never equal (an explicit `null` sent on a
//!   nullable property must come back `null`, as kube-apiserver keeps it); prints one
//!   line per file and version and exits 1 on any failure.
//!
//! It does not validate patterns, bounds or CEL rules: generated types do not check them.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Map, Value};

/// How an object is filled.
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    FullInt,
    FullStr,
    Nulls,
    Minimal,
}

impl Variant {
    const ALL: [Variant; 4] = [
        Variant::FullInt,
        Variant::FullStr,
        Variant::Nulls,
        Variant::Minimal,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::FullInt => "full-int",
            Variant::FullStr => "full-str",
            Variant::Nulls => "nulls",
            Variant::Minimal => "minimal",
        }
    }
}

/// One CRD version: where it came from and its schema (as JSON).
struct CrdVersion {
    file: String,
    module: String,
    group: String,
    kind: String,
    version: String,
    schema: Value,
}

/// The module name the check script gives a file's generated tree.
fn module_name(path: &str) -> String {
    let stem = Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(path);
    let mut out = String::from("f_");
    for c in stem.chars() {
        out.push(if c.is_ascii_alphanumeric() {
            c.to_ascii_lowercase()
        } else {
            '_'
        });
    }
    out
}

fn load(path: &str) -> Result<Vec<CrdVersion>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let yaml = <serde_yaml::Value as serde::Deserialize>::deserialize(doc)
            .map_err(|e| format!("{path}: {e}"))?;
        let crd: Value = serde_json::to_value(&yaml).map_err(|e| format!("{path}: {e}"))?;
        if crd.is_null() || crd["kind"] != "CustomResourceDefinition" {
            continue;
        }
        let spec = &crd["spec"];
        let group = spec["group"].as_str().unwrap_or_default().to_owned();
        let kind = spec["names"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        for v in spec["versions"].as_array().into_iter().flatten() {
            out.push(CrdVersion {
                file: path.to_owned(),
                module: module_name(path),
                group: group.clone(),
                kind: kind.clone(),
                version: v["name"].as_str().unwrap_or_default().to_owned(),
                schema: v["schema"]["openAPIV3Schema"].clone(),
            });
        }
    }
    Ok(out)
}

fn is_true(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

fn keeps_unknown(s: &Value) -> bool {
    is_true(s, "x-kubernetes-preserve-unknown-fields")
        || s.get("additionalProperties").and_then(Value::as_bool) == Some(true)
}

fn int_or_string(s: &Value) -> bool {
    is_true(s, "x-kubernetes-int-or-string") || s.get("format") == Some(&json!("int-or-string"))
}

/// A value for schema `s`, or `None` when the property is left out.
fn synth(s: &Value, v: Variant, depth: usize) -> Value {
    if depth > 64 {
        return json!("too-deep");
    }
    if v == Variant::Nulls && is_true(s, "nullable") && depth > 0 {
        return Value::Null;
    }
    if int_or_string(s) {
        return match v {
            Variant::FullStr => json!("50%"),
            _ => json!(8080),
        };
    }
    let ty = s.get("type").and_then(Value::as_str);
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        if v == Variant::FullStr && ty == Some("string") {
            return json!("ZzNotListedByTheSchema");
        }
        if let Some(first) = values.iter().find(|x| !x.is_null()) {
            return first.clone();
        }
    }
    let ty = match ty {
        Some(t) => t,
        None if s.get("properties").is_some() || s.get("additionalProperties").is_some() => {
            "object"
        }
        None if s.get("items").is_some() => "array",
        None => return json!({"free": [1, "two", {"three": true}]}),
    };
    match ty {
        "string" => match s.get("format").and_then(Value::as_str) {
            Some("date-time") => match v {
                Variant::FullStr => json!("2024-05-06T07:08:09.5-07:30"),
                _ => json!("2024-05-06T07:08:09.123456789+02:00"),
            },
            Some("date") => json!("2024-05-06"),
            Some("byte") => json!("aGVsbG8="),
            _ => json!("text"),
        },
        "integer" => json!(7),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "array" => match s.get("items") {
            Some(items) => json!([synth(items, v, depth + 1)]),
            None => json!([1, "a"]),
        },
        _ => synth_object(s, v, depth),
    }
}

fn synth_object(s: &Value, v: Variant, depth: usize) -> Value {
    let mut out = Map::new();
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let props = s.get("properties").and_then(Value::as_object);
    for (name, prop) in props.into_iter().flatten() {
        if depth == 0 && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if v == Variant::Minimal && !required.contains(&name.as_str()) {
            continue;
        }
        out.insert(name.clone(), synth(prop, v, depth + 1));
    }
    let has_props = props.is_some_and(|p| !p.is_empty());
    match s.get("additionalProperties") {
        Some(ap) if ap.is_object() && !has_props => {
            out.insert("someKey".into(), synth(ap, v, depth + 1));
        }
        _ if keeps_unknown(s) && v != Variant::Minimal => {
            out.insert("zzUndeclared".into(), json!({"kept": [1, "x"]}));
        }
        _ => {}
    }
    Value::Object(out)
}

fn cmd_synth(files: &[String]) -> Result<(), String> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for file in files {
        let mut n = 0usize;
        for cv in load(file)? {
            for v in Variant::ALL {
                let mut obj = synth_object(&cv.schema, v, 0);
                if let Value::Object(map) = &mut obj {
                    map.insert(
                        "apiVersion".into(),
                        json!(format!("{}/{}", cv.group, cv.version)),
                    );
                    map.insert("kind".into(), json!(cv.kind));
                    map.insert(
                        "metadata".into(),
                        json!({"name": "sample", "namespace": "default"}),
                    );
                }
                let line = json!({
                    "id": format!("{}#{n}", cv.module), "file": cv.file, "module": cv.module, "version": cv.version,
                    "variant": v.name(), "object": obj,
                });
                writeln!(out, "{line}").map_err(|e| e.to_string())?;
                n += 1;
            }
        }
    }
    Ok(())
}

fn cmd_versions(files: &[String]) -> Result<(), String> {
    for file in files {
        for cv in load(file)? {
            println!("{} {}", cv.file, cv.version);
        }
    }
    Ok(())
}

/// Finds `(apiVersion, kind, type path)` in every `register.rs` under `dir`.
fn find_kinds(dir: &Path, module_path: &str, out: &mut Vec<(String, String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if path.is_dir() {
            find_kinds(&path, &format!("{module_path}::{name}"), out);
        } else if name == "register.rs" {
            // Whitespace-normalized, so wrapped `impl` lines read like short ones.
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let marker = "impl ::kubegen_runtime::k8s_openapi::Resource for super::types::";
            for (at, _) in text.match_indices(marker) {
                let rest = &text[at + marker.len()..];
                let Some((ty, body)) = rest.split_once(" { ") else {
                    continue;
                };
                let Some(av) = body
                    .strip_prefix("const API_VERSION: &'static str = \"")
                    .and_then(|b| b.split_once('"'))
                    .map(|(av, _)| av)
                else {
                    continue;
                };
                out.push((av.to_owned(), ty.to_owned(), format!("{module_path}::{ty}")));
            }
        }
    }
}

fn cmd_dispatch(root: &str, modules: &[String]) -> Result<(), String> {
    let mut arms = String::new();
    for m in modules {
        let mut kinds = Vec::new();
        find_kinds(
            &Path::new(root).join(m),
            &format!("corpus_batch::{m}"),
            &mut kinds,
        );
        for (av, kind, path) in kinds {
            arms.push_str(&format!(
                "        ({m:?}, {av:?}, {kind:?}) => round_trip::<{path}>(&text),\n"
            ));
        }
    }
    print!(
        r#"//! Round-trip runner written by `corpus-objects dispatch`: reads objects (JSON lines),
//! sends each through its generated type, prints what came back.
use std::io::BufRead;

use kubegen_runtime::serde_json::{{self, json, Value}};

fn round_trip<T>(text: &str) -> Result<Value, String>
where
    T: kubegen_runtime::serde::de::DeserializeOwned + kubegen_runtime::serde::Serialize,
{{
    let typed: T = serde_json::from_str(text).map_err(|e| format!("deserialize: {{e}}"))?;
    let back = serde_json::to_string(&typed).map_err(|e| format!("serialize: {{e}}"))?;
    serde_json::from_str(&back).map_err(|e| format!("reparse: {{e}}"))
}}

fn main() {{
    for line in std::io::stdin().lock().lines() {{
        let line = line.expect("stdin");
        let rec: Value = serde_json::from_str(&line).expect("a JSON line");
        let text = rec["object"].to_string();
        let module = rec["module"].as_str().unwrap_or_default();
        let av = rec["object"]["apiVersion"].as_str().unwrap_or_default();
        let kind = rec["object"]["kind"].as_str().unwrap_or_default();
        let result: Result<Value, String> = match (module, av, kind) {{
{arms}        _ => Err("no generated type for this apiVersion and kind".to_owned()),
        }};
        let out = match result {{
            Ok(v) => json!({{"id": rec["id"], "out": v}}),
            Err(e) => json!({{"id": rec["id"], "error": e}}),
        }};
        println!("{{out}}");
    }}
}}
"#
    );
    Ok(())
}

/// The sub-schema of property `key` of object schema `s`.
fn child<'a>(s: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    let s = s?;
    s.get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
}

/// The first difference between what was sent and what came back, as a path and reason.
fn diff(sent: &Value, back: &Value, s: Option<&Value>, path: &str) -> Option<String> {
    match (sent, back) {
        (Value::Number(a), Value::Number(b)) => {
            (a.as_f64() != b.as_f64()).then(|| format!("{path}: sent {a}, got {b}"))
        }
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let sub = child(s, k);
                let p = format!("{path}.{k}");
                // An explicit null must come back null: kube-apiserver keeps it.
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => {
                        if let Some(d) = diff(x, y, sub, &p) {
                            return Some(d);
                        }
                    }
                    (Some(x), None) => return Some(format!("{p}: sent {x}, came back absent")),
                    (None, Some(y)) => return Some(format!("{p}: absent, came back as {y}")),
                    (None, None) => {}
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Some(format!("{path}: {} items sent, {} back", a.len(), b.len()));
            }
            let items = s.and_then(|x| x.get("items"));
            a.iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| diff(x, y, items, &format!("{path}[{i}]")))
        }
        (a, b) => (a != b).then(|| format!("{path}: sent {a}, got {b}")),
    }
}

fn cmd_compare(objects: &str, files: &[String]) -> Result<bool, String> {
    let mut schemas = BTreeMap::new();
    for file in files {
        for cv in load(file)? {
            schemas.insert((cv.file.clone(), cv.version.clone()), cv.schema);
        }
    }
    let text = std::fs::read_to_string(objects).map_err(|e| format!("{objects}: {e}"))?;
    let mut sent = BTreeMap::new();
    for line in text.lines() {
        let rec: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        sent.insert(rec["id"].as_str().unwrap_or_default().to_owned(), rec);
    }
    let mut results = BTreeMap::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let rec: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
        results.insert(rec["id"].as_str().unwrap_or_default().to_owned(), rec);
    }
    // (file, version) -> (objects passed, failures)
    let mut per: BTreeMap<(String, String), (usize, Vec<String>)> = BTreeMap::new();
    for (id, rec) in &sent {
        let key = (
            rec["file"].as_str().unwrap_or_default().to_owned(),
            rec["version"].as_str().unwrap_or_default().to_owned(),
        );
        let variant = rec["variant"].as_str().unwrap_or_default();
        let entry = per.entry(key.clone()).or_default();
        let problem = match results.get(id) {
            None => Some("no result from the runner".to_owned()),
            Some(r) if r.get("error").is_some() => Some(r["error"].to_string()),
            Some(r) => diff(&rec["object"], &r["out"], schemas.get(&key), "$"),
        };
        match problem {
            None => entry.0 += 1,
            Some(p) => entry.1.push(format!("{variant}: {p}")),
        }
    }
    let mut ok = true;
    for ((file, version), (passed, failures)) in &per {
        let name = Path::new(file)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(file);
        if failures.is_empty() {
            println!("{name} {version} round-trip ok {passed} objects");
        } else {
            ok = false;
            println!(
                "{name} {version} round-trip FAIL {} of {} objects: {}",
                failures.len(),
                passed + failures.len(),
                failures.join("; ")
            );
        }
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("synth") => cmd_synth(&args[1..]).map(|()| true),
        Some("versions") => cmd_versions(&args[1..]).map(|()| true),
        Some("dispatch") if args.len() >= 2 => cmd_dispatch(&args[1], &args[2..]).map(|()| true),
        Some("compare") if args.len() >= 2 => cmd_compare(&args[1], &args[2..]),
        _ => Err("usage: corpus-objects synth FILE... | versions FILE... | dispatch GEN_ROOT MODULE... | \
                  compare OBJECTS.jsonl FILE... < results"
            .to_owned()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("corpus-objects: {e}");
            ExitCode::FAILURE
        }
    }
}
