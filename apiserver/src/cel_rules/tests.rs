use super::*;
use serde_json::json;

/// The (field, reason, message) of each cause `obj` gets under `schema`.
fn check(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<(String, String, String)> {
    let rules = CelRules::compile(Some(schema));
    assert!(!rules.is_empty(), "the schema has rules");
    let mut causes = Vec::new();
    rules.validate(schema, obj, old, &mut causes);
    causes
        .into_iter()
        .map(|c| (c.field, c.reason, c.message))
        .collect()
}

fn fields(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<String> {
    check(schema, obj, old).into_iter().map(|c| c.0).collect()
}

fn spec(props: Value, rules: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {
        "type": "object", "properties": props, "x-kubernetes-validations": rules}}})
}

#[test]
fn a_false_rule_is_an_invalid_cause_at_its_level_with_its_message() {
    let s = spec(
        json!({"min": {"type": "integer"}, "max": {"type": "integer"}}),
        json!([{"rule": "self.min <= self.max", "message": "min must not exceed max"}]),
    );
    assert!(check(&s, &json!({"spec": {"min": 1, "max": 2}}), None).is_empty());
    assert_eq!(
        check(&s, &json!({"spec": {"min": 3, "max": 2}}), None),
        vec![(
            "spec".to_owned(),
            "FieldValueInvalid".to_owned(),
            "Invalid value: \"object\": min must not exceed max".to_owned()
        )]
    );
}

#[test]
fn default_message_reason_field_path_and_message_expression() {
    let s = spec(
        json!({"a": {"type": "string"}, "b": {"type": "string"}}),
        json!([
            {"rule": "self.a == 'x'"},
            {"rule": "self.b == 'y'", "reason": "FieldValueForbidden", "fieldPath": ".b",
             "messageExpression": "'b is ' + self.b"}
        ]),
    );
    let got = check(&s, &json!({"spec": {"a": "z", "b": "w"}}), None);
    assert_eq!(
        got,
        vec![
            (
                "spec".to_owned(),
                "FieldValueInvalid".to_owned(),
                "Invalid value: \"object\": failed rule: self.a == 'x'".to_owned()
            ),
            (
                "spec.b".to_owned(),
                "FieldValueForbidden".to_owned(),
                "Forbidden: b is w".to_owned()
            ),
        ]
    );
}

