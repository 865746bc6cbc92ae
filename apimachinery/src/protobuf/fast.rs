//! The support of generated protobuf decoders: a type that implements [`Message`]
//! decodes its message's bytes by field number, straight into its fields, without the
//! table walk and the field-name lookups of [`super::Deserializer`].
//!
//! Contract:
//! - A generated decoder gives exactly what [`super::Deserializer`] gives for the same
//!   bytes (that is, the type decoded from the JSON kube-apiserver would write), or
//!   [`Fallback`]. It handles the common shapes itself (strings, booleans, integers,
//!   lists and maps of strings, nested messages with decoders) and hands every other
//!   field to the table-driven deserializer ([`delegate`]).
//! - [`Fallback`] means "decode this object with [`super::Deserializer`]": a wire type
//!   that does not match the field, bytes that are not UTF-8, a singular message sent in
//!   several parts (protobuf merges them), malformed input. The caller then decodes the
//!   whole object the table-driven way, which decides the value or the error. So the
//!   generated decoders never make up an error, and never differ on odd input.
//! - kubegen writes the decoders (`impl Message`) into the compact mirrors of the
//!   built-in kinds (`kubegen-kubernetes`' `compact` module); this module is what that
//!   generated code calls, not an API to call by hand. k8s-openapi's `ObjectMeta`,
//!   `OwnerReference` and `ManagedFieldsEntry`, which every mirrored kind holds, have
//!   their decoders here.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, ObjectMeta, OwnerReference, Time,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use serde::de::DeserializeOwned;

use super::{Reader as WireReader, Wire, GO_ZERO_TIME_UNIX};

/// The generated decoder cannot decode this input exactly: decode the whole object with
/// [`super::Deserializer`] instead (see the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fallback;

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the generated protobuf decoder handed the object back")
    }
}

impl std::error::Error for Fallback {}

/// The result of a generated decoder.
pub type Result<T> = std::result::Result<T, Fallback>;

/// Where a message is decoded: its nesting (0 for an object), and whether the object's
/// `metadata.managedFields` are left out (as the informers' lists and watches ask).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cx {
    depth: usize,
    skip_managed_fields: bool,
}

impl Cx {
    /// An object's context.
    pub fn object(skip_managed_fields: bool) -> Self {
        Cx {
            depth: 0,
            skip_managed_fields,
        }
    }

    /// The context of a message one level down. Only the object's own `metadata` (one
    /// level down) leaves its `managedFields` out.
    #[inline]
    pub fn deeper(self) -> Self {
        Cx {
            depth: self.depth + 1,
            skip_managed_fields: self.skip_managed_fields && self.depth == 0,
        }
    }
}

/// A type with a generated protobuf decoder (see the module).
pub trait Message: Sized {
    /// The protobuf message the type decodes, as the table names it (`core/v1.Pod`).
    const MESSAGE: &'static str;

    /// Decodes the message's bytes (no envelope), in context `cx` (its nesting, handed
    /// to [`delegate`]).
    fn decode_message(bytes: &[u8], cx: Cx) -> Result<Self>;
}

/// Decodes an object of type `T` from the bytes of protobuf message `message` (a
/// [`super::Deserializer`]'s), with `T`'s generated decoder when it decodes that
/// message; `None` when it does not, or when it handed the object back ([`Fallback`]).
/// With `skip_managed_fields`, the object's `metadata.managedFields` are not decoded
/// (`None`).
pub fn decode_object<T: Message>(
    message: &str,
    bytes: &[u8],
    skip_managed_fields: bool,
) -> Option<T> {
    if message != T::MESSAGE {
        return None;
    }
    T::decode_message(bytes, Cx::object(skip_managed_fields)).ok()
}

/// The fields of a message, in wire order.
pub struct Reader<'a>(WireReader<'a>);

impl<'a> Reader<'a> {
    /// Reads the fields of `bytes`.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader(WireReader(bytes))
    }

    /// The fields of an inlined message (a Go embedded struct, whose fields encoding/json
    /// writes as the outer message's): the occurrence's bytes. `seen` is whether it came
    /// before: the table-driven deserializer rejects an inlined message sent in several
    /// parts, so a second one is handed back.
    #[inline]
    pub fn inlined(v: Value<'a>, seen: &mut bool) -> Result<Self> {
        match v.0 {
            Wire::Len(b) if !*seen => {
                *seen = true;
                Ok(Reader::new(b))
            }
            _ => Err(Fallback),
        }
    }

    /// The next field's number and value; `Ok(None)` at the end.
    #[inline]
    pub fn next_field(&mut self) -> Result<Option<(u64, Value<'a>)>> {
        match self.0.next() {
            None => Ok(None),
            Some(Ok((num, w))) => Ok(Some((num, Value(w)))),
            Some(Err(_)) => Err(Fallback),
        }
    }
}

