//! A deserializer adapter that tells every JSON array's length to the type decoding it,
//! so that each vector is allocated once, at its final size.
//!
//! Contract: over a serde_json deserializer of borrowed input (`from_str`, `from_slice`),
//! `K::deserialize(Exact::new(de))` succeeds exactly when `K::deserialize(de)` does and
//! yields the same value; only error messages may differ (the position of an error inside
//! an array is counted from the start of its element). Each array reached through
//! `deserialize_seq` (every `Vec`, also inside `Option`s, maps and newtypes) is first
//! split into its elements' raw text, one scan, and then decoded element by element with
//! an exact `size_hint`, which serde's `Vec` uses as its capacity. Arrays decoded through
//! `deserialize_any` (a `serde_json::Value`, untagged enums) and skipped values are passed
//! through untouched.
//!
//! Why: serde_json cannot announce lengths, so a decoded `Vec` grows by doubling and
//! keeps the slack (in a typed Pod about 5 KiB of 28 KiB); compacting it afterwards by a
//! deep clone costs as much as a third of the decode again (every allocation twice), where
//! the extra scan of array text costs a fraction of that.
//!
//! Over another deserializer the adapter fails on the first array (it reads arrays as
//! serde_json raw values); it is crate-internal and only used on serde_json input.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::adapter::{forward_deserializer, forward_visitor};

/// The adapter (see the module documentation).
pub(crate) struct Exact<D> {
    de: D,
}

impl<D> Exact<D> {
    /// Wraps the deserializer of a whole value.
    pub(crate) fn new(de: D) -> Self {
        Exact { de }
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Exact<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.de.deserialize_any(Wrap(visitor))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        // Anything but an array fails here, as the inner deserializer's `deserialize_seq`
        // would.
        let items: Elements<'de> = self.de.deserialize_seq(ElementsVisitor)?;
        visitor.visit_seq(Split {
            items,
            next: 0,
            error: std::marker::PhantomData,
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.de.deserialize_map(Wrap(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_struct(name, fields, Wrap(visitor))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.de.deserialize_option(Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_newtype_struct(name, Wrap(visitor))
    }

    forward_deserializer! { de;
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_unit
        deserialize_identifier deserialize_ignored_any
    }
}

/// How many elements of an array are held without an allocation: most arrays of
/// Kubernetes objects are shorter.
const INLINE_ELEMENTS: usize = 8;

/// The raw text of an array's elements, in order: the first [`INLINE_ELEMENTS`] inline,
/// the rest in `spill`.
struct Elements<'de> {
    inline: [Option<&'de RawValue>; INLINE_ELEMENTS],
    spill: Vec<&'de RawValue>,
    len: usize,
}

impl<'de> Elements<'de> {
    fn get(&self, i: usize) -> Option<&'de RawValue> {
        match i.checked_sub(INLINE_ELEMENTS) {
            None => self.inline.get(i).copied().flatten(),
            Some(j) => self.spill.get(j).copied(),
        }
    }
}

struct ElementsVisitor;

impl<'de> Visitor<'de> for ElementsVisitor {
    type Value = Elements<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Elements<'de>, A::Error> {
        let mut items = Elements {
            inline: [None; INLINE_ELEMENTS],
            spill: Vec::new(),
            len: 0,
        };
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            match items.inline.get_mut(items.len) {
                Some(slot) => *slot = Some(raw),
                None => items.spill.push(raw),
            }
            items.len += 1;
        }
        Ok(items)
    }
}

/// The elements of one array, each decoded from its own text.
struct Split<'de, E> {
    items: Elements<'de>,
    next: usize,
    error: std::marker::PhantomData<fn() -> E>,
}

impl<'de, E: de::Error> SeqAccess<'de> for Split<'de, E> {
    type Error = E;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, E> {
        let Some(raw) = self.items.get(self.next) else {
            return Ok(None);
        };
        self.next += 1;
        let mut de = serde_json::Deserializer::from_str(raw.get());
        let value = seed.deserialize(Exact::new(&mut de)).map_err(E::custom)?;
        de.end().map_err(E::custom)?;
        Ok(Some(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len - self.next)
    }
}

/// A visitor whose maps, options and newtypes hand out wrapped deserializers.
struct Wrap<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(Map(map))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(Seq(seq))
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(Exact::new(de))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(Exact::new(de))
    }

    forward_visitor!(0);
}