#[test]
fn rules_on_list_items_and_map_values_name_the_item_and_the_key() {
    let s = spec(
        json!({
            "ports": {"type": "array", "items": {"type": "integer",
                "x-kubernetes-validations": [{"rule": "self > 0"}]}},
            "labels": {"type": "object", "additionalProperties": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.size() < 4"}]}}
        }),
        json!([]),
    );
    let obj = json!({"spec": {"ports": [1, 0, 2, -1], "labels": {"a": "ok", "b": "too long"}}});
    assert_eq!(
        fields(&s, &obj, None),
        vec!["spec.labels[b]", "spec.ports[1]", "spec.ports[3]"]
    );
}

#[test]
fn transition_rules_run_on_updates_only() {
    let s = spec(
        json!({"mode": {"type": "string"}}),
        json!([{"rule": "self.mode == oldSelf.mode", "message": "mode is immutable"}]),
    );
    let new = json!({"spec": {"mode": "b"}});
    assert!(check(&s, &new, None).is_empty(), "no oldSelf on create");
    let old = json!({"spec": {"mode": "a"}});
    assert_eq!(fields(&s, &new, Some(&old)), vec!["spec"]);
    assert!(check(&s, &old, Some(&old)).is_empty());
}

#[test]
fn optional_old_self_is_an_optional_on_create_too() {
    let s = spec(
        json!({"mode": {"type": "string"}}),
        json!([{"rule": "oldSelf.hasValue() || self.mode == 'initial'", "optionalOldSelf": true}]),
    );
    assert_eq!(
        fields(&s, &json!({"spec": {"mode": "b"}}), None),
        vec!["spec"]
    );
    assert!(check(&s, &json!({"spec": {"mode": "initial"}}), None).is_empty());
    let old = json!({"spec": {"mode": "initial"}});
    assert!(check(&s, &json!({"spec": {"mode": "b"}}), Some(&old)).is_empty());
}

#[test]
fn map_list_items_correlate_with_their_old_item_by_key() {
    let s = spec(
        json!({"items": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.size >= oldSelf.size", "message": "no shrinking"}]}}}),
        json!([]),
    );
    let old = json!({"spec": {"items": [{"name": "a", "size": 5}, {"name": "b", "size": 1}]}});
    // Reordered and "a" shrunk: the cause is at a's new index.
    let new = json!({"spec": {"items": [{"name": "b", "size": 2}, {"name": "a", "size": 4}]}});
    assert_eq!(fields(&s, &new, Some(&old)), vec!["spec.items[1]"]);
}

#[test]
fn an_unchanged_invalid_value_ratchets_on_update() {
    let s = spec(
        json!({"a": {"type": "integer"}, "b": {"type": "object", "properties": {"c": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.c < 10"}]}}),
        json!([]),
    );
    let old = json!({"spec": {"a": 1, "b": {"c": 50}}});
    let new = json!({"spec": {"a": 2, "b": {"c": 50}}});
    assert!(check(&s, &new, Some(&old)).is_empty());
    assert_eq!(fields(&s, &new, None), vec!["spec.b"]);
    let changed = json!({"spec": {"a": 2, "b": {"c": 60}}});
    assert_eq!(fields(&s, &changed, Some(&old)), vec!["spec.b"]);
}

#[test]
fn kubernetes_libraries_are_there() {
    let s = spec(
        json!({"name": {"type": "string"}, "url": {"type": "string"}, "ip": {"type": "string"},
            "mem": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}),
        json!([
            {"rule": "self.name.lowerAscii() == self.name"},
            {"rule": "isURL(self.url) && url(self.url).getScheme() == 'https'"},
            {"rule": "isIP(self.ip) && ip(self.ip).family() == 4"},
            {"rule": "quantity(self.mem).isLessThan(quantity('1Gi'))"},
            {"rule": "self.name.matches('^[a-z]+$')"},
            {"rule": "sets.contains(['a', 'b', 'c'], self.tags)"},
            {"rule": "self.tags.isSorted()"}
        ]),
    );
    let good = json!({"spec": {"name": "abc", "url": "https://x.io/a", "ip": "10.0.0.1",
        "mem": "512Mi", "tags": ["a", "b"]}});
    assert!(
        check(&s, &good, None).is_empty(),
        "{:?}",
        check(&s, &good, None)
    );
    let bad = json!({"spec": {"name": "Abc", "url": "http://x.io", "ip": "::1",
        "mem": "2Gi", "tags": ["c", "a"]}});
    assert_eq!(check(&s, &bad, None).len(), 6);
}

#[test]
fn values_convert_as_kube_apiserver_converts_them() {
    let s = spec(
        json!({
            "max-size": {"type": "integer"},
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "timeout": {"type": "string", "format": "duration"},
            "ratio": {"type": "number"}
        }),
        json!([
            {"rule": "self.max__dash__size == 3"},
            {"rule": "self.end > self.start"},
            {"rule": "self.timeout < duration('1h')"},
            {"rule": "self.ratio == 2.0"}
        ]),
    );
    let obj = json!({"spec": {"max-size": 3, "start": "2024-01-01T00:00:00Z",
        "end": "2024-01-02T00:00:00Z", "timeout": "1m30s", "ratio": 2}});
    assert!(
        check(&s, &obj, None).is_empty(),
        "{:?}",
        check(&s, &obj, None)
    );
    let root = json!({"type": "object", "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('a') && !has(self.metadata.labels)"}]});
    let named = |n: &str| json!({"metadata": {"name": n, "labels": {"x": "y"}}});
    assert!(check(&root, &named("abc"), None).is_empty());
    assert_eq!(fields(&root, &named("xyz"), None), vec![""]);
}

#[test]
fn an_absent_field_a_rule_reads_is_a_cause() {
    let s = spec(
        json!({"a": {"type": "integer"}}),
        json!([{"rule": "self.a > 0"}]),
    );
    let got = check(&s, &json!({"spec": {}}), None);
    assert_eq!(got.len(), 1);
    assert!(got[0].2.contains("no such key: a"), "{got:?}");
}

#[test]
fn a_schema_without_rules_compiles_to_nothing() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
    assert!(CelRules::compile(Some(&s)).is_empty());
    assert!(CelRules::compile(None).is_empty());
}

#[test]
fn go_durations() {
    assert_eq!(go_duration("1h30m"), Some(chrono::Duration::minutes(90)));
    assert_eq!(
        go_duration("-1.5s"),
        Some(chrono::Duration::milliseconds(-1500))
    );
    assert_eq!(
        go_duration("300ms"),
        Some(chrono::Duration::milliseconds(300))
    );
    assert_eq!(go_duration("0"), Some(chrono::Duration::zero()));
    assert_eq!(go_duration("1x"), None);
    assert_eq!(go_duration(""), None);
}

#[test]
fn an_evaluation_error_fails_the_rule_with_the_error() {
    let s = spec(
        json!({"ports": {"type": "object", "additionalProperties": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(k, int(k) > 0)", "message": "ports are numbers"}]}}),
        json!([]),
    );
    assert!(check(&s, &json!({"spec": {"ports": {"80": "http"}}}), None).is_empty());
    let got = check(&s, &json!({"spec": {"ports": {"k0": "x"}}}), None);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "spec.ports");
    assert!(
        got[0].2.ends_with("evaluating rule: ports are numbers"),
        "{got:?}"
    );
}
