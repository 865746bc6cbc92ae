//! `kubegen crd`: what the schema gets from Rust types and markers, and every error it
//! reports (file:line:col, the problem, the fix), with nothing written on error.

use std::path::Path;

use serde_json::{json, Value};

/// Writes `types` as `<dir>/example/v1.rs` (group `example.com`) and runs `kubegen crd`.
fn crds(types: &str) -> Result<Vec<kubegen::crdgen::CrdFile>, Vec<kubegen::Error>> {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("example");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("mod.rs"), "pub mod v1;\n").unwrap();
    std::fs::write(
        pkg.join("v1.rs"),
        format!("//! +groupName=example.com\n\n{types}"),
    )
    .unwrap();
    kubegen::crds(&[dir.path().to_path_buf()])
}

fn one_error(types: &str) -> kubegen::Error {
    let errors = crds(types).expect_err("an error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    errors.into_iter().next().unwrap()
}

const ROOT: &str = r#"
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A widget.
///
/// +genclient
/// +kubebuilder:subresource:status
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Widget {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: WidgetSpec,
}
"#;

fn spec(fields: &str) -> String {
    format!(
        "{ROOT}\n#[derive(serde::Serialize, serde::Deserialize)]\n#[serde(rename_all = \"camelCase\")]\npub struct WidgetSpec {{\n{fields}\n}}\n"
    )
}

fn schema_of(types: &str) -> Value {
    let crds = crds(types).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(crds.len(), 1);
    assert_eq!(crds[0].file_name, "example.com_widgets.yaml");
    crds[0]
        .crd
        .pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec")
        .cloned()
        .unwrap()
}

#[test]
fn types_serde_and_markers_make_the_schema() {
    let schema = schema_of(
        &(spec(
            r#"
    /// The size.
    ///
    /// +kubebuilder:validation:Minimum=1
    /// +kubebuilder:validation:Maximum=5
    pub size: i32,
    /// +kubebuilder:validation:items:Pattern=`^[a-z]+$`
    /// +listType=set
    #[serde(default)]
    pub tags: Vec<String>,
    pub port: Option<k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
    pub extra: Option<serde_json::Value>,
    #[serde(rename = "mode")]
    /// +kubebuilder:default="fast"
    pub speed: Option<Speed>,
    /// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() < 10)",message="short keys"
    pub labels: Option<std::collections::BTreeMap<String, String>>,
    "#,
        ) + r#"
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speed { Fast, Slow }
"#),
    );
    assert_eq!(
        schema["properties"]["size"],
        json!({"description": "The size.", "type": "integer", "format": "int32", "minimum": 1, "maximum": 5})
    );
    assert_eq!(
        schema["properties"]["tags"],
        json!({"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "x-kubernetes-list-type": "set"})
    );
    assert_eq!(
        schema["properties"]["port"]["x-kubernetes-int-or-string"],
        json!(true)
    );
    assert_eq!(
        schema["properties"]["extra"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        schema["properties"]["mode"],
        json!({"type": "string", "enum": ["fast", "slow"], "default": "fast"})
    );
    assert_eq!(
        schema["properties"]["labels"]["x-kubernetes-validations"],
        json!([{"rule": "self.all(k, k.size() < 10)", "message": "short keys"}])
    );
    assert_eq!(schema["required"], json!(["size"]));
}

#[test]
fn two_versions_need_one_storage_version() {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("example");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("mod.rs"), "pub mod v1;\npub mod v2;\n").unwrap();
    for v in ["v1", "v2"] {
        std::fs::write(
            pkg.join(format!("{v}.rs")),
            format!("//! +groupName=example.com\n{}", spec("pub size: i32,")),
        )
        .unwrap();
    }
    let errors = kubegen::crds(&[dir.path().to_path_buf()]).expect_err("no storage version");
    assert!(
        errors[0]
            .to_string()
            .contains("+kubebuilder:storageversion"),
        "{errors:?}"
    );
    let v2 = pkg.join("v2.rs");
    let text = std::fs::read_to_string(&v2).unwrap().replace(
        "/// +genclient\n",
        "/// +genclient\n/// +kubebuilder:storageversion\n",
    );
    std::fs::write(&v2, text).unwrap();
    let crds = kubegen::crds(&[dir.path().to_path_buf()]).unwrap_or_else(|e| panic!("{e:?}"));
    let versions = crds[0].crd.pointer("/spec/versions").unwrap();
    assert_eq!(
        versions[0]["name"], "v1",
        "by name, as controller-gen orders them"
    );
    assert_eq!(versions[0]["storage"], false);
    assert_eq!(versions[1]["name"], "v2");
    assert_eq!(versions[1]["storage"], true);
}

fn assert_error(e: &kubegen::Error, line: usize, problem: &str) {
    let text = e.to_string();
    assert!(
        e.file
            .as_deref()
            .is_some_and(|f| f.ends_with(Path::new("example/v1.rs"))),
        "{text}"
    );
    assert_eq!(e.line_col.map(|(l, _)| l), Some(line), "{text}");
    assert!(text.contains(problem), "{text}");
    assert!(!e.fix.is_empty(), "{text}");
}

/// The 1-based line of the file `crds(types)` writes that contains `needle`.
fn line_of(types: &str, needle: &str) -> usize {
    let text = format!("//! +groupName=example.com\n\n{types}");
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn unknown_marker_is_an_error() {
    let types = spec("    /// +kubebuilder:validation:Minimun=1\n    pub size: i32,");
    let e = one_error(&types);
    assert_error(&e, line_of(&types, "Minimun"), "unknown marker");
}

#[test]
fn malformed_value_is_an_error() {
    let types = spec("    /// +kubebuilder:validation:Maximum=ten\n    pub size: i32,");
    let e = one_error(&types);
    assert_error(&e, line_of(&types, "Maximum=ten"), "not a number");
}

#[test]
fn marker_on_a_field_of_the_wrong_type_is_an_error() {
    let types = spec("    /// +kubebuilder:validation:Pattern=`^a$`\n    pub size: i32,");
    let e = one_error(&types);
    assert_error(&e, line_of(&types, "Pattern"), "applies to string values");
}

#[test]
fn recursive_types_are_an_error() {
    let e = one_error(
        &(spec("    pub tree: Option<Node>,")
            + "\n#[derive(serde::Serialize, serde::Deserialize)]\npub struct Node {\n    pub children: Vec<Node>,\n}\n"),
    );
    assert!(e.to_string().contains("cannot recurse"), "{e}");
    assert!(e.line_col.is_some(), "{e}");
}

#[test]
fn object_meta_is_only_allowed_at_the_root() {
    let types = spec("    pub inner: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,");
    let e = one_error(&types);
    assert_error(&e, line_of(&types, "pub inner"), "only allowed as the root");
}

/// A name kube-apiserver would reject (a short name that is not a DNS-1035 label) is an
/// error at the Rust input, never a CRD the cluster (and kubegen's own CRD reader)
/// rejects. Found by fuzzing, fuzz/corpus/rust_reader/crd-invalid-short-name.
#[test]
fn names_kube_apiserver_rejects_are_errors() {
    let e = one_error(
        "#[derive(CustomResource)]\n#[kube(group = \"example.com\", version = \"v1\", kind = \"Doc\", shortname = \"\\u{10}doc\")]\npub struct DocSpec { pub a: i32 }\n",
    );
    assert!(e.file.is_some() && e.line_col.is_some(), "{e:?}");
    assert!(
        e.problem.starts_with(
            "the CRD for Doc.example.com would be invalid at spec.names.shortNames[0]: invalid name \"\\u{10}doc\""
        ),
        "{e:?}"
    );
    assert_eq!(e.fix, "write it lowercase, e.g. \"doc\"");
    let types = ROOT.replace(
        "/// +genclient\n",
        "/// +genclient\n/// +kubebuilder:resource:categories=All\n",
    ) + "\n#[derive(serde::Serialize, serde::Deserialize)]\npub struct WidgetSpec { pub a: i32 }\n";
    let e = one_error(&types);
    assert!(
        e.problem.contains("invalid at spec.names.categories[0]"),
        "{e:?}"
    );
}

/// kube-apiserver forbids every key on the root `metadata` schema but `type`
/// ("must not specify anything other than name and generateName"): the field's doc
/// comment does not become a description there, as controller-gen writes it.
#[test]
fn root_metadata_schema_is_only_its_type() {
    let types = ROOT.replace(
        "    #[serde(default)]\n    pub metadata",
        "    /// Standard object metadata.\n    #[serde(default)]\n    pub metadata",
    ) + "\n#[derive(serde::Serialize, serde::Deserialize)]\npub struct WidgetSpec { pub a: i32 }\n";
    assert!(types.contains("/// Standard object metadata."));
    let crds = crds(&types).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        crds[0]
            .crd
            .pointer("/spec/versions/0/schema/openAPIV3Schema/properties/metadata"),
        Some(&json!({"type": "object"}))
    );
}

/// kubectl reads YAML 1.1 (go-yaml v2), where an unquoted `on`, `off`, `y`, `n`, `yes`,
/// `no` (in any of their spellings) is a boolean: `kubegen crd` quotes such strings, as
/// values (an enum) and as mapping keys (a property named `y`), and leaves block scalars
/// (descriptions) alone.
#[test]
fn yaml11_booleans_are_quoted() {
    let types = spec(
        r#"
    /// on
    /// off
    ///
    /// +kubebuilder:validation:Enum=on;OFF;y;No;yes;n;maybe;1_000;0b101;"12"
    pub mode: String,
    pub y: i32,
    #[serde(rename = "On")]
    pub on: Option<bool>,
"#,
    );
    let crds = crds(&types).unwrap_or_else(|e| panic!("{e:?}"));
    let yaml = &crds[0].yaml;
    for quoted in [
        "- 'on'",
        "- 'OFF'",
        "- 'y'",
        "- 'No'",
        "- 'yes'",
        "- 'n'",
        "'y':",
        "'On':",
        "- '1_000'",
        "- '0b101'",
        "- '12'",
    ] {
        assert!(yaml.contains(quoted), "{quoted} in\n{yaml}");
    }
    assert!(yaml.contains("- maybe"), "{yaml}");
    assert!(
        yaml.contains("description: |-\n                  on\n                  off"),
        "block scalars untouched:\n{yaml}"
    );
    let back: Value = serde_yaml::from_str(yaml).unwrap();
    assert_eq!(back, crds[0].crd, "the quotes change no value");
    let mode = &crds[0].crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        ["spec"]["properties"]["mode"]["enum"];
    assert_eq!(
        mode,
        &json!(["on", "OFF", "y", "No", "yes", "n", "maybe", "1_000", "0b101", "12"])
    );
}
