//! Wire fidelity of generated types: JSON in -> typed value -> JSON out is the same JSON,
//! construct by construct (fixtures/crds -> fixtures/golden, mounted as
//! `kubegen_tests::golden`). Null and absent stay apart everywhere: a nullable field
//! sent as `null` comes back `null`.

use kubegen_runtime::types::Nullable;
use kubegen_tests::golden::apis;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use apis::constructs::v1::{
    Everything, EverythingSpec, EverythingSpecMode, EverythingSpecOperator, EverythingSpecProtocols,
};

fn round_trip<T: DeserializeOwned + Serialize>(input: &Value) -> (T, Value) {
    let typed: T = serde_json::from_value(input.clone()).unwrap();
    let output = serde_json::to_value(&typed).unwrap();
    (typed, output)
}

fn assert_round_trip<T: DeserializeOwned + Serialize>(input: Value) -> T {
    let (typed, output) = round_trip::<T>(&input);
    assert_eq!(output, input, "round trip changed the JSON");
    typed
}

/// An `Everything` whose spec holds the required fields plus `extra`.
fn everything(extra: Value) -> Value {
    let mut spec = json!({"name": "n", "count": 1});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({
        "apiVersion": "constructs.example.com/v1",
        "kind": "Everything",
        "metadata": {"name": "e", "namespace": "default", "resourceVersion": "7"},
        "spec": spec,
    })
}

fn spec_of(input: Value) -> EverythingSpec {
    assert_round_trip::<Everything>(everything(input))
        .spec
        .unwrap()
}

#[test]
fn sample_controller_foo_and_its_list() {
    use apis::samplecontroller::v1alpha1::{Foo, FooList};
    let foo = json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {"name": "example-foo", "namespace": "default", "uid": "u1", "resourceVersion": "42"},
        "spec": {"deploymentName": "example-foo", "replicas": 1},
        "status": {"availableReplicas": 1},
    });
    let typed: Foo = assert_round_trip(foo.clone());
    assert_eq!(typed.spec.as_ref().unwrap().replicas, Some(1));
    assert_eq!(typed.metadata.name.as_deref(), Some("example-foo"));
    let list = json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "FooList",
        "metadata": {"resourceVersion": "43"},
        "items": [foo],
    });
    let typed: FooList = assert_round_trip(list);
    assert_eq!(typed.items.len(), 1);
}

#[test]
fn absent_fields_stay_absent() {
    use apis::samplecontroller::v1alpha1::Foo;
    assert_round_trip::<Foo>(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {"name": "bare"},
        "spec": {},
    }));
}

#[test]
fn api_version_and_kind_are_written_even_when_built_in_code() {
    use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
    let foo = Foo {
        spec: Some(FooSpec {
            deployment_name: Some("d".to_owned()),
            replicas: Some(2),
        }),
        ..Foo::default()
    };
    let json = serde_json::to_value(&foo).unwrap();
    assert_eq!(json["apiVersion"], "samplecontroller.k8s.io/v1alpha1");
    assert_eq!(json["kind"], "Foo");
    assert_eq!(json["spec"], json!({"deploymentName": "d", "replicas": 2}));
}

#[test]
fn integer_and_number_formats_keep_their_text() {
    let spec = spec_of(json!({
        "small": -2147483648i64, "big": 9007199254740993i64, "count": 5,
        "ratio": 1, "weight": 2.5, "enabled": false, "payload": "aGVsbG8=", "day": "2024-02-29",
    }));
    assert_eq!(spec.small, Some(i32::MIN));
    assert_eq!(spec.big, Some(9007199254740993));
    assert_eq!(spec.ratio.unwrap().to_string(), "1");
    let (_, out) = round_trip::<Everything>(&everything(json!({"ratio": 1.0})));
    assert_eq!(serde_json::to_string(&out["spec"]["ratio"]).unwrap(), "1.0");
}

#[test]
fn date_times_keep_fractions_and_offsets() {
    let spec = spec_of(json!({"startTime": "2024-05-01T10:00:00.123456+02:00"}));
    let t = spec.start_time.unwrap();
    assert_eq!(t.as_str(), "2024-05-01T10:00:00.123456+02:00");
    assert_eq!(
        t.timestamp().unwrap().to_string(),
        "2024-05-01T08:00:00.123456Z"
    );
}

