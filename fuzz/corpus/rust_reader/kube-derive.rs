//! `Document` (`documents.example.com/v1`), derived by kube-derive from its spec.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// What a document says.
#[derive(CustomResource, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "documents.example.com",
    version = "v1",
    kind = "Document",
    namespaced,
    status = "DocumentStatus",
    shortname = "doc",
    derive = "PartialEq",
    schema = "disabled"
)]
pub struct DocumentSpec {
    /// The title.
    pub title: String,
    /// Number of pages.
    #[serde(default)]
    pub pages: i32,
}

/// Whether a document was published.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DocumentStatus {
    /// Whether it is published.
    #[serde(default)]
    pub published: bool,
}
