use super::*;
use serde_json::json;

fn fmt(f: &str, v: Value) -> Option<(String, String)> {
    format(&v, &json!({"format": f}), "spec.x").map(|c| (c.field, c.reason))
}

#[test]
fn string_formats_kube_apiserver_checks() {
    let good = [
        ("date", "2024-02-29"),
        ("date-time", "2024-01-01T00:00:00Z"),
        ("date-time", "2024-01-01T00:00:00.123+02:00"),
        ("duration", "1h30m"),
        ("duration", "3d"),
        ("byte", "aGVsbG8="),
        ("ipv4", "10.0.0.1"),
        ("ipv6", "::1"),
        ("cidr", "10.0.0.0/8"),
        ("cidr", "fd00::/64"),
        ("mac", "00:1a:2b:3c:4d:5e"),
        ("mac", "001a.2b3c.4d5e"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
        ("uuid4", "123e4567-e89b-42d3-a456-426614174000"),
        ("email", "a@example.com"),
        ("uri", "https://example.com/x"),
        ("uri", "/abs/path"),
        ("hostname", "my-host.example.com"),
        ("password", "anything"),
        ("k8s-short-name", "anything"),
    ];
    for (f, x) in good {
        assert_eq!(fmt(f, json!(x)), None, "{f} {x}");
    }
    let bad = [
        ("date", "2024-02-30"),
        ("date-time", "x"),
        ("duration", "x"),
        ("byte", "x!"),
        ("ipv4", "::1"),
        ("ipv6", "1.2.3.4"),
        ("cidr", "10.0.0.0/33"),
        ("mac", "x"),
        ("uuid", "x"),
        ("uuid4", "123e4567-e89b-12d3-a456-426614174000"),
        ("email", "x"),
        ("uri", "x"),
        ("hostname", "-x-"),
    ];
    for (f, x) in bad {
        assert_eq!(
            fmt(f, json!(x)),
            Some(("spec.x".to_owned(), "FieldValueTypeInvalid".to_owned())),
            "{f} {x}"
        );
    }
}

#[test]
fn numbers_out_of_their_format_range_are_a_cause_without_a_field() {
    assert_eq!(fmt("int32", json!(2147483647)), None);
    let c = format(
        &json!(4294967296_i64),
        &json!({"format": "int32"}),
        "spec.x",
    )
    .unwrap();
    assert_eq!(
        (c.field.as_str(), c.reason.as_str()),
        ("<nil>", "FieldValueInvalid")
    );
    assert_eq!(
        c.message,
        "Invalid value: \"\": Checked value must be of type integer with format int32 in spec.x"
    );
    assert_eq!(
        fmt("int64", json!(u64::MAX)).map(|c| c.0),
        Some("<nil>".to_owned())
    );
    assert_eq!(
        fmt("float", json!(1e300)).map(|c| c.0),
        Some("<nil>".to_owned())
    );
    assert_eq!(fmt("double", json!(1e300)), None);
}

#[test]
fn set_and_map_duplicates_are_reported_at_their_first_repetition() {
    let mut causes = Vec::new();
    let set = json!({"x-kubernetes-list-type": "set"});
    list_type(
        &[json!("a"), json!("b"), json!("a"), json!("a")],
        &set,
        "spec.s",
        &mut causes,
    );
    let map =
        json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"]});
    let items = [
        json!({"name": "a", "port": 80}),
        json!({"name": "a", "port": 80, "x": 1}),
        json!({"name": "a"}),
        json!({}),
    ];
    list_type(&items, &map, "spec.m", &mut causes);
    list_type(&[json!({}), json!({})], &map, "spec.e", &mut causes);
    let got: Vec<(String, String)> = causes.into_iter().map(|c| (c.field, c.message)).collect();
    assert_eq!(
        got,
        vec![
            ("spec.s[2]".to_owned(), "Duplicate value: \"a\"".to_owned()),
            (
                "spec.m[1]".to_owned(),
                "Duplicate value: {\"name\":\"a\",\"port\":80}".to_owned()
            ),
            ("spec.e[1]".to_owned(), "Duplicate value: {}".to_owned()),
        ]
    );
}

#[test]
fn property_counts() {
    let s = json!({"maxProperties": 1, "minProperties": 1});
    let mut causes = Vec::new();
    property_count(2, &s, "spec.p", &mut causes);
    property_count(0, &s, "spec.p", &mut causes);
    property_count(1, &s, "spec.p", &mut causes);
    let got: Vec<(String, String)> = causes.into_iter().map(|c| (c.reason, c.message)).collect();
    assert_eq!(
        got,
        vec![
            (
                "FieldValueTooMany".to_owned(),
                "Too many: 2: must have at most 1 item".to_owned()
            ),
            (
                "FieldValueInvalid".to_owned(),
                "Invalid value: 0: spec.p in body should have at least 1 properties".to_owned()
            ),
        ]
    );
}

#[test]
fn composition_failures_are_causes_without_a_field() {
    let s = json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        "anyOf": [{"required": ["c"]}], "not": {"required": ["d"]}});
    let has = |v: &Value, b: &Value| {
        b["required"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| v.get(k.as_str().unwrap()).is_some())
    };
    let run = |v: Value| -> Vec<String> {
        let mut causes = Vec::new();
        composition(&s, "spec", |b| has(&v, b), &mut causes);
        assert!(causes.iter().all(|c| c.field == "<nil>"));
        causes.into_iter().map(|c| c.message).collect()
    };
    assert!(run(json!({"a": 1, "c": 1})).is_empty());
    assert_eq!(
        run(json!({"a": 1, "b": 1, "d": 1})),
        vec![
            "Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
            "Invalid value: \"\": \"spec\" must validate at least one schema (anyOf)",
            "Invalid value: \"\": \"spec\" must not validate the schema (not)",
        ]
    );
}
