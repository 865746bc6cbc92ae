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

#[test]
fn required_and_optional_in_every_spelling() {
    // controller-gen's current spelling, the deprecated kubebuilder one, and Kubernetes'
    // declarative-validation one: one registry entry each, one effect.
    let s = schema_of(&spec(
        "    /// +optional\n    pub a: String,\n    /// +kubebuilder:validation:Optional\n    pub b: String,\n    /// +k8s:optional\n    pub c: String,\n    /// +required\n    pub d: Option<String>,\n    /// +k8s:required\n    pub e: Option<String>,\n    /// +kubebuilder:validation:Required\n    pub f: Option<String>,",
    ));
    assert_eq!(s["required"], json!(["d", "e", "f"]), "{s}");
}

#[test]
fn immutable_fields_get_controller_gen_rules() {
    // `self == oldSelf` on the field; an optional field also gets the parent's rule that
    // keeps it set once set (its own rule does not run once it is gone).
    let s = schema_of(&spec(
        "    /// +k8s:immutable\n    pub name: String,\n    /// +k8s:immutable\n    pub class_name: Option<String>,",
    ));
    let rule = json!([{"message": "field is immutable", "rule": "self == oldSelf"}]);
    assert_eq!(s["properties"]["name"]["x-kubernetes-validations"], rule);
    assert_eq!(
        s["properties"]["className"]["x-kubernetes-validations"],
        rule
    );
    assert_eq!(
        s["x-kubernetes-validations"],
        json!([{"message": "field className is immutable once set", "rule": "!has(oldSelf.className) || has(self.className)"}]),
        "{s}"
    );
}

#[test]
fn one_of_markers_become_cel_rules_on_the_type() {
    let types = format!(
        "{ROOT}\n/// +kubebuilder:validation:ExactlyOneOf=http;grpc\n/// +kubebuilder:validation:AtMostOneOf=tls;plain\n/// +kubebuilder:validation:AtLeastOneOf=http;tls\n#[derive(serde::Serialize, serde::Deserialize)]\npub struct WidgetSpec {{\n    pub http: Option<String>,\n    pub grpc: Option<String>,\n    pub tls: Option<bool>,\n    pub plain: Option<bool>,\n}}\n"
    );
    let s = schema_of(&types);
    assert_eq!(
        s["x-kubernetes-validations"],
        json!([
            {"message": "exactly one of the fields in [http grpc] must be set", "rule": "(has(self.http)?1:0)+(has(self.grpc)?1:0) == 1"},
            {"message": "at most one of the fields in [tls plain] may be set", "rule": "(has(self.tls)?1:0)+(has(self.plain)?1:0) <= 1"},
            {"message": "at least one of the fields in [http tls] must be set", "rule": "has(self.http)||has(self.tls)"},
        ]),
        "{s}"
    );
}

#[test]
fn k8s_list_markers_are_list_types() {
    let s = schema_of(&spec(
        "    /// +k8s:listType=map\n    /// +k8s:listMapKey=name\n    pub ports: Vec<Port>,\n}\n\n#[derive(serde::Serialize, serde::Deserialize)]\npub struct Port {\n    pub name: String,\n    pub port: i32,",
    ));
    assert_eq!(
        s["properties"]["ports"]["x-kubernetes-list-type"],
        json!("map")
    );
    assert_eq!(
        s["properties"]["ports"]["x-kubernetes-list-map-keys"],
        json!(["name"])
    );
}

#[test]
fn a_typo_in_genclient_is_an_error_with_the_fix() {
    // `+genclinet` would silently drop the kind, its storage version and its columns.
    let e = one_error(&ROOT.replace("+genclient", "+genclinet"));
    assert!(e.problem.contains("unknown marker `+genclinet`"), "{e}");
    assert!(e.fix.contains("did you mean `+genclient`"), "{e}");
    assert_eq!(e.line_col.map(|(l, _)| l), Some(8), "{e}");
}

