//! A serde [`Deserializer`](serde::Deserializer) over protobuf bytes: typed objects
//! (k8s-openapi's, or any serde type) decode straight from the wire, without building
//! the JSON first.
//!
//! Contract: for every message, the deserializer presents exactly the map
//! [`super::decode`] would build (the JSON kube-apiserver writes), key by key in the
//! table's order: the same fields omitted, the same `null`s, the same numbers and
//! strings. So `T::deserialize(Deserializer)` equals `serde_json::from_value::<T>` of
//! that JSON, for any `T`. Messages, strings, integers, booleans, lists and maps are
//! handed to the visitor as they are read; the special types (`Time`, `Quantity`,
//! `IntOrString`, `RawExtension`, ...) are built as the small JSON value they stand for
//! and handed on from there. Keys a visitor ignores (`deserialize_ignored_any`) are not
//! decoded at all.

use std::borrow::Cow;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserializer as _;
use serde_json::Value;

use super::{
    err, merged, table, varint, wire_is_zero, Decoder, Field, Reader, Table, Ty, Unsupported, Wire,
    MAX_DEPTH,
};

impl de::Error for Unsupported {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Unsupported(msg.to_string())
    }
}

/// The parts of a `k8s\0` envelope (`runtime.Unknown`).
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    /// `typeMeta.apiVersion`.
    pub api_version: &'a str,
    /// `typeMeta.kind`.
    pub kind: &'a str,
    /// The object's bytes.
    pub raw: &'a [u8],
}

/// Reads the envelope of a protobuf body: the `k8s\0` magic and a `runtime.Unknown`.
pub fn envelope(body: &[u8]) -> Result<Envelope<'_>, Unsupported> {
    let Some(rest) = body.strip_prefix(super::MAGIC) else {
        return err("the body does not start with the k8s protobuf magic");
    };
    let mut env = Envelope {
        api_version: "",
        kind: "",
        raw: &[],
    };
    for field in Reader(rest) {
        match field? {
            (1, Wire::Len(tm)) => {
                for f in Reader(tm) {
                    match f? {
                        (1, Wire::Len(s)) => env.api_version = str_of(s, "typeMeta.apiVersion")?,
                        (2, Wire::Len(s)) => env.kind = str_of(s, "typeMeta.kind")?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Len(r)) => env.raw = r,
            (3, Wire::Len(enc)) if !enc.is_empty() => {
                return err(format!(
                    "content encoding {:?} is not supported",
                    String::from_utf8_lossy(enc)
                ))
            }
            _ => {}
        }
    }
    Ok(env)
}

fn str_of<'a>(b: &'a [u8], what: &str) -> Result<&'a str, Unsupported> {
    std::str::from_utf8(b).map_err(|_| Unsupported(format!("{what} is not UTF-8")))
}

/// The protobuf message name of a built-in kind, or why there is none.
fn message_of(
    t: &'static Table,
    api_version: &str,
    kind: &str,
) -> Result<&'static str, Unsupported> {
    t.kinds
        .get(api_version)
        .and_then(|ks| ks.get(kind))
        .or_else(|| t.meta_kinds.get(kind))
        .map(String::as_str)
        .ok_or_else(|| {
            Unsupported(format!(
                "{kind:?} in {api_version:?} is not a built-in kind; protobuf is only for built-in kinds"
            ))
        })
}

/// Decodes a whole protobuf body (`k8s\0`, `runtime.Unknown`) into `T`, with the
/// envelope's `apiVersion` and `kind` as the object's.
pub fn from_envelope<T: de::DeserializeOwned>(body: &[u8]) -> Result<T, Unsupported> {
    T::deserialize(Deserializer::object(envelope(body)?)?)
}

/// One page of a list in protobuf: its metadata, and its items still encoded.
#[derive(Debug)]
pub struct List<'a> {
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// `metadata.continue`.
    pub continue_token: String,
    /// `metadata.remainingItemCount`.
    pub remaining_item_count: Option<i64>,
    /// The items' bytes, in order.
    pub items: Vec<&'a [u8]>,
    message: &'static str,
}

