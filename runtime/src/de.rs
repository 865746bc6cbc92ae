//! What the `Deserialize` impls kubegen writes for generated structs call.
//!
//! `kubegen generate` writes each struct's `Deserialize` out instead of deriving it.
//! serde's derive compiles, per struct, a field-name enum with its own visitor and a
//! `visit_seq` for structs written as JSON arrays, and every one of them again for each
//! deserializer the struct is read through. The written-out impl asks for a map
//! (`deserialize_map`), so it reads a JSON object only (as Kubernetes does: an array where
//! an object belongs is an error), and finds each key's field with [`FieldSeed`], one
//! type for every struct, whose lookup is a plain function.
//! What a value decodes to, missing and duplicate keys, unknown keys and the error texts
//! stay serde's derive's, so the wire and the errors are unchanged.
//!
//! None of this is meant to be called by hand; it is public so that generated code can
//! reach it, and its items may change with the generator.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, Error, MapAccess, Visitor};

/// A key of a struct's JSON object, found among the struct's field names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// The field at this index of the names given to [`FieldSeed`].
    Field(usize),
    /// A key no field has: skipped, or kept by a struct that keeps unknown keys
    /// ([`OwnedKeySeed`] gives it whole).
    Other,
}

/// Reads a map key and finds it among `fields` (the JSON names, in declaration order),
/// as serde's derived field identifier does: a string or bytes key by name, an integer
/// key by position.
#[derive(Debug, Clone, Copy)]
pub struct FieldSeed(pub &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_identifier(FieldVisitor(self.0))
    }
}

struct FieldVisitor(&'static [&'static str]);

/// The index of `key` in `fields`. A candidate must match the key's length and first byte
/// before the whole key is compared: most names of a struct differ in one or the other,
/// so few comparisons reach `memcmp` (a profile of the compact Pod's decode had it at 4%).
fn find(fields: &[&str], key: &[u8]) -> Key {
    match fields.iter().position(|f| {
        let f = f.as_bytes();
        f.len() == key.len() && f.first() == key.first() && f == key
    }) {
        Some(i) => Key::Field(i),
        None => Key::Other,
    }
}

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_u64<E: Error>(self, v: u64) -> Result<Key, E> {
        Ok(match usize::try_from(v) {
            Ok(i) if i < self.0.len() => Key::Field(i),
            _ => Key::Other,
        })
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<Key, E> {
        Ok(find(self.0, v.as_bytes()))
    }

    fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Key, E> {
        Ok(find(self.0, v))
    }
}

/// A key of a struct that keeps the keys its schema does not declare
/// (`x-kubernetes-preserve-unknown-fields`): a field's index, or the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedKey {
    /// The field at this index of the names given to [`OwnedKeySeed`].
    Field(usize),
    /// A key no field has, as it came.
    Other(String),
}

/// [`FieldSeed`] for structs that keep unknown keys: an unknown key comes back whole.
#[derive(Debug, Clone, Copy)]
pub struct OwnedKeySeed(pub &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for OwnedKeySeed {
    type Value = OwnedKey;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<OwnedKey, D::Error> {
        deserializer.deserialize_identifier(OwnedKeyVisitor(self.0))
    }
}

struct OwnedKeyVisitor(&'static [&'static str]);

impl<'de> Visitor<'de> for OwnedKeyVisitor {
    type Value = OwnedKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<OwnedKey, E> {
        Ok(match find(self.0, v.as_bytes()) {
            Key::Field(i) => OwnedKey::Field(i),
            Key::Other => OwnedKey::Other(v.to_owned()),
        })
    }

    fn visit_string<E: Error>(self, v: String) -> Result<OwnedKey, E> {
        Ok(match find(self.0, v.as_bytes()) {
            Key::Field(i) => OwnedKey::Field(i),
            Key::Other => OwnedKey::Other(v),
        })
    }

    fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<OwnedKey, E> {
        match std::str::from_utf8(v) {
            Ok(s) => self.visit_str(s),
            Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(v), &self)),
        }
    }
}

