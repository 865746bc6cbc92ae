//! Generated conversions on real multi-version CRDs: istio's Gateway, Sidecar and
//! RequestAuthentication from ../shared/crds, whose versions share one schema, generated
//! by tests/build.rs as if converted by a webhook (so every conversion is generated and
//! no `ManualConversion` exists). Property: for any object the spoke's schema admits
//! (drawn from the CRD's own `openAPIV3Schema`), spoke -> hub -> spoke is the identity,
//! typed and through each kind's `HubConverter`.

use std::fmt::Debug;

use kubegen_runtime::conversion::{ConversionError, HubConverter};
use kubegen_runtime::kube::Resource;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

mod istio {
    include!(concat!(env!("OUT_DIR"), "/istio_conversions.rs"));
}

use istio::apis::{networking, security};

fn word() -> BoxedStrategy<Value> {
    "[a-z][a-z0-9]{0,6}".prop_map(Value::from).boxed()
}

/// Any JSON, small (free-form fields).
fn any_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-9i64..9).prop_map(Value::from),
        word(),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            proptest::collection::btree_map("[a-z]{1,4}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// Values a structural schema admits, by type: every required property, each optional
/// one present or not (below `depth` 0 only the required ones), arrays and maps of up
/// to two items. Formats and enums are honoured; other validation (patterns, CEL,
/// oneOf) is not, since the Rust types do not check it either.
fn from_schema(schema: &Value, depth: i32) -> BoxedStrategy<Value> {
    let strategy = if schema["x-kubernetes-int-or-string"] == true {
        prop_oneof![(0i64..100).prop_map(Value::from), word()].boxed()
    } else {
        match schema["type"].as_str() {
            Some("object") => object(schema, depth),
            Some("array") => proptest::collection::vec(
                from_schema(&schema["items"], depth - 1),
                0..if depth > 0 { 3 } else { 1 },
            )
            .prop_map(Value::from)
            .boxed(),
            Some("string") => match (schema["enum"].as_array(), schema["format"].as_str()) {
                (Some(values), _) => proptest::sample::select(values.clone()).boxed(),
                (None, Some("date-time")) => Just(Value::from("2024-05-01T10:00:00Z")).boxed(),
                (None, Some("byte")) => Just(Value::from("aGk=")).boxed(),
                _ => word(),
            },
            Some("integer") if schema["format"] == "int32" => {
                any::<i32>().prop_map(Value::from).boxed()
            }
            Some("integer") => any::<i64>().prop_map(Value::from).boxed(),
            Some("number") => (-1000i64..1000).prop_map(Value::from).boxed(),
            Some("boolean") => any::<bool>().prop_map(Value::from).boxed(),
            _ => any_json(),
        }
    };
    if schema["nullable"] == true {
        prop_oneof![1 => Just(Value::Null), 4 => strategy].boxed()
    } else {
        strategy
    }
}

fn object(schema: &Value, depth: i32) -> BoxedStrategy<Value> {
    let Some(properties) = schema["properties"].as_object() else {
        return match schema.get("additionalProperties") {
            Some(items) if items.is_object() => proptest::collection::btree_map(
                "[a-z]{1,5}",
                from_schema(items, depth - 1),
                0..if depth > 0 { 3 } else { 1 },
            )
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed(),
            _ if schema["x-kubernetes-preserve-unknown-fields"] == true => any_json()
                .prop_map(|v| match v {
                    Value::Object(_) => v,
                    other => json!({ "value": other }),
                })
                .boxed(),
            _ => Just(json!({})).boxed(),
        };
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = properties
        .iter()
        .filter(|(name, _)| depth > 0 || required.contains(&name.as_str()))
        .map(|(name, property)| {
            let name = name.clone();
            let value = from_schema(property, depth - 1);
            if required.contains(&name.as_str()) {
                value.prop_map(move |v| Some((name.clone(), v))).boxed()
            } else {
                proptest::option::of(value.prop_map(move |v| (name.clone(), v))).boxed()
            }
        })
        .collect();
    fields
        .prop_map(|fields| Value::Object(fields.into_iter().flatten().collect::<Map<_, _>>()))
        .boxed()
}

/// The `openAPIV3Schema` of `version` in a shared CRD.
fn schema(file: &str, version: &str) -> Value {
    let path = format!("{}/../../shared/crds/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let crd: Value = serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    crd["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == version))
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
        .unwrap_or_else(|| panic!("{path} has no version {version}"))
}

/// Checks spoke `S` -> hub `H` -> `S` on `cases` objects drawn from `S`'s schema.
fn round_trips<S, H>(file: &str, converter: &HubConverter<H>, cases: u32)
where
    S: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + PartialEq + Debug,
    S: TryFrom<H, Error = ConversionError>,
    H: Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
    H: TryFrom<S, Error = ConversionError>,
{
    let (spoke, hub) = (
        S::api_version(&()).into_owned(),
        H::api_version(&()).into_owned(),
    );
    let version = spoke.rsplit('/').next().unwrap_or_default().to_owned();
    let root = schema(file, &version);
    let objects = (
        from_schema(&root["properties"]["spec"], 6),
        proptest::option::of(from_schema(&root["properties"]["status"], 2)),
    )
        .prop_map(move |(spec, status)| {
            let mut o = json!({
                "apiVersion": spoke,
                "kind": S::kind(&()),
                "metadata": {"name": "x", "namespace": "default"},
                "spec": spec,
            });
            if let Some(status) = status {
                o["status"] = status;
            }
            o
        });
    let mut runner = TestRunner::new(ProptestConfig::with_cases(cases));
    runner
        .run(&objects, |object| {
            let typed: S = serde_json::from_value(object.clone())
                .map_err(|e| TestCaseError::fail(format!("{e}: {object}")))?;
            let back = S::try_from(H::try_from(typed.clone()).unwrap()).unwrap();
            prop_assert_eq!(&back, &typed);
            let wire = serde_json::to_value(&typed).unwrap();
            let at_hub = converter.convert(&hub, wire.clone()).unwrap();
            prop_assert_eq!(&at_hub["apiVersion"], &Value::from(hub.clone()));
            let again = converter
                .convert(S::api_version(&()).as_ref(), at_hub)
                .unwrap();
            prop_assert_eq!(again, wire);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{file} {version}: {e}"));
}

#[test]
fn istio_gateway_spokes_round_trip_through_v1() {
    let file = "istio__gateways.networking.istio.io.yaml";
    let converter = networking::v1::conversion::gateway_converter();
    assert_eq!(converter.api_versions().count(), 3);
    round_trips::<networking::v1alpha3::Gateway, _>(file, &converter, 128);
    round_trips::<networking::v1beta1::Gateway, _>(file, &converter, 128);
}

#[test]
fn istio_sidecar_spokes_round_trip_through_v1() {
    let file = "istio__sidecars.networking.istio.io.yaml";
    let converter = networking::v1::conversion::sidecar_converter();
    assert_eq!(converter.api_versions().count(), 3);
    round_trips::<networking::v1alpha3::Sidecar, _>(file, &converter, 64);
    round_trips::<networking::v1beta1::Sidecar, _>(file, &converter, 64);
}

#[test]
fn istio_request_authentication_spoke_round_trips_through_v1() {
    let file = "istio__requestauthentications.security.istio.io.yaml";
    let converter = security::v1::conversion::request_authentication_converter();
    assert_eq!(converter.api_versions().count(), 2);
    round_trips::<security::v1beta1::RequestAuthentication, _>(file, &converter, 128);
}

/// No `ManualConversion` trait exists for these versions: every field was generated.
/// (A trait would have to be implemented for this file to compile; this names the
/// generated module so the claim is checked by the compiler and by the assertion.)
#[test]
fn every_istio_conversion_is_generated() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/istio_conversions.rs"));
    assert!(generated.contains("pub fn gateway_converter()"));
    assert!(!generated.contains("trait ManualConversion"));
}
