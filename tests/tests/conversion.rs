//! Generated hub-and-spoke conversions (fixtures/crds/conversion.yaml, golden
//! `apis::convert`): spoke -> hub -> spoke is the identity for any object the spoke's
//! schema admits, typed (`TryFrom` both ways) and through the `HubConverter` that a
//! `ConversionReview` handler calls, and the renamed field goes through the crate's
//! hand-written `ManualConversion` (tests/src/lib.rs).

use kubegen_runtime::conversion::ConversionError;
use kubegen_tests::golden::apis::convert::{v1, v1beta1};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn word() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,8}"
}

/// An optional key: absent or set to a value from `value`.
fn maybe(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    proptest::option::of(value)
}

fn put(object: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        object.insert(key.to_owned(), v);
    }
}

/// A free-form JSON value (`x-kubernetes-preserve-unknown-fields`).
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        word().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(word(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn port() -> impl Strategy<Value = Value> {
    (
        word(),
        maybe(any::<i32>().prop_map(Value::from)),
        maybe(prop_oneof![Just("TCP"), Just("UDP"), Just("SCTP")].prop_map(Value::from)),
    )
        .prop_map(|(name, port, protocol)| {
            let mut o = Map::new();
            o.insert("name".into(), name.into());
            put(&mut o, "port", port);
            put(&mut o, "protocol", protocol);
            Value::Object(o)
        })
}

fn zone() -> impl Strategy<Value = Value> {
    (
        maybe(any::<i64>().prop_map(Value::from)),
        maybe(proptest::collection::vec(word(), 0..3).prop_map(Value::from)),
    )
        .prop_map(|(weight, tags)| {
            let mut o = Map::new();
            put(&mut o, "weight", weight);
            put(&mut o, "tags", tags);
            Value::Object(o)
        })
}

fn condition() -> impl Strategy<Value = Value> {
    (
        word(),
        prop_oneof![Just("True"), Just("False"), Just("Unknown")],
        word(),
        0i64..5,
    )
        .prop_map(|(type_, status, reason, generation)| {
            json!({
                "type": type_,
                "status": status,
                "lastTransitionTime": "2024-05-01T10:00:00Z",
                "reason": reason,
                "message": "",
                "observedGeneration": generation,
            })
        })
}

fn spec() -> impl Strategy<Value = Value> {
    (
        maybe(any::<i32>().prop_map(Value::from)),
        // `purple` is listed by v1beta1 only, `teal` by neither: both must survive the hub.
        prop_oneof![
            Just("red"),
            Just("green"),
            Just("blue"),
            Just("purple"),
            Just("teal")
        ],
        maybe(prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from)
        ]),
        maybe(proptest::collection::vec(port(), 0..3).prop_map(Value::from)),
        maybe(
            proptest::collection::btree_map(word(), zone(), 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ),
        maybe(any_json()),
        maybe(
            proptest::collection::btree_map(word(), word(), 0..3)
                .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k, v.into())).collect())),
        ),
    )
        .prop_map(|(size, color, level, ports, by_zone, extra, labels)| {
            let mut o = Map::new();
            put(&mut o, "size", size);
            o.insert("color".into(), color.into());
            put(&mut o, "level", level);
            put(&mut o, "ports", ports);
            put(&mut o, "byZone", by_zone);
            put(&mut o, "extra", extra);
            put(&mut o, "labels", labels);
            Value::Object(o)
        })
}

/// A `convert.example.com/v1beta1` `Shape` as JSON.
fn shape() -> impl Strategy<Value = Value> {
    (
        word(),
        maybe(spec()),
        maybe(
            (
                maybe((0i64..9).prop_map(Value::from)),
                maybe(proptest::collection::vec(condition(), 0..3).prop_map(Value::from)),
            )
                .prop_map(|(generation, conditions)| {
                    let mut o = Map::new();
                    put(&mut o, "observedGeneration", generation);
                    put(&mut o, "conditions", conditions);
                    Value::Object(o)
                }),
        ),
    )
        .prop_map(|(name, spec, status)| {
            let mut o = Map::new();
            o.insert("apiVersion".into(), "convert.example.com/v1beta1".into());
            o.insert("kind".into(), "Shape".into());
            o.insert(
                "metadata".into(),
                json!({"name": name, "namespace": "default", "labels": {"app": "x"}}),
            );
            put(&mut o, "spec", spec);
            put(&mut o, "status", status);
            Value::Object(o)
        })
}

