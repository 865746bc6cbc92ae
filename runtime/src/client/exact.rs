//! A deserializer adapter that tells every JSON array's length to the type decoding it,
//! so that each vector is allocated once, at its final size.
//!
//! Contract: inside [`with_lengths`]`(text, f)`, `K::deserialize(Exact::new(de))` over a
//! serde_json deserializer of `text` (borrowed input: `from_str`, `from_slice`) succeeds
//! exactly when `K::deserialize(de)` does, yields the same value and the same errors,
//! and every array of `text` decoded through the adapter announces its exact length as
//! its `size_hint` (serde's `Vec` uses it as its capacity). Outside `with_lengths`, or
//! after anything the adapter cannot follow (below), the hints are those of serde_json
//! (none): the value is still the same, only its capacities are not exact.
//!
//! How: [`with_lengths`] first counts the elements of every array of the text's first
//! JSON value, in the order their `[` appear (one scan that only looks at structure and
//! jumps over strings). Decoding reaches arrays in that same order, so each array
//! decoded through the adapter takes the next count. A value skipped through the adapter
//! (`deserialize_ignored_any`: unknown fields, `metadata.managedFields`) advances the
//! counts past the arrays inside it; a caller that skips values of the same text around
//! the adapter uses [`Ignore`] and [`skip_array`] so that the counts stay in step. Each
//! array checks its count against the elements it really had; on a mismatch (a path
//! the adapter cannot follow, such as a `RawValue` inside the type) the remaining
//! arrays of the text get no hints.
//!
//! Why: serde_json cannot announce lengths, so a decoded `Vec` grows by doubling and
//! keeps the slack (in a typed Pod about 5 KiB of 28 KiB). Compacting afterwards by a
//! deep clone costs a third of the decode again; splitting each array into its elements'
//! text first scans nested arrays two and three times. The structural count is one
//! light pass over the text.
//!
//! The counts live in a thread-local for the duration of `with_lengths`: the entry
//! points that decode a text (`super::decode`, `super::watch`) are not all seeds that
//! could carry them down to the adapter.

use std::cell::RefCell;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde_json::value::RawValue;

use super::adapter::{forward_deserializer, forward_visitor};

/// The array lengths of the text being decoded on this thread.
struct Lengths {
    /// Element counts, in the order of the arrays' `[`.
    lens: Vec<u32>,
    /// The next array's position in `lens`.
    next: usize,
    /// False outside [`with_lengths`] and after a mismatch.
    active: bool,
}

thread_local! {
    static LENGTHS: RefCell<Lengths> = const {
        RefCell::new(Lengths { lens: Vec::new(), next: 0, active: false })
    };
}

/// Runs `f` with the array lengths of `text`'s first JSON value available to every
/// [`Exact`] adapter on this thread (see the module documentation).
pub(crate) fn with_lengths<R>(text: &str, f: impl FnOnce() -> R) -> R {
    /// Restores the enclosing state (a nested call, or none) also when `f` panics.
    struct Restore(Option<(Vec<u32>, usize, bool)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let saved = self.0.take();
            let _ = LENGTHS.try_with(|l| {
                let mut l = l.borrow_mut();
                match saved {
                    Some((lens, next, active)) => {
                        l.lens = lens;
                        l.next = next;
                        l.active = active;
                    }
                    None => {
                        l.active = false;
                        l.next = 0;
                    }
                }
            });
        }
    }
    let restore = LENGTHS.with(|l| {
        let mut l = l.borrow_mut();
        let saved = l
            .active
            .then(|| (std::mem::take(&mut l.lens), l.next, l.active));
        // Outside a nested call, the vector's allocation is reused from the last text.
        l.lens.clear();
        count_arrays(text.as_bytes(), &mut l.lens);
        l.next = 0;
        l.active = true;
        Restore(saved)
    });
    let out = f();
    drop(restore);
    out
}

/// [`with_lengths`] when `exact`, else `f()` with no hints (also inside an enclosing
/// `with_lengths` of another text): the adapter is always on the decoding path (see
/// `super::decode::deserialize`), so this is where exactness is switched.
pub(crate) fn with_lengths_if<R>(exact: bool, text: &str, f: impl FnOnce() -> R) -> R {
    if exact {
        return with_lengths(text, f);
    }
    if !active() {
        return f();
    }
    /// Restores the enclosing call's hints, also when `f` panics.
    struct Resume;
    impl Drop for Resume {
        fn drop(&mut self) {
            let _ = LENGTHS.try_with(|l| l.borrow_mut().active = true);
        }
    }
    LENGTHS.with(|l| l.borrow_mut().active = false);
    let _resume = Resume;
    f()
}

