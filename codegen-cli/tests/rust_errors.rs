//! Error snapshots for Rust input: each bad input, and the exact message kubegen gives
//! (file:line:col, the problem, the fix). Nothing is generated for any of them.

use std::fs;
use std::path::Path;

/// Writes `files` (path under the root, text) into a fresh root and generates from it;
/// returns the errors as displayed, with the root's path replaced by `ROOT`.
fn errors(files: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let config = kubegen::Config::new(vec![dir.path().to_owned()]);
    let errors = kubegen::generate(&config).expect_err("bad input must not generate");
    let root = dir.path().display().to_string();
    errors
        .iter()
        .map(|e| e.to_string().replace(&root, "ROOT"))
        .collect::<Vec<_>>()
        .join("\n")
}

const DOC: (&str, &str) = (
    "g/v1/mod.rs",
    "//! +groupName=example.com\npub mod types;\n",
);

/// `g/v1/types.rs` holding `body`, beside a package doc naming the group.
fn types(body: &str) -> String {
    errors(&[DOC, ("g/v1/types.rs", body)])
}

const META: &str = "pub metadata: ObjectMeta,";

#[test]
fn genclient_without_metadata() {
    assert_eq!(
        types("/// +genclient\npub struct Foo {\n    pub spec: FooSpec,\n}\n"),
        "ROOT/g/v1/types.rs:2:12:\n  Foo has +genclient but no `metadata: ObjectMeta` field\n  fix: add `pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta` (with #[serde(default)]), or remove +genclient"
    );
}

#[test]
fn unknown_marker() {
    assert_eq!(
        types(&format!(
            "/// +genclient\n/// +genclient:noVerb\npub struct Foo {{ {META} }}\n"
        )),
        "ROOT/g/v1/types.rs:2:5:\n  unknown marker `+genclient:noVerb`\n  fix: did you mean `+genclient:noVerbs`? (`kubegen markers` lists every marker kubegen reads)"
    );
}

#[test]
fn verb_that_does_not_exist() {
    assert_eq!(
        types(&format!(
            "/// +genclient\n/// +genclient:onlyVerbs=get,lst\npub struct Foo {{ {META} }}\n"
        )),
        "ROOT/g/v1/types.rs:2:5:\n  `+genclient:onlyVerbs=get,lst`: \"lst\" is not a client verb\n  fix: use verbs among create, update, updateStatus, delete, deleteCollection, get, list, watch, patch, apply, applyStatus"
    );
}

#[test]
fn method_with_a_verb_that_does_not_exist() {
    assert_eq!(
        types(&format!("/// +genclient\n/// +genclient:method=Scale,verb=scale,subresource=scale\npub struct Foo {{ {META} }}\n")),
        "ROOT/g/v1/types.rs:2:5:\n  `+genclient:method=Scale,verb=scale,subresource=scale`: \"scale\" is not a client verb\n  fix: use one of create, update, updateStatus, delete, deleteCollection, get, list, watch, patch, apply, applyStatus"
    );
}

#[test]
fn contradicting_verb_markers() {
    assert_eq!(
        types(&format!("/// +genclient\n/// +genclient:noVerbs\n/// +genclient:readonly\npub struct Foo {{ {META} }}\n")),
        "ROOT/g/v1/types.rs:3:5:\n  `+genclient:readonly` contradicts another verb marker of Foo\n  fix: keep one of +genclient:noVerbs, +genclient:readonly, +genclient:onlyVerbs= (skipVerbs= only alone or with readonly)"
    );
}

#[test]
fn two_kinds_with_one_plural() {
    assert_eq!(
        types(&format!("/// +genclient\npub struct Foo {{ {META} }}\n\n/// +genclient\n/// +resourceName=foos\npub struct Bar {{ {META} }}\n")),
        "ROOT/g/v1/types.rs:6:12:\n  kind Bar of example.com/v1 has the plural \"foos\", as kind Foo at ROOT/g/v1/types.rs:2:12\n  fix: give one of them another plural with /// +resourceName=<plural> (or #[kube(plural = \"...\")])"
    );
}

#[test]
fn generics_on_a_kind() {
    assert_eq!(
        types(&format!(
            "/// +genclient\npub struct Foo<T> {{ {META} pub spec: T }}\n"
        )),
        "ROOT/g/v1/types.rs:2:15:\n  kind Foo has generic parameters\n  fix: remove the generics: a kind's Rust type names one resource (wrap a generic struct in a concrete one)"
    );
}

#[test]
fn unparsable_rust() {
    assert_eq!(
        types("/// +genclient\npub struct Foo {\n    pub metadata: ObjectMeta\n    pub spec: i32,\n}\n"),
        "ROOT/g/v1/types.rs:4:5:\n  this is not Rust that syn can parse: expected `,`\n  fix: fix the syntax (cargo check shows the same place)"
    );
}