/// A map whose values decode through the adapter (keys pass through).
struct Map<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(seed)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// An array reached through `deserialize_any`: its elements decode through the adapter.
struct Seq<A>(A);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// A seed whose deserializer is wrapped.
struct Seed<T>(T);

impl<'de, T: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<T> {
    type Value = T::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<T::Value, D::Error> {
        self.0.deserialize(Exact::new(de))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::{json, Value};

    fn exact<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let v = T::deserialize(Exact::new(&mut de))?;
        de.end()?;
        Ok(v)
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        list: Vec<Inner>,
        maybe: Option<Vec<u32>>,
        nested: Vec<Vec<String>>,
        any: Value,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        name: String,
        ports: Vec<u16>,
    }

    #[test]
    fn decodes_as_serde_json_does_with_exact_capacities() {
        let text = r#"{"list": [{"name": "a", "ports": [1, 2, 3]}, {"name": "b\u0041", "ports": []}],
            "maybe": [7], "nested": [["x"], [], ["y", "z"]], "any": [1, {"k": [2]}]}"#;
        let got: Outer = exact(text).unwrap();
        assert_eq!(got, serde_json::from_str::<Outer>(text).unwrap());
        assert_eq!(got.list.capacity(), 2);
        assert_eq!(got.list[0].ports.capacity(), 3);
        assert_eq!(got.maybe.as_ref().map(Vec::capacity), Some(1));
        assert_eq!(got.nested[2].capacity(), 2);
        // Longer than the inline part: the rest spills, in order.
        let long: Vec<u32> = (0..20).collect();
        let text = serde_json::json!({"list": [], "maybe": long, "nested": [], "any": null});
        let got: Outer = exact(&text.to_string()).unwrap();
        assert_eq!(got.maybe.as_deref(), Some(long.as_slice()));
        assert_eq!(got.maybe.map(|v| v.capacity()), Some(20));
        let pod = json!({"metadata": {"name": "p", "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u"}]},
            "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}], "args": ["a", "b", "c", "d", "e"]}]}});
        let typed: k8s_openapi::api::core::v1::Pod = exact(&pod.to_string()).unwrap();
        assert_eq!(typed, serde_json::from_value(pod).unwrap());
        let spec = typed.spec.unwrap();
        assert_eq!(spec.containers[0].args.as_ref().map(Vec::capacity), Some(5));
        assert_eq!(
            spec.containers[0].ports.as_ref().map(Vec::capacity),
            Some(1)
        );
    }

    #[test]
    fn fails_where_serde_json_fails() {
        for text in [
            r#"{"list": null, "maybe": null, "nested": [], "any": 1}"#,
            r#"{"list": [{"name": "a", "ports": [70000]}], "maybe": null, "nested": [], "any": 1}"#,
            r#"{"list": [{"name": "a", "ports": [1,]}], "maybe": null, "nested": [], "any": 1}"#,
            r#"{"list": [], "maybe": {}, "nested": [], "any": 1}"#,
            r#"{"list": [], "maybe": null, "nested": [[1]], "any": 1}"#,
        ] {
            assert!(serde_json::from_str::<Outer>(text).is_err(), "{text}");
            assert!(exact::<Outer>(text).is_err(), "{text}");
        }
        let ok = r#"{"list": [], "maybe": null, "nested": [], "any": null}"#;
        assert_eq!(
            exact::<Outer>(ok).unwrap(),
            serde_json::from_str::<Outer>(ok).unwrap()
        );
    }
}
