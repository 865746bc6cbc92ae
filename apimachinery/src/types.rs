//! Wire types that kubegen-generated code uses where a standard type would lose data.
//!
//! Generated types must round-trip every valid object: what a server sends is what a
//! controller writes back. Four schema constructs have no lossless standard Rust type:
//!
//! - `format: date-time`: k8s-openapi's meta/v1 [`Time`] serializes at second precision
//!   in UTC, so `2024-05-01T10:00:00.123456+02:00` would come back as
//!   `2024-05-01T08:00:00Z`. [`DateTime`] keeps the wire text exactly and parses it only
//!   when asked; it converts to and from [`Time`].
//! - `type: number`: an `f64` turns `1` into `1.0`. Generated code uses
//!   [`serde_json::Number`], which keeps integer and float values apart, instead.
//! - A schema that is exactly meta/v1 `Condition`: k8s-openapi's `Condition` holds its
//!   `lastTransitionTime` as a [`Time`], so it loses the same way. [`Condition`] is the
//!   same six fields with the same JSON shape and a [`DateTime`]; it converts to and from
//!   k8s-openapi's type (the direction into k8s-openapi's loses fractions and offsets).
//! - A `nullable: true` field: `Option<T>` reads `null` and an absent key alike, so an
//!   explicit `null` would be written back absent. [`Nullable`] keeps the three states.
//!
//! This module also holds the constant descriptions generated `register.rs` files fill in
//! for each kind ([`ResourceInfo`], [`PrinterColumn`], [`ScaleSubresource`]): plain data,
//! `const`-constructible, with no behaviour of their own.
//!
//! [`Time`]: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time

use std::fmt;

use k8s_openapi::jiff::Timestamp;

/// An RFC 3339 timestamp that keeps its wire text exactly.
///
/// Deserializing never fails on the text (a server validated it already) and never
/// rewrites it: fractional seconds, their number of digits and the UTC offset all
/// survive a round-trip. [`DateTime::timestamp`] parses on demand.
///
/// Equality compares the text: `...T10:00:00Z` and `...T12:00:00+02:00` are the same
/// instant but different wire values. Compare [`DateTime::timestamp`] results for
/// instants.
///
/// ```
/// use kubegen_apimachinery::types::DateTime;
///
/// let t: DateTime = serde_json::from_str(r#""2024-05-01T10:00:00.123456+02:00""#).unwrap();
/// assert_eq!(t.as_str(), "2024-05-01T10:00:00.123456+02:00");
/// assert_eq!(t.timestamp().unwrap().to_string(), "2024-05-01T08:00:00.123456Z");
/// assert_eq!(serde_json::to_string(&t).unwrap(), r#""2024-05-01T10:00:00.123456+02:00""#);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime {
    text: String,
}

/// Why a [`DateTime`]'s text is not an RFC 3339 timestamp.
#[derive(Debug, thiserror::Error)]
#[error("invalid RFC 3339 timestamp {text:?}: {source}")]
pub struct DateTimeError {
    text: String,
    #[source]
    source: k8s_openapi::jiff::Error,
}

impl DateTime {
    /// Wraps wire text as is, without checking it (as deserializing does).
    pub fn from_text(text: impl Into<String>) -> Self {
        DateTime { text: text.into() }
    }

    /// Formats an instant in UTC with as many fractional digits as it needs
    /// (`2024-05-01T08:00:00Z`, `2024-05-01T08:00:00.5Z`).
    pub fn from_timestamp(timestamp: Timestamp) -> Self {
        DateTime {
            text: timestamp.to_string(),
        }
    }

    /// The current instant, formatted as [`DateTime::from_timestamp`] does.
    pub fn now() -> Self {
        Self::from_timestamp(Timestamp::now())
    }

