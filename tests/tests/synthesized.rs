//! Whole-object round trips: for every kind of the golden tree, an object holding every
//! property its schema declares (enums at their first value, maps and arrays with one
//! entry, preserve-unknown objects with an undeclared key) is synthesized from the CRD
//! and sent through the generated type: JSON in, typed value, JSON out, equal.

use std::path::PathBuf;

use kubegen::input::crd::schema::{AdditionalProperties, Schema};
use kubegen_tests::golden::apis;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// An object with every declared property of `s` set.
fn synthesize(s: &Schema, depth: usize) -> Value {
    if depth > 40 {
        return json!("deep");
    }
    if s.int_or_string {
        return json!(8080);
    }
    if let Some(first) = s.enum_values.iter().flatten().find(|v| !v.is_null()) {
        return first.clone();
    }
    let ty = match s.type_.as_deref() {
        Some(t) => t,
        None if !s.properties.is_empty() || s.additional_properties.is_some() => "object",
        None if s.items.is_some() => "array",
        None => return json!({"free": [1, "two", null]}),
    };
    match ty {
        "string" => match s.format.as_deref() {
            Some("date-time") => json!("2024-01-01T00:00:00Z"),
            Some("byte") => json!("aGk="),
            _ => json!("text"),
        },
        "integer" => json!(7),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "array" => match &s.items {
            Some(items) => json!([synthesize(items, depth + 1)]),
            None => json!([1, "a"]),
        },
        _ => {
            let mut out = Map::new();
            for (name, prop) in &s.properties {
                out.insert(name.clone(), synthesize(prop, depth + 1));
            }
            let preserve = s.preserve_unknown_fields == Some(true);
            let keeps_undeclared = preserve
                || matches!(
                    s.additional_properties,
                    Some(AdditionalProperties::Bool(true))
                );
            match &s.additional_properties {
                _ if !s.properties.is_empty() && keeps_undeclared => {
                    out.insert("zzUndeclared".into(), json!({"kept": [1]}));
                }
                _ if !s.properties.is_empty() => {}
                Some(AdditionalProperties::Schema(values)) => {
                    out.insert("key".into(), synthesize(values, depth + 1));
                }
                Some(AdditionalProperties::Bool(true)) => {
                    out.insert("key".into(), json!({"any": null}));
                }
                _ if preserve => {
                    out.insert("key".into(), json!([1, {"b": "c"}]));
                }
                _ => {}
            }
            Value::Object(out)
        }
    }
}

fn fixture(file: &str, version: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/crds")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let crds = kubegen::input::crd::parse_file(&path, &text).unwrap();
    assert_eq!(crds.len(), 1, "{file}: one CRD per file here");
    let crd = &crds[0];
    let v = crd.versions.iter().find(|v| v.name == version).unwrap();
    let mut object = synthesize(&v.schema, 0);
    object["apiVersion"] = json!(format!("{}/{}", crd.group, v.name));
    object["kind"] = json!(crd.names.kind);
    object["metadata"] = json!({"name": "n", "namespace": "ns", "labels": {"a": "b"}});
    object
}

fn check<T: DeserializeOwned + Serialize>(file: &str, version: &str) {
    let input = fixture(file, version);
    let typed: T =
        serde_json::from_value(input.clone()).unwrap_or_else(|e| panic!("{file} {version}: {e}"));
    let output = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        output, input,
        "{file} {version}: round trip changed the object"
    );
}

#[test]
fn fixtures_written_for_kubegen() {
    check::<apis::samplecontroller::v1alpha1::Foo>("samplecontroller.yaml", "v1alpha1");
    check::<apis::widgets::v1::ClusterWidget>("cluster.yaml", "v1");
    check::<apis::multi::v1::Gadget>("multiversion.yaml", "v1");
    check::<apis::multi::v2::Gadget>("multiversion.yaml", "v2");
    check::<apis::scaling::v1::ReplicaSet>("scale.yaml", "v1");
    check::<apis::constructs::v1::Everything>("constructs.yaml", "v1");
    check::<apis::docs::v1::Note>("docs.yaml", "v1");
}

#[test]
fn upstream_crds() {
    check::<apis::clusterctl::v1alpha3::Provider>(
        "upstream/cluster-api__providers.clusterctl.cluster.x-k8s.io.yaml",
        "v1alpha3",
    );
    check::<apis::apiextensions::v1beta1::EnvironmentConfig>(
        "upstream/crossplane__environmentconfigs.apiextensions.crossplane.io.yaml",
        "v1beta1",
    );
    check::<apis::source::v1::ExternalArtifact>(
        "upstream/fluxcd__externalartifacts.source.toolkit.fluxcd.io.yaml",
        "v1",
    );
    check::<apis::networking::v1beta1::ProxyConfig>(
        "upstream/istio__proxyconfigs.networking.istio.io.yaml",
        "v1beta1",
    );
    check::<apis::eventing::v1alpha1::CloudEventSource>(
        "upstream/keda__cloudeventsources.eventing.keda.sh.yaml",
        "v1alpha1",
    );
    check::<apis::velero::v1::DownloadRequest>(
        "upstream/velero__downloadrequests.velero.io.yaml",
        "v1",
    );
}