#[test]
fn kind_only_markers_on_a_struct_that_is_not_a_kind_are_errors() {
    let e = one_error(&format!(
        "{ROOT}\n/// +kubebuilder:printcolumn:name=\"X\",type=\"string\",JSONPath=\".x\"\n#[derive(serde::Serialize, serde::Deserialize)]\npub struct WidgetSpec {{\n    pub x: String,\n}}\n"
    ));
    assert!(e.problem.contains("is not a kind"), "{e}");
    assert!(e.fix.contains("+genclient"), "{e}");
}

#[test]
fn a_field_marker_on_a_kind_is_checked_against_its_target() {
    let e = one_error(&spec(
        "    /// +kubebuilder:resource:scope=Cluster\n    pub x: String,",
    ));
    assert!(e.problem.contains("on a field of WidgetSpec"), "{e}");
    assert!(e.fix.contains("docs of the struct"), "{e}");
}

#[test]
fn a_generic_kind_says_generics_are_not_supported() {
    let e = one_error(
        "use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;\n/// +genclient\npub struct Widget<T> {\n    pub metadata: ObjectMeta,\n    pub spec: T,\n}\n",
    );
    assert!(e.problem.contains("generic parameters"), "{e}");
}

#[test]
fn the_registry_lists_every_marker_with_its_place_and_help() {
    let help = kubegen_templates::markers::help();
    for name in [
        "+genclient",
        "+kubebuilder:validation:Maximum=<number>",
        "+kubebuilder:printcolumn:name=<..>",
        "+k8s:immutable",
        "+kubebuilder:validation:ExactlyOneOf=<a;b;c>",
        "+required",
    ] {
        assert!(help.contains(name), "{name} missing from:\n{help}");
    }
    // Every entry is reachable by its own name (no shadowing).
    for def in kubegen_templates::markers::REGISTRY {
        let value = match def.grammar {
            kubegen_templates::markers::Grammar::Flag => None,
            _ => Some("x"),
        };
        let (found, _) = kubegen_templates::markers::resolve(def.name, value, 0)
            .unwrap_or_else(|| panic!("{} does not resolve", def.name));
        assert_eq!(found.name, def.name);
    }
}

#[test]
fn internally_and_adjacently_tagged_enums_have_a_structural_schema() {
    // kube-derive cannot derive these (kube-rs issues 1279 and 1741); serde writes an
    // object with the tag beside the variant's fields (or beside its content).
    let types = format!(
        "{ROOT}\n#[derive(serde::Serialize, serde::Deserialize)]\npub struct WidgetSpec {{\n    pub source: Source,\n    pub action: Option<Action>,\n}}\n\n#[derive(serde::Serialize, serde::Deserialize)]\n#[serde(tag = \"type\", rename_all = \"camelCase\")]\npub enum Source {{\n    Git {{ url: String, revision: Option<String> }},\n    Bucket(Bucket),\n    Empty,\n}}\n\n#[derive(serde::Serialize, serde::Deserialize)]\npub struct Bucket {{\n    pub bucket: String,\n}}\n\n#[derive(serde::Serialize, serde::Deserialize)]\n#[serde(tag = \"kind\", content = \"with\")]\npub enum Action {{\n    Scale {{ replicas: i32 }},\n    Restart {{ reason: String }},\n    Noop,\n}}\n"
    );
    let s = schema_of(&types);
    let source = &s["properties"]["source"];
    assert_eq!(source["type"], json!("object"), "{source}");
    assert_eq!(source["required"], json!(["type"]), "{source}");
    assert_eq!(
        source["properties"]["type"]["enum"],
        json!(["git", "bucket", "empty"])
    );
    assert_eq!(source["properties"]["url"]["type"], json!("string"));
    assert_eq!(source["properties"]["bucket"]["type"], json!("string"));
    let action = &s["properties"]["action"];
    assert_eq!(
        action["properties"]["kind"]["enum"],
        json!(["Scale", "Restart", "Noop"])
    );
    assert_eq!(
        action["properties"]["with"]["properties"]["replicas"]["type"],
        json!("integer"),
        "{action}"
    );
    assert_eq!(
        action["properties"]["with"]["properties"]["reason"]["type"],
        json!("string")
    );
    // Every CRD kube-apiserver's rules accept (structural, no conflicting types).
    let crds = crds(&types).unwrap();
    assert!(kubegen_apimachinery::crd_validation::validate(&crds[0].crd).is_empty());
}