/// The next array's length, `None` when there are no hints.
fn take_next() -> Option<usize> {
    LENGTHS.with(|l| {
        let mut l = l.borrow_mut();
        if !l.active {
            return None;
        }
        let len = l.lens.get(l.next).copied();
        l.next += 1;
        if len.is_none() {
            l.active = false;
        }
        len.map(|n| n as usize)
    })
}

fn active() -> bool {
    LENGTHS.with(|l| l.borrow().active)
}

/// Steps over `n` arrays skipped without the adapter.
fn skip(n: usize) {
    LENGTHS.with(|l| l.borrow_mut().next += n);
}

/// Stops the hints for the rest of the text: its arrays and the counts disagree.
fn mismatch() {
    LENGTHS.with(|l| l.borrow_mut().active = false);
}

/// Steps over one array that a caller decodes without the adapter, around adapted
/// elements (the `items` of a list: the array itself is not decoded through
/// [`Exact`], its elements are).
pub(crate) fn skip_array() {
    skip(1);
}

/// Appends to `lens` the element count of every array in `text`'s first JSON value, in
/// the order of their `[`. Only structure is looked at (strings are jumped over): for
/// valid JSON the counts are exact, for anything else they are only wrong hints, and
/// the decoder reports the error.
fn count_arrays(text: &[u8], lens: &mut Vec<u32>) {
    const OBJECT: u32 = u32::MAX;
    // Per open container: its index in `lens` (an array) or OBJECT.
    let mut open: Vec<u32> = Vec::with_capacity(16);
    // Whether the innermost open array has seen no element yet.
    let mut first = false;
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        i += 1;
        match b {
            b' ' | b'\n' | b'\r' | b'\t' | b':' => {}
            // Nested, not a let chain: benchmarks/examples mount this file in 2021 crates.
            #[allow(clippy::collapsible_if)]
            b',' => {
                if let Some(&top) = open.last() {
                    if let Some(n) = lens.get_mut(top as usize) {
                        *n += 1;
                    }
                }
            }
            b']' | b'}' => {
                open.pop();
                first = false;
                if open.is_empty() {
                    return;
                }
            }
            _ => {
                if first {
                    first = false;
                    if let Some(n) = open.last().and_then(|&top| lens.get_mut(top as usize)) {
                        *n += 1;
                    }
                }
                match b {
                    b'[' => {
                        let Ok(at) = u32::try_from(lens.len()) else {
                            return;
                        };
                        open.push(at);
                        lens.push(0);
                        first = true;
                    }
                    b'{' => open.push(OBJECT),
                    b'"' => i = string_end(text, i),
                    _ => {}
                }
            }
        }
    }
}

/// The index after the closing quote of the string whose content starts at `i`.
///
/// Eight bytes at a time: most strings of an object (its keys) are short, where a
/// `memchr` call costs more than the scan.
fn string_end(text: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const QUOTES: u64 = ONES * b'"' as u64;
    const BACKSLASHES: u64 = ONES * b'\\' as u64;
    loop {
        while let Some(chunk) = text.get(i..i + 8) {
            let Ok(bytes) = <[u8; 8]>::try_from(chunk) else {
                break;
            };
            let x = u64::from_le_bytes(bytes);
            let (q, b) = (x ^ QUOTES, x ^ BACKSLASHES);
            // The high bit of each byte that is a quote or a backslash (exact up to the
            // first such byte, which is all that is used).
            let found = ((q.wrapping_sub(ONES) & !q) | (b.wrapping_sub(ONES) & !b)) & HIGHS;
            if found != 0 {
                i += (found.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        match text.get(i) {
            None => return text.len(),
            Some(b'"') => return i + 1,
            // A backslash: the next byte is escaped.
            Some(b'\\') => i += 2,
            Some(_) => i += 1,
        }
    }
}

/// How many arrays a skipped value's text holds.
fn arrays_in(raw: &str) -> usize {
    let bytes = raw.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        match b {
            b'[' => n += 1,
            b'"' => i = string_end(bytes, i),
            _ => {}
        }
    }
    n
}

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
        self.de.deserialize_seq(Wrap(visitor))
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
        if name.starts_with("$serde_json::private::") {
            // A `RawValue` (or another serde_json token) takes its text whole, arrays
            // and all, without the adapter seeing them.
            mismatch();
            return self.de.deserialize_newtype_struct(name, visitor);
        }
        self.de.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_enum(name, variants, Wrap(visitor))
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        // serde_json also accepts an array of numbers as bytes.
        self.de.deserialize_bytes(Wrap(visitor))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.de.deserialize_byte_buf(Wrap(visitor))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        if !active() {
            return self.de.deserialize_ignored_any(visitor);
        }
        // What serde_json's own skipping does (scan the value, then `visit_unit`), with
        // the text of the value kept to step over the arrays inside it.
        let raw = <&'de RawValue as de::Deserialize<'de>>::deserialize(self.de)?;
        skip(arrays_in(raw.get()));
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }

    forward_deserializer! { @only de;
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_unit deserialize_identifier
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_unit_struct(name, visitor)
    }
}

