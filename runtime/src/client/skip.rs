//! A deserializer adapter that drops the top-level `metadata.managedFields` while the
//! object decodes, in the same single pass over the JSON.
//!
//! Contract: `K::deserialize(SkipManagedFields::new(de))` yields what `K::deserialize(de)`
//! yields for the same input with the top-level object's `metadata.managedFields` entry
//! removed: the entry's value is skipped by the inner deserializer (no allocation) and
//! its key never reaches `K`'s visitor. Only the top-level map and its `metadata` value
//! are inspected (their keys pass through as strings); everything below passes through
//! the adapter switched off, so a `managedFields` anywhere else is kept.
//!
//! Compile time: map values stay under the adapter rather than being handed to the
//! inner deserializer bare, so that a type is deserialized through one deserializer type
//! whether or not it is the top level's `metadata` (see [`LevelSeed`]). Lists asked for
//! with `deserialize_seq` are the exception: their items go to the inner deserializer
//! bare, because wrapping them made every type pay the adapter's per-key code, which
//! measured costlier than compiling twice the few types found both inside and outside a
//! list (docs/informer-benchmark.md, "sixth round").

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::adapter::{forward_deserializer, forward_visitor};

/// Where in the object an adapter sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// The object itself: its `metadata` value is inspected.
    Top,
    /// The object's `metadata`: its `managedFields` entry is skipped.
    Meta,
    /// Anywhere else, or switched off ([`SkipManagedFields::with`]`(de, false)`): every
    /// map passes through.
    Off,
}

/// The adapter (see the module documentation).
pub(crate) struct SkipManagedFields<D> {
    de: D,
    level: Level,
}

impl<D> SkipManagedFields<D> {
    /// Wraps the deserializer of a whole object.
    #[cfg(test)]
    pub(crate) fn new(de: D) -> Self {
        Self::with(de, true)
    }

