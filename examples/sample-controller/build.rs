//! Generates the Foo clientset, listers, informers and fake from the Rust types in
//! src/apis (as `hack/update-codegen.sh` would, but at build time): one file in
//! OUT_DIR, mounted by `src/lib.rs` with `include!`. Errors are reported as cargo
//! errors naming the Builder call to fix. The Foo CRD is written from the same types
//! (`kubegen crd`) into OUT_DIR/crds; `crd/` holds the same file for `kubectl apply`,
//! checked by `hack/verify-codegen.sh`.
fn main() {
    kubegen::Builder::rust("src/apis")
        .types_path("crate::apis")
        .crds("crds")
        .run();
}