/// A seed that skips one value of the text through the adapter, keeping the counts in
/// step (for callers that skip fields around adapted values).
pub(crate) struct Ignore;

impl<'de> DeserializeSeed<'de> for Ignore {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        Exact::new(de).deserialize_ignored_any(de::IgnoredAny)?;
        Ok(())
    }
}

/// A visitor whose maps, arrays, options, newtypes and enums hand out wrapped
/// deserializers.
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
        let len = take_next();
        let mut seq = Seq { seq, len, seen: 0 };
        let value = self.0.visit_seq(&mut seq)?;
        if seq.len.is_some_and(|n| n != seq.seen) {
            mismatch();
        }
        Ok(value)
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(Exact::new(de))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(Exact::new(de))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(Enum(data))
    }

    forward_visitor!(@only 0);
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

/// An array whose elements decode through the adapter, with its counted length.
struct Seq<A> {
    seq: A,
    /// The counted length, if known.
    len: Option<usize>,
    /// Elements handed out so far.
    seen: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for &mut Seq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        let next = self.seq.next_element_seed(Seed(seed))?;
        if next.is_some() {
            self.seen += 1;
        }
        Ok(next)
    }

    fn size_hint(&self) -> Option<usize> {
        match self.len {
            Some(n) => Some(n.saturating_sub(self.seen)),
            None => self.seq.size_hint(),
        }
    }
}

