//! Conversion between the versions of a kind, hub and spoke (controller-runtime's
//! `conversion.Hub` / `Convertible`).
//!
//! The storage version is the hub; every other served version is a spoke with a
//! `TryFrom` to the hub and back (kubegen generates them, see docs/webhooks.md). A
//! [`HubConverter`] holds one kind's versions and converts an object between any two of
//! them through the hub, which is what a `ConversionReview` asks: `desiredAPIVersion` and
//! the objects, each at its own version.
//!
//! What it guarantees: an object whose version is already the desired one is returned
//! unchanged; any other object is read at its version, converted to the hub, then to
//! the desired version, and written back, so `metadata` (carried as is by the generated
//! conversions) is kept. It does not guarantee that a spoke -> hub -> spoke round trip is
//! the identity: that holds for the generated field copies (the round-trip tests check
//! it) and is up to the user's code for the fields converted by hand.
//!
//! ```
//! use kubegen_runtime::conversion::HubConverter;
//! use kubegen_runtime::k8s_openapi::api::core::v1::ConfigMap;
//!
//! // One version only: the hub. A spoke adds `.spoke::<v1beta1::Foo>()`.
//! let converter = HubConverter::<ConfigMap>::new();
//! let object = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
//! assert_eq!(converter.convert("v1", object.clone()).unwrap(), object);
//! assert!(converter.convert("v2", object).is_err());
//! ```

use std::collections::BTreeMap;
use std::convert::TryFrom;

use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// A conversion between two versions of a kind failed: the message says which field
/// and why (a hand-written conversion's own message, or a version this converter does
/// not hold).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConversionError {
    message: String,
}

impl ConversionError {
    /// An error with `message`, which the API server shows the client (name the field
    /// and the value that cannot be converted).
    pub fn new(message: impl Into<String>) -> Self {
        ConversionError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for ConversionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConversionError {}

type ToHub<H> = Box<dyn Fn(Value) -> Result<H, ConversionError> + Send + Sync>;
type FromHub<H> = Box<dyn Fn(H) -> Result<Value, ConversionError> + Send + Sync>;

/// One version of the kind: how to reach the hub from it and back.
struct Version<H> {
    to_hub: ToHub<H>,
    from_hub: FromHub<H>,
}

/// The versions of one kind, converted through the hub `H` (the storage version).
pub struct HubConverter<H> {
    kind: String,
    versions: BTreeMap<String, Version<H>>,
}

impl<H> std::fmt::Debug for HubConverter<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubConverter")
            .field("kind", &self.kind)
            .field("versions", &self.versions.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn read<K: DeserializeOwned>(object: Value, api_version: &str) -> Result<K, ConversionError> {
    serde_json::from_value(object).map_err(|e| {
        ConversionError::new(format!(
            "the object is not a valid {api_version} object: {e}"
        ))
    })
}

fn write<K: Serialize>(object: K, api_version: &str) -> Result<Value, ConversionError> {
    serde_json::to_value(object)
        .map_err(|e| ConversionError::new(format!("writing the {api_version} object: {e}")))
}

impl<H> HubConverter<H>
where
    H: Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
{
    /// A converter holding the hub's version only.
    pub fn new() -> Self {
        let hub = H::api_version(&()).into_owned();
        let (read_at, write_at) = (hub.clone(), hub.clone());
        let mut versions = BTreeMap::new();
        versions.insert(
            hub,
            Version {
                to_hub: Box::new(move |object| read::<H>(object, &read_at)) as ToHub<H>,
                from_hub: Box::new(move |hub| write(hub, &write_at)) as FromHub<H>,
            },
        );
        HubConverter {
            kind: H::kind(&()).into_owned(),
            versions,
        }
    }

    /// Adds the spoke `S`, converted to the hub and back by its `TryFrom` impls.
    pub fn spoke<S>(mut self) -> Self
    where
        S: Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
        S: TryFrom<H, Error = ConversionError>,
        H: TryFrom<S, Error = ConversionError>,
    {
        let version = S::api_version(&()).into_owned();
        let (read_at, write_at) = (version.clone(), version.clone());
        self.versions.insert(
            version,
            Version {
                to_hub: Box::new(move |object| H::try_from(read::<S>(object, &read_at)?)),
                from_hub: Box::new(move |hub| write(S::try_from(hub)?, &write_at)),
            },
        );
        self
    }

    /// The `apiVersion`s this converter holds, sorted.
    pub fn api_versions(&self) -> impl Iterator<Item = &str> {
        self.versions.keys().map(String::as_str)
    }

    /// `object` at `desired` (an `apiVersion`, `group/version`), through the hub.
    pub fn convert(&self, desired: &str, object: Value) -> Result<Value, ConversionError> {
        let from = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| ConversionError::new("the object has no apiVersion"))?
            .to_owned();
        if from == desired {
            return Ok(object);
        }
        let version = |v: &str| {
            self.versions.get(v).ok_or_else(|| {
                ConversionError::new(format!(
                    "{} is not served at {v}: this converter holds {}",
                    self.kind,
                    self.api_versions().collect::<Vec<_>>().join(", ")
                ))
            })
        };
        let (source, target) = (version(&from)?, version(desired)?);
        (target.from_hub)((source.to_hub)(object)?)
    }
}

impl<H> Default for HubConverter<H>
where
    H: Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}