    /// The wire text, exactly as received or built.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Parses the text as an RFC 3339 timestamp (any offset, any fractional precision).
    pub fn timestamp(&self) -> Result<Timestamp, DateTimeError> {
        self.text
            .parse::<Timestamp>()
            .map_err(|source| DateTimeError {
                text: self.text.clone(),
                source,
            })
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<Timestamp> for DateTime {
    fn from(timestamp: Timestamp) -> Self {
        Self::from_timestamp(timestamp)
    }
}

impl From<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time> for DateTime {
    fn from(time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> Self {
        Self::from_timestamp(time.0)
    }
}

impl TryFrom<&DateTime> for k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    type Error = DateTimeError;

    fn try_from(value: &DateTime) -> Result<Self, Self::Error> {
        value
            .timestamp()
            .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time)
    }
}

impl serde::Serialize for DateTime {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for DateTime {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(DateTime::from_text)
    }
}

/// meta/v1 `Condition` with a lossless `lastTransitionTime`: what generated code uses for
/// an array item schema that is exactly meta/v1 `Condition`.
///
/// The JSON shape is k8s-openapi's `Condition`'s: the same keys in the same order,
/// `observedGeneration` left out when `None`, `lastTransitionTime` required, the four
/// strings empty when absent or `null`, other keys ignored. Only the time differs: it is
/// a [`DateTime`], so `2024-01-01T00:00:00.5+01:00` is written back as it was read.
///
/// Converting from k8s-openapi's `Condition` ([`From`]) is lossless. Converting into it
/// ([`TryFrom`]) keeps the instant but not the text: k8s-openapi writes its time in UTC
/// at second precision. It fails only when the text is not an RFC 3339 timestamp (a
/// server never sends one).
///
/// ```
/// use kubegen_apimachinery::types::Condition;
///
/// let wire = r#"{"lastTransitionTime":"2024-01-01T00:00:00.5+01:00","message":"","reason":"Ok","status":"True","type":"Ready"}"#;
/// let c: Condition = serde_json::from_str(wire).unwrap();
/// assert_eq!(c.type_, "Ready");
/// assert_eq!(serde_json::to_string(&c).unwrap(), wire);
///
/// // Into k8s-openapi's type: the same instant, written in UTC without the fraction.
/// let k8s = k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition::try_from(c).unwrap();
/// assert_eq!(k8s.last_transition_time.0.to_string(), "2023-12-31T23:00:00.5Z");
/// let written = serde_json::to_value(&k8s).unwrap();
/// assert_eq!(written["lastTransitionTime"], "2023-12-31T23:00:00Z");
/// ```
#[derive(Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Condition {
    /// When the condition last changed from one status to another (wire text kept as is).
    #[serde(rename = "lastTransitionTime")]
    pub last_transition_time: DateTime,
    /// A human-readable message about the transition; may be empty.
    #[serde(default, deserialize_with = "string_or_null")]
    pub message: String,
    /// The `.metadata.generation` the condition was set from, when recorded.
    #[serde(
        rename = "observedGeneration",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub observed_generation: Option<i64>,
    /// A CamelCase identifier for the reason of the last transition.
    #[serde(default, deserialize_with = "string_or_null")]
    pub reason: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default, deserialize_with = "string_or_null")]
    pub status: String,
    /// The condition's type (`Ready`, `Available`, ...).
    #[serde(rename = "type", default, deserialize_with = "string_or_null")]
    pub type_: String,
}

/// `null` reads as the empty string, as k8s-openapi's `Condition` reads it.
fn string_or_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    serde::Deserialize::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// Field by field, so `clone_from` reuses the target's strings (generated deepcopy code
/// relies on that).
impl Clone for Condition {
    fn clone(&self) -> Self {
        Condition {
            last_transition_time: self.last_transition_time.clone(),
            message: self.message.clone(),
            observed_generation: self.observed_generation,
            reason: self.reason.clone(),
            status: self.status.clone(),
            type_: self.type_.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.last_transition_time
            .text
            .clone_from(&source.last_transition_time.text);
        self.message.clone_from(&source.message);
        self.observed_generation = source.observed_generation;
        self.reason.clone_from(&source.reason);
        self.status.clone_from(&source.status);
        self.type_.clone_from(&source.type_);
    }
}

impl From<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> for Condition {
    /// Lossless: k8s-openapi's time becomes UTC text with the fractional digits it has.
    fn from(c: k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition) -> Self {
        Condition {
            last_transition_time: DateTime::from(c.last_transition_time),
            message: c.message,
            observed_generation: c.observed_generation,
            reason: c.reason,
            status: c.status,
            type_: c.type_,
        }
    }
}

impl TryFrom<Condition> for k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    type Error = DateTimeError;

    /// Lossy: k8s-openapi serializes the time in UTC at second precision. Fails only when
    /// `lastTransitionTime` is not an RFC 3339 timestamp.
    fn try_from(c: Condition) -> Result<Self, Self::Error> {
        Ok(k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
            last_transition_time: (&c.last_transition_time).try_into()?,
            message: c.message,
            observed_generation: c.observed_generation,
            reason: c.reason,
            status: c.status,
            type_: c.type_,
        })
    }
}