impl<'a> List<'a> {
    /// Reads a list body (`k8s\0`, a `runtime.Unknown` of kind `<Kind>List`).
    pub fn parse(body: &'a [u8]) -> Result<List<'a>, Unsupported> {
        let env = envelope(body)?;
        let Some(item_kind) = env.kind.strip_suffix("List") else {
            return err(format!("{:?} is not a list kind", env.kind));
        };
        let message = message_of(table(), env.api_version, item_kind)?;
        let mut list = List {
            resource_version: String::new(),
            continue_token: String::new(),
            remaining_item_count: None,
            items: Vec::new(),
            message,
        };
        for field in Reader(env.raw) {
            match field? {
                (1, Wire::Len(meta)) => {
                    for f in Reader(meta) {
                        match f? {
                            (2, Wire::Len(s)) => list.resource_version = super::utf8(s),
                            (3, Wire::Len(s)) => list.continue_token = super::utf8(s),
                            (4, Wire::Varint(n)) => list.remaining_item_count = Some(n as i64),
                            _ => {}
                        }
                    }
                }
                (2, Wire::Len(item)) => list.items.push(item),
                _ => {}
            }
        }
        Ok(list)
    }

    /// The deserializer of one item's bytes (from [`List::items`]): the item as the
    /// JSON list's item, without `apiVersion` and `kind`.
    pub fn item(&self, bytes: &'a [u8]) -> Deserializer<'a> {
        Deserializer {
            bytes,
            message: self.message,
            type_meta: None,
            depth: 0,
        }
    }
}

/// One event of a protobuf watch stream: a frame's `metav1.WatchEvent`.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub kind: &'a str,
    /// The object, a whole protobuf body (`k8s\0` and its envelope).
    pub object: &'a [u8],
}

/// Reads one watch frame (without its 4-byte length prefix).
pub fn watch_event(frame: &[u8]) -> Result<Event<'_>, Unsupported> {
    let mut ev = Event {
        kind: "",
        object: &[],
    };
    for field in Reader(frame) {
        match field? {
            (1, Wire::Len(s)) => ev.kind = str_of(s, "the watch event's type")?,
            (2, Wire::Len(raw)) => {
                for f in Reader(raw) {
                    if let (1, Wire::Len(obj)) = f? {
                        ev.object = obj;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(ev)
}

/// Deserializes one protobuf message as the JSON object kube-apiserver would write for it.
#[derive(Debug, Clone, Copy)]
pub struct Deserializer<'a> {
    bytes: &'a [u8],
    message: &'static str,
    /// `apiVersion` and `kind`, written first, for a top-level object.
    type_meta: Option<(&'a str, &'a str)>,
    depth: usize,
}

impl<'a> Deserializer<'a> {
    /// The deserializer of a whole object, with its `apiVersion` and `kind`.
    pub fn object(env: Envelope<'a>) -> Result<Self, Unsupported> {
        Ok(Deserializer {
            bytes: env.raw,
            message: message_of(table(), env.api_version, env.kind)?,
            type_meta: Some((env.api_version, env.kind)),
            depth: 0,
        })
    }
}

fn fields_of(message: &str) -> Result<&'static [Field], Unsupported> {
    match table().messages.get(message) {
        Some(f) => Ok(f),
        None => err(format!("no protobuf description of {message}")),
    }
}

/// The value-less decoder of the JSON path, for the special types.
fn json_decoder() -> Decoder {
    Decoder {
        t: table(),
        depth: Default::default(),
    }
}

impl<'de> serde::Deserializer<'de> for Deserializer<'_> {
    type Error = Unsupported;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        if self.depth >= MAX_DEPTH {
            return err(format!(
                "{}: messages nested deeper than {MAX_DEPTH}",
                self.message
            ));
        }
        let mut access = Fields {
            base: None,
            inlined: Vec::new(),
            type_meta: self.type_meta,
            pending: None,
            depth: self.depth + 1,
        };
        access.push(self.bytes, fields_of(self.message)?)?;
        visitor.visit_map(access)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        visitor.visit_some(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        visitor.visit_unit()
    }

    /// As serde_json: a newtype (k8s-openapi's `Time`, `Quantity`, ...) wraps the value.
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Unsupported> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier
    }
}

/// The fields of one message (and of the messages inlined into it) being read.
struct Frame<'a> {
    fields: &'static [Field],
    /// (field index, value), ordered by field index (stable: repeated values in order).
    wires: Vec<(u16, Wire<'a>)>,
    next_field: usize,
    next_wire: usize,
}

struct Fields<'a> {
    /// The message's own fields, then (`inlined`) those of the messages inlined into it.
    base: Option<Frame<'a>>,
    inlined: Vec<Frame<'a>>,
    type_meta: Option<(&'a str, &'a str)>,
    /// The value of the key just returned.
    pending: Option<Pending<'a>>,
    depth: usize,
}