/// One occurrence of a field on the wire (opaque).
#[derive(Clone, Copy)]
pub struct Value<'a>(Wire<'a>);

/// How encoding/json writes a singular scalar field (string, bool, integer), from its Go
/// declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// A pointer: written when set, whatever its value.
    Pointer,
    /// `omitempty` or `omitzero`: left out when it is the zero value.
    OmitZero,
    /// Always written, its zero value included.
    Always,
}

/// The value the JSON carries for a singular scalar field read into `slot` (`None` when
/// the field did not come), as an `Option` field reads it.
#[inline]
pub fn optional<T: Default + PartialEq>(slot: Option<T>, presence: Presence) -> Option<T> {
    match presence {
        Presence::Pointer => slot,
        Presence::OmitZero => slot.filter(|v| *v != T::default()),
        Presence::Always => Some(slot.unwrap_or_default()),
    }
}

/// A list field: `None` when empty (encoding/json omits it or writes `null`), else
/// [`exact`].
#[inline]
pub fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then(|| exact(v))
}

/// A required list field at its exact capacity: a cached object keeps no spare room
/// (pushing one 440-byte `Container` reserves four).
#[inline]
pub fn exact<T>(mut v: Vec<T>) -> Vec<T> {
    v.shrink_to_fit();
    v
}

/// A map field: `None` when empty (encoding/json omits it or writes `null`).
#[inline]
pub fn non_empty_map<V>(m: BTreeMap<String, V>) -> Option<BTreeMap<String, V>> {
    (!m.is_empty()).then_some(m)
}

fn str_of<'a>(v: Value<'a>) -> Result<&'a str> {
    match v.0 {
        // Go does not check UTF-8 and writes U+FFFD for bad bytes: the table-driven
        // decoder does that.
        Wire::Len(b) => std::str::from_utf8(b).map_err(|_| Fallback),
        _ => Err(Fallback),
    }
}

/// A `string` field: the last occurrence wins.
#[inline]
pub fn string(slot: &mut Option<String>, v: Value<'_>) -> Result<()> {
    let s = str_of(v)?;
    match slot {
        Some(old) => {
            old.clear();
            old.push_str(s);
        }
        None => *slot = Some(s.to_owned()),
    }
    Ok(())
}

/// A `bool` field.
#[inline]
pub fn boolean(slot: &mut Option<bool>, v: Value<'_>) -> Result<()> {
    match v.0 {
        Wire::Varint(n) => {
            *slot = Some(n != 0);
            Ok(())
        }
        _ => Err(Fallback),
    }
}

/// An `int32` field. Go's int32 travels as a two's complement varint; the cast keeps
/// its low 32 bits, as Go's decoder does.
#[inline]
pub fn int32(slot: &mut Option<i32>, v: Value<'_>) -> Result<()> {
    match v.0 {
        Wire::Varint(n) => {
            *slot = Some(n as i32);
            Ok(())
        }
        _ => Err(Fallback),
    }
}

/// An `int32` field read into an `i64`.
#[inline]
pub fn int32_as_i64(slot: &mut Option<i64>, v: Value<'_>) -> Result<()> {
    match v.0 {
        Wire::Varint(n) => {
            *slot = Some(i64::from(n as i32));
            Ok(())
        }
        _ => Err(Fallback),
    }
}

/// An `int64` field.
#[inline]
pub fn int64(slot: &mut Option<i64>, v: Value<'_>) -> Result<()> {
    match v.0 {
        Wire::Varint(n) => {
            *slot = Some(n as i64);
            Ok(())
        }
        _ => Err(Fallback),
    }
}

/// One item of a repeated `string` field.
#[inline]
pub fn push_string(list: &mut Vec<String>, v: Value<'_>) -> Result<()> {
    list.push(str_of(v)?.to_owned());
    Ok(())
}