/// An enum whose variant's content decodes through the adapter.
struct Enum<A>(A);

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Enum<A> {
    type Error = A::Error;
    type Variant = Enum<A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(seed)?;
        Ok((value, Enum(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Enum<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Wrap(visitor))
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
        with_lengths(text, || {
            let mut de = serde_json::Deserializer::from_str(text);
            let v = T::deserialize(Exact::new(&mut de))?;
            de.end()?;
            Ok(v)
        })
    }

    fn lengths(text: &str) -> Vec<u32> {
        let mut lens = Vec::new();
        count_arrays(text.as_bytes(), &mut lens);
        lens
    }

    #[test]
    fn counts_every_array_of_the_first_value_in_order() {
        assert_eq!(lengths("[]"), [0]);
        assert_eq!(
            lengths(" [ 1 , [2, 3], [], [[]], {\"a\": [true, null]} ] "),
            [5, 2, 0, 1, 0, 2]
        );
        // Brackets, commas and escaped quotes inside strings are not structure.
        assert_eq!(lengths(r#"{"a": ["x,]", "[\"", "\\"], "b": "]["}"#), [3]);
        assert_eq!(
            lengths(r#"{"a": [-1.5e3, "s", false]} ["not", "this"]"#),
            [3]
        );
        assert_eq!(lengths(r#""[1, 2]""#), Vec::<u32>::new());
        // Invalid or cut-off text gives counts, never a panic.
        for text in ["[1, 2", "]]]", "\"abc", r#"{"a": ["x\"#, "[,,]"] {
            let _ = lengths(text);
        }
    }

    #[test]
    fn exactness_is_switched_by_with_lengths_if_not_by_the_adapter() {
        // The adapter is always on the decoding path; only `with_lengths_if` decides.
        fn decode(text: &str) -> Vec<Vec<u8>> {
            let mut de = serde_json::Deserializer::from_str(text);
            Vec::<Vec<u8>>::deserialize(Exact::new(&mut de)).unwrap()
        }
        let text = "[[1, 2, 3], [4, 5, 6, 7, 8]]";
        let exact = with_lengths_if(true, text, || decode(text));
        assert_eq!(exact.iter().map(Vec::capacity).collect::<Vec<_>>(), [3, 5]);
        let plain = with_lengths_if(false, text, || decode(text));
        assert_eq!(plain, exact);
        assert!(!active());

        // Not exact inside an exact decode of another text: no hints from the other
        // text's counts, and the enclosing decode gets its own afterwards.
        let outer = "[[9, 9], [9, 9, 9, 9, 9, 9, 9]]";
        let (inner, after) = with_lengths(outer, || {
            let inner = with_lengths_if(false, text, || {
                assert!(!active());
                decode(text)
            });
            assert!(active());
            (inner, decode(outer))
        });
        assert_eq!(inner, exact);
        assert_eq!(after.iter().map(Vec::capacity).collect::<Vec<_>>(), [2, 7]);
    }

    #[test]
    fn string_ends_are_found_across_eight_byte_chunks() {
        for len in 0..40 {
            for escape_at in 0..=len {
                // `len` plain bytes with an escaped quote (or backslash) inserted at
                // `escape_at`, then the closing quote and more text.
                for escaped in ["\\\"", "\\\\"] {
                    let body = format!(
                        "{}{escaped}{}",
                        "x".repeat(escape_at),
                        "y".repeat(len - escape_at)
                    );
                    let text = format!("\"{body}\",\"next\"");
                    assert_eq!(string_end(text.as_bytes(), 1), body.len() + 2, "{text}");
                }
            }
            let text = format!("\"{}", "z".repeat(len));
            assert_eq!(
                string_end(text.as_bytes(), 1),
                text.len(),
                "unterminated {text}"
            );
        }
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Skipping {
        #[serde(default)]
        first: Vec<u8>,
        last: Vec<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Shape {
        Unit,
        Wrapped(Vec<u8>),
        Pair(Vec<u8>, Vec<u8>),
        Named { items: Vec<u8> },
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Shapes {
        shapes: Vec<Shape>,
        pair: (Vec<u8>, [u8; 2]),
        after: Vec<u8>,
    }

    #[test]
    fn skipped_values_enums_and_tuples_keep_the_counts_in_step() {
        // An unknown field full of arrays between two decoded arrays.
        let text = r#"{"first": [1, 2], "unknown": [[1], {"x": [2, 3]}, "[", []], "last": ["a", "b", "c"]}"#;
        let got: Skipping = exact(text).unwrap();
        assert_eq!(got, serde_json::from_str::<Skipping>(text).unwrap());
        assert_eq!((got.first.capacity(), got.last.capacity()), (2, 3));

        let text = r#"{"shapes": ["Unit", {"Wrapped": [1, 2, 3]}, {"Pair": [[1], [2, 3]]},
            {"Named": {"items": [4, 5, 6, 7]}}], "pair": [[9, 8, 7, 6, 5], [1, 2]], "after": [1, 2, 3]}"#;
        let got: Shapes = exact(text).unwrap();
        assert_eq!(got, serde_json::from_str::<Shapes>(text).unwrap());
        assert_eq!(got.shapes.capacity(), 4);
        let caps: Vec<usize> = got
            .shapes
            .iter()
            .flat_map(|s| match s {
                Shape::Unit => vec![],
                Shape::Wrapped(v) | Shape::Named { items: v } => vec![v.capacity()],
                Shape::Pair(a, b) => vec![a.capacity(), b.capacity()],
            })
            .collect();
        assert_eq!(caps, [3, 1, 2, 4]);
        assert_eq!(got.pair.0.capacity(), 5);
        assert_eq!(got.after.capacity(), 3);
    }

    /// A random JSON value: nested arrays and objects, strings full of the characters a
    /// structural scan must not mistake (brackets, commas, quotes, backslashes).
    fn random_value(rng: &mut impl rand::Rng, depth: u32) -> Value {
        let pick = if depth == 0 {
            rng.random_range(0..4)
        } else {
            rng.random_range(0..6)
        };
        match pick {
            0 => Value::Null,
            1 => Value::from(rng.random_range(-1000i64..1000)),
            2 => Value::from(rng.random::<bool>()),
            3 => {
                const PARTS: [&str; 8] = ["[", "]", ",", "\"", "\\", "{}", "a", "\u{e9}"];
                let n = rng.random_range(0..6);
                Value::from(
                    (0..n)
                        .map(|_| PARTS[rng.random_range(0..PARTS.len())])
                        .collect::<String>(),
                )
            }
            4 => Value::Array(
                (0..rng.random_range(0..5))
                    .map(|_| random_value(rng, depth - 1))
                    .collect(),
            ),
            _ => Value::Object(
                (0..rng.random_range(0..4))
                    .map(|i| (format!("k{i}["), random_value(rng, depth - 1)))
                    .collect(),
            ),
        }
    }

    /// A JSON tree whose arrays are vectors sized by the `size_hint` they are given.
    #[derive(Debug, PartialEq)]
    enum Tree {
        Leaf(Value),
        List(Vec<Tree>),
        Map(Vec<(String, Tree)>),
    }

    impl<'de> Deserialize<'de> for Tree {
        fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Tree, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Tree;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("JSON")
                }
                fn visit_unit<E>(self) -> Result<Tree, E> {
                    Ok(Tree::Leaf(Value::Null))
                }
                fn visit_bool<E>(self, v: bool) -> Result<Tree, E> {
                    Ok(Tree::Leaf(Value::from(v)))
                }
                fn visit_i64<E>(self, v: i64) -> Result<Tree, E> {
                    Ok(Tree::Leaf(Value::from(v)))
                }
                fn visit_u64<E>(self, v: u64) -> Result<Tree, E> {
                    Ok(Tree::Leaf(Value::from(v)))
                }
                fn visit_str<E>(self, v: &str) -> Result<Tree, E> {
                    Ok(Tree::Leaf(Value::from(v)))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
                    let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                    while let Some(t) = seq.next_element()? {
                        items.push(t);
                    }
                    Ok(Tree::List(items))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
                    let mut entries = Vec::new();
                    while let Some(entry) = map.next_entry()? {
                        entries.push(entry);
                    }
                    Ok(Tree::Map(entries))
                }
            }
            de.deserialize_any(V)
        }
    }

    fn assert_exact_capacities(t: &Tree, text: &str) {
        match t {
            Tree::List(items) => {
                assert_eq!(items.capacity(), items.len(), "{text}");
                items.iter().for_each(|t| assert_exact_capacities(t, text));
            }
            Tree::Map(entries) => entries
                .iter()
                .for_each(|(_, t)| assert_exact_capacities(t, text)),
            Tree::Leaf(_) => {}
        }
    }

    #[test]
    fn random_documents_decode_identically_with_exact_capacities() {
        use rand::SeedableRng;
        let seed = 0x6b75_6265;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for _ in 0..2000 {
            let v = random_value(&mut rng, 5);
            for text in [v.to_string(), serde_json::to_string_pretty(&v).unwrap()] {
                let got: Tree = exact(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}: {text}"));
                assert_eq!(
                    got,
                    serde_json::from_str::<Tree>(&text).unwrap(),
                    "seed {seed}: {text}"
                );
                assert_exact_capacities(&got, &text);
                // Unknown fields skipped through the adapter keep the counts in step.
                let wrapped =
                    format!(r#"{{"first": [1, 2], "unknown": {text}, "last": ["a", "b", "c"]}}"#);
                let got: Skipping = exact(&wrapped).unwrap();
                assert_eq!(
                    (got.first.capacity(), got.last.capacity()),
                    (2, 3),
                    "{wrapped}"
                );
            }
        }
    }

    #[derive(Debug, Deserialize)]
    struct WithRaw {
        raw: Box<RawValue>,
        after: Vec<u8>,
    }

    #[test]
    fn a_path_it_cannot_follow_only_turns_the_hints_off() {
        // A RawValue takes its arrays without the adapter: the value is still exact, the
        // later arrays only lose their hints.
        let text = r#"{"raw": [[1], [2]], "after": [1, 2, 3, 4, 5]}"#;
        let got: WithRaw = exact(text).unwrap();
        assert_eq!(got.raw.get(), "[[1], [2]]");
        assert_eq!(got.after, [1, 2, 3, 4, 5]);
        // Without any counts (outside `with_lengths`) the adapter is transparent.
        let mut de = serde_json::Deserializer::from_str(
            r#"{"list": [], "maybe": [1, 2], "nested": [[]], "any": [1]}"#,
        );
        let got = Outer::deserialize(Exact::new(&mut de)).unwrap();
        assert_eq!(got.maybe, Some(vec![1, 2]));
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
