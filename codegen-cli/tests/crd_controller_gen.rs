//! `kubegen crd` writes what controller-gen writes for the same API, for the cases that
//! hack/controller-gen-compare.sh found different (that script needs Go; these run
//! everywhere): newtypes as Go's defined types, Schemaless with more markers,
//! controller-gen's literal defaults, element types' descriptions, sorted `required`,
//! versions by name, RawExtension, ByteString and the narrow integers.

use serde_json::{json, Value};

const V1: &str = r#"//! +groupName=example.com
use std::collections::BTreeMap;

/// A widget.
///
/// +genclient
/// +kubebuilder:storageversion
pub struct Widget {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: WidgetSpec,
}

/// The spec.
pub struct WidgetSpec {
    /// Widths.
    pub widths: BTreeMap<String, Width>,
    /// Any JSON.
    /// +kubebuilder:validation:Schemaless
    /// +kubebuilder:pruning:PreserveUnknownFields
    pub config: Option<serde_json::Value>,
    /// Letters.
    /// +kubebuilder:default={a, "b,c"}
    #[serde(default)]
    pub letters: Vec<String>,
    /// Sizes.
    /// +kubebuilder:default={}
    #[serde(default)]
    pub sizes: Vec<i32>,
    /// Where.
    /// +kubebuilder:default={node: n1, port: 80}
    pub place: Option<Place>,
    /// Ports.
    pub ports: Vec<Place>,
    pub zebra: String,
    pub apple: String,
    pub template: Option<RawExtension>,
    pub data: Option<ByteString>,
    pub tiny: Option<u8>,
    pub unsigned: Option<u32>,
}

/// A whole number of units.
///
/// +kubebuilder:validation:Minimum=0
pub struct Width(pub i64);

/// A place.
pub struct Place {
    pub port: Option<i32>,
    pub node: String,
}
"#;

const V1BETA1: &str = r#"//! +groupName=example.com
/// A widget.
///
/// +genclient
pub struct Widget {
    #[serde(default)]
    pub metadata: ObjectMeta,
}
"#;

fn crd() -> Value {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("v1.rs"), V1).unwrap();
    std::fs::write(dir.path().join("v1beta1.rs"), V1BETA1).unwrap();
    let crds = kubegen::crds(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(crds.len(), 1);
    crds[0].crd.clone()
}

#[test]
fn like_controller_gen() {
    let crd = crd();
    let names: Vec<&str> = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(names, ["v1", "v1beta1"], "versions by name");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let p = &spec["properties"];
    assert_eq!(
        p["widths"]["additionalProperties"],
        json!({"type": "integer", "format": "int64", "minimum": 0, "description": "A whole number of units."})
    );
    assert_eq!(
        p["config"],
        json!({"description": "Any JSON.", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(p["letters"]["default"], json!(["a", "b,c"]));
    assert_eq!(p["sizes"]["default"], json!([]));
    assert_eq!(p["place"]["default"], json!({"node": "n1", "port": 80}));
    assert_eq!(p["ports"]["items"]["description"], json!("A place."));
    assert_eq!(p["ports"]["items"]["required"], json!(["node"]));
    assert_eq!(
        spec["required"],
        json!(["apple", "ports", "widths", "zebra"])
    );
    assert_eq!(
        p["template"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(p["data"], json!({"type": "string", "format": "byte"}));
    assert_eq!(p["tiny"], json!({"type": "integer"}));
    assert_eq!(p["unsigned"], json!({"type": "integer", "format": "int32"}));
}