enum Pending<'a> {
    Str(&'a str),
    Field(&'static Field, Ws<'a>, Shape),
}

/// The occurrences of one field: almost always one, kept without allocating.
enum Ws<'a> {
    One(Wire<'a>),
    Many(Vec<Wire<'a>>),
}

impl<'a> Ws<'a> {
    fn as_slice(&self) -> &[Wire<'a>] {
        match self {
            Ws::One(w) => std::slice::from_ref(w),
            Ws::Many(v) => v,
        }
    }
}

/// What a field's value is, decided from its wires as encoding/json would decide it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Null,
    Value,
}

impl<'a> Fields<'a> {
    fn push(&mut self, bytes: &'a [u8], fields: &'static [Field]) -> Result<(), Unsupported> {
        let mut wires = Vec::with_capacity(fields.len().min(16));
        let mut sorted = true;
        let mut last = 0u16;
        for field in Reader(bytes) {
            let (num, wire) = field?;
            // Fields mostly come in the table's order: the one after the last is tried
            // first. Unknown numbers are skipped, as generated Go decoders skip them.
            let next = usize::from(last) + 1;
            let found = match fields.get(next) {
                Some(f) if f.num == num => Some(next),
                _ => fields.iter().position(|f| f.num == num),
            };
            if let Some(i) = found {
                let i = i as u16;
                sorted &= i >= last;
                last = i;
                wires.push((i, wire));
            }
        }
        if !sorted {
            wires.sort_by_key(|(i, _)| *i);
        }
        let frame = Frame {
            fields,
            wires,
            next_field: 0,
            next_wire: 0,
        };
        if self.base.is_none() {
            self.base = Some(frame);
        } else {
            self.inlined.push(frame);
        }
        Ok(())
    }

    /// The next field encoding/json writes, with its value's shape.
    fn next_field(&mut self) -> Result<Option<(&'static Field, Ws<'a>, Shape)>, Unsupported> {
        loop {
            let frame = match self.inlined.last_mut() {
                Some(f) => f,
                None => match self.base.as_mut() {
                    Some(f) => f,
                    None => return Ok(None),
                },
            };
            let Some(f) = frame.fields.get(frame.next_field) else {
                if self.inlined.pop().is_none() {
                    self.base = None;
                }
                continue;
            };
            let i = frame.next_field as u16;
            frame.next_field += 1;
            let start = frame.next_wire;
            while frame
                .wires
                .get(frame.next_wire)
                .is_some_and(|(j, _)| *j == i)
            {
                frame.next_wire += 1;
            }
            let wires = match &frame.wires[start..frame.next_wire] {
                [(_, w)] => Ws::One(*w),
                many => Ws::Many(many.iter().map(|(_, w)| *w).collect()),
            };
            if f.inline {
                if f.pointer && wires.as_slice().is_empty() {
                    continue;
                }
                let Ty::Msg(m) = &f.ty else {
                    return err(format!("{} is inline but not a message", f.json));
                };
                let bytes = match wires.as_slice() {
                    [] => &[][..],
                    [Wire::Len(b)] => *b,
                    _ => {
                        return err(format!(
                            "{}: an inline message sent in several parts is not supported",
                            f.json
                        ))
                    }
                };
                self.push(bytes, fields_of(m)?)?;
                continue;
            }
            if let Some(shape) = shape(f, wires.as_slice())? {
                return Ok(Some((f, wires, shape)));
            }
        }
    }
}