/// Reads the value of field `name` into `slot`; a second value for the same key is
/// serde's "duplicate field" error.
#[inline]
pub fn next_field<'de, A, T>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> Result<(), A::Error>
where
    A: MapAccess<'de>,
    T: de::Deserialize<'de>,
{
    if slot.is_some() {
        return Err(A::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// Skips the value of a key no field has.
#[inline]
pub fn skip_value<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<de::IgnoredAny>().map(|_| ())
}

/// The value of a field read as an `Option` (`slot` holds `Some(None)` for a `null`):
/// its default when the key was absent or `null`, as
/// [`null_as_default`](crate::object::null_as_default) with `#[serde(default)]` decides
/// it. The compact mirrors' required fields read this way, as k8s-openapi does.
#[inline]
pub fn or_default<T: Default>(slot: Option<Option<T>>) -> T {
    slot.flatten().unwrap_or_default()
}

/// The value of a required field that did not come: as serde's derive decides it, `None`
/// for a type that reads an option (an `Option`), and the "missing field" error for any
/// other.
pub fn missing<'de, T: de::Deserialize<'de>, E: Error>(name: &'static str) -> Result<T, E> {
    T::deserialize(Missing(name, PhantomData))
}

struct Missing<E>(&'static str, PhantomData<E>);

impl<'de, E: Error> Deserializer<'de> for Missing<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, E> {
        Err(E::missing_field(self.0))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// A struct as `kubegen generate` writes it: a required field, an optional one, an
    /// optional one with a JSON name of its own.
    #[derive(Debug, PartialEq)]
    struct Probe {
        name: String,
        size: Option<i64>,
        dns_names: Option<Vec<String>>,
    }

    impl<'de> Deserialize<'de> for Probe {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            const FIELDS: &[&str] = &["name", "size", "dnsNames"];
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Probe;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("struct Probe")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Probe, A::Error> {
                    let (mut f0, mut f1, mut f2) = (None, None, None);
                    while let Some(key) = map.next_key_seed(FieldSeed(FIELDS))? {
                        match key {
                            Key::Field(0) => next_field(&mut map, &mut f0, FIELDS[0])?,
                            Key::Field(1) => next_field(&mut map, &mut f1, FIELDS[1])?,
                            Key::Field(2) => next_field(&mut map, &mut f2, FIELDS[2])?,
                            _ => skip_value(&mut map)?,
                        }
                    }
                    Ok(Probe {
                        name: match f0 {
                            Some(v) => v,
                            None => missing(FIELDS[0])?,
                        },
                        size: f1.unwrap_or_default(),
                        dns_names: f2.unwrap_or_default(),
                    })
                }
            }
            deserializer.deserialize_map(V)
        }
    }

    /// The same struct derived, to compare against.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Derived {
        name: String,
        #[serde(default)]
        size: Option<i64>,
        #[serde(rename = "dnsNames", default)]
        dns_names: Option<Vec<String>>,
    }

    fn both(json: &str) -> (Result<Probe, String>, Result<Derived, String>) {
        (
            serde_json::from_str(json).map_err(|e| e.to_string()),
            serde_json::from_str(json).map_err(|e| e.to_string()),
        )
    }

    #[test]
    fn find_matches_whole_names_only() {
        let fields = ["spec", "", "a", "ab", "ba", "status"];
        let at = |key: &str| match find(&fields, key.as_bytes()) {
            Key::Field(i) => Some(i),
            Key::Other => None,
        };
        assert_eq!(at("spec"), Some(0));
        assert_eq!(at(""), Some(1));
        assert_eq!(at("a"), Some(2));
        assert_eq!(at("ab"), Some(3));
        assert_eq!(at("ba"), Some(4));
        assert_eq!(at("status"), Some(5));
        for other in ["bb", "abc", "b", "spe", "statuS", "sTatus"] {
            assert_eq!(at(other), None, "{other}");
        }
        assert!(matches!(find(&["a"], b""), Key::Other));
    }

    #[test]
    fn values_and_errors_match_the_derive() {
        for json in [
            r#"{"name":"a","size":3,"dnsNames":["x"]}"#,
            r#"{"name":"a"}"#,
            r#"{"name":"a","size":null,"unknown":{"deep":[1,2]}}"#,
            r#"{"size":3}"#,
            r#"{"name":"a","name":"b"}"#,
            r#"{"name":1}"#,
            r#"{"name":"a","size":"x"}"#,
            r#""text""#,
            r#"{"name":"a""#,
        ] {
            let (ours, derived) = both(json);
            match (&ours, &derived) {
                (Ok(o), Ok(d)) => {
                    assert_eq!(
                        (&o.name, o.size, &o.dns_names),
                        (&d.name, d.size, &d.dns_names)
                    )
                }
                (Err(o), Err(d)) => assert_eq!(o, &d.replace("Derived", "Probe"), "{json}"),
                _ => panic!("{json}: {ours:?} against {derived:?}"),
            }
        }
    }

    #[test]
    fn an_array_is_not_a_struct() {
        // serde's derive reads `["a", 3, null]` positionally; Kubernetes rejects it, and
        // so does the written-out impl.
        let err = serde_json::from_str::<Probe>(r#"["a",3,null]"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid type: sequence, expected struct Probe at line 1 column 0"
        );
    }

    #[test]
    fn missing_reads_an_option_as_none() {
        let none: Option<String> = missing::<_, serde_json::Error>("x").unwrap();
        assert_eq!(none, None);
        let err = missing::<String, serde_json::Error>("x").unwrap_err();
        assert_eq!(err.to_string(), "missing field `x`");
    }

    #[test]
    fn keys_are_found_by_name_bytes_and_position() {
        use serde::de::value::{
            BorrowedBytesDeserializer, Error as E, StrDeserializer, U64Deserializer,
        };
        const F: &[&str] = &["a", "b"];
        let seed = FieldSeed(F);
        assert_eq!(
            seed.deserialize(StrDeserializer::<E>::new("b")),
            Ok(Key::Field(1))
        );
        assert_eq!(
            seed.deserialize(StrDeserializer::<E>::new("c")),
            Ok(Key::Other)
        );
        assert_eq!(
            seed.deserialize(BorrowedBytesDeserializer::<E>::new(b"a")),
            Ok(Key::Field(0))
        );
        assert_eq!(
            seed.deserialize(U64Deserializer::<E>::new(1)),
            Ok(Key::Field(1))
        );
        assert_eq!(
            seed.deserialize(U64Deserializer::<E>::new(2)),
            Ok(Key::Other)
        );
        let owned = OwnedKeySeed(F);
        assert_eq!(
            owned.deserialize(StrDeserializer::<E>::new("a")),
            Ok(OwnedKey::Field(0))
        );
        assert_eq!(
            owned.deserialize(StrDeserializer::<E>::new("zz")),
            Ok(OwnedKey::Other("zz".to_owned()))
        );
    }
}
