//! The harness's own pieces, without servers: normalization, diffs, the synthesizer and
//! its mutations, the comparison of answers and the known-differences list.

use serde_json::{json, Value};

use crate::case::{Case, Cmp, Verdict};
use crate::harness::{diff, normalize, Req, Resp};
use crate::synth;

fn resp(code: u16, body: Value) -> Resp {
    Resp {
        code,
        body,
        error: None,
    }
}

#[test]
fn normalize_sets_aside_what_servers_choose() {
    let obj = json!({"metadata": {"name": "gen-x7k2p", "generateName": "gen-", "uid": "u1",
        "resourceVersion": "17", "creationTimestamp": "2026-01-01T00:00:00Z",
        "managedFields": [{"manager": "m", "time": "2026-01-01T00:00:00Z"}],
        "ownerReferences": [{"uid": "u2", "name": "o"}]},
        "spec": {"clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.7"],
                 "volumes": [{"name": "kube-api-access-abcde"}]}});
    let n = normalize(&obj);
    assert_eq!(n["metadata"]["name"], "gen-<suffix>");
    assert_eq!(n["metadata"]["uid"], "<uid>");
    assert_eq!(n["metadata"]["resourceVersion"], "<resourceVersion>");
    assert_eq!(n["metadata"]["managedFields"][0]["time"], "<time>");
    assert_eq!(n["metadata"]["managedFields"][0]["manager"], "m");
    assert_eq!(n["metadata"]["ownerReferences"][0]["uid"], "<uid>");
    assert_eq!(n["spec"]["clusterIP"], "<allocated>");
    assert_eq!(n["spec"]["clusterIPs"], json!(["<allocated>"]));
    assert_eq!(n["spec"]["volumes"][0]["name"], "kube-api-access-<suffix>");
    // Presence still counts: an absent resourceVersion stays absent.
    let bare = normalize(&json!({"metadata": {"name": "a"}}));
    assert!(bare["metadata"].get("resourceVersion").is_none());
    // Headless stays headless.
    assert_eq!(
        normalize(&json!({"clusterIP": "None"}))["clusterIP"],
        "None"
    );
}

#[test]
fn diff_names_paths_and_both_values() {
    let d = diff(
        &json!({"a": 1, "b": [1, 2], "c": "x"}),
        &json!({"a": 2, "b": [1, 3], "d": true}),
        10,
    );
    assert_eq!(
        d,
        vec![
            ".a: mem 1 / real 2",
            ".b[1]: mem 2 / real 3",
            ".c: mem \"x\" / real absent",
            ".d: mem absent / real true",
        ]
    );
    assert_eq!(diff(&json!([1]), &json!([1, 2]), 10).len(), 1);
    assert!(diff(&json!({"a": 1}), &json!({"a": 1}), 10).is_empty());
}

#[test]
fn statuses_compare_by_reason_and_causes_and_messages_apart() {
    let status = |reason: &str, field: &str, msg: &str| {
        json!({"kind": "Status", "status": "Failure", "reason": reason, "code": 422, "message": msg,
               "details": {"causes": [{"field": field, "reason": "FieldValueInvalid", "message": msg}]}})
    };
    let req = Req::get("/x");
    let mut c = Case::new("t", "t");
    assert!(c.check(
        &req,
        &resp(422, status("Invalid", "spec.a", "one")),
        &resp(422, status("Invalid", "spec.a", "two")),
        Cmp::Outcome
    ));
    assert_eq!(c.steps[0].verdict, Verdict::MessageDiffers);
    assert!(!c.check(
        &req,
        &resp(422, status("Invalid", "spec.a", "m")),
        &resp(422, status("Invalid", "spec.b", "m")),
        Cmp::Outcome
    ));
    assert!(!c.check(
        &req,
        &resp(201, json!({"kind": "X"})),
        &resp(422, status("Invalid", "spec.a", "m")),
        Cmp::Outcome
    ));
    assert!(!c.agrees());
    // The "rules not checked" cause on one side only is set aside, not a difference.
    let mut real = status("Invalid", "spec.a", "m");
    real["details"]["causes"]
        .as_array_mut()
        .expect("causes")
        .push(json!({"field": "<nil>", "reason": "FieldValueInvalid", "message": "some validation rules were not checked"}));
    let mut c = Case::new("t", "t");
    assert!(c.check(
        &req,
        &resp(422, status("Invalid", "spec.a", "m")),
        &resp(422, real.clone()),
        Cmp::Body
    ));
    assert_eq!(c.steps[0].set_aside, vec![4]);
    assert!(!c.check(
        &req,
        &resp(422, status("Invalid", "spec.a", "m")),
        &resp(422, real),
        Cmp::Full
    ));
}

