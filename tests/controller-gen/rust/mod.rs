//! The fixture API of hack/controller-gen-compare.sh, written in Rust: the same API as
//! `../go/api`, with the same markers, for `kubegen crd` to turn into the CRDs that
//! controller-gen writes from the Go side. Read by `kubegen crd -f`, never compiled.

pub mod fixtures;