/// A field the schema marks `nullable`: absent, an explicit `null`, or a value.
///
/// `Option<T>` has one state for "no value", so an object that arrives with
/// `"field": null` would be written back without the key. kube-apiserver keeps such
/// nulls, a merge patch reads a `null` as "delete the field", and a required nullable
/// field written back absent is rejected: generated types use `Nullable` for optional
/// nullable fields so each of the three states is written back as it came.
///
/// Generated fields carry `#[serde(default, skip_serializing_if = "Nullable::is_absent")]`:
/// a missing key reads as [`Nullable::Absent`] and is not written; `null` reads as
/// [`Nullable::Null`] and is written as `null`. (Serialized on its own, without the
/// attribute, `Absent` is written as `null` too: only a struct field can be left out.)
/// Conversions from and to `Option` read `None` as absent and give `None` for both
/// absent and null.
///
/// ```
/// use kubegen_apimachinery::types::Nullable;
///
/// #[derive(Debug, PartialEq, serde::Deserialize, serde::Serialize)]
/// struct Spec {
///     #[serde(default, skip_serializing_if = "Nullable::is_absent")]
///     replicas: Nullable<i64>,
/// }
///
/// for wire in [r#"{}"#, r#"{"replicas":null}"#, r#"{"replicas":3}"#] {
///     let spec: Spec = serde_json::from_str(wire).unwrap();
///     assert_eq!(serde_json::to_string(&spec).unwrap(), wire);
/// }
/// let spec: Spec = serde_json::from_str(r#"{"replicas":null}"#).unwrap();
/// assert!(spec.replicas.is_null());
/// assert_eq!(Option::<i64>::from(spec.replicas), None);
/// assert_eq!(Nullable::from(Some(3)), Nullable::Value(3));
/// ```
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub enum Nullable<T> {
    /// The key is not there.
    #[default]
    Absent,
    /// The key is there with the value `null`.
    Null,
    /// The key is there with a value.
    Value(T),
}

impl<T> Nullable<T> {
    /// Whether the key is absent (what generated fields' `skip_serializing_if` asks).
    pub fn is_absent(&self) -> bool {
        matches!(self, Nullable::Absent)
    }

    /// Whether the key holds an explicit `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Nullable::Null)
    }

    /// Whether the key holds a value.
    pub fn is_value(&self) -> bool {
        matches!(self, Nullable::Value(_))
    }

    /// The value, if there is one.
    pub fn as_ref(&self) -> Option<&T> {
        match self {
            Nullable::Value(v) => Some(v),
            Nullable::Absent | Nullable::Null => None,
        }
    }

    /// The value, mutably, if there is one.
    pub fn as_mut(&mut self) -> Option<&mut T> {
        match self {
            Nullable::Value(v) => Some(v),
            Nullable::Absent | Nullable::Null => None,
        }
    }

    /// The value, if there is one (absent and null both give `None`).
    pub fn into_option(self) -> Option<T> {
        match self {
            Nullable::Value(v) => Some(v),
            Nullable::Absent | Nullable::Null => None,
        }
    }
}

/// `clone_from` clones a value into the value already held, reusing its allocations
/// (generated deepcopy code relies on that).
impl<T: Clone> Clone for Nullable<T> {
    fn clone(&self) -> Self {
        match self {
            Nullable::Absent => Nullable::Absent,
            Nullable::Null => Nullable::Null,
            Nullable::Value(v) => Nullable::Value(v.clone()),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        match (&mut *self, source) {
            (Nullable::Value(target), Nullable::Value(value)) => target.clone_from(value),
            _ => *self = source.clone(),
        }
    }
}

/// `None` is absent (an `Option` field is absent when `None`), `Some(v)` a value.
impl<T> From<Option<T>> for Nullable<T> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Nullable::Absent, Nullable::Value)
    }
}

/// Absent and null are both `None`.
impl<T> From<Nullable<T>> for Option<T> {
    fn from(value: Nullable<T>) -> Self {
        value.into_option()
    }
}

impl<T: serde::Serialize> serde::Serialize for Nullable<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Nullable::Value(v) => serializer.serialize_some(v),
            Nullable::Absent | Nullable::Null => serializer.serialize_none(),
        }
    }
}