#[test]
fn private_field_of_a_struct_needing_clone() {
    assert_eq!(
        types(&format!("/// +genclient\npub struct Foo {{ {META} pub spec: FooSpec }}\n\npub struct FooSpec {{\n    replicas: i32,\n}}\n")),
        "ROOT/g/v1/types.rs:5:5:\n  field `replicas` of FooSpec is private; kubegen's generated Clone impl lives in another module\n  fix: derive Clone on it, or make every field visible to the crate (pub or pub(crate)) so kubegen's Clone impl can name it, or mark it +k8s:deepcopy-gen=false"
    );
}

#[test]
fn tuple_struct_needing_clone() {
    assert_eq!(
        types(&format!("/// +genclient\npub struct Foo {{ {META} pub spec: FooSpec }}\n\npub struct FooSpec(pub i32);\n")),
        "ROOT/g/v1/types.rs:4:12:\n  FooSpec is a tuple struct without Clone; kubegen generates Clone only for structs with named fields\n  fix: add #[derive(Clone)] to it, or mark it +k8s:deepcopy-gen=false and implement Clone yourself"
    );
}

#[test]
fn generic_enum_without_clone() {
    assert_eq!(
        types(&format!(
            "/// +genclient\npub struct Foo {{ {META} pub spec: Phase<i32> }}\n\npub enum Phase<T> {{ Ready(T) }}\n"
        )),
        "ROOT/g/v1/types.rs:4:10:\n  generic enum Phase has no Clone; kubegen cannot generate one for it\n  fix: add #[derive(Clone)] to the enum"
    );
}

#[test]
fn package_without_group() {
    assert_eq!(
        errors(&[(
            "g/v1/types.rs",
            &format!("/// +genclient\npub struct Foo {{ {META} }}\n")
        )]),
        "ROOT/g/v1/types.rs:2:12:\n  kind Foo is in package `g::v1`, whose docs have no +groupName\n  fix: add `//! +groupName=example.com` to the package's mod.rs (or a doc.rs), as Go's doc.go"
    );
}

#[test]
fn group_marker_on_a_type() {
    assert_eq!(
        types(&format!(
            "/// +genclient\n/// +groupName=example.com\npub struct Foo {{ {META} }}\n"
        )),
        "ROOT/g/v1/types.rs:2:5:\n  `+groupName=example.com` on Foo; it belongs to the package\n  fix: write it in the module's //! docs (its mod.rs, or a doc.rs, as Go's doc.go)"
    );
}

#[test]
fn status_verb_on_a_kind_without_status() {
    assert_eq!(
        types(&format!("/// +genclient\n/// +genclient:onlyVerbs=get,updateStatus\npub struct Foo {{ {META} }}\n")),
        "ROOT/g/v1/types.rs:2:5:\n  `+genclient:onlyVerbs=get,updateStatus` names a status verb, but Foo has no status (no `status` field, or +genclient:noStatus)\n  fix: add a `status` field, or leave updateStatus and applyStatus out"
    );
}

#[test]
fn kube_derive_generics() {
    assert_eq!(
        types("#[derive(CustomResource)]\n#[kube(group = \"example.com\", version = \"v1\", kind = \"Foo\")]\npub struct FooSpec<T> { pub t: T }\n"),
        "ROOT/g/v1/types.rs:3:19:\n  kind spec FooSpec has generic parameters\n  fix: remove the generics: a kind's Rust type names one resource"
    );
}

#[test]
fn a_crd_and_rust_types_defining_one_group_version() {
    let crd = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: bars.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Bar, plural: bars}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
";
    assert_eq!(
        errors(&[
            DOC,
            (
                "g/v1/types.rs",
                &format!("/// +genclient\npub struct Foo {{ {META} }}\n")
            ),
            ("crds/bar.yaml", crd),
        ]),
        "ROOT/g/v1/types.rs:2:12:\n  example.com/v1 is also defined by ROOT/crds/bar.yaml\n  fix: define each group and version in one input (all CRDs, or one Rust module)"
    );
}

#[test]
fn build_script_errors_name_builder_calls_not_flags() {
    let e = kubegen::Error::at(
        "",
        "groups a.x and a.y both map to module `a`",
        "pass --group-alias a.y=<module> to name one of them",
    );
    assert_eq!(kubegen::builder::build_script_message(&e), "groups a.x and a.y both map to module `a`\n  fix: pass Builder::group_alias(\"a.y\", \"<module>\") to name one of them");
    let e = kubegen::Error::at(
        "",
        "--types-path \"crate::\" is not a Rust path",
        "pass the path of the inputs' root module, such as --types-path crate::apis",
    );
    assert_eq!(kubegen::builder::build_script_message(&e), "Builder::types_path(\"crate::\") is not a Rust path\n  fix: pass the path of the inputs' root module, such as Builder::types_path(\"crate::apis\")");
    let e = kubegen::Error::at(
        "",
        "no CRD or Rust files found in the inputs",
        "pass *.rs API types with -f",
    );
    assert_eq!(kubegen::builder::build_script_message(&e), "no CRD or Rust files found in the inputs\n  fix: pass *.rs API types with Builder::crd(..) or Builder::rust(..)");
}