#[test]
fn int_or_string_both_ways_also_as_map_values() {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    assert_eq!(
        spec_of(json!({"port": 8080})).port,
        Some(IntOrString::Int(8080))
    );
    assert_eq!(
        spec_of(json!({"port": "http"})).port,
        Some(IntOrString::String("http".into()))
    );
    spec_of(json!({"limits": {"cpu": "500m", "pods": 10}}));
}

#[test]
fn string_enums_keep_unknown_values() {
    let spec = spec_of(json!({"mode": "Turbo"}));
    assert_eq!(
        spec.mode,
        Some(EverythingSpecMode::Unlisted("Turbo".into()))
    );
    // A listed value literally named "Other" keeps its own variant.
    assert_eq!(
        spec_of(json!({"mode": "Other"})).mode,
        Some(EverythingSpecMode::Other)
    );
    assert_eq!(
        spec_of(json!({"mode": "Slow"})).mode,
        Some(EverythingSpecMode::Slow)
    );
}

#[test]
fn odd_enum_values_get_meaningful_variants() {
    let cases = [
        ("", EverythingSpecOperator::Empty),
        ("!=", EverythingSpecOperator::NotEquals),
        ("=~", EverythingSpecOperator::EqualsTilde),
        ("In", EverythingSpecOperator::In),
        ("in", EverythingSpecOperator::InLower),
        ("IN", EverythingSpecOperator::InUpper),
        ("-", EverythingSpecOperator::Dash),
        ("1.0", EverythingSpecOperator::V1Dot0),
    ];
    for (value, variant) in cases {
        let spec = spec_of(json!({ "operator": value }));
        assert_eq!(spec.operator.as_ref(), Some(&variant), "{value:?}");
        assert_eq!(variant.as_str(), value);
    }
}

#[test]
fn enums_in_array_items_and_map_values_keep_unknown_values() {
    let spec = spec_of(json!({
        "protocols": ["TCP", "SCTP"],
        "protocolByPort": {"80": "UDP", "81": "QUIC"},
    }));
    assert_eq!(
        spec.protocols.unwrap(),
        [
            EverythingSpecProtocols::Tcp,
            EverythingSpecProtocols::Other("SCTP".into())
        ]
    );
}

#[test]
fn nullable_enums_in_array_items_and_map_values_keep_nulls() {
    use apis::constructs::v1::EverythingSpecMaybeList;
    let spec = spec_of(json!({
        "maybeList": ["A", null, "Z"],
        "maybeByName": {"x": "B", "y": null, "z": "Q"},
    }));
    assert_eq!(
        spec.maybe_list.unwrap(),
        [
            Some(EverythingSpecMaybeList::A),
            None,
            Some(EverythingSpecMaybeList::Other("Z".into()))
        ]
    );
    assert_eq!(spec.maybe_by_name.unwrap()["y"], None);
}

#[test]
fn non_string_enums_keep_their_scalar_values() {
    spec_of(json!({"level": 2, "factor": 1.5, "flag": true}));
    // Values outside the list still round-trip (a newer server may send them).
    spec_of(json!({"level": 9, "factor": 0.25, "flag": false}));
}

#[test]
fn nullable_enum_keeps_an_explicit_null() {
    let typed: Everything = assert_round_trip(everything(json!({"maybe": null})));
    assert_eq!(typed.spec.unwrap().maybe, Nullable::Null);
    let typed: Everything = assert_round_trip(everything(json!({})));
    assert_eq!(typed.spec.unwrap().maybe, Nullable::Absent);
    spec_of(json!({"maybe": "Perhaps"}));
}

#[test]
fn maps_and_free_form_values() {
    spec_of(json!({
        "labels": {"app": "x", "": "empty key"},
        "anything": {"a": {"b": [1, "x", null, 2.5]}, "n": null},
    }));
}

#[test]
fn nullable_fields_items_and_map_values() {
    let typed: Everything = assert_round_trip(everything(json!({"nickname": null})));
    assert!(typed.spec.unwrap().nickname.is_null());
    let spec =
        spec_of(json!({"optionalItems": ["a", null, "b"], "optionalValues": {"a": 1, "b": null}}));
    assert_eq!(
        spec.optional_items.unwrap(),
        [Some("a".to_owned()), None, Some("b".to_owned())]
    );
}