/// A present key: `null` is [`Nullable::Null`], anything else a value. (An absent key
/// never reaches this: `#[serde(default)]` makes it [`Nullable::Absent`].)
impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Nullable<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Option::<T>::deserialize(deserializer).map(|v| v.map_or(Nullable::Null, Nullable::Value))
    }
}

/// The `apiVersion` field of a generated kind `K`: always `K::API_VERSION` on the wire.
///
/// A zero-sized field, so generated structs keep `#[derive(Deserialize, Serialize)]` and
/// still write `apiVersion` the way k8s-openapi's types do. Deserializing accepts the
/// field absent (list items often omit it) or any string: a typed value has one version,
/// and a server only sends objects of the version asked for.
pub struct ApiVersion<K>(std::marker::PhantomData<fn() -> K>);

/// The `kind` field of a generated kind `K`: always `K::KIND` on the wire.
///
/// Zero-sized; see [`ApiVersion`] for what deserializing accepts.
pub struct Kind<K>(std::marker::PhantomData<fn() -> K>);

macro_rules! type_meta_field {
    ($name:ident, $constant:ident) => {
        impl<K> Default for $name<K> {
            fn default() -> Self {
                $name(std::marker::PhantomData)
            }
        }

        impl<K> Clone for $name<K> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<K> Copy for $name<K> {}

        impl<K> PartialEq for $name<K> {
            fn eq(&self, _: &Self) -> bool {
                true
            }
        }

        impl<K> Eq for $name<K> {}

        impl<K: k8s_openapi::Resource> fmt::Debug for $name<K> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(K::$constant, f)
            }
        }

        impl<K: k8s_openapi::Resource> serde::Serialize for $name<K> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(K::$constant)
            }
        }

        impl<'de, K: k8s_openapi::Resource> serde::Deserialize<'de> for $name<K> {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                // `null` and "" mean unset (as absent does); any other value must be ours.
                let value = Option::<String>::deserialize(deserializer)?;
                match value.as_deref() {
                    None | Some("") => Ok($name(std::marker::PhantomData)),
                    Some(v) if v == K::$constant => Ok($name(std::marker::PhantomData)),
                    Some(v) => Err(serde::de::Error::custom(format_args!(
                        "{} is {:?}, expected {:?}",
                        stringify!($constant),
                        v,
                        K::$constant
                    ))),
                }
            }
        }
    };
}

type_meta_field!(ApiVersion, API_VERSION);
type_meta_field!(Kind, KIND);

/// What a kind declares about itself beyond its Rust type: names, scope, subresources
/// and printer columns, as its CRD (or `+genclient` markers) said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group (`samplecontroller.k8s.io`).
    pub group: &'static str,
    /// API version (`v1alpha1`).
    pub version: &'static str,
    /// Kind (`Foo`).
    pub kind: &'static str,
    /// Kind of the list type (`FooList`).
    pub list_kind: &'static str,
    /// Plural resource name used in URLs (`foos`).
    pub plural: &'static str,
    /// Singular resource name (`foo`).
    pub singular: &'static str,
    /// Short names kubectl accepts (`["fo"]`).
    pub short_names: &'static [&'static str],
    /// Categories the resource belongs to (`["all"]`).
    pub categories: &'static [&'static str],
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Whether the `status` subresource is enabled.
    pub status_subresource: bool,
    /// The `scale` subresource, when enabled.
    pub scale_subresource: Option<ScaleSubresource>,
    /// Additional printer columns (`kubectl get` output).
    pub printer_columns: &'static [PrinterColumn],
    /// Whether this version is served.
    pub served: bool,
    /// Whether this version is the storage version.
    pub storage: bool,
    /// Whether this version is marked deprecated.
    pub deprecated: bool,
    /// The warning the server returns for requests to a deprecated version, when set.
    pub deprecation_warning: Option<&'static str>,
}

/// The JSON paths of a `scale` subresource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleSubresource {
    /// Path of the desired replicas (`.spec.replicas`).
    pub spec_replicas_path: &'static str,
    /// Path of the observed replicas (`.status.replicas`).
    pub status_replicas_path: &'static str,
    /// Path of the label selector in string form, when declared.
    pub label_selector_path: Option<&'static str>,
}

