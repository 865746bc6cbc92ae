//! Error snapshots: each bad CRD input a new user ran into, with the exact message
//! kubegen gives (file, YAML path with the document index, problem, fix), and nothing
//! written. Paths of the temporary directory read as `$DIR` in the snapshots.

use std::fs;
use std::path::Path;
use std::process::Command;

/// A valid CRD of kind `Foo`, into which cases substitute their mistakes.
const FOO: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Foo, plural: foos}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}}}
";

/// Writes `files` into a fresh directory, runs `kubegen generate -f DIR -o DIR/out`, and
/// returns its stderr with the directory replaced by `$DIR`; asserts exit 1 and that
/// nothing was written.
fn generate_error(files: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir(&input).unwrap();
    for (name, text) in files {
        fs::write(input.join(name), text).unwrap();
    }
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_kubegen"))
        .args(["generate", "-f"])
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).replace(&dir.path().display().to_string(), "$DIR");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!out.exists(), "nothing is written on bad input:\n{err}");
    err
}

fn snapshot(name: &str, files: &[(&str, &str)], expected: &str) {
    let got = generate_error(files);
    if std::env::var_os("KUBEGEN_PRINT_SNAPSHOTS").is_some() {
        println!("==== {name}\n{got}====");
        return;
    }
    assert_eq!(got, expected, "{name}");
}

fn foo_with(from: &str, to: &str) -> String {
    assert!(FOO.contains(from), "{from}");
    FOO.replace(from, to)
}

#[test]
fn two_crds_of_a_group_with_one_plural() {
    let bar = foo_with("kind: Foo, plural: foos", "kind: Bar, plural: foos");
    snapshot(
        "one plural twice",
        &[("a.yaml", FOO), ("b.yaml", &bar)],
        r#"error: $DIR/in/b.yaml: document 0: spec.names.plural:
  plural foos of group example.com is also the plural of kind Foo in $DIR/in/a.yaml (document 0); one resource cannot have two definitions, and the clients would have two `foos` methods
  fix: give every CRD of a group its own plural (and `metadata.name: <plural>.<group>`), or pass each CRD once
"#,
    );
}

#[test]
fn invalid_group_is_not_the_core_group() {
    let text = foo_with("group: example.com", "group: ../../etc")
        .replace("foos.example.com", "foos.../../etc");
    snapshot(
        "group",
        &[("crd.yaml", &text)],
        r#"error: $DIR/in/crd.yaml: document 0: spec.group:
  invalid group "../../etc": kube-apiserver requires a DNS-1123 subdomain with at least one dot (lowercase labels of letters, digits and `-`, separated by `.`)
  fix: use a domain you own, e.g. `samplecontroller.example.com`
"#,
    );
    let text = foo_with("group: example.com", "group: example")
        .replace("foos.example.com", "foos.example");
    snapshot(
        "group without a dot",
        &[("crd.yaml", &text)],
        r#"error: $DIR/in/crd.yaml: document 0: spec.group:
  invalid group "example": kube-apiserver requires a DNS-1123 subdomain with at least one dot (lowercase labels of letters, digits and `-`, separated by `.`)
  fix: use a domain you own, e.g. `samplecontroller.example.com`
"#,
    );
}

#[test]
fn names_are_validated_as_kube_apiserver_does() {
    let cases = [
        (
            "plural",
            foo_with("plural: foos", "plural: Foos")
                .replace("foos.example.com", "Foos.example.com"),
            r#"error: $DIR/in/crd.yaml: document 0: spec.names.plural:
  invalid name "Foos": kube-apiserver requires a DNS-1035 label (lowercase letters, digits and `-`, starting with a letter and ending with a letter or digit, at most 63 characters)
  fix: write it lowercase, e.g. "foos"
"#,
        ),
        (
            "singular",
            foo_with("plural: foos}", "plural: foos, singular: foo_}"),
            r#"error: $DIR/in/crd.yaml: document 0: spec.names.singular:
  invalid name "foo_": kube-apiserver requires a DNS-1035 label (lowercase letters, digits and `-`, starting with a letter and ending with a letter or digit, at most 63 characters)
  fix: write it lowercase, e.g. "foo"
"#,
        ),
        (
            "shortNames",
            foo_with("plural: foos}", "plural: foos, shortNames: [f, F-1]}"),
            r#"error: $DIR/in/crd.yaml: document 0: spec.names.shortNames[1]:
  invalid name "F-1": kube-apiserver requires a DNS-1035 label (lowercase letters, digits and `-`, starting with a letter and ending with a letter or digit, at most 63 characters)
  fix: write it lowercase, e.g. "f-1"
"#,
        ),
        (
            "categories",
            foo_with(
                "plural: foos}",
                "plural: foos, categories: [all, 'my stuff']}",
            ),
            r#"error: $DIR/in/crd.yaml: document 0: spec.names.categories[1]:
  invalid name "my stuff": kube-apiserver requires a DNS-1035 label (lowercase letters, digits and `-`, starting with a letter and ending with a letter or digit, at most 63 characters)
  fix: write it lowercase, e.g. "my-stuff"
"#,
        ),
        (
            "kind",
            foo_with("kind: Foo,", "kind: Foo_Bar,"),
            r#"error: $DIR/in/crd.yaml: document 0: spec.names.kind:
  invalid kind "Foo_Bar": kube-apiserver requires a DNS-1035 label once lowercased (letters, digits and `-`, starting with a letter)
  fix: use an UpperCamelCase name of letters and digits, e.g. `Foo` / `FooList`
"#,
        ),
        (
            "listKind",
            foo_with("plural: foos}", "plural: foos, listKind: Foo}"),
            r#"error: $DIR/in/crd.yaml: document 0: spec.names.listKind:
  listKind "Foo" is the kind itself
  fix: remove `listKind` (it defaults to `FooList`)
"#,
        ),
        (
            "metadata.name",
            foo_with("name: foos.example.com", "name: foo.example.com"),
            r#"error: $DIR/in/crd.yaml: document 0: metadata.name:
  metadata.name is "foo.example.com"; kube-apiserver requires `<spec.names.plural>.<spec.group>`
  fix: set `metadata.name: foos.example.com`
"#,
        ),
        (
            "version name",
            foo_with("- name: v1", "- name: V1"),
            r#"error: $DIR/in/crd.yaml: document 0: spec.versions[0].name:
  invalid version name "V1": kube-apiserver requires a DNS-1035 label (lowercase letters, digits and `-`, starting with a letter and ending with a letter or digit, at most 63 characters)
  fix: name versions like `v1`, `v1alpha1`, `v2beta3`
"#,
        ),
    ];
    for (name, text, expected) in cases {
        snapshot(name, &[("crd.yaml", &text)], expected);
    }
}

