//! `kubegen crd` refuses to write a CRD kube-apiserver would reject: the binary exits
//! non-zero, names the Rust file:line:col of the marker (or kind) that caused it, gives
//! kube-apiserver's own message and the fix, and writes nothing. The messages are the
//! ones kube-apiserver 1.36.3 gives for the same CRDs (see
//! apimachinery/src/crd_validation/tests.rs).

use std::fs;
use std::process::Command;

const ROOT: &str = r#"use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A widget.
///
/// +genclient
ROOT_MARKERS
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Widget {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: WidgetSpec,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
FIELDS
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Port {
    pub name: Option<String>,
    pub port: i32,
}
"#;

/// The types file `kubegen crd` reads: `ROOT` with the root's extra markers and the
/// spec's fields.
fn types(root_markers: &str, fields: &str) -> String {
    ROOT.replace("ROOT_MARKERS\n", root_markers)
        .replace("FIELDS", fields)
}

/// Runs `kubegen crd` over `example/v1.rs` holding `text` in group `group`; returns
/// (exit code, stderr with the temp dir replaced by `ROOT`, whether anything was
/// written).
fn run(group: &str, text: &str) -> (Option<i32>, String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("in/example");
    fs::create_dir_all(&pkg).unwrap();
    fs::write(pkg.join("mod.rs"), "pub mod v1;\n").unwrap();
    fs::write(
        pkg.join("v1.rs"),
        format!("//! +groupName={group}\n\n{text}"),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_kubegen"))
        .args(["crd", "-f"])
        .arg(dir.path().join("in"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let root = dir.path().display().to_string();
    let stderr = String::from_utf8_lossy(&o.stderr).replace(&root, "ROOT");
    let written = out.exists() && fs::read_dir(&out).unwrap().next().is_some();
    (o.status.code(), stderr, written)
}

/// The 1-based line of `needle` in the file `run` writes.
fn line(text: &str, needle: &str) -> usize {
    let file = format!("//! +groupName=x\n\n{text}");
    file.lines().position(|l| l.contains(needle)).unwrap() + 1
}

fn assert_rejected(group: &str, text: &str, needle: &str, col: usize, message: &str) {
    let (code, stderr, written) = run(group, text);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!written, "nothing is written on error");
    let at = format!("ROOT/in/example/v1.rs:{}:{col}:", line(text, needle));
    assert!(
        stderr.starts_with(&format!("error: {at}\n")),
        "expected {at} in\n{stderr}"
    );
    assert!(
        stderr.contains(message),
        "expected {message:?} in\n{stderr}"
    );
    assert!(stderr.contains("\n  fix: "), "{stderr}");
}

#[test]
fn a_cel_rule_with_a_syntax_error() {
    let text = types(
        "",
        "    /// +kubebuilder:validation:XValidation:rule=\"self.a ==\"\n    pub a: Option<String>,",
    );
    assert_rejected(
        "example.com",
        &text,
        "XValidation",
        9,
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[a].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.a ==\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>'",
    );
}

#[test]
fn a_map_list_without_keys() {
    let text = types("", "    /// +listType=map\n    pub ports: Vec<Port>,");
    assert_rejected(
        "example.com",
        &text,
        "+listType=map",
        9,
        "properties[ports].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
    );
}

#[test]
fn a_map_list_key_that_is_no_property() {
    let text = types(
        "",
        "    /// +listType=map\n    /// +listMapKey=nme\n    pub ports: Vec<Port>,",
    );
    assert_rejected(
        "example.com",
        &text,
        "+listType=map",
        9,
        "properties[ports].x-kubernetes-list-map-keys: Invalid value: [\"nme\"]: entries must all be names of item properties",
    );
}

#[test]
fn a_map_list_key_that_is_optional() {
    let text = types(
        "",
        "    /// +listType=map\n    /// +listMapKey=name\n    pub ports: Vec<Port>,",
    );
    assert_rejected(
        "example.com",
        &text,
        "pub name: Option<String>",
        9,
        "properties[ports].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
    );
}

#[test]
fn a_map_list_of_strings() {
    let text = types(
        "",
        "    /// +listType=map\n    /// +listMapKey=name\n    pub names: Vec<String>,",
    );
    assert_rejected(
        "example.com",
        &text,
        "+listType=map",
        9,
        "properties[names].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map",
    );
}

#[test]
fn a_printer_column_of_an_unknown_type() {
    let text = types(
        "/// +kubebuilder:printcolumn:name=\"Size\",type=\"int\",JSONPath=\".spec.size\"\n",
        "    pub size: i32,",
    );
    assert_rejected(
        "example.com",
        &text,
        "printcolumn",
        5,
        "spec.versions[0].additionalPrinterColumns[0].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string",
    );
}

#[test]
fn a_default_of_the_wrong_type() {
    let text = types(
        "",
        "    /// +kubebuilder:default=\"big\"\n    pub size: Option<i32>,",
    );
    assert_rejected(
        "example.com",
        &text,
        "kubebuilder:default",
        9,
        "properties[size].default: Invalid value: \"string\":  in body must be of type integer: \"string\"",
    );
}

#[test]
fn a_protected_group_without_approval() {
    let text = types("", "    pub size: i32,");
    assert_rejected(
        "samplecontroller.k8s.io",
        &text,
        "pub struct Widget",
        12,
        "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111",
    );
    let (_, stderr, _) = run("samplecontroller.k8s.io", &text);
    assert!(
        stderr.contains(
            "add the line `/// +kubebuilder:metadata:annotations=\"api-approved.kubernetes.io="
        ),
        "{stderr}"
    );
}

#[test]
fn approval_and_labels_are_written_to_the_crd() {
    let text = types(
        "/// +kubebuilder:metadata:annotations=\"api-approved.kubernetes.io=unapproved, experimental-only\";\"example.com/a=b=c\"\n/// +kubebuilder:metadata:labels={\"app=widgets\", `tier=api`}\n",
        "    pub size: i32,",
    );
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("example");
    fs::create_dir_all(&pkg).unwrap();
    fs::write(pkg.join("mod.rs"), "pub mod v1;\n").unwrap();
    fs::write(
        pkg.join("v1.rs"),
        format!("//! +groupName=samplecontroller.k8s.io\n\n{text}"),
    )
    .unwrap();
    let crds = kubegen::crds(&[dir.path().to_path_buf()]).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        crds[0].crd["metadata"],
        serde_json::json!({
            "name": "widgets.samplecontroller.k8s.io",
            "annotations": {
                "api-approved.kubernetes.io": "unapproved, experimental-only",
                "example.com/a": "b=c",
            },
            "labels": {"app": "widgets", "tier": "api"},
        })
    );
}

#[test]
fn a_metadata_entry_without_equals_is_an_error() {
    let text = types(
        "/// +kubebuilder:metadata:annotations=\"no-value\"\n",
        "    pub size: i32,",
    );
    assert_rejected(
        "example.com",
        &text,
        "kubebuilder:metadata",
        5,
        "annotation \"no-value\" is not in 'xxx=xxx' format",
    );
}

#[test]
fn an_approval_that_is_neither_a_url_nor_unapproved() {
    let text = types(
        "/// +kubebuilder:metadata:annotations=\"api-approved.kubernetes.io=yes please\"\n",
        "    pub size: i32,",
    );
    assert_rejected(
        "samplecontroller.k8s.io",
        &text,
        "pub struct Widget",
        12,
        "metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"yes please\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111",
    );
}
