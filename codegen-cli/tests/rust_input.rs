//! What the Rust reader puts in the model for each marker and attribute: verbs, scope,
//! subresources, plurals, where group and version come from, which register items and
//! deep copies a kind gets.

use std::fs;

use kubegen_templates::model::{
    Api, ExistingImpls, Kind, KindSource, Scope, TypeDef, TypeRef, Verb,
};

/// Writes `files` under a fresh root and builds the model from it.
fn model(files: &[(&str, &str)]) -> Api {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let config = kubegen::Config::new(vec![dir.path().to_owned()]);
    match kubegen::build_model(&config) {
        Ok((api, _)) => api,
        Err(e) => panic!(
            "{}",
            e.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

const DOC: (&str, &str) = ("g/v1/mod.rs", "//! +groupName=example.com\n");

/// The one kind of a model built from `g/v1/types.rs` holding a struct `Foo` with
/// `markers` (one per line) and `fields`.
fn kind(markers: &str, fields: &str) -> Kind {
    let body = format!(
        "{}\n/// +genclient\n{}\npub struct Foo {{ pub metadata: ObjectMeta, {fields} }}\n",
        "use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;",
        markers
            .lines()
            .map(|m| format!("/// {m}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let api = model(&[DOC, ("g/v1/types.rs", &body)]);
    api.groups[0].versions[0].kinds[0].clone()
}

fn verbs(k: &Kind) -> Vec<&'static str> {
    k.client.verbs.iter().map(|v| v.name()).collect()
}

#[test]
fn genclient_gives_every_verb_and_status_verbs_with_a_status_field() {
    let k = kind("", "pub status: Option<FooStatus>,");
    assert_eq!(k.client.verbs.len(), 11);
    assert!(k.status_subresource);
    assert_eq!(k.scope, Scope::Namespaced);
    assert_eq!(
        (
            k.names.plural.as_str(),
            k.names.singular.as_str(),
            k.names.list_kind.as_str()
        ),
        ("foos", "foo", "FooList")
    );
    let k = kind("", "");
    assert!(!k.client.has(Verb::UpdateStatus) && !k.status_subresource);
    let k = kind("+genclient:noStatus", "pub status: Option<FooStatus>,");
    assert!(!k.client.has(Verb::ApplyStatus) && !k.status_subresource);
}

#[test]
fn verb_markers_follow_client_gen() {
    assert_eq!(
        verbs(&kind("+genclient:readonly", "")),
        ["get", "list", "watch"]
    );
    assert_eq!(
        verbs(&kind("+genclient:onlyVerbs=create,get", "")),
        ["create", "get"]
    );
    let k = kind(
        "+genclient:skipVerbs=deleteCollection,apply,applyStatus",
        "pub status: S,",
    );
    assert_eq!(
        verbs(&k),
        [
            "create",
            "update",
            "updateStatus",
            "delete",
            "get",
            "list",
            "watch",
            "patch"
        ]
    );
    assert!(verbs(&kind("+genclient:noVerbs", "")).is_empty());
    assert_eq!(
        verbs(&kind("+genclient:readonly\n+genclient:skipVerbs=watch", "")),
        ["get", "list"]
    );
    assert_eq!(kind("+genclient:nonNamespaced", "").scope, Scope::Cluster);
    assert_eq!(kind("+resourceName=fooes", "").names.plural, "fooes");
}

#[test]
fn extension_methods_map_go_paths_and_a_scale_method_gives_the_subresource() {
    let k = kind(
        "+genclient:noVerbs\n\
         +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale\n\
         +genclient:method=Evict,verb=create,subresource=eviction,input=k8s.io/api/policy/v1.Eviction,result=k8s.io/apimachinery/pkg/apis/meta/v1.Status\n\
         +genclient:method=Copy,verb=update,input=crate::other::Copy",
        "",
    );
    assert!(k.client.verbs.is_empty());
    let m = &k.client.methods;
    assert_eq!(m.len(), 3);
    assert_eq!(m[0].result, Some(TypeRef::Scale));
    assert_eq!(
        m[1].input,
        Some(TypeRef::Path(
            "::kubegen_runtime::k8s_openapi::api::policy::v1::Eviction".into()
        ))
    );
    assert_eq!(
        m[1].result,
        Some(TypeRef::Path(
            "::kubegen_runtime::k8s_openapi::apimachinery::pkg::apis::meta::v1::Status".into()
        ))
    );
    assert_eq!(m[2].input, Some(TypeRef::Path("crate::other::Copy".into())));
    let scale = k.scale.expect("a scale method gives the scale subresource");
    assert_eq!(
        (
            scale.spec_replicas_path.as_str(),
            scale.status_replicas_path.as_str()
        ),
        (".spec.replicas", ".status.replicas")
    );
    let k = kind(
        "+genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale\n\
         +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.size,selectorpath=.status.sel",
        "",
    );
    let scale = k.scale.unwrap();
    assert_eq!(scale.spec_replicas_path, ".spec.size");
    assert_eq!(scale.label_selector_path.as_deref(), Some(".status.sel"));
}

#[test]
fn version_marker_doc_rs_and_explicit_files() {
    // +versionName where no module is a version; markers in a doc.rs.
    let api = model(&[
        (
            "stuff/doc.rs",
            "//! +groupName=stuff.example.com\n//! +versionName=v2beta1\n",
        ),
        (
            "stuff/types.rs",
            "/// +genclient\npub struct Thing { pub metadata: ObjectMeta }\n",
        ),
    ]);
    let (g, v) = (&api.groups[0], &api.groups[0].versions[0]);
    assert_eq!(
        (g.name.as_str(), v.name.as_str()),
        ("stuff.example.com", "v2beta1")
    );
    let KindSource::User { rust_path, .. } = &v.kinds[0].source else {
        panic!("a user kind")
    };
    assert_eq!(rust_path, "crate::apis::stuff::types::Thing");
}

#[test]
fn hand_written_resource_impls_are_kept() {
    let body = "use k8s_openapi::Resource;\n\
        /// +genclient\npub struct Foo { pub metadata: ObjectMeta }\n\
        impl Resource for Foo { }\n\
        impl Foo { pub fn new() -> Self { todo!() } }\n";
    let api = model(&[DOC, ("g/v1/types.rs", body)]);
    let KindSource::User { has, .. } = &api.groups[0].versions[0].kinds[0].source else {
        panic!("a user kind")
    };
    assert_eq!(
        *has,
        ExistingImpls {
            kube_resource: false,
            k8s_openapi_resource: true,
            new_fn: true
        }
    );
}

#[test]
fn kube_derive_attributes() {
    let body = r##"
        #[derive(CustomResource, Clone)]
        #[kube(group = "db.example.com", version = "v1beta1", kind = "Policy", root = "PolicyObject",
               shortname = "pol", category = "all", status = "PolicyStatus",
               scale(spec_replicas_path = ".spec.n", status_replicas_path = ".status.n"),
               printcolumn = r#"{"name":"x","type":"string","jsonPath":".spec.x"}"#, crates(kube_core = "::kube::core"))]
        pub struct PolicySpec { pub n: i32 }
        pub struct PolicyStatus { pub n: i32 }
    "##;
    let api = model(&[("db/policy.rs", body)]);
    let v = &api.groups[0].versions[0];
    assert_eq!(
        (api.groups[0].name.as_str(), v.name.as_str()),
        ("db.example.com", "v1beta1")
    );
    let k = &v.kinds[0];
    assert_eq!(k.names.plural, "policies");
    assert_eq!(k.names.short_names, ["pol"]);
    assert_eq!(k.names.categories, ["all"]);
    assert_eq!(k.scope, Scope::Cluster);
    assert!(k.status_subresource && k.client.has(Verb::UpdateStatus));
    assert_eq!(k.scale.as_ref().unwrap().spec_replicas_path, ".spec.n");
    assert_eq!(k.printer_columns.len(), 1);
    assert_eq!(k.printer_columns[0].json_path, ".spec.x");
    assert_eq!(
        k.client.methods.len(),
        3,
        "GetScale, UpdateScale, PatchScale"
    );
    let KindSource::User { rust_path, has } = &k.source else {
        panic!("a user kind")
    };
    assert_eq!(rust_path, "crate::apis::db::policy::PolicyObject");
    assert!(has.kube_resource && has.new_fn);
    // The spec derives Clone; the status gets a generated one.
    let names: Vec<&str> = v.types.iter().map(TypeDef::name).collect();
    assert_eq!(names, ["PolicyStatus"]);
}

#[test]
fn deep_copies_follow_the_kind_through_its_package() {
    let body = "/// +genclient\npub struct Foo { pub metadata: ObjectMeta, pub spec: Option<Vec<Spec>> }\n\
        pub struct Spec { pub inner: std::collections::BTreeMap<String, Inner>, pub done: Done }\n\
        pub struct Inner { pub n: i64 }\n\
        #[derive(Clone)] pub struct Done { pub x: Reached }\n\
        pub struct Reached { pub x: i32 }\n\
        /// +k8s:deepcopy-gen=true\npub struct Forced { pub y: bool }\n\
        pub struct Ignored { z: i32 }\n";
    let api = model(&[DOC, ("g/v1/types.rs", body)]);
    let names: Vec<&str> = api.groups[0].versions[0]
        .types
        .iter()
        .map(TypeDef::name)
        .collect();
    // Done derives Clone, which needs Clone of Reached: kubegen walks through it.
    assert_eq!(names, ["Foo", "Forced", "Inner", "Reached", "Spec"]);
}

#[test]
fn an_explicit_file_is_a_module_of_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("types.rs");
    fs::write(
        &file,
        "//! +groupName=one.example.com\n//! +versionName=v1\n\
         /// +genclient\npub struct One { pub metadata: ObjectMeta }\n",
    )
    .unwrap();
    let mut config = kubegen::Config::new(vec![file]);
    config.types_path = "crate::api".to_owned();
    let (api, inputs) = kubegen::build_model(&config).unwrap();
    assert_eq!(inputs.rust_kinds, 1);
    let KindSource::User { rust_path, .. } = &api.groups[0].versions[0].kinds[0].source else {
        panic!("a user kind")
    };
    assert_eq!(rust_path, "crate::api::types::One");
}
