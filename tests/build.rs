//! Emits, from a model built here, a type that CRDs cannot produce (a recursive struct
//! with a `Box` field) into `OUT_DIR/deepcopy_model.rs`, the way a user's build.rs would
//! use kubegen's emitters, so tests/tests/deepcopy.rs can check `clone_from` on every
//! field shape. Files are wrapped as inline modules so `include!` can mount them.
//! It also runs `kubegen::Builder` on the sample-controller CRD, as a user's build.rs
//! would (tests/tests/builder.rs mounts the result), and `kubegen::Builder::rust` on the
//! hand-written types of fixtures/rust (tests/tests/builder_rust.rs).
use kubegen_templates::emit::{generate, Options};
use kubegen_templates::model::{Api, Field, Group, StructDef, Ty, TypeDef, Version};

fn field(name: &str, ty: Ty, optional: bool) -> Field {
    Field {
        json_name: name.to_owned(),
        rust_name: name.to_owned(),
        ty,
        doc: Some(format!("The `{name}` field.")),
        optional,
        required: !optional,
        nullable: false,
        flatten: false,
        skip: false,
        schema: Default::default(),
        default: None,
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let node = StructDef {
        name: "Node".to_owned(),
        existing: None,
        doc: Some("A tree node: every field shape `clone_from` handles.".to_owned()),
        origin: "build.rs".to_owned(),
        fields: vec![
            field("name", Ty::String, false),
            field(
                "children",
                Ty::Vec(Box::new(Ty::Named("Node".to_owned()))),
                false,
            ),
            field(
                "parent",
                Ty::Box(Box::new(Ty::Named("Node".to_owned()))),
                true,
            ),
            field("note", Ty::String, true),
            field("weight", Ty::I64, false),
            field("labels", Ty::Map(Box::new(Ty::String)), false),
        ],
        unknown_fields: None,
        schema: Default::default(),
    };
    let api = Api {
        groups: vec![Group {
            name: "model.example.com".to_owned(),
            module: "model".to_owned(),
            versions: vec![Version {
                name: "v1".to_owned(),
                module: "v1".to_owned(),
                kinds: Vec::new(),
                types: vec![TypeDef::Struct(node)],
            }],
        }],
    };
    let files = generate(&api, &Options::default()).expect("the model emits");
    let text = |path: &str| {
        let file = files.iter().find(|f| f.path == path).expect("file emitted");
        file.contents.clone()
    };
    let out = format!(
        "pub mod v1 {{\npub mod types {{\n{}\n}}\nmod zz_generated_deepcopy {{\n{}\n}}\npub use self::types::*;\n}}\n",
        text("apis/model/v1/types.rs"),
        text("apis/model/v1/zz_generated_deepcopy.rs"),
    );
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{dir}/deepcopy_model.rs"), out).expect("OUT_DIR is writable");

    // What a controller's build.rs does: the sample-controller CRD as one included file.
    kubegen::Builder::new()
        .crd("../fixtures/crds/samplecontroller.yaml")
        .file_name("samplecontroller.rs")
        .generate()
        .unwrap_or_else(|e| panic!("{e}"));

    // What a crate with hand-written API types in src/apis does (`pub mod apis;`).
    kubegen::Builder::rust("../fixtures/rust")
        .types_path("crate::apis")
        .file_name("rust_apis.rs")
        .run();

    // The multi-version CRDs of ../shared/crds whose versions share one schema (istio's),
    // as if converted by a webhook: every conversion between their versions is generated
    // (tests/tests/conversion_crds.rs round-trips them).
    let mut istio = kubegen::Builder::new();
    for name in [
        "istio__gateways.networking.istio.io.yaml",
        "istio__sidecars.networking.istio.io.yaml",
        "istio__requestauthentications.security.istio.io.yaml",
    ] {
        let source = format!("../../shared/crds/{name}");
        println!("cargo:rerun-if-changed={source}");
        let text = std::fs::read_to_string(&source).unwrap_or_else(|e| {
            panic!("{source}: {e} (the shared CRDs sit beside the repository)")
        });
        assert!(
            text.contains("\nspec:\n  group:"),
            "{source}: `spec:` then `  group:` expected"
        );
        let text = text.replace(
            "\nspec:\n  group:",
            "\nspec:\n  conversion:\n    strategy: Webhook\n  group:",
        );
        let path = format!("{dir}/{name}");
        std::fs::write(&path, text).expect("OUT_DIR is writable");
        istio = istio.crd(path);
    }
    istio
        .file_name("istio_conversions.rs")
        .generate()
        .unwrap_or_else(|e| panic!("{e}"));

    // The README's `include!` line names the default file: give it one.
    kubegen::Builder::new()
        .crd("../fixtures/crds/samplecontroller.yaml")
        .generate()
        .unwrap_or_else(|e| panic!("{e}"));

    readme_snippets(&dir);
}

/// The package path of a README snippet of Rust API types (`+genclient`), from its
/// first line: `// src/apis/samplecontroller/v1alpha1/mod.rs` -> `samplecontroller/v1alpha1`.
fn rust_input_package(body: &str) -> Option<String> {
    if !body.contains("+genclient") {
        return None;
    }
    let first = body.lines().next()?;
    let path = first
        .split_whitespace()
        .find(|w| w.starts_with("src/apis/"))?;
    let path = path.strip_prefix("src/apis/")?;
    let path = path
        .strip_suffix("/mod.rs")
        .or_else(|| path.strip_suffix(".rs"))?;
    Some(path.to_owned())
}

/// Every ```` ```rust ```` block of the README becomes a module of
/// `tests/tests/readme.rs` (through `OUT_DIR/readme/mod.rs`), so `cargo test` compiles
/// each snippet as a user would paste it:
///
/// - a block of API types (`+genclient`, its first line naming its file under
///   `src/apis/`) is mounted as `apis` beside the tree `kubegen::Builder::rust` writes
///   from it, as the snippet's crate would;
/// - a block that declares items (`fn main`, `//!` docs, structs) is a file of its own;
///   its `mod generated;` line mounts the golden tree instead (the tree
///   `kubegen generate -f fixtures/crds` writes);
/// - any other block is the body of an `async fn` returning `Result`, where `client`,
///   `foo`, `resync`, `stop` and the event handlers are parameters and the generated
///   tree is `generated` (its `Clientset` and `Foo` in scope).
fn readme_snippets(out: &str) {
    println!("cargo:rerun-if-changed=../README.md");
    let readme = std::fs::read_to_string("../README.md").expect("README.md is readable");
    let dir = format!("{out}/readme");
    std::fs::create_dir_all(&dir).expect("OUT_DIR is writable");
    let mut blocks = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    for (i, line) in readme.lines().enumerate() {
        match &mut current {
            None if line.trim_end() == "```rust" => current = Some((i + 2, Vec::new())),
            Some((start, lines)) if line.trim_end() == "```" => {
                blocks.push((*start, lines.join("\n")));
                current = None;
            }
            Some((_, lines)) => lines.push(line),
            None => {}
        }
    }
    assert!(!blocks.is_empty(), "the README has Rust snippets");
    let mut mods = String::new();
    for (line, body) in &blocks {
        let name = format!("line_{line}");
        let items = body.lines().any(|l| {
            l.starts_with("fn ")
                || l.starts_with("async fn ")
                || l.starts_with("//!")
                || l.starts_with("mod ")
                || l.starts_with("#[tokio::main]")
                || l.starts_with("pub struct ")
        });
        let text = if let Some(package) = rust_input_package(body) {
            // API types: mount them as `apis` and the tree kubegen generates from them
            // (`Builder::rust`, as the snippet's crate would) as `generated`.
            let apis = format!("{dir}/{name}_apis");
            let pkg_dir = format!("{apis}/{package}");
            std::fs::create_dir_all(&pkg_dir).expect("OUT_DIR is writable");
            let segments: Vec<&str> = package.split('/').collect();
            for depth in 0..segments.len() {
                let at = if depth == 0 {
                    apis.clone()
                } else {
                    format!("{apis}/{}", segments[..depth].join("/"))
                };
                std::fs::write(
                    format!("{at}/mod.rs"),
                    format!("pub mod {};\n", segments[depth]),
                )
                .expect("OUT_DIR is writable");
            }
            std::fs::write(format!("{pkg_dir}/mod.rs"), body).expect("OUT_DIR is writable");
            kubegen::Builder::rust(&apis)
                .types_path(format!("crate::readme::{name}::apis"))
                .out_dir(&dir)
                .file_name(format!("{name}_generated.rs"))
                .generate()
                .unwrap_or_else(|e| panic!("README.md line {line}: {e}"));
            format!(
                "#[path = \"{apis}/mod.rs\"]\npub mod apis;\npub mod generated {{\n    include!(\"{dir}/{name}_generated.rs\");\n}}\n"
            )
        } else if items {
            body.replace("mod generated;", "use kubegen_tests::golden as generated;")
        } else {
            format!(
                "use std::time::Duration;\n\
                 use kubegen_runtime::client::WriteOptions;\n\
                 use kubegen_tests::golden as generated;\n\
                 use generated::apis::samplecontroller::v1alpha1::Foo;\n\
                 use generated::clientset::Clientset;\n\
                 pub async fn snippet(\n\
                     client: kube::Client,\n\
                     foo: Foo,\n\
                     resync: Duration,\n\
                     stop: kubegen_runtime::tokio_util::sync::CancellationToken,\n\
                     foo_handler: kubegen_runtime::cache::informer::ResourceEventHandlerFuncs<Foo>,\n\
                     deployment_handler: kubegen_runtime::cache::informer::ResourceEventHandlerFuncs<\n\
                         kubegen_kubernetes::compact::apps::v1::Deployment,\n\
                     >,\n\
                 ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {{\n\
                 {body}\n\
                 Ok(())\n\
                 }}\n"
            )
        };
        std::fs::write(format!("{dir}/{name}.rs"), text).expect("OUT_DIR is writable");
        mods.push_str(&format!(
            "/// README.md line {line}.\n#[allow(unused, dead_code, clippy::all)]\n#[path = \"{dir}/{name}.rs\"]\nmod {name};\n"
        ));
    }
    std::fs::write(format!("{dir}/mod.rs"), mods).expect("OUT_DIR is writable");
}
