// This crate's integration tests, one binary: each file in this folder is a module
// here rather than a test target of its own, so that the dependencies' code is compiled
// and linked once instead of once per file (minutes of the test stage and most of its
// disk). builder_rust.rs and readme.rs stay targets of their own: they mount generated
// code at the crate root, where a user's build script puts it (`crate::apis`). Run one
// file's tests with a filter: `cargo test -p kubegen-tests --test integration
// apply_builtin::`.

mod apply_builtin;
mod apply_builtin_kinds;
mod apply_configurations;
mod apply_list_types;
mod apply_wire_go;
mod builder;
mod controller_skeleton;
mod conversion;
mod conversion_crds;
mod conversion_webhook;
mod crd_output;
mod deepcopy;
mod generated_e2e;
mod golden;
mod one_factory;
mod register;
mod roundtrip;
mod rust_e2e;
mod synthesized;
