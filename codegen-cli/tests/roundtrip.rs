//! CRD -> `kubegen generate` -> `kubegen crd` over every fixture CRD (fixtures/crds,
//! including edges.yaml: descriptions rustdoc escaping cannot undo as-is, keywords
//! without a controller-gen marker, implied keys that are absent, kind names that are
//! not Rust type names, versions that are not Kubernetes versions): every version must
//! come back identical (the corpus stage runs the same over ../shared/crds).

#[test]
fn every_fixture_crd_round_trips_exactly() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/crds");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let mut versions = 0;
    for file in &files {
        let work = tempfile::tempdir().unwrap();
        let results = kubegen::roundtrip::round_trip(file, &work.path().join("out"))
            .unwrap_or_else(|e| panic!("{}: {e:?}", file.display()));
        assert!(!results.is_empty(), "{}", file.display());
        for r in results {
            assert!(
                r.differences.is_empty(),
                "{} {} {}: {:#?}",
                file.display(),
                r.crd,
                r.version,
                r.differences
            );
            versions += 1;
        }
    }
    assert!(versions >= 16, "{versions}");
}

#[test]
fn edited_markers_change_the_crd() {
    // A CRD whose generated types are then edited: the round trip must notice.
    let dir = tempfile::tempdir().unwrap();
    let crd = dir.path().join("crd.yaml");
    std::fs::write(
        &crd,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: things.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Thing, plural: things}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size: {type: integer, format: int32, maximum: 3}\n",
    )
    .unwrap();
    let work = dir.path().join("out");
    let same = kubegen::roundtrip::round_trip(&crd, &work).unwrap();
    assert!(same[0].differences.is_empty(), "{:?}", same[0].differences);
    let types = work.join("apis/example/v1/types.rs");
    let text = std::fs::read_to_string(&types).unwrap();
    assert!(text.contains("+kubebuilder:validation:Maximum=3"), "{text}");
    // Re-run on the edited tree through kubegen crd directly.
    std::fs::write(&types, text.replace("Maximum=3", "Maximum=4")).unwrap();
    let written = kubegen::crds(&[work.join("apis")]).unwrap();
    let max = written[0]
        .crd
        .pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/maximum")
        .cloned();
    assert_eq!(max, Some(serde_json::json!(4)));
}