#[test]
fn nothing_is_written_for_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("apis");
    fs::create_dir_all(src.join("g/v1")).unwrap();
    fs::write(src.join("g/v1/mod.rs"), "//! +groupName=example.com\n").unwrap();
    fs::write(
        src.join("g/v1/types.rs"),
        "/// +genclient\npub struct Foo {}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_kubegen"))
        .args(["generate", "-f"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(!Path::new(&out).exists());
}

#[test]
fn two_structs_of_one_version_with_one_name_needing_clone() {
    let kube = "#[derive(CustomResource)]\n#[kube(group = \"example.com\", version = \"v1\", kind = \"Bar\", namespaced)]\npub struct BarSpec { pub spec: Spec }\npub struct Spec { pub a: i32 }\n";
    assert_eq!(
        errors(&[
            DOC,
            ("g/v1/types.rs", &format!("/// +genclient\npub struct Foo {{ {META} pub spec: Spec }}\npub struct Spec {{ pub b: i32 }}\n")),
            ("other/bar.rs", kube),
        ]),
        "ROOT/other/bar.rs:4:12:\n  Spec needs a generated Clone, and so does crate::apis::g::v1::types::Spec (ROOT/g/v1/types.rs:3:12) of the same group and version; crate::apis::other::bar::Spec cannot share the name\n  fix: derive Clone on one of them, or rename one"
    );
}

#[test]
fn optional_metadata() {
    assert_eq!(
        types("/// +genclient\npub struct Foo { pub metadata: Option<ObjectMeta> }\n"),
        "ROOT/g/v1/types.rs:2:12:\n  Foo has +genclient but no `metadata: ObjectMeta` field\n  fix: add `pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta` (with #[serde(default)]), or remove +genclient"
    );
}

#[test]
fn kube_derive_group_and_version_are_validated() {
    assert_eq!(
        types("#[derive(CustomResource)]\n#[kube(group = \"../../etc\", version = \"v1\", kind = \"Foo\")]\npub struct FooSpec { pub a: i32 }\n"),
        "ROOT/g/v1/types.rs:3:12:\n  #[kube(group = \"../../etc\")]: \"../../etc\" is not a DNS subdomain (lowercase letters, digits, '-' and '.')\n  fix: write the API group as a DNS subdomain (samplecontroller.k8s.io)"
    );
}

#[test]
fn bad_group_marker() {
    assert_eq!(
        errors(&[
            ("g/v1/mod.rs", "//! +groupName=Example_Com\n"),
            (
                "g/v1/types.rs",
                &format!("/// +genclient\npub struct Foo {{ {META} }}\n")
            ),
        ]),
        "ROOT/g/v1/mod.rs:1:5:\n  `+groupName=Example_Com`: \"Example_Com\" is not a DNS subdomain (lowercase letters, digits, '-' and '.')\n  fix: write the API group as a DNS subdomain (samplecontroller.k8s.io)"
    );
}

#[test]
fn marker_on_a_field() {
    assert_eq!(
        types("pub struct Foo {\n    /// +genclient\n    pub metadata: ObjectMeta,\n}\n"),
        "ROOT/g/v1/types.rs:2:9:\n  `+genclient` on a field of Foo; kubegen reads it on types\n  fix: move it to the /// docs of the struct (or the module's //! docs for +groupName)"
    );
}

/// A problem the model's validation finds keeps its fix in `Error::fix`, apart from the
/// problem (found by fuzzing, fuzz/corpus/rust_reader/model-error-fix: the fix was
/// folded into the problem text and `fix` was empty).
#[test]
fn model_errors_carry_their_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("g/v1/types.rs");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(dir.path().join(DOC.0), DOC.1).unwrap();
    fs::write(
        &file,
        format!("/// +genclient\n/// +genclient:method=getScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale\npub struct Foo {{ {META} }}\n"),
    )
    .unwrap();
    let errors = kubegen::generate(&kubegen::Config::new(vec![dir.path().to_owned()]))
        .expect_err("a lowerCamelCase method name must not generate");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    assert!(
        e.problem
            .contains("\"getScale\" is not an UpperCamelCase name"),
        "{e:?}"
    );
    assert!(
        !e.problem.contains("fix:"),
        "the fix is folded into the problem: {e:?}"
    );
    assert!(e.fix.contains("+genclient:method=UpdateScale"), "{e:?}");
}
