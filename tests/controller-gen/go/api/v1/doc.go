// Package v1 is the storage version of the fixture API that hack/controller-gen-compare.sh
// feeds to controller-gen; ../../../rust/fixtures/v1.rs is the same API in Rust.
//
// +groupName=fixtures.kubegen.example.com
package v1
