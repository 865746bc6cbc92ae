//! `kubegen::Builder` from a build script (tests/build.rs): the single-file tree it
//! writes into OUT_DIR mounts with `include!` and works like the checked-in tree.

// A test binary uses only part of the generated API; a user's library exports it all.
#[allow(dead_code)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/samplecontroller.rs"));
}

use generated::apis::samplecontroller::v1alpha1::{Foo, FooList};
use k8s_openapi::{ListableResource, Resource};

#[test]
fn build_script_output_is_the_same_api() {
    assert_eq!(Foo::API_VERSION, "samplecontroller.k8s.io/v1alpha1");
    assert_eq!(Foo::LIST_KIND, "FooList");
    let json = serde_json::json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "FooList", "metadata": {},
        "items": [{"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "metadata": {"name": "a"}, "spec": {"replicas": 2}}],
    });
    let list: FooList = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(serde_json::to_value(&list).unwrap(), json);
    let copy = list.items[0].clone();
    assert_eq!(copy, list.items[0]);
}

#[test]
fn single_file_nests_every_module() {
    let files = kubegen::generate(&kubegen::Config::new(vec![concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/crds/samplecontroller.yaml"
    )
    .into()]))
    .unwrap()
    .files;
    let text = kubegen::builder::single_file(&files);
    assert!(text.contains("pub mod apis {"));
    assert!(text.contains("pub mod v1alpha1 {"));
    assert!(text.contains("mod zz_generated_deepcopy {"));
    assert!(
        !text.lines().any(|l| l.trim_end().ends_with("mod types;")),
        "every declaration expanded"
    );
}
