//! Golden snapshots: generating from fixtures/crds in memory yields fixtures/golden
//! byte for byte, and from fixtures/rust fixtures/golden-rust (hack/update-codegen.sh
//! regenerates both), twice in a row.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn config() -> kubegen::Config {
    let mut config = kubegen::Config::new(vec![root().join("fixtures/crds")]);
    config.boilerplate =
        Some(std::fs::read_to_string(root().join("hack/boilerplate.rs.txt")).unwrap());
    config
}

fn rust_config() -> kubegen::Config {
    let mut config = kubegen::Config::new(vec![root().join("fixtures/rust")]);
    config.types_path = "crate::apis".to_owned();
    config.boilerplate =
        Some(std::fs::read_to_string(root().join("hack/boilerplate.rs.txt")).unwrap());
    config
}

#[test]
fn rust_fixtures_generate_the_rust_golden_tree() {
    let generated = kubegen::generate(&rust_config()).unwrap();
    assert_eq!(generated.rust_kinds, 5);
    let diff = kubegen::output::verify_tree(&root().join("fixtures/golden-rust"), &generated.files)
        .unwrap();
    assert!(
        diff.is_none(),
        "fixtures/golden-rust is stale; run hack/update-codegen.sh:\n{}",
        diff.unwrap_or_default()
    );
    let a = kubegen::generate(&rust_config()).unwrap().files;
    assert_eq!(a, generated.files, "deterministic");
}

#[test]
fn rust_input_emits_no_types_only_what_the_user_types_lack() {
    let files = kubegen::generate(&rust_config()).unwrap().files;
    let text = |path: &str| {
        files
            .iter()
            .find(|f| f.path == path)
            .map(|f| f.contents.clone())
            .unwrap_or_else(|| panic!("missing {path}"))
    };
    assert!(!files.iter().any(|f| f.path.ends_with("/types.rs")));
    let register = text("apis/samplecontroller/v1alpha1/register.rs");
    assert!(register.contains("impl ::kubegen_runtime::k8s_openapi::Resource\nfor crate::apis::samplecontroller::v1alpha1::types::Foo"));
    // kube-derive writes kube::Resource and new(): kubegen adds RESOURCE_INFO and GVK/GVR.
    let register = text("apis/documents/v1/register.rs");
    assert!(!register.contains("k8s_openapi::Resource for"));
    assert!(!register.contains("pub fn new("));
    assert!(register.contains("pub const RESOURCE_INFO"));
    // Deep copies for structs without Clone, and none for those with one or opted out.
    let deepcopy = text("apis/widgets/v1beta1/zz_generated_deepcopy.rs");
    assert!(deepcopy.contains("for crate::apis::widgets::v1beta1::gizmo::GizmoSpec"));
    assert!(
        !deepcopy.contains("Handmade")
            && !deepcopy.contains("Cache")
            && !deepcopy.contains("Color")
    );
    let deepcopy = text("apis/samplecontroller/v1alpha1/zz_generated_deepcopy.rs");
    assert!(!deepcopy.contains("BarSpec"), "BarSpec derives Clone");
    // A read-only kind: get, list, watch only.
    let bar = text("clientset/samplecontroller/v1alpha1/bar.rs");
    assert!(bar.contains("pub async fn get(") && bar.contains("pub async fn watch("));
    assert!(!bar.contains("pub async fn create(") && !bar.contains("pub async fn update_status("));
    let gizmo = text("clientset/widgets/v1beta1/gizmo.rs");
    assert!(gizmo.contains("pub async fn update(") && !gizmo.contains("update_status"));
    let pool = text("clientset/scaling/v1/pool.rs");
    assert!(
        pool.contains("pub async fn get_scale(") && pool.contains("pub async fn update_scale(")
    );
    assert!(
        !pool.contains("pub async fn patch_scale("),
        "only the declared methods"
    );
}

#[test]
fn fixtures_generate_the_golden_tree() {
    let generated = kubegen::generate(&config()).unwrap();
    let diff =
        kubegen::output::verify_tree(&root().join("fixtures/golden"), &generated.files).unwrap();
    assert!(
        diff.is_none(),
        "fixtures/golden is stale; run hack/update-codegen.sh:\n{}",
        diff.unwrap_or_default()
    );
}

#[test]
fn generation_is_deterministic() {
    let a = kubegen::generate(&config()).unwrap().files;
    let b = kubegen::generate(&config()).unwrap().files;
    assert_eq!(a, b);
}

#[test]
fn every_file_has_the_header_and_no_imports() {
    for file in kubegen::generate(&config()).unwrap().files {
        assert!(file.contents.starts_with(kubegen::HEADER), "{}", file.path);
        assert!(
            file.contents
                .contains("SPDX-License-Identifier: Apache-2.0"),
            "{}: boilerplate",
            file.path
        );
        for line in file.contents.lines() {
            let t = line.trim_start();
            assert!(
                !t.starts_with("use ") || t.starts_with("use self::"),
                "{}: import {line}",
                file.path
            );
        }
    }
}

#[test]
fn the_tree_has_the_documented_layout() {
    let files: Vec<String> = kubegen::generate(&config())
        .unwrap()
        .files
        .into_iter()
        .map(|f| f.path)
        .collect();
    for path in [
        "mod.rs",
        "apis/mod.rs",
        "apis/samplecontroller/mod.rs",
        "apis/samplecontroller/v1alpha1/mod.rs",
        "apis/samplecontroller/v1alpha1/types.rs",
        "apis/samplecontroller/v1alpha1/register.rs",
        "apis/samplecontroller/v1alpha1/zz_generated_deepcopy.rs",
    ] {
        assert!(files.iter().any(|f| f == path), "missing {path}");
    }
    // A version that is not served gets its types (conversions need every version),
    // and no client, lister or informer.
    assert!(files.iter().any(|f| f == "apis/multi/v0/types.rs"));
    for tree in ["clientset", "listers", "informers"] {
        assert!(
            !files
                .iter()
                .any(|f| f.starts_with(&format!("{tree}/multi/v0"))),
            "no {tree} for an unserved version"
        );
    }
    let text = kubegen::generate(&config())
        .unwrap()
        .files
        .into_iter()
        .find(|f| f.path == "apis/multi/v0/mod.rs")
        .map(|f| f.contents)
        .unwrap_or_default();
    assert!(
        text.contains("Not served by the API server: Gadget"),
        "{text}"
    );
}