/// One additional printer column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: &'static str,
    /// OpenAPI type of the column (`integer`, `string`, `date`, ...).
    pub type_: &'static str,
    /// OpenAPI format, when declared.
    pub format: Option<&'static str>,
    /// Description, when declared.
    pub description: Option<&'static str>,
    /// Priority (0 shows in the standard view).
    pub priority: i32,
    /// JSON path evaluated against each object.
    pub json_path: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn date_time_round_trips_fractions_and_offsets_exactly() {
        for text in [
            "2024-05-01T10:00:00Z",
            "2024-05-01T10:00:00.5Z",
            "2024-05-01T10:00:00.123456789Z",
            "2024-05-01T10:00:00.120+02:00",
            "2024-05-01T10:00:00-07:30",
            "2024-05-01t10:00:00z",
        ] {
            let json = serde_json::to_string(text).unwrap();
            let parsed: DateTime = serde_json::from_str(&json).unwrap();
            assert_eq!(parsed.as_str(), text);
            assert_eq!(serde_json::to_string(&parsed).unwrap(), json);
            parsed.timestamp().unwrap();
        }
    }

    #[test]
    fn date_time_parses_on_demand_and_keeps_invalid_text() {
        let odd: DateTime = serde_json::from_str(r#""not a time""#).unwrap();
        assert_eq!(serde_json::to_string(&odd).unwrap(), r#""not a time""#);
        let err = odd.timestamp().unwrap_err();
        assert!(err.to_string().contains("not a time"), "{err}");
    }

    #[test]
    fn date_time_converts_to_and_from_meta_v1_time() {
        let t = DateTime::from_text("2024-05-01T10:00:00.25+02:00");
        let time = Time::try_from(&t).unwrap();
        assert_eq!(time.0.to_string(), "2024-05-01T08:00:00.25Z");
        let back = DateTime::from(time);
        assert_eq!(back.as_str(), "2024-05-01T08:00:00.25Z");
        assert_eq!(back.timestamp().unwrap(), t.timestamp().unwrap());
    }

    #[test]
    fn condition_round_trips_its_wire_text_and_reads_like_k8s_openapi() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as K8sCondition;
        let full = r#"{"lastTransitionTime":"2024-01-01T00:00:00.500+01:00","message":"m","observedGeneration":7,"reason":"R","status":"True","type":"Ready"}"#;
        let c: Condition = serde_json::from_str(full).unwrap();
        assert_eq!(serde_json::to_string(&c).unwrap(), full);
        assert_eq!(c.observed_generation, Some(7));

        // Absent and null strings read as empty, observedGeneration absent stays absent,
        // other keys are ignored, a missing time is an error: as k8s-openapi reads them.
        for wire in [
            r#"{"lastTransitionTime":"2024-01-01T00:00:00Z","message":null,"extra":1}"#,
            r#"{"lastTransitionTime":"2024-01-01T00:00:00Z","observedGeneration":null}"#,
            r#"{"type":"Ready"}"#,
        ] {
            let ours = serde_json::from_str::<Condition>(wire);
            let theirs = serde_json::from_str::<K8sCondition>(wire);
            assert_eq!(ours.is_ok(), theirs.is_ok(), "{wire}");
            if let (Ok(ours), Ok(theirs)) = (ours, theirs) {
                assert_eq!(
                    serde_json::to_value(&ours).unwrap(),
                    serde_json::to_value(&theirs).unwrap(),
                    "{wire}"
                );
            }
        }
    }

    #[test]
    fn condition_converts_to_and_from_k8s_openapi_losing_only_the_time_text() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as K8sCondition;
        let ours = Condition {
            last_transition_time: DateTime::from_text("2024-01-01T00:00:00.5+01:00"),
            message: "m".into(),
            observed_generation: Some(2),
            reason: "R".into(),
            status: "False".into(),
            type_: "Ready".into(),
        };
        let theirs = K8sCondition::try_from(ours.clone()).unwrap();
        assert_eq!(
            theirs.last_transition_time.0.to_string(),
            "2023-12-31T23:00:00.5Z"
        );
        assert_eq!(
            (theirs.type_.as_str(), theirs.observed_generation),
            ("Ready", Some(2))
        );
        let back = Condition::from(theirs);
        assert_eq!(back.last_transition_time.as_str(), "2023-12-31T23:00:00.5Z");
        assert_eq!(
            back.last_transition_time.timestamp().unwrap(),
            ours.last_transition_time.timestamp().unwrap()
        );
        assert_eq!(
            Condition {
                last_transition_time: ours.last_transition_time.clone(),
                ..back
            },
            ours
        );

        let bad = Condition {
            last_transition_time: DateTime::from_text("yesterday"),
            ..Condition::default()
        };
        assert!(K8sCondition::try_from(bad).is_err());
    }

    #[test]
    fn condition_clone_from_equals_clone() {
        let source = Condition {
            last_transition_time: DateTime::from_text("2024-01-01T00:00:00Z"),
            message: "new".into(),
            observed_generation: None,
            reason: "R".into(),
            status: "True".into(),
            type_: "Ready".into(),
        };
        let mut target = Condition {
            message: "an older, longer message".into(),
            observed_generation: Some(1),
            ..Condition::default()
        };
        target.clone_from(&source);
        assert_eq!(target, source.clone());
    }

    struct Widget;

    impl k8s_openapi::Resource for Widget {
        const API_VERSION: &'static str = "example.com/v1";
        const GROUP: &'static str = "example.com";
        const KIND: &'static str = "Widget";
        const VERSION: &'static str = "v1";
        const URL_PATH_SEGMENT: &'static str = "widgets";
        type Scope = k8s_openapi::NamespaceResourceScope;
    }

    #[derive(serde::Serialize, serde::Deserialize, Default)]
    struct Typed {
        #[serde(rename = "apiVersion", default)]
        api_version: ApiVersion<Widget>,
        #[serde(default)]
        kind: Kind<Widget>,
    }

    #[test]
    fn type_meta_fields_write_the_kinds_constants_accept_absence_and_reject_others() {
        let out = serde_json::to_value(Typed::default()).unwrap();
        assert_eq!(
            out,
            serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget"})
        );
        let _: Typed = serde_json::from_str("{}").unwrap();
        let _: Typed =
            serde_json::from_str(r#"{"apiVersion": "example.com/v1", "kind": "Widget"}"#).unwrap();
        let wrong_version =
            serde_json::from_str::<Typed>(r#"{"apiVersion": "example.com/v2", "kind": "Widget"}"#)
                .err()
                .unwrap();
        assert!(
            wrong_version.to_string().contains("example.com/v2"),
            "{wrong_version}"
        );
        assert!(serde_json::from_str::<Typed>(r#"{"kind": "Gadget"}"#).is_err());
        assert_eq!(
            format!("{:?}", ApiVersion::<Widget>::default()),
            r#""example.com/v1""#
        );
    }

    #[test]
    fn numbers_keep_integer_and_float_apart() {
        let n: serde_json::Number = serde_json::from_str("1").unwrap();
        assert_eq!(n.to_string(), "1");
        let f: serde_json::Number = serde_json::from_str("1.0").unwrap();
        assert_eq!(f.to_string(), "1.0");
    }

    #[derive(Debug, PartialEq, serde::Deserialize, serde::Serialize)]
    struct WithNullable {
        #[serde(default, skip_serializing_if = "Nullable::is_absent")]
        value: Nullable<serde_json::Value>,
        #[serde(default, skip_serializing_if = "Nullable::is_absent")]
        items: Nullable<Vec<Option<String>>>,
    }

    #[test]
    fn nullable_keeps_absent_null_and_value_apart() {
        for wire in [
            r#"{}"#,
            r#"{"value":null}"#,
            r#"{"value":{"a":null}}"#,
            r#"{"items":null}"#,
            r#"{"items":[null,"x"]}"#,
        ] {
            let read: WithNullable = serde_json::from_str(wire).unwrap();
            assert_eq!(serde_json::to_string(&read).unwrap(), wire);
        }
        let read: WithNullable = serde_json::from_str(r#"{"value":null}"#).unwrap();
        assert!(read.value.is_null() && read.items.is_absent());
    }

    #[test]
    fn nullable_clone_from_reuses_the_value_and_converts_with_option() {
        let mut target = Nullable::Value(String::with_capacity(64));
        let before = target.as_ref().map(|s| s.as_ptr());
        target.clone_from(&Nullable::Value("short".to_owned()));
        assert_eq!(target.as_ref().map(|s| s.as_ptr()), before);
        assert_eq!(target, Nullable::Value("short".to_owned()));
        target.clone_from(&Nullable::Null);
        assert!(target.is_null());
        assert_eq!(Nullable::<u8>::default(), Nullable::Absent);
        assert_eq!(Nullable::from(None::<u8>), Nullable::Absent);
        assert_eq!(Option::<u8>::from(Nullable::Null), None);
        assert_eq!(Option::<u8>::from(Nullable::Value(1)), Some(1));
        assert_eq!(Nullable::Value(2).as_mut().map(|v| *v), Some(2));
    }
}