    /// Wraps the deserializer of a whole object, skipping only when `enabled`: one
    /// adapter type either way, so a type decoded with and without skipping has its
    /// `Deserialize` compiled once for the pair (see `super::decode::deserialize`).
    pub(crate) fn with(de: D, enabled: bool) -> Self {
        SkipManagedFields {
            de,
            level: if enabled { Level::Top } else { Level::Off },
        }
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for SkipManagedFields<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.de.deserialize_any(Wrap {
            inner: visitor,
            level: self.level,
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.de.deserialize_map(Wrap {
            inner: visitor,
            level: self.level,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_struct(
            name,
            fields,
            Wrap {
                inner: visitor,
                level: self.level,
            },
        )
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.de.deserialize_option(Wrap {
            inner: visitor,
            level: self.level,
        })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_newtype_struct(
            name,
            Wrap {
                inner: visitor,
                level: self.level,
            },
        )
    }

    forward_deserializer! { de;
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_unit
        deserialize_seq deserialize_identifier deserialize_ignored_any
    }
}

/// A visitor whose maps (and options and newtypes of maps) get inspected.
struct Wrap<V> {
    inner: V,
    level: Level,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(Map {
            map,
            level: self.level,
            value_is_metadata: false,
        })
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(SkipManagedFields {
            de,
            level: self.level,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(SkipManagedFields {
            de,
            level: self.level,
        })
    }

    forward_visitor!(inner);

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_seq(Seq(seq))
    }
}

/// The elements of a list a visitor reached through `deserialize_any` (a `Value`, say):
/// each passes through, under the same adapter type as the map values beside it.
struct Seq<A>(A);

impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Self::Error> {
        self.0.next_element_seed(LevelSeed {
            seed,
            level: Level::Off,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// A map key, borrowed from the input when it has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }
        de.deserialize_str(KeyVisitor)
    }
}

/// The entries of the object (`Top`) or of its metadata (`Meta`).
struct Map<A> {
    map: A,
    level: Level,
    /// The key just handed out was the top level's `metadata`.
    value_is_metadata: bool,
}

impl<'de, A: MapAccess<'de>> Map<A> {
    /// The next key of the top level or its metadata, past a skipped `managedFields`:
    /// the part of `next_key_seed` that does not depend on the seed, compiled once per
    /// map type rather than once per field-name type.
    fn next_inspected_key(&mut self) -> Result<Option<Key<'de>>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            match self.level {
                Level::Top => self.value_is_metadata = key.as_str() == "metadata",
                Level::Meta if key.as_str() == "managedFields" => {
                    self.map.next_value::<IgnoredAny>()?;
                    continue;
                }
                Level::Meta | Level::Off => {}
            }
            return Ok(Some(key));
        }
    }
}

/// A key read by [`Map::next_inspected_key`], handed to the seed as the inner
/// deserializer would have handed it (borrowed when it had no escapes): one type for both.
struct KeyDe<'de, E> {
    key: Key<'de>,
    error: std::marker::PhantomData<E>,
}

impl<'de, E> KeyDe<'de, E> {
    fn new(key: Key<'de>) -> Self {
        KeyDe {
            key,
            error: std::marker::PhantomData,
        }
    }
}

impl<'de, E: de::Error> Deserializer<'de> for KeyDe<'de, E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.key {
            Key::Borrowed(s) => visitor.visit_borrowed_str(s),
            Key::Owned(s) => visitor.visit_string(s),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Self::Error> {
        if self.level == Level::Off {
            return self.map.next_key_seed(seed);
        }
        match self.next_inspected_key()? {
            Some(key) => seed.deserialize(KeyDe::<A::Error>::new(key)).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, Self::Error> {
        let level = if std::mem::take(&mut self.value_is_metadata) {
            Level::Meta
        } else {
            Level::Off
        };
        self.map.next_value_seed(LevelSeed { seed, level })
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// The seed of every value inside the object: the top level's `metadata` is inspected
/// (`Meta`), everything else passes through (`Off`).
///
/// One seed type for both, so that a type below the object is deserialized through one
/// adapter type, `SkipManagedFields<D>`: its `Deserialize` is compiled once, not once
/// for the inspected path and again for the bare one (which doubled the deserialization
/// code of every user type).
struct LevelSeed<S> {
    seed: S,
    level: Level,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for LevelSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(SkipManagedFields {
            de,
            level: self.level,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde::Deserialize;
    use serde_json::{json, Value};

    fn skip<K: for<'de> Deserialize<'de>>(text: &str) -> K {
        let mut de = serde_json::Deserializer::from_str(text);
        let v = K::deserialize(SkipManagedFields::new(&mut de)).unwrap();
        de.end().unwrap();
        v
    }

    #[test]
    fn only_the_top_level_metadata_loses_its_managed_fields() {
        let obj = json!({
            "kind": "Pod",
            "metadata": {"name": "a", "managedFields": [{"manager": "m", "fieldsV1": {"f:x": {}}}],
                "labels": {"managedFields": "label"}, "na\\u006de": "escaped key"},
            "spec": {"metadata": {"managedFields": "kept"}, "managedFields": 1},
            "items": [{"metadata": {"managedFields": "kept in a list"}}, [{"managedFields": 2}]],
            "managedFields": "top-level key kept",
        });
        let v: Value = skip(&obj.to_string());
        let mut want = obj.clone();
        want["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(v, want);

        let typed: Pod = skip(&obj.to_string());
        assert_eq!(typed.metadata.name.as_deref(), Some("a"));
        assert_eq!(typed.metadata.managed_fields, None);
        assert_eq!(
            typed.metadata.labels.unwrap()["managedFields"],
            "label".to_owned()
        );
        let plain: Pod = serde_json::from_value(want).unwrap();
        assert_eq!(skip::<Pod>(&obj.to_string()), plain);
    }

    #[test]
    fn objects_without_metadata_or_with_null_metadata_decode() {
        let v: Value = skip(r#"{"metadata": null, "x": [1, 2]}"#);
        assert_eq!(v, json!({"metadata": null, "x": [1, 2]}));
        let p: Pod = skip(r#"{"spec": {"containers": []}}"#);
        assert!(p.spec.is_some());
        let mut de = serde_json::Deserializer::from_str(r#"{"metadata": 7}"#);
        assert!(Pod::deserialize(SkipManagedFields::new(&mut de)).is_err());
    }
}