/// Whether the scalar items of a repeated field may come packed.
fn packable(ty: &Ty) -> bool {
    matches!(
        ty,
        Ty::Bool | Ty::I32 | Ty::I64 | Ty::U32 | Ty::U64 | Ty::Double
    )
}

/// The number of items the occurrences of a repeated field carry.
fn item_count(ty: &Ty, wires: &[Wire<'_>]) -> Result<usize, Unsupported> {
    let mut n = 0;
    for w in wires {
        match (ty, w) {
            (Ty::Double, Wire::Len(b)) => n += b.len() / 8,
            (t, Wire::Len(b)) if packable(t) => {
                n += b.iter().filter(|&&c| c & 0x80 == 0).count();
            }
            _ => n += 1,
        }
    }
    Ok(n)
}

/// A field's shape, or `None` when encoding/json omits it (see `Decoder::field`).
fn shape(f: &Field, wires: &[Wire<'_>]) -> Result<Option<Shape>, Unsupported> {
    let omittable = f.omitempty || f.omitzero;
    let nil = |empty: bool| -> Option<Shape> {
        match (empty, omittable) {
            (true, true) => None,
            (true, false) => Some(Shape::Null),
            (false, _) => Some(Shape::Value),
        }
    };
    if f.repeated {
        return Ok(nil(item_count(&f.ty, wires)? == 0));
    }
    if let Ty::Map(_) = &f.ty {
        return Ok(nil(wires.is_empty()));
    }
    if wires.is_empty() && (f.pointer || matches!(f.ty, Ty::Bytes | Ty::List(_))) {
        return Ok(nil(true));
    }
    if f.pointer {
        return Ok(Some(Shape::Value));
    }
    let empty = f.omitempty
        && f.ty.omitempty_applies()
        && match (&f.ty, wires.last()) {
            (_, None) => true,
            (Ty::List(t), Some(_)) => {
                let mut n = 0;
                for w in wires.iter().rev().take(1) {
                    if let Wire::Len(b) = w {
                        for e in Reader(b) {
                            if let (1, w) = e? {
                                n += item_count(t, &[w])?;
                            }
                        }
                    }
                }
                n == 0
            }
            (Ty::Bytes | Ty::Str, Some(Wire::Len(b))) => b.is_empty(),
            (Ty::Double, Some(Wire::Fixed64(v))) => *v == 0 || *v == 1 << 63,
            (_, Some(w)) => wire_is_zero(&f.ty, *w),
        };
    let zero = !empty && f.omitzero && json_decoder().is_zero(&f.ty, wires)?;
    Ok((!(empty || zero)).then_some(Shape::Value))
}

impl<'de, 'a> MapAccess<'de> for Fields<'a> {
    type Error = Unsupported;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Unsupported> {
        if let Some((api_version, kind)) = self.type_meta {
            // apiVersion, then kind, then the message's fields.
            if self.pending.is_none() && !api_version.is_empty() {
                self.type_meta = Some(("", kind));
                self.pending = Some(Pending::Str(api_version));
                return seed.deserialize("apiVersion".into_deserializer()).map(Some);
            }
            self.type_meta = None;
            self.pending = Some(Pending::Str(kind));
            return seed.deserialize("kind".into_deserializer()).map(Some);
        }
        match self.next_field()? {
            None => Ok(None),
            Some((f, wires, shape)) => {
                self.pending = Some(Pending::Field(f, wires, shape));
                seed.deserialize(f.json.as_str().into_deserializer())
                    .map(Some)
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Unsupported> {
        match self.pending.take() {
            Some(Pending::Str(s)) => seed.deserialize(s.into_deserializer()),
            Some(Pending::Field(f, wires, shape)) => seed.deserialize(FieldDe {
                f,
                wires: wires.as_slice(),
                shape,
                depth: self.depth,
            }),
            None => err("a value was asked for before its key"),
        }
    }
}

/// One field's value.
struct FieldDe<'w, 'a> {
    f: &'static Field,
    wires: &'w [Wire<'a>],
    shape: Shape,
    depth: usize,
}

impl<'de> serde::Deserializer<'de> for FieldDe<'_, '_> {
    type Error = Unsupported;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        let f = self.f;
        if self.shape == Shape::Null {
            return visitor.visit_unit();
        }
        if f.repeated {
            let len = item_count(&f.ty, self.wires)?;
            return visitor.visit_seq(Items {
                ty: &f.ty,
                wires: self.wires,
                packed: &[],
                len,
                depth: self.depth,
            });
        }
        if let Ty::Map(vt) = &f.ty {
            return visitor.visit_map(Entries {
                vt,
                wires: self.wires,
                value: None,
                depth: self.depth,
            });
        }
        single(&f.ty, self.wires, self.depth, visitor, &|| f.json.clone())
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        let f = self.f;
        if self.shape == Shape::Null {
            return visitor.visit_none();
        }
        if !f.repeated && !matches!(f.ty, Ty::Map(_)) && special(&f.ty) {
            // `Time` and the like may stand for null: build the value to know.
            let v = json_decoder().single(&f.ty, self.wires, &|| f.json.clone())?;
            return some_value(v, visitor, &f.json);
        }
        visitor.visit_some(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        visitor.visit_unit()
    }

    /// As serde_json: a newtype (k8s-openapi's `Time`, `Quantity`, ...) wraps the value.
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Unsupported> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier
    }
}

/// A non-repeated value from its occurrences (none: Go's zero value).
fn single<'de, V: Visitor<'de>>(
    ty: &'static Ty,
    wires: &[Wire<'_>],
    depth: usize,
    visitor: V,
    at: &dyn Fn() -> String,
) -> Result<V::Value, Unsupported> {
    match (ty, wires) {
        (Ty::Msg(m), [] | [Wire::Len(_)]) => {
            let bytes = match wires {
                [Wire::Len(b)] => *b,
                _ => &[],
            };
            serde::Deserializer::deserialize_any(
                Deserializer {
                    bytes,
                    message: m,
                    type_meta: None,
                    depth,
                },
                visitor,
            )
        }
        (Ty::Msg(m), _) => {
            // Several occurrences of a message merge, as Go's generated Unmarshal merges.
            let bytes = merged(wires, at)?;
            serde::Deserializer::deserialize_any(
                Deserializer {
                    bytes: &bytes,
                    message: m,
                    type_meta: None,
                    depth,
                },
                visitor,
            )
        }
        (_, [.., w]) => one(ty, *w, depth, visitor, at),
        (_, []) => super::zero(ty)
            .deserialize_any(visitor)
            .map_err(|e| Unsupported(format!("{}: {e}", at()))),
    }
}

/// Whether values of this type are built as JSON first (see the module documentation),
/// to know whether they are null.
fn special(ty: &Ty) -> bool {
    !matches!(
        ty,
        Ty::Msg(_)
            | Ty::Str
            | Ty::Bool
            | Ty::I32
            | Ty::I64
            | Ty::U32
            | Ty::U64
            | Ty::Quantity
            | Ty::IntOrString
    )
}

/// `visit_none` for null, else `visit_some` of the value.
fn some_value<'de, V: Visitor<'de>>(
    v: Value,
    visitor: V,
    at: &str,
) -> Result<V::Value, Unsupported> {
    let r = if v.is_null() {
        visitor.visit_none()
    } else {
        visitor.visit_some(v)
    };
    r.map_err(|e| Unsupported(format!("{at}: {e}")))
}

/// One wire value of a type.
fn one<'de, V: Visitor<'de>>(
    ty: &'static Ty,
    w: Wire<'_>,
    depth: usize,
    visitor: V,
    at: &dyn Fn() -> String,
) -> Result<V::Value, Unsupported> {
    match (ty, w) {
        (Ty::Str, Wire::Len(b)) => match String::from_utf8_lossy(b) {
            Cow::Borrowed(s) => visitor.visit_str(s),
            Cow::Owned(s) => visitor.visit_string(s),
        },
        (Ty::Bool, Wire::Varint(v)) => visitor.visit_bool(v != 0),
        // Go's int32/int64 travel as two's complement varints; the casts keep the bits.
        (Ty::I32, Wire::Varint(v)) => visitor.visit_i64(i64::from(v as i32)),
        (Ty::I64, Wire::Varint(v)) => visitor.visit_i64(v as i64),
        (Ty::U32, Wire::Varint(v)) => visitor.visit_u64(u64::from(v as u32)),
        (Ty::U64, Wire::Varint(v)) => visitor.visit_u64(v),
        (Ty::Msg(_), _) => single(ty, &[w], depth, visitor, at),
        (Ty::Quantity, Wire::Len(b)) => {
            let mut s: &[u8] = &[];
            for e in Reader(b) {
                if let (1, Wire::Len(x)) = e? {
                    s = x;
                }
            }
            if s.is_empty() {
                return err(format!("{}: a quantity without a value", at()));
            }
            match String::from_utf8_lossy(s) {
                Cow::Borrowed(s) => visitor.visit_str(s),
                Cow::Owned(s) => visitor.visit_string(s),
            }
        }
        (Ty::IntOrString, Wire::Len(b)) => {
            let (mut is_str, mut int, mut s): (bool, i32, &[u8]) = (false, 0, &[]);
            for e in Reader(b) {
                match e? {
                    (1, Wire::Varint(t)) => is_str = t == 1,
                    // Two's complement, as Go's int32 travels.
                    (2, Wire::Varint(i)) => int = i as i32,
                    (3, Wire::Len(x)) => s = x,
                    _ => {}
                }
            }
            if !is_str {
                return visitor.visit_i64(i64::from(int));
            }
            match String::from_utf8_lossy(s) {
                Cow::Borrowed(s) => visitor.visit_str(s),
                Cow::Owned(s) => visitor.visit_string(s),
            }
        }
        _ => {
            let v: Value = json_decoder().value(ty, w, at)?;
            v.deserialize_any(visitor)
                .map_err(|e| Unsupported(format!("{}: {e}", at())))
        }
    }
}

/// The items of a repeated field.
struct Items<'w, 'a> {
    ty: &'static Ty,
    wires: &'w [Wire<'a>],
    /// The rest of a packed occurrence.
    packed: &'a [u8],
    len: usize,
    depth: usize,
}

impl<'de> SeqAccess<'de> for Items<'_, '_> {
    type Error = Unsupported;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Unsupported> {
        let ty = self.ty;
        let at = || "a list item".to_string();
        let wire = loop {
            if !self.packed.is_empty() {
                if *ty == Ty::Double {
                    let (x, rest) = self.packed.split_at(8.min(self.packed.len()));
                    self.packed = rest;
                    let bits = u64::from_le_bytes(
                        x.try_into()
                            .map_err(|_| Unsupported("a packed double is truncated".into()))?,
                    );
                    break Wire::Fixed64(bits);
                }
                break Wire::Varint(varint(&mut self.packed)?);
            }
            let Some((w, rest)) = self.wires.split_first() else {
                return Ok(None);
            };
            self.wires = rest;
            match w {
                Wire::Len(b) if packable(ty) => self.packed = b,
                w => break *w,
            }
        };
        self.len = self.len.saturating_sub(1);
        seed.deserialize(ItemDe {
            ty,
            wire,
            depth: self.depth,
        })
        .map(Some)
        .map_err(|e| Unsupported(format!("{}: {e}", at())))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len)
    }
}

/// One item of a repeated field, or one map value.
struct ItemDe<'a> {
    ty: &'static Ty,
    wire: Wire<'a>,
    depth: usize,
}

impl<'de> serde::Deserializer<'de> for ItemDe<'_> {
    type Error = Unsupported;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        one(self.ty, self.wire, self.depth, visitor, &|| {
            "a list item".into()
        })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        if special(self.ty) {
            let v = json_decoder().value(self.ty, self.wire, &|| "a list item".into())?;
            return some_value(v, visitor, "a list item");
        }
        visitor.visit_some(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        visitor.visit_unit()
    }

    /// As serde_json: a newtype (k8s-openapi's `Time`, `Quantity`, ...) wraps the value.
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Unsupported> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier
    }
}