/// One entry of a `map<string, string>` field: a message of the key (1) and the value
/// (2), either absent meaning `""`; a later entry of the same key wins, as in Go.
#[inline]
pub fn string_entry(map: &mut BTreeMap<String, String>, v: Value<'_>) -> Result<()> {
    let Wire::Len(entry) = v.0 else {
        return Err(Fallback);
    };
    let (mut key, mut value) = ("", "");
    let mut r = Reader::new(entry);
    while let Some((num, v)) = r.next_field()? {
        match num {
            1 => key = str_of(v)?,
            2 => value = str_of(v)?,
            _ => {}
        }
    }
    map.insert(key.to_owned(), value.to_owned());
    Ok(())
}

/// A singular message field with a generated decoder. A second occurrence (protobuf
/// merges the two) is handed back.
#[inline]
pub fn message<T: Message>(slot: &mut Option<T>, v: Value<'_>, cx: Cx) -> Result<()> {
    match (v.0, &slot) {
        (Wire::Len(b), None) => {
            *slot = Some(T::decode_message(b, cx.deeper())?);
            Ok(())
        }
        _ => Err(Fallback),
    }
}

/// The value of a non-pointer message field: the decoded message, or the message of no
/// fields when it did not come (encoding/json writes Go's zero struct).
#[inline]
pub fn or_empty<T: Message>(slot: Option<T>, cx: Cx) -> Result<T> {
    match slot {
        Some(v) => Ok(v),
        None => T::decode_message(&[], cx.deeper()),
    }
}

/// One item of a repeated message field with a generated decoder.
#[inline]
pub fn push_message<T: Message>(list: &mut Vec<T>, v: Value<'_>, cx: Cx) -> Result<()> {
    match v.0 {
        Wire::Len(b) => {
            list.push(T::decode_message(b, cx.deeper())?);
            Ok(())
        }
        _ => Err(Fallback),
    }
}

/// The occurrences of a field handed to the table-driven deserializer ([`delegate`]).
/// One occurrence is kept without allocating.
#[derive(Default)]
pub struct Wires<'a> {
    first: Option<Wire<'a>>,
    more: Vec<Wire<'a>>,
}

impl<'a> Wires<'a> {
    /// Adds an occurrence.
    #[inline]
    pub fn push(&mut self, v: Value<'a>) {
        match self.first {
            None => self.first = Some(v.0),
            Some(first) => {
                if self.more.is_empty() {
                    self.more.push(first);
                }
                self.more.push(v.0);
            }
        }
    }
}

/// A field the generated decoder does not read itself, read by the table-driven
/// deserializer as `T`: `None` when encoding/json would leave the key out (the caller
/// then does what a missing key does), else what `T` deserializes from the key's value.
pub fn delegate<T: DeserializeOwned>(
    message: &'static str,
    num: u64,
    wires: &Wires<'_>,
    cx: Cx,
) -> Result<Option<T>> {
    let all: &[Wire<'_>] = match (&wires.first, wires.more.is_empty()) {
        (None, _) => &[],
        (Some(w), true) => std::slice::from_ref(w),
        (Some(_), false) => &wires.more,
    };
    super::de::field_value(message, num, all, cx.depth + 1).map_err(|_| Fallback)
}

/// A `metav1.Time` field (seconds only: encoding/json writes RFC 3339 without a
/// fraction): `Some(None)` for Go's zero time, which encoding/json writes as `null`, so
/// an `Option<Time>` field is the slot flattened. A second occurrence (merged by
/// protobuf) and a year outside 1..=9999 are handed back.
pub fn time(slot: &mut Option<Option<Time>>, v: Value<'_>) -> Result<()> {
    /// 9999-12-31T23:59:59Z, the last time RFC 3339 writes with four digits.
    const LAST: i64 = 253_402_300_799;
    let (Wire::Len(b), None) = (v.0, &slot) else {
        return Err(Fallback);
    };
    let mut seconds = 0i64;
    let mut r = Reader::new(b);
    while let Some((num, v)) = r.next_field()? {
        match (num, v.0) {
            (1, Wire::Varint(s)) => seconds = s as i64,
            // Nanoseconds: metav1.Time drops them.
            (2, Wire::Varint(_)) => {}
            (1 | 2, _) => return Err(Fallback),
            _ => {}
        }
    }
    *slot = Some(if b.is_empty() || seconds == GO_ZERO_TIME_UNIX {
        None
    } else if (GO_ZERO_TIME_UNIX..=LAST).contains(&seconds) {
        Some(Time(Timestamp::from_second(seconds).map_err(|_| Fallback)?))
    } else {
        return Err(Fallback);
    });
    Ok(())
}