/// kube-apiserver keeps an explicit `null` on a nullable field; a merge patch reads it as
/// "delete", and a required nullable field written back absent is rejected: each of
/// absent, null and a value comes back as it was sent.
#[test]
fn explicit_nulls_round_trip_on_every_nullable_field() {
    let nulls = json!({
        "maybe": null, "nickname": null, "owner": null, "tier": null, "note": null,
    });
    let typed: Everything = assert_round_trip(everything(nulls.clone()));
    let spec = typed.spec.as_ref().unwrap();
    assert!(spec.owner.is_null() && spec.tier.is_null() && spec.note.is_null());
    let values = json!({
        "maybe": "Yes", "nickname": "n", "owner": "o", "tier": "silver",
        "note": {"text": "t", "retries": 1},
    });
    let _: Everything = assert_round_trip(everything(values));
    // Mixed with absent keys, and through clone_from into a value holding other states.
    let typed: Everything = assert_round_trip(everything(json!({"owner": null, "tier": "x"})));
    let mut target: Everything = serde_json::from_value(everything(nulls)).unwrap();
    target.clone_from(&typed);
    assert_eq!(target, typed);
    assert_eq!(
        serde_json::to_value(&target).unwrap(),
        everything(json!({"owner": null, "tier": "x"}))
    );
}

#[test]
fn a_required_nullable_field_is_written_back_null_not_dropped() {
    let typed: Everything = assert_round_trip(everything(json!({"owner": null})));
    assert_eq!(typed.spec.as_ref().unwrap().owner, Nullable::Null);
    let written = serde_json::to_value(&typed).unwrap();
    assert_eq!(written["spec"]["owner"], Value::Null);
    assert!(written["spec"].as_object().unwrap().contains_key("owner"));
}

#[test]
fn defaults_fill_absent_nullable_fields_and_keep_explicit_nulls() {
    let mut e: Everything = serde_json::from_value(everything(json!({}))).unwrap();
    e.apply_defaults();
    assert_eq!(
        e.spec.as_ref().unwrap().tier,
        Nullable::Value("gold".to_owned())
    );
    let mut e: Everything =
        serde_json::from_value(everything(json!({"tier": null, "note": null}))).unwrap();
    e.apply_defaults();
    let spec = e.spec.as_ref().unwrap();
    assert!(
        spec.tier.is_null() && spec.note.is_null(),
        "null stays null"
    );
    // Defaults apply inside a nullable object that holds a value.
    let mut e: Everything = serde_json::from_value(everything(json!({"note": {}}))).unwrap();
    e.apply_defaults();
    let note = e.spec.as_ref().unwrap().note.as_ref().unwrap();
    assert_eq!(note.retries, Some(2));
}

#[test]
fn arrays_without_items_and_arrays_of_arrays() {
    spec_of(json!({"untypedItems": [1, "a", {"x": [true]}, null], "matrix": [[1, 2], [], [3]]}));
}

#[test]
fn untyped_properties_and_differently_typed_any_of() {
    spec_of(json!({"untyped": {"deep": [1, {"x": null}]}, "intOrList": 3}));
    spec_of(json!({"untyped": "text", "intOrList": ["a", "b"]}));
    spec_of(json!({"choice": {"a": "x"}}));
}

#[test]
fn preserve_unknown_fields_keeps_undeclared_properties() {
    let spec = spec_of(
        json!({"extensible": {"known": "k", "extra": {"x": 1}, "more": [1, "2"], "nil": null}}),
    );
    let ext = spec.extensible.unwrap();
    assert_eq!(ext.known.as_deref(), Some("k"));
    assert_eq!(ext.additional_properties["extra"], json!({"x": 1}));
}

#[test]
fn embedded_resources() {
    spec_of(json!({
        "raw": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": {"a": "b"}}, "data": {"k": "v"}},
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    }));
}

#[test]
fn defaults_are_not_injected_but_applied_on_request() {
    let mut e: Everything = assert_round_trip(everything(json!({})));
    let spec = e.spec.as_ref().unwrap();
    assert_eq!(
        (spec.retries, &spec.mode, &spec.policy),
        (None, &None, &None)
    );
    e.apply_defaults();
    let spec = e.spec.as_ref().unwrap();
    assert_eq!(spec.retries, Some(3));
    assert_eq!(spec.mode, Some(EverythingSpecMode::Fast));
    let policy = spec.policy.as_ref().unwrap();
    assert_eq!(policy.action.as_deref(), Some("Retry"));
    assert_eq!(
        policy.backoff.as_deref(),
        Some("10s"),
        "defaults apply inside defaulted objects"
    );
    // Present values are never changed.
    let mut e: Everything =
        serde_json::from_value(everything(json!({"retries": 0, "mode": "Slow"}))).unwrap();
    e.apply_defaults();
    assert_eq!(e.spec.as_ref().unwrap().retries, Some(0));
    assert_eq!(
        e.spec.as_ref().unwrap().mode,
        Some(EverythingSpecMode::Slow)
    );
}

