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

/// The CRD's own annotations and labels (API approval, gateway-api's bundle version)
/// are carried by the generated types as `+kubebuilder:metadata` markers and written
/// back; a lost one is a difference the round trip reports.
#[test]
fn crd_annotations_and_labels_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let crd = dir.path().join("crd.yaml");
    std::fs::write(
        &crd,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.x.k8s.io\n  annotations:\n    api-approved.kubernetes.io: https://github.com/kubernetes/kubernetes/pull/1\n    x.k8s.io/bundle-version: \"v1.2.3\"\n  labels: {app: things, on: \"yes\"}\nspec:\n  group: x.k8s.io\n  scope: Namespaced\n  names: {kind: Thing, plural: things}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object}\n",
    )
    .unwrap();
    let work = dir.path().join("out");
    let same = kubegen::roundtrip::round_trip(&crd, &work).unwrap();
    assert!(same[0].differences.is_empty(), "{:?}", same[0].differences);
    let types = work.join("apis/x/v1/types.rs");
    let text = std::fs::read_to_string(&types).unwrap();
    for marker in [
        "/// +kubebuilder:metadata:annotations=\"api-approved.kubernetes.io=https://github.com/kubernetes/kubernetes/pull/1\"",
        "/// +kubebuilder:metadata:annotations=\"x.k8s.io/bundle-version=v1.2.3\"",
        "/// +kubebuilder:metadata:labels=\"app=things\"",
        "/// +kubebuilder:metadata:labels=\"on=yes\"",
    ] {
        assert!(text.contains(marker), "{marker} in\n{text}");
    }
    // Without the bundle-version marker the written CRD differs where the round trip
    // compares it.
    let edited = text.replace(
        "/// +kubebuilder:metadata:annotations=\"x.k8s.io/bundle-version=v1.2.3\"\n",
        "",
    );
    assert_ne!(edited, text);
    std::fs::write(&types, edited).unwrap();
    let written = kubegen::crds(&[work.join("apis")]).unwrap();
    let source: serde_json::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&crd).unwrap()).unwrap();
    let mut differences = Vec::new();
    kubegen::roundtrip::compare(
        "metadata.annotations",
        source.pointer("/metadata/annotations"),
        written[0].crd.pointer("/metadata/annotations"),
        &mut differences,
    );
    assert_eq!(differences.len(), 1, "{differences:?}");
    assert!(
        differences[0].contains("x.k8s.io/bundle-version"),
        "{differences:?}"
    );
}