#[test]
fn versions_need_unique_names_and_exactly_one_storage_version() {
    let second = "  - name: v1\n    served: false\n    storage: false\n";
    let twice = format!("{FOO}{second}");
    snapshot(
        "duplicate version",
        &[("crd.yaml", &twice)],
        r#"error: $DIR/in/crd.yaml: document 0: spec.versions[1].name:
  version "v1" is also spec.versions[0]
  fix: give each version a distinct name (or remove the duplicate)
"#,
    );
    let v2 = format!(
        "{FOO}{}",
        second
            .replace("v1", "v2")
            .replace("storage: false", "storage: true")
    );
    snapshot(
        "two storage versions",
        &[("crd.yaml", &v2)],
        r#"error: $DIR/in/crd.yaml: document 0: spec.versions[1].storage:
  spec.versions[0] (v1) and spec.versions[1] (v2) are both marked `storage: true`
  fix: mark exactly one version `storage: true`
"#,
    );
    let none = foo_with("storage: true", "storage: false");
    snapshot(
        "no storage version",
        &[("crd.yaml", &none)],
        r#"error: $DIR/in/crd.yaml: document 0: spec.versions:
  no version is marked `storage: true`
  fix: mark exactly one version `storage: true` (the one objects are stored in)
"#,
    );
}

#[test]
fn no_versions_empty_files_and_files_without_crds() {
    let text = FOO[..FOO.find("  versions:").unwrap()].to_owned() + "  versions: []\n";
    snapshot(
        "versions: []",
        &[("crd.yaml", &text)],
        r#"error: $DIR/in/crd.yaml: document 0: spec.versions:
  the CRD has no versions
  fix: list at least one version under `spec.versions`, with `served: true` and `storage: true`
"#,
    );
    snapshot(
        "empty file",
        &[("a.yaml", FOO), ("empty.yaml", "")],
        r#"error: $DIR/in/empty.yaml:
  the file is empty: no YAML document in it holds a CustomResourceDefinition
  fix: remove the file from the inputs, or put a CustomResourceDefinition in it
"#,
    );
    snapshot(
        "only separators",
        &[("seps.yaml", "---\n# nothing\n---\n")],
        r#"error: $DIR/in/seps.yaml:
  the file is empty: no YAML document in it holds a CustomResourceDefinition
  fix: remove the file from the inputs, or put a CustomResourceDefinition in it
"#,
    );
    snapshot(
        "empty List",
        &[("list.yaml", "apiVersion: v1\nkind: List\nitems: []\n")],
        r#"error: $DIR/in/list.yaml:
  the file holds only empty Lists: no CustomResourceDefinition
  fix: remove the file from the inputs, or put a CustomResourceDefinition in it
"#,
    );
}

#[test]
fn multi_document_errors_name_the_document() {
    let text = format!("{FOO}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\n");
    snapshot(
        "second document",
        &[("crds.yaml", &text)],
        r#"error: $DIR/in/crds.yaml: document 1: kind:
  expected kind CustomResourceDefinition, found "ConfigMap"
  fix: pass only CRD files (or directories of them) to -f
"#,
    );
    let bad = foo_with("replicas: {type: integer}", "replicas: {type: integr}");
    let text = format!(
        "---\n{FOO}---\n{}",
        bad.replace("foos", "bars").replace("Foo", "Bar")
    );
    snapshot(
        "schema in the second document",
        &[("crds.yaml", &text)],
        r#"error: $DIR/in/crds.yaml: document 1: spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.replicas.type:
  unknown type "integr"
  fix: use one of string, integer, number, boolean, array, object
"#,
    );
}

