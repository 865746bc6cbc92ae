//! Golden snapshots: generating from fixtures/crds in memory yields fixtures/golden
//! byte for byte (hack/update-codegen.sh regenerates it), twice in a row.

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