#[test]
fn keyword_and_colliding_names_keep_exact_json_keys() {
    let spec = spec_of(json!({
        "type": "t", "self": "s", "$ref": "r", "1st": "f",
        "fooBar": "camel", "foo_bar": "snake", "FooBar": "pascal",
    }));
    assert_eq!(spec.type_.as_deref(), Some("t"));
    assert_eq!(spec.self_.as_deref(), Some("s"));
    assert_eq!(spec.ref_.as_deref(), Some("r"));
    assert_eq!(spec.f_1st.as_deref(), Some("f"));
    assert_eq!(
        (
            spec.foo_bar.as_deref(),
            spec.foo_bar_2.as_deref(),
            spec.foo_bar_3.as_deref()
        ),
        (Some("camel"), Some("snake"), Some("pascal"))
    );
}

#[test]
fn spec_status_and_root_status_are_distinct_types() {
    let mut input = everything(json!({"status": {"phase": "inner"}}));
    input["status"] = json!({"phase": "outer"});
    let e: Everything = assert_round_trip(input);
    let inner: apis::constructs::v1::EverythingSpecStatus = e.spec.unwrap().status.unwrap();
    let outer: apis::constructs::v1::EverythingStatus = e.status.unwrap();
    assert_eq!(
        (inner.phase.as_deref(), outer.phase.as_deref()),
        (Some("inner"), Some("outer"))
    );
}

#[test]
fn structurally_identical_types_are_emitted_once() {
    let spec = spec_of(json!({"primary": {"host": "a", "port": 1}, "secondary": {"host": "b"}}));
    let both: [apis::constructs::v1::EverythingSpecPrimary; 2] =
        [spec.primary.unwrap(), spec.secondary.unwrap()];
    assert_eq!(both[1].host.as_deref(), Some("b"));
}

#[test]
fn exact_condition_schemas_map_to_the_runtime_condition_others_keep_all_fields() {
    let mut input = everything(json!({}));
    input["status"] = json!({
        "conditions": [{"type": "Ready", "status": "True", "reason": "Ok", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 3}],
        "clusterConditions": [{"type": "Ready", "status": "False", "severity": "Warning", "lastProbeTime": "2024-01-01T00:00:00.5Z", "lastTransitionTime": "2024-01-01T00:00:00+01:00"}],
    });
    let e: Everything = assert_round_trip(input);
    let status = e.status.unwrap();
    let c: &kubegen_runtime::types::Condition = &status.conditions.as_ref().unwrap()[0];
    assert_eq!(c.type_, "Ready");
    assert_eq!(c.observed_generation, Some(3));
    assert_eq!(
        status.cluster_conditions.unwrap()[0].severity.as_deref(),
        Some("Warning")
    );
}

#[test]
fn condition_last_transition_time_keeps_fractions_and_offsets_byte_exact() {
    // k8s-openapi's Condition would write these back as `...T23:00:00Z` and lose the
    // fraction; the generated field (the runtime's Condition) writes the wire text back.
    let times = [
        "2024-01-01T00:00:00.5+01:00",
        "2024-01-01T00:00:00.123456789-07:30",
        "2024-01-01T00:00:00.500Z",
    ];
    let items: Vec<String> = times
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let generation = if i == 1 { String::new() } else { format!(r#""observedGeneration":{i},"#) };
            format!(
                r#"{{"lastTransitionTime":"{t}","message":"m{i}",{generation}"reason":"R","status":"True","type":"T{i}"}}"#
            )
        })
        .collect();
    let conditions = format!("[{}]", items.join(","));
    let wire = format!(
        r#"{{"apiVersion":"constructs.example.com/v1","kind":"Everything","metadata":{{"name":"e"}},"spec":{{"name":"n","count":1}},"status":{{"conditions":{conditions}}}}}"#
    );
    let e: Everything = serde_json::from_str(&wire).unwrap();
    let status = e.status.as_ref().unwrap();
    let typed = status.conditions.as_ref().unwrap();
    assert_eq!(
        typed
            .iter()
            .map(|c| c.last_transition_time.as_str())
            .collect::<Vec<_>>(),
        times
    );
    assert_eq!(serde_json::to_string(typed).unwrap(), conditions);
    let out = serde_json::to_string(&e).unwrap();
    assert!(out.contains(&conditions), "{out}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        serde_json::from_str::<Value>(&wire).unwrap()
    );
}

