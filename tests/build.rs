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
}