/// Kinds that are valid for kube-apiserver but not Rust type names, or that are one
/// letter (`V`, `A`, `D`), generate clean code; the golden tree (fixtures/crds/names.yaml,
/// built with `-D warnings`) compiles them.
#[test]
fn postgresql_and_self_kinds_are_not_errors() {
    let dir = tempfile::tempdir().unwrap();
    let crd = dir.path().join("names.yaml");
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/crds/names.yaml"),
        &crd,
    )
    .unwrap();
    let generated = kubegen::generate(&kubegen::Config::new(vec![crd])).unwrap();
    let types = generated
        .files
        .iter()
        .find(|f| f.path == "apis/names/v1/types.rs")
        .unwrap();
    assert!(types.contents.contains("pub struct Postgresql {"));
    assert!(types.contents.contains("pub struct SelfKind {"));
    assert!(!types.contents.contains("Self_"));
    // Kinds named as the written-out `Deserialize`'s generic parameters might be.
    for kind in ["V", "A", "D"] {
        assert!(
            types.contents.contains(&format!("pub struct {kind} {{")),
            "{kind}"
        );
    }
}

fn run_kubegen(verb: &str, input: &Path, out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kubegen"))
        .args([verb, "-f"])
        .arg(input)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

#[cfg(unix)]
#[test]
fn a_symlink_inside_the_output_directory_is_refused_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let crd = dir.path().join("crd.yaml");
    fs::write(&crd, FOO).unwrap();
    let out = dir.path().join("out");
    assert!(run_kubegen("generate", &crd, &out).status.success());
    std::os::unix::fs::symlink("../crd.yaml", out.join("apis/link.yaml")).unwrap();
    for verb in ["generate", "verify"] {
        let o = run_kubegen(verb, &crd, &out);
        let err =
            String::from_utf8_lossy(&o.stderr).replace(&dir.path().display().to_string(), "$DIR");
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(
            err,
            "error: $DIR/out/apis/link.yaml:
  this is a symbolic link (to ../crd.yaml) inside the output directory; kubegen replaces the whole directory and would delete it
  fix: move it out of the output directory, or choose another -o (kubegen writes only regular files there)
",
            "{verb}"
        );
    }
    assert!(fs::symlink_metadata(out.join("apis/link.yaml")).is_ok());
}

#[test]
fn verify_names_each_file_kubegen_would_not_keep_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let crd = dir.path().join("crd.yaml");
    fs::write(&crd, FOO).unwrap();
    let out = dir.path().join("out");
    assert!(run_kubegen("generate", &crd, &out).status.success());
    fs::write(out.join("apis/notes.rs"), "// mine\n").unwrap();
    fs::write(
        out.join("apis/old.rs"),
        format!("{}\n// left from an earlier run\n", kubegen::HEADER),
    )
    .unwrap();
    let o = run_kubegen("verify", &crd, &out);
    assert_eq!(o.status.code(), Some(1));
    let stdout =
        String::from_utf8_lossy(&o.stdout).replace(&dir.path().display().to_string(), "$DIR");
    let notes: Vec<&str> = stdout
        .lines()
        .take_while(|l| !l.starts_with("--- "))
        .collect();
    assert_eq!(
        notes,
        [
            "$DIR/out/apis/notes.rs: not generated by kubegen (it does not start with `// Code generated by kubegen. DO NOT EDIT.`): it is not kubegen's, and `kubegen generate` refuses to run until it is moved out of the output directory",
            "$DIR/out/apis/old.rs: generated by kubegen, but these inputs no longer produce it: `kubegen generate` would remove it",
        ]
    );
    assert!(
        stdout.contains("--- a/apis/notes.rs\n+++ /dev/null"),
        "{stdout}"
    );
}

/// A schema kube-apiserver refuses as not structural (a property without a type, a type
/// inside anyOf) is refused here too, at its YAML path, in kube-apiserver's words.
#[test]
fn non_structural_schemas_are_refused_as_kube_apiserver_refuses_them() {
    let untyped = foo_with(
        "replicas: {type: integer}",
        "replicas: {type: integer}, free: {}",
    );
    let err = generate_error(&[("foo.yaml", &untyped)]);
    assert!(
        err.contains("properties.spec.properties.free.type")
            && err.contains("Required value: must not be empty for specified object fields")
            && err.contains("x-kubernetes-preserve-unknown-fields: true"),
        "{err}"
    );
    let typed_branch = foo_with(
        "replicas: {type: integer}",
        "replicas: {type: integer, anyOf: [{type: integer}, {minimum: 1}]}",
    );
    let err = generate_error(&[("foo.yaml", &typed_branch)]);
    assert!(
        err.contains("properties.replicas.anyOf[0].type")
            && err.contains("Forbidden: must be empty to be structural"),
        "{err}"
    );
}