/// The entries of a map field.
struct Entries<'w, 'a> {
    vt: &'static Ty,
    wires: &'w [Wire<'a>],
    /// The value occurrences of the entry whose key was just returned.
    value: Option<Vec<Wire<'a>>>,
    depth: usize,
}

impl<'de> MapAccess<'de> for Entries<'_, '_> {
    type Error = Unsupported;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Unsupported> {
        let Some((w, rest)) = self.wires.split_first() else {
            return Ok(None);
        };
        self.wires = rest;
        let Wire::Len(b) = w else {
            return err("a map entry is not length-delimited");
        };
        let mut key: &[u8] = &[];
        let mut value = Vec::with_capacity(1);
        for e in Reader(b) {
            match e? {
                (1, Wire::Len(k)) => key = k,
                (2, v) => value.push(v),
                _ => {}
            }
        }
        self.value = Some(value);
        match String::from_utf8_lossy(key) {
            Cow::Borrowed(s) => seed.deserialize(s.into_deserializer()).map(Some),
            Cow::Owned(s) => seed.deserialize(s.into_deserializer()).map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Unsupported> {
        let value = self.value.take().unwrap_or_default();
        seed.deserialize(EntryDe {
            vt: self.vt,
            wires: &value,
            depth: self.depth,
        })
    }
}

/// A map value.
struct EntryDe<'w, 'a> {
    vt: &'static Ty,
    wires: &'w [Wire<'a>],
    depth: usize,
}

impl<'de> serde::Deserializer<'de> for EntryDe<'_, '_> {
    type Error = Unsupported;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        match (self.vt, self.wires) {
            // A map's []byte value is never nil once decoded: "" rather than null.
            (Ty::Bytes, []) => visitor.visit_str(""),
            // Go's generated map decoding starts from `&ExtraValue{}`: an empty, non-nil slice.
            (Ty::List(_), []) => Value::Array(Vec::new())
                .deserialize_any(visitor)
                .map_err(|e| Unsupported(e.to_string())),
            _ => single(self.vt, self.wires, self.depth, visitor, &|| {
                "a map value".into()
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        match (self.vt, self.wires) {
            (Ty::Bytes | Ty::List(_), []) => visitor.visit_some(self),
            (ty, wires) if special(ty) => {
                let v = json_decoder().single(ty, wires, &|| "a map value".into())?;
                some_value(v, visitor, "a map value")
            }
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        visitor.visit_unit()
    }

    /// As serde_json: a newtype (k8s-openapi's `Time`, `Quantity`, ...) wraps the value.
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Unsupported> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier
    }
}