#[test]
fn root_fields_beside_spec_and_map_shaped_status() {
    use apis::roots::v1::Setting;
    let s: Setting = assert_round_trip(json!({
        "apiVersion": "roots.example.com/v1", "kind": "Setting", "metadata": {"name": "s"},
        "data": {"a": "1"}, "immutable": true, "type": "Opaque",
        "status": {"node-a": {"ready": true}, "node-b": {}},
    }));
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    assert_eq!(s.status.unwrap().len(), 2);
}

#[test]
fn free_form_root_keeps_everything() {
    use apis::roots::v1::Blob;
    let b: Blob = assert_round_trip(json!({
        "apiVersion": "roots.example.com/v1", "kind": "Blob", "metadata": {"name": "b"},
        "spec": {"anything": [1, 2]}, "data": "x", "status": {"free": {"form": true}},
    }));
    assert_eq!(b.additional_properties["data"], "x");
}

#[test]
fn documented_descriptions_compile_into_types() {
    use apis::docs::v1::Note;
    assert_round_trip::<Note>(json!({
        "apiVersion": "docs.example.com/v1", "kind": "Note", "metadata": {"name": "n"},
        "spec": {"text": "hi"},
    }));
}

#[test]
fn upstream_flux_external_artifact_with_meta_v1_conditions() {
    use apis::source::v1::ExternalArtifact;
    let a: ExternalArtifact = assert_round_trip(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "ExternalArtifact",
        "metadata": {"name": "a", "namespace": "flux-system", "generation": 2},
        "spec": {"sourceRef": {"apiVersion": "source.extensions.fluxcd.io/v1alpha1", "kind": "Source", "name": "s"}},
        "status": {
            "artifact": {
                "digest": "sha256:abc", "lastUpdateTime": "2025-01-02T03:04:05.678901234Z",
                "path": "p", "revision": "main@sha1:1", "url": "http://x/p.tar.gz", "size": 10,
                "metadata": {"k": "v"},
            },
            "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "", "lastTransitionTime": "2025-01-02T03:04:05Z", "observedGeneration": 2}],
        },
    }));
    let artifact = a.status.unwrap().artifact.unwrap();
    assert_eq!(
        artifact.last_update_time.as_str(),
        "2025-01-02T03:04:05.678901234Z"
    );
}

#[test]
fn upstream_istio_proxy_config_nullable_and_enums() {
    use apis::networking::v1beta1::ProxyConfig;
    assert_round_trip::<ProxyConfig>(json!({
        "apiVersion": "networking.istio.io/v1beta1", "kind": "ProxyConfig",
        "metadata": {"name": "p", "namespace": "istio-system"},
        "spec": {"concurrency": 0, "environmentVariables": {"A": "1"}, "image": {"imageType": "distroless"}, "selector": {"matchLabels": {"app": "x"}}},
        "status": {"validationMessages": [{"level": "WARNING", "type": {"code": "IST0001", "name": "x"}, "documentationUrl": "https://istio.io"}], "observedGeneration": "3"},
    }));
}

/// Kinds that are not UpperCamelCase Rust names get warning-free type names (the golden
/// tree is built under `-D warnings`) and keep their wire kind.
#[test]
fn kinds_named_postgresql_and_self_keep_their_wire_names() {
    use apis::names::v1::{Postgresql, SelfKind, SelfKindSpecPhase};
    use k8s_openapi::Resource;
    assert_eq!(Postgresql::KIND, "postgresql");
    assert_eq!(SelfKind::KIND, "Self");
    let pg: Postgresql = assert_round_trip(json!({
        "apiVersion": "names.example.com/v1", "kind": "postgresql",
        "metadata": {"name": "db"}, "spec": {"teamId": "acid", "numberOfInstances": 2},
    }));
    assert_eq!(pg.spec.unwrap().team_id.as_deref(), Some("acid"));
    // `Self` as an enum value is the variant `SelfValue`; a required enum has no default,
    // so `SelfKind` is built with its phase named.
    let s: SelfKind = assert_round_trip(json!({
        "apiVersion": "names.example.com/v1", "kind": "Self",
        "metadata": {"name": "me"}, "spec": {"phase": "Self"},
    }));
    assert_eq!(s.spec.phase, SelfKindSpecPhase::SelfValue);
}