#[test]
fn bodies_set_aside_pervasive_differences_unless_full() {
    let mem = json!({"kind": "ConfigMap", "metadata": {"name": "a", "generation": 1}});
    let real = json!({"kind": "ConfigMap", "metadata": {"name": "a", "managedFields": [{"manager": "unknown"}]}});
    let req = Req::get("/x");
    let mut c = Case::new("t", "t");
    assert!(c.check(
        &req,
        &resp(200, mem.clone()),
        &resp(200, real.clone()),
        Cmp::Body
    ));
    assert_eq!(c.steps[0].set_aside, vec![0, 1]);
    assert!(!c.check(&req, &resp(200, mem), &resp(200, real), Cmp::Full));
}

#[test]
fn generated_names_compare_equal() {
    let req = Req::post("/x", &json!({"metadata": {"generateName": "gen-"}}));
    let mut c = Case::new("t", "t");
    let body = |n: &str| json!({"kind": "ConfigMap", "metadata": {"name": n}});
    assert!(c.check(
        &req,
        &resp(201, body("gen-abcde")),
        &resp(201, body("gen-vwxyz")),
        Cmp::Body
    ));
}

#[test]
fn the_valid_object_meets_simple_constraints() {
    let schema = json!({"type": "object", "required": ["spec"], "properties": {
        "spec": {"type": "object", "required": ["n", "s", "e", "l", "p", "d"], "properties": {
            "n": {"type": "integer", "minimum": 5, "maximum": 9},
            "s": {"type": "string", "minLength": 3, "maxLength": 4},
            "e": {"type": "string", "enum": ["x", "y"]},
            "l": {"type": "array", "minItems": 2, "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "p": {"type": "string", "pattern": "^v[0-9]+$"},
            "d": {"type": "string", "format": "date-time"},
            "optional": {"type": "string"}}}}});
    let v = synth::valid(&schema, 0);
    let spec = &v["spec"];
    assert_eq!(spec["n"], 5);
    assert_eq!(spec["s"], "text");
    assert_eq!(spec["e"], "x");
    assert_eq!(spec["l"], json!(["text", "text1"]));
    assert_eq!(spec["p"], "v1");
    assert_eq!(spec["d"], "2024-05-06T07:08:09Z");
    assert!(spec.get("optional").is_none());
}

#[test]
fn each_mutation_breaks_its_constraint_and_leaves_the_rest() {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["n"], "properties": {
            "n": {"type": "integer", "maximum": 9},
            "deep": {"type": "object", "required": ["k"], "properties": {
                "k": {"type": "string"}, "e": {"type": "string", "enum": ["a"]}}}}}}});
    let base = synth::valid(&schema, 0);
    let all = synth::mutations(&schema);
    let find = |kind: &str, at: &str| {
        all.iter()
            .find(|m| m.kind == kind && m.at == at)
            .unwrap_or_else(|| panic!("no {kind} mutation at {at}"))
    };
    assert_eq!(find("maximum", ".spec.n").apply(&base)["spec"]["n"], 10);
    assert_eq!(
        find("type", ".spec.n").apply(&base)["spec"]["n"],
        "not-a-number"
    );
    assert!(find("required", ".spec").apply(&base)["spec"]
        .get("n")
        .is_none());
    // The base leaves the optional spec out; a mutation below it creates the objects on
    // its path, each valid (with its required properties).
    assert!(base.get("spec").is_none());
    let deep = find("enum", ".spec.deep.e").apply(&base);
    assert_eq!(
        deep["spec"],
        json!({"n": 1, "deep": {"k": "text", "e": "zz-not-listed"}})
    );
    // Round-robin: every kind present once before any twice.
    let picked = synth::pick(all.clone(), 4);
    let kinds: Vec<&str> = picked.iter().map(|m| m.kind).collect();
    assert_eq!(kinds, vec!["required", "type", "enum", "maximum"]);
}

#[test]
fn known_differences_round_trip() {
    let keys: std::collections::BTreeSet<String> = ["crud: a", "watch: b c"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let reasons: std::collections::BTreeMap<String, String> = [(
        "crud: a".to_owned(),
        "kube-apiserver answers 500".to_owned(),
    )]
    .into();
    let text = crate::report::render_known(&keys, &reasons);
    assert_eq!(crate::report::parse_known(&text), keys);
    // Why a case differs survives a rewrite of the list.
    assert_eq!(crate::report::known_reasons(&text), reasons);
    assert!(
        text.contains("crud: a # kube-apiserver answers 500\n"),
        "{text}"
    );
}
