//! Generates the Foo clientset, listers, informers and fake from the Rust types in
//! src/apis (as `hack/update-codegen.sh` would, but at build time): one file in
//! OUT_DIR, mounted by `src/lib.rs` with `include!`. Errors are reported as cargo
//! errors naming the Builder call to fix.
fn main() {
    kubegen::Builder::rust("src/apis")
        .types_path("crate::apis")
        .run();
}