impl Message for ObjectMeta {
    const MESSAGE: &'static str = "meta/v1.ObjectMeta";

    fn decode_message(bytes: &[u8], cx: Cx) -> Result<Self> {
        let (mut name, mut generate_name, mut namespace, mut self_link) = (None, None, None, None);
        let (mut uid, mut resource_version, mut generation) = (None, None, None);
        let (mut creation, mut deletion, mut grace) = (None, None, None);
        let (mut labels, mut annotations) = (BTreeMap::new(), BTreeMap::new());
        let (mut owners, mut finalizers, mut managed) = (Vec::new(), Vec::new(), Vec::new());
        let mut fields = Reader::new(bytes);
        while let Some((num, v)) = fields.next_field()? {
            match num {
                1 => string(&mut name, v)?,
                2 => string(&mut generate_name, v)?,
                3 => string(&mut namespace, v)?,
                4 => string(&mut self_link, v)?,
                5 => string(&mut uid, v)?,
                6 => string(&mut resource_version, v)?,
                7 => int64(&mut generation, v)?,
                8 => time(&mut creation, v)?,
                9 => time(&mut deletion, v)?,
                10 => int64(&mut grace, v)?,
                11 => string_entry(&mut labels, v)?,
                12 => string_entry(&mut annotations, v)?,
                13 => push_message(&mut owners, v, cx)?,
                14 => push_string(&mut finalizers, v)?,
                // The object's own, when asked, are passed by undecoded.
                17 if cx.skip_managed_fields => {}
                17 => push_message(&mut managed, v, cx)?,
                _ => {}
            }
        }
        Ok(ObjectMeta {
            name: optional(name, Presence::OmitZero),
            generate_name: optional(generate_name, Presence::OmitZero),
            namespace: optional(namespace, Presence::OmitZero),
            self_link: optional(self_link, Presence::OmitZero),
            uid: optional(uid, Presence::OmitZero),
            resource_version: optional(resource_version, Presence::OmitZero),
            generation: optional(generation, Presence::OmitZero),
            creation_timestamp: creation.flatten(),
            deletion_timestamp: deletion.flatten(),
            deletion_grace_period_seconds: grace,
            labels: non_empty_map(labels),
            annotations: non_empty_map(annotations),
            owner_references: non_empty(owners),
            finalizers: non_empty(finalizers),
            managed_fields: non_empty(managed),
        })
    }
}

impl Message for OwnerReference {
    const MESSAGE: &'static str = "meta/v1.OwnerReference";

    fn decode_message(bytes: &[u8], _cx: Cx) -> Result<Self> {
        let (mut api_version, mut kind, mut name, mut uid) = (None, None, None, None);
        let (mut controller, mut block) = (None, None);
        let mut fields = Reader::new(bytes);
        while let Some((num, v)) = fields.next_field()? {
            match num {
                5 => string(&mut api_version, v)?,
                1 => string(&mut kind, v)?,
                3 => string(&mut name, v)?,
                4 => string(&mut uid, v)?,
                6 => boolean(&mut controller, v)?,
                7 => boolean(&mut block, v)?,
                _ => {}
            }
        }
        Ok(OwnerReference {
            api_version: api_version.unwrap_or_default(),
            kind: kind.unwrap_or_default(),
            name: name.unwrap_or_default(),
            uid: uid.unwrap_or_default(),
            controller,
            block_owner_deletion: block,
        })
    }
}

impl Message for ManagedFieldsEntry {
    const MESSAGE: &'static str = "meta/v1.ManagedFieldsEntry";

