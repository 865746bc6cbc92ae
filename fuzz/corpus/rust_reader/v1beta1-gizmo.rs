//! +groupName=example.com
//! A cluster-scoped kind without status verbs, and the ways a struct opts out of a
//! generated deep copy.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// A cluster-wide gizmo.
///
/// +genclient
/// +genclient:nonNamespaced
/// +genclient:noStatus
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Gizmo {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default)]
    pub spec: GizmoSpec,
    /// Written by the gizmo's controller with a plain update (no status subresource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<GizmoStatus>,
}

/// The gizmo's settings.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GizmoSpec {
    /// Its color.
    #[serde(default)]
    pub color: Color,
    /// Whether it is switched on.
    #[serde(default)]
    pub enabled: bool,
    /// Its size in millimetres.
    #[serde(default)]
    pub size_millis: i64,
    /// Its shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
}

/// A shape: an enum without `Clone`, which kubegen's deep copy gives one.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Shape {
    /// A point.
    Point,
    /// A circle of a radius.
    Circle(i64),
    /// A rectangle.
    Rectangle {
        /// Width.
        width: i64,
        /// Height.
        height: i64,
        /// A label.
        label: String,
    },
}

/// The gizmo's state.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GizmoStatus {
    /// Whether it is on.
    #[serde(default)]
    pub on: bool,
}

/// A color; enums implement `Clone` themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Color {
    /// Red.
    #[default]
    Red,
    /// Blue.
    Blue,
}

/// A helper with a private field: not an API type, so it opts out of the deep copy
/// the package asks for.
///
/// +k8s:deepcopy-gen=false
#[derive(Debug, Default)]
pub struct Cache {
    entries: Vec<String>,
}

impl Cache {
    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A struct with a hand-written `Clone`: kubegen leaves it alone.
#[derive(Debug, Default, PartialEq)]
pub struct Handmade {
    /// A value.
    pub value: String,
}

impl Clone for Handmade {
    fn clone(&self) -> Self {
        Handmade {
            value: self.value.clone(),
        }
    }
}