fn round_trip(spoke: v1beta1::Shape) -> Result<v1beta1::Shape, ConversionError> {
    v1beta1::Shape::try_from(v1::Shape::try_from(spoke)?)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// spoke -> hub -> spoke is the identity, typed and on the wire (the wire form
    /// being the typed value's: serde reads a free-form `null` as absent, conversion or
    /// not).
    #[test]
    fn spoke_to_hub_to_spoke_is_identity(object in shape()) {
        let spoke: v1beta1::Shape = serde_json::from_value(object).unwrap();
        let back = round_trip(spoke.clone()).unwrap();
        prop_assert_eq!(&back, &spoke);
        let wire = serde_json::to_value(&spoke).unwrap();
        prop_assert_eq!(serde_json::to_value(&back).unwrap(), wire.clone());

        let converter = v1::conversion::shape_converter();
        let hub = converter.convert("convert.example.com/v1", wire.clone()).unwrap();
        prop_assert_eq!(&hub["apiVersion"], "convert.example.com/v1");
        let again = converter.convert("convert.example.com/v1beta1", hub).unwrap();
        prop_assert_eq!(again, wire);
    }
}

/// The renamed field: v1beta1 `spec.size` is v1 `spec.replicas`, through the crate's
/// `ManualConversion`; the others are copied, and a color only v1beta1 lists is kept
/// in v1's catch-all.
#[test]
fn renamed_field_goes_through_the_manual_conversion() {
    let converter = v1::conversion::shape_converter();
    let object = json!({
        "apiVersion": "convert.example.com/v1beta1",
        "kind": "Shape",
        "metadata": {"name": "a", "namespace": "default", "resourceVersion": "7"},
        "spec": {"size": 3, "color": "purple", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    });
    let hub = converter.convert("convert.example.com/v1", object).unwrap();
    assert_eq!(
        hub,
        json!({
            "apiVersion": "convert.example.com/v1",
            "kind": "Shape",
            "metadata": {"name": "a", "namespace": "default", "resourceVersion": "7"},
            "spec": {"replicas": 3, "color": "purple", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
        })
    );
    let typed: v1::Shape = serde_json::from_value(hub).unwrap();
    assert_eq!(
        typed.spec.unwrap().color,
        v1::ShapeSpecColor::Other("purple".to_owned())
    );
}

/// The converter names the versions it holds when asked for another, and an object
/// already at the desired version comes back unchanged.
#[test]
fn converter_errors_name_the_served_versions() {
    let converter = v1::conversion::shape_converter();
    assert_eq!(
        converter.api_versions().collect::<Vec<_>>(),
        ["convert.example.com/v1", "convert.example.com/v1beta1"]
    );
    let object = json!({"apiVersion": "convert.example.com/v1", "kind": "Shape", "metadata": {"name": "a"}, "spec": {"color": "red"}});
    assert_eq!(
        converter
            .convert("convert.example.com/v1", object.clone())
            .unwrap(),
        object
    );
    let err = converter
        .convert("convert.example.com/v2", object)
        .unwrap_err();
    assert_eq!(
        err.message(),
        "Shape is not served at convert.example.com/v2: this converter holds convert.example.com/v1, convert.example.com/v1beta1"
    );
    let bad = json!({"apiVersion": "convert.example.com/v1beta1", "kind": "Shape", "metadata": {"name": "a"}, "spec": {"size": "three", "color": "red"}});
    let err = converter
        .convert("convert.example.com/v1", bad)
        .unwrap_err();
    assert!(
        err.message()
            .starts_with("the object is not a valid convert.example.com/v1beta1 object:"),
        "{err}"
    );
}