    fn decode_message(bytes: &[u8], cx: Cx) -> Result<Self> {
        let (mut manager, mut operation, mut api_version) = (None, None, None);
        let (mut time_, mut fields_type, mut subresource) = (None, None, None);
        let mut fields_v1 = Wires::default();
        let mut fields = Reader::new(bytes);
        while let Some((num, v)) = fields.next_field()? {
            match num {
                1 => string(&mut manager, v)?,
                2 => string(&mut operation, v)?,
                3 => string(&mut api_version, v)?,
                4 => time(&mut time_, v)?,
                6 => string(&mut fields_type, v)?,
                // JSON text inside protobuf: read by the table-driven deserializer,
                // which reads it in place.
                7 => fields_v1.push(v),
                8 => string(&mut subresource, v)?,
                _ => {}
            }
        }
        Ok(ManagedFieldsEntry {
            manager: optional(manager, Presence::OmitZero),
            operation: optional(operation, Presence::OmitZero),
            api_version: optional(api_version, Presence::OmitZero),
            time: time_.flatten(),
            fields_type: optional(fields_type, Presence::OmitZero),
            fields_v1: delegate::<Option<FieldsV1>>(Self::MESSAGE, 7, &fields_v1, cx)?.flatten(),
            subresource: optional(subresource, Presence::OmitZero),
        })
    }
}

/// The string of a `resource.Quantity` message (field 1; the last one wins, as in Go):
/// what encoding/json writes. A quantity without one is the table-driven decoder's
/// error, so it is handed back.
fn quantity_of(b: &[u8]) -> Result<Quantity> {
    let mut s = "";
    let mut r = Reader::new(b);
    while let Some((num, v)) = r.next_field()? {
        if let (1, Wire::Len(x)) = (num, v.0) {
            s = std::str::from_utf8(x).map_err(|_| Fallback)?;
        }
    }
    if s.is_empty() {
        return Err(Fallback);
    }
    Ok(Quantity(s.to_owned()))
}

/// A `resource.Quantity` field. A second occurrence is handed back.
#[inline]
pub fn quantity(slot: &mut Option<Quantity>, v: Value<'_>) -> Result<()> {
    match (v.0, &slot) {
        (Wire::Len(b), None) => {
            *slot = Some(quantity_of(b)?);
            Ok(())
        }
        _ => Err(Fallback),
    }
}

/// A non-pointer `Quantity` field: what came, or Go's zero quantity (`"0"`), which
/// encoding/json writes when none did.
#[inline]
pub fn quantity_or_zero(slot: Option<Quantity>) -> Quantity {
    slot.unwrap_or_else(|| Quantity("0".to_owned()))
}

/// One entry of a `map<string, Quantity>` field; an entry without a value holds Go's
/// zero quantity.
#[inline]
pub fn quantity_entry(map: &mut BTreeMap<String, Quantity>, v: Value<'_>) -> Result<()> {
    let Wire::Len(entry) = v.0 else {
        return Err(Fallback);
    };
    let (mut key, mut value) = ("", None);
    let mut r = Reader::new(entry);
    while let Some((num, v)) = r.next_field()? {
        match (num, v.0) {
            (1, _) => key = str_of(v)?,
            (2, Wire::Len(b)) => value = Some(quantity_of(b)?),
            (2, _) => return Err(Fallback),
            _ => {}
        }
    }
    map.insert(key.to_owned(), quantity_or_zero(value));
    Ok(())
}

/// An `intstr.IntOrString` field: the string when its type (field 1) is 1, else the
/// integer. A second occurrence is handed back.
#[inline]
pub fn int_or_string(slot: &mut Option<IntOrString>, v: Value<'_>) -> Result<()> {
    let (Wire::Len(b), None) = (v.0, &slot) else {
        return Err(Fallback);
    };
    let (mut is_str, mut int, mut s) = (false, 0i32, "");
    let mut r = Reader::new(b);
    while let Some((num, v)) = r.next_field()? {
        match (num, v.0) {
            (1, Wire::Varint(t)) => is_str = t == 1,
            (2, Wire::Varint(i)) => int = i as i32,
            (3, Wire::Len(x)) => s = std::str::from_utf8(x).map_err(|_| Fallback)?,
            (1..=3, _) => return Err(Fallback),
            _ => {}
        }
    }
    *slot = Some(if is_str {
        IntOrString::String(s.to_owned())
    } else {
        IntOrString::Int(int)
    });
    Ok(())
}

/// A non-pointer `IntOrString` field: what came, or Go's zero value (the integer 0),
/// which encoding/json writes when none did.
#[inline]
pub fn int_or_string_or_zero(slot: Option<IntOrString>) -> IntOrString {
    slot.unwrap_or(IntOrString::Int(0))
}
