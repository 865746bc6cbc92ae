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
use serde_json::Value;

use super::text::{Cursor, Token};

use std::collections::HashMap;
use std::sync::OnceLock;

use super::{
    err, merged, table, varint, wire_is_zero, Decoder, Field, Fnv, Reader, Table, Ty, Unsupported,
    Wire, MAX_DEPTH,
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

impl<'a> Deserializer<'a> {
    /// The protobuf message this deserializer reads (`core/v1.Pod`), as the table
    /// names it.
    pub fn message(&self) -> &'static str {
        self.message
    }

    /// The message's bytes (without the envelope).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// One field of `message` (number `num`, its occurrences `wires`) as `T`: `None` when
/// encoding/json leaves the key out, else what `T` deserializes from the value it
/// writes. For generated decoders ([`super::fast::delegate`]).
pub(super) fn field_value<T: de::DeserializeOwned>(
    message: &str,
    num: u64,
    wires: &[Wire<'_>],
    depth: usize,
) -> Result<Option<T>, Unsupported> {
    let fields = fields_of(message)?;
    let Some(f) = fields.iter().find(|f| f.num == num) else {
        return err(format!("{message} has no field {num}"));
    };
    if f.inline {
        return err(format!("{message}.{} is inline", f.json));
    }
    match shape(f, wires)? {
        None => Ok(None),
        Some(shape) => T::deserialize(ValueDe::Field {
            f,
            wires,
            shape,
            depth,
        })
        .map(Some),
    }
}

fn fields_of(message: &str) -> Result<&'static [Field], Unsupported> {
    // A name taken from the table's own `Ty::Msg` is found by its address (the table is
    // static), without hashing and comparing the name: once per decoded message, this
    // was a tenth of a Pod's decode.
    if let Some(f) = by_address().get(&(message.as_ptr() as usize, message.len())) {
        return Ok(f);
    }
    match table().messages.get(message) {
        Some(f) => Ok(f),
        None => err(format!("no protobuf description of {message}")),
    }
}

/// The fields of every message a `Ty::Msg` of the table names, keyed by the address and
/// length of that name's text.
fn by_address() -> &'static HashMap<(usize, usize), &'static [Field], Fnv> {
    static BY_ADDRESS: OnceLock<HashMap<(usize, usize), &'static [Field], Fnv>> = OnceLock::new();
    BY_ADDRESS.get_or_init(|| {
        fn names<'t>(ty: &'t Ty, out: &mut Vec<&'t String>) {
            match ty {
                Ty::Msg(m) => out.push(m),
                Ty::List(t) | Ty::Map(t) => names(t, out),
                _ => {}
            }
        }
        let t = table();
        let mut found = Vec::new();
        for fields in t.messages.values() {
            for f in fields {
                names(&f.ty, &mut found);
            }
        }
        found
            .into_iter()
            .filter(|m| !m.is_empty())
            .filter_map(|m| {
                Some((
                    (m.as_ptr() as usize, m.len()),
                    t.messages.get(m)?.as_slice(),
                ))
            })
            .collect()
    })
}

/// The value-less decoder of the JSON path, for the special types.
fn json_decoder() -> Decoder {
    Decoder {
        t: table(),
        depth: Default::default(),
    }
}

impl<'a> Deserializer<'a> {
    /// The message's fields, for a visitor's `visit_map` (the part of `deserialize_any`
    /// that does not depend on the visitor, compiled once).
    fn fields(self) -> Result<Fields<'a>, Unsupported> {
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
        Ok(access)
    }
}

impl<'de> serde::Deserializer<'de> for Deserializer<'_> {
    type Error = Unsupported;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        visitor.visit_map(&mut Map::Fields(self.fields()?))
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
    /// Adds an occurrence; `Many(vec![])` is the empty start (no allocation until a
    /// second occurrence).
    fn push(&mut self, w: Wire<'a>) {
        match self {
            Ws::Many(v) if v.is_empty() => *self = Ws::One(w),
            Ws::Many(v) => v.push(w),
            Ws::One(first) => *self = Ws::Many(vec![*first, w]),
        }
    }

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
            // The absent fields before the next one on the wire that encoding/json
            // omits are passed by without looking at them (most of a Go struct's fields
            // are unset in a typical object).
            let next_on_wire = frame
                .wires
                .get(frame.next_wire)
                .map_or(usize::MAX, |(j, _)| usize::from(*j));
            while frame.next_field < next_on_wire
                && frame
                    .fields
                    .get(frame.next_field)
                    .is_some_and(|f| f.quiet_when_absent)
            {
                frame.next_field += 1;
            }
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

impl<'a> Fields<'a> {
    /// The next key: `apiVersion` and `kind` of a top-level object first, then the
    /// fields encoding/json writes.
    fn next_key(&mut self) -> Result<Option<&'static str>, Unsupported> {
        if let Some((api_version, kind)) = self.type_meta {
            if self.pending.is_none() && !api_version.is_empty() {
                self.type_meta = Some(("", kind));
                self.pending = Some(Pending::Str(api_version));
                return Ok(Some("apiVersion"));
            }
            self.type_meta = None;
            self.pending = Some(Pending::Str(kind));
            return Ok(Some("kind"));
        }
        match self.next_field()? {
            None => Ok(None),
            Some((f, wires, shape)) => {
                self.pending = Some(Pending::Field(f, wires, shape));
                Ok(Some(f.json.as_str()))
            }
        }
    }
}

/// The deserializer of every map key: one type for field names, map keys and JSON keys.
/// An owned key (a JSON object's, already a `String`) is handed over by value, so a
/// visitor that keeps it (`serde_json::Value`'s, a map's) moves it instead of copying.
fn key(k: Cow<'_, str>) -> de::value::CowStrDeserializer<'_, Unsupported> {
    k.into_deserializer()
}

/// A map handed to a visitor: a message's fields, a map field's entries, or the object of
/// a special type's JSON value.
///
/// Compile time: serde compiles a visitor once per map, list or deserializer type it is
/// handed, so every position of the input (field, list item, map value, JSON) shares one
/// map type, one list type ([`Seq`]) and one value deserializer ([`ValueDe`]); and the
/// work that does not depend on the visitor (reading wires, choosing what a value is:
/// [`ValueDe::resolve`]) is done outside the generic functions. Each type reachable from a
/// decoded kind then compiles one small `visit` per visitor instead of a copy of the
/// decoder per position, plus another through `serde_json::Value`.
enum Map<'w, 'a> {
    Fields(Fields<'a>),
    Entries(Entries<'w, 'a>),
    Json(JsonMap),
    /// An object of JSON text (see [`super::text`]), entered; `first` until a key is
    /// read, `done` once its end is.
    Text {
        cur: &'w mut Cursor<'a>,
        first: bool,
        done: bool,
    },
}

impl Map<'_, '_> {
    /// After the visitor: a JSON object it did not read to its end is an error, as
    /// serde_json's `Value` deserializer makes it.
    fn finish(&self) -> Result<(), Unsupported> {
        match self {
            Map::Json(m) if m.entries.len() > 0 => {
                Err(de::Error::invalid_length(m.len, &"fewer elements in map"))
            }
            Map::Text { done: false, .. } => {
                err("the visitor stopped before the end of a JSON object")
            }
            _ => Ok(()),
        }
    }
}

impl<'de> MapAccess<'de> for Map<'_, '_> {
    type Error = Unsupported;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Unsupported> {
        let k = match self {
            Map::Fields(m) => m.next_key()?.map(Cow::Borrowed),
            Map::Entries(m) => m.next_key()?,
            Map::Json(m) => m.next_key(),
            Map::Text { done: true, .. } => None,
            Map::Text { cur, first, done } => {
                let k = cur.key(*first)?;
                *first = false;
                *done = k.is_none();
                k
            }
        };
        match k {
            Some(k) => seed.deserialize(key(k)).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Unsupported> {
        match self {
            Map::Fields(m) => match m.pending.take() {
                Some(Pending::Str(s)) => seed.deserialize(ValueDe::Str(s)),
                Some(Pending::Field(f, wires, shape)) => seed.deserialize(ValueDe::Field {
                    f,
                    wires: wires.as_slice(),
                    shape,
                    depth: m.depth,
                }),
                None => err("a value was asked for before its key"),
            },
            Map::Entries(m) => {
                let value = m.value.take().unwrap_or(Ws::Many(Vec::new()));
                seed.deserialize(ValueDe::Entry {
                    vt: m.vt,
                    wires: value.as_slice(),
                    depth: m.depth,
                })
            }
            Map::Json(m) => match m.value.take() {
                Some(v) => seed.deserialize(ValueDe::Json(v, None)),
                None => err("a value was asked for before its key"),
            },
            Map::Text { cur, .. } => seed.deserialize(ValueDe::Text(cur)),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        match self {
            Map::Fields(_) | Map::Entries(_) | Map::Text { .. } => None,
            Map::Json(m) => Some(m.entries.len()),
        }
    }
}

/// A list handed to a visitor: a repeated field's items, or a JSON array (see [`Map`]).
enum Seq<'w, 'a> {
    Items(Items<'w, 'a>),
    Json {
        values: std::vec::IntoIter<Value>,
        len: usize,
    },
    /// An array of JSON text, entered (as [`Map::Text`]).
    Text {
        cur: &'w mut Cursor<'a>,
        first: bool,
        done: bool,
    },
}

impl Seq<'_, '_> {
    /// As [`Map::finish`], for arrays.
    fn finish(&self) -> Result<(), Unsupported> {
        match self {
            Seq::Json { values, len } if values.len() > 0 => {
                Err(de::Error::invalid_length(*len, &"fewer elements in array"))
            }
            Seq::Text { done: false, .. } => {
                err("the visitor stopped before the end of a JSON array")
            }
            _ => Ok(()),
        }
    }
}

impl<'de> SeqAccess<'de> for Seq<'_, '_> {
    type Error = Unsupported;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Unsupported> {
        match self {
            Seq::Items(items) => match items.next_wire()? {
                Some(wire) => seed
                    .deserialize(ValueDe::Item {
                        ty: items.ty,
                        wire,
                        depth: items.depth,
                    })
                    .map(Some)
                    .map_err(|e| Unsupported(format!("a list item: {e}"))),
                None => Ok(None),
            },
            Seq::Json { values, .. } => match values.next() {
                Some(v) => seed.deserialize(ValueDe::Json(v, None)).map(Some),
                None => Ok(None),
            },
            Seq::Text { done: true, .. } => Ok(None),
            Seq::Text { cur, first, done } => {
                let more = cur.item(*first)?;
                *first = false;
                if !more {
                    *done = true;
                    return Ok(None);
                }
                seed.deserialize(ValueDe::Text(cur)).map(Some)
            }
        }
    }

    fn size_hint(&self) -> Option<usize> {
        match self {
            Seq::Items(items) => Some(items.len),
            Seq::Json { values, .. } => Some(values.len()),
            Seq::Text { .. } => None,
        }
    }
}

/// One value below a message (see [`Map`] for why it is one type).
enum ValueDe<'w, 'a> {
    /// A field's value, from its occurrences.
    Field {
        f: &'static Field,
        wires: &'w [Wire<'a>],
        shape: Shape,
        depth: usize,
    },
    /// One item of a repeated field.
    Item {
        ty: &'static Ty,
        wire: Wire<'a>,
        depth: usize,
    },
    /// A map field's value, from its occurrences.
    Entry {
        vt: &'static Ty,
        wires: &'w [Wire<'a>],
        depth: usize,
    },
    /// The envelope's `apiVersion` or `kind`.
    Str(&'a str),
    /// The JSON a special type (`Time`, `Duration`, ...) or a Go zero value stands
    /// for, with where it was read (named in the visitor's errors).
    Json(Value, Option<&'static str>),
    /// A value inside JSON text (`RawExtension.raw`), read in place.
    Text(&'w mut Cursor<'a>),
}

/// What a value is, decided without the visitor ([`ValueDe::resolve`]). Kept small (the
/// map and list accesses are built in [`visit`]): it is returned for every value.
enum Resolved<'w, 'a> {
    Unit,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(&'a str),
    String(String),
    /// A message read from the input.
    Message {
        bytes: &'a [u8],
        message: &'static str,
        depth: usize,
    },
    /// A message sent in several occurrences, merged into one.
    Merged {
        bytes: Vec<u8>,
        message: &'static str,
        depth: usize,
    },
    Entries(Entries<'w, 'a>),
    Items(Items<'w, 'a>),
    JsonArray(Vec<Value>),
    JsonObject(serde_json::Map<String, Value>),
    /// The JSON text of a `RawExtension`, not yet read.
    RawJson(&'a [u8]),
    /// An object or array of JSON text, entered.
    TextObject(&'w mut Cursor<'a>),
    TextArray(&'w mut Cursor<'a>),
}

impl<'w, 'a> ValueDe<'w, 'a> {
    /// What the value is, and where, when errors of its visitor are to name it.
    #[inline]
    fn resolve(self) -> Result<(Resolved<'w, 'a>, Option<&'static str>), Unsupported> {
        match self.common() {
            Some(value) => Ok((value, None)),
            None => self.resolve_other(),
        }
    }

    /// The most common values, read without a call when inlined (a set string, bool,
    /// integer or message field; a string or message list item): most of an object's
    /// values.
    #[inline]
    fn common(&self) -> Option<Resolved<'w, 'a>> {
        let (ty, w, depth) = match self {
            ValueDe::Field {
                f,
                wires: [w],
                shape: Shape::Value,
                depth,
            } if !f.repeated => (&f.ty, *w, *depth),
            ValueDe::Item { ty, wire, depth } => (*ty, *wire, *depth),
            _ => return None,
        };
        match (ty, w) {
            (Ty::Str, Wire::Len(b)) => std::str::from_utf8(b).ok().map(Resolved::Str),
            (Ty::Bool, Wire::Varint(v)) => Some(Resolved::Bool(v != 0)),
            // Go's int32/int64 travel as two's complement varints; the casts keep the bits.
            (Ty::I32, Wire::Varint(v)) => Some(Resolved::I64(i64::from(v as i32))),
            (Ty::I64, Wire::Varint(v)) => Some(Resolved::I64(v as i64)),
            (Ty::Msg(m), Wire::Len(b)) => Some(Resolved::Message {
                bytes: b,
                message: m,
                depth,
            }),
            _ => None,
        }
    }

    /// [`ValueDe::resolve`] for every other value.
    fn resolve_other(self) -> Result<(Resolved<'w, 'a>, Option<&'static str>), Unsupported> {
        Ok(match self {
            ValueDe::Field {
                f,
                wires,
                shape,
                depth,
            } => {
                if shape == Shape::Null {
                    return Ok((Resolved::Unit, None));
                }
                if f.repeated {
                    let len = item_count(&f.ty, wires)?;
                    let items = Items {
                        ty: &f.ty,
                        wires,
                        packed: &[],
                        len,
                        depth,
                    };
                    return Ok((Resolved::Items(items), None));
                }
                if let Ty::Map(vt) = &f.ty {
                    let entries = Entries {
                        vt,
                        wires,
                        value: None,
                        depth,
                    };
                    return Ok((Resolved::Entries(entries), None));
                }
                single(&f.ty, wires, depth, f.json.as_str())?
            }
            ValueDe::Item { ty, wire, depth } => one(ty, wire, depth, "a list item")?,
            ValueDe::Entry { vt, wires, depth } => match (vt, wires) {
                // A map's []byte value is never nil once decoded: "" rather than null.
                (Ty::Bytes, []) => (Resolved::Str(""), None),
                // Go's generated map decoding starts from `&ExtraValue{}`: an empty,
                // non-nil slice.
                (Ty::List(_), []) => (json(Value::Array(Vec::new()))?, None),
                _ => single(vt, wires, depth, "a map value")?,
            },
            ValueDe::Str(s) => (Resolved::Str(s), None),
            ValueDe::Json(v, at) => (json(v)?, at),
            ValueDe::Text(cur) => (text_token(cur)?, None),
        })
    }

    /// Whether the value may read as null: the cheap test before [`ValueDe::option`],
    /// false for most values (a message, a string, a number that is set).
    #[inline]
    fn may_be_null(&self) -> bool {
        match self {
            ValueDe::Field { f, shape, .. } => {
                *shape == Shape::Null
                    || (!f.repeated && !matches!(f.ty, Ty::Map(_)) && special(&f.ty))
            }
            ValueDe::Item { ty, .. } => special(ty),
            ValueDe::Entry { vt, .. } => special(vt),
            ValueDe::Str(_) => false,
            ValueDe::Json(v, _) => v.is_null(),
            ValueDe::Text(cur) => cur.at_null(),
        }
    }

    /// `None` for a null value, else the value (the non-generic part of
    /// `deserialize_option`).
    fn option(self) -> Result<Option<Self>, Unsupported> {
        let special_value =
            |v: Value, at: &'static str| (!v.is_null()).then_some(ValueDe::Json(v, Some(at)));
        Ok(match self {
            ValueDe::Field { f, wires, .. } if f.ty == Ty::Raw && !f.repeated => {
                (!raw_is_null(wires)?).then_some(self)
            }
            ValueDe::Item {
                ty: Ty::Raw, wire, ..
            } => (!raw_is_null(&[wire])?).then_some(self),
            ValueDe::Entry {
                vt: Ty::Raw, wires, ..
            } => (!raw_is_null(wires)?).then_some(self),
            ValueDe::Text(cur) => {
                if cur.at_null() {
                    cur.token()?;
                    None
                } else {
                    Some(ValueDe::Text(cur))
                }
            }
            ValueDe::Field {
                f, wires, shape, ..
            } => {
                if shape == Shape::Null {
                    return Ok(None);
                }
                if !f.repeated && !matches!(f.ty, Ty::Map(_)) && special(&f.ty) {
                    // `Time` and the like may stand for null: build the value to know.
                    let v = json_decoder().single(&f.ty, wires, &|| f.json.clone())?;
                    return Ok(special_value(v, f.json.as_str()));
                }
                Some(self)
            }
            ValueDe::Item { ty, wire, .. } if special(ty) => {
                let v = json_decoder().value(ty, wire, &|| "a list item".into())?;
                special_value(v, "a list item")
            }
            ValueDe::Entry { vt, wires, .. }
                if special(vt) && !matches!((vt, wires), (Ty::Bytes | Ty::List(_), [])) =>
            {
                let v = json_decoder().single(vt, wires, &|| "a map value".into())?;
                special_value(v, "a map value")
            }
            ValueDe::Json(Value::Null, _) => None,
            other => Some(other),
        })
    }
}

/// Hands a resolved value to the visitor: the only part compiled per visitor.
#[inline]
fn visit<'de, V: Visitor<'de>>(
    (value, at): (Resolved<'_, '_>, Option<&'static str>),
    visitor: V,
) -> Result<V::Value, Unsupported> {
    let out = match value {
        Resolved::Unit => visitor.visit_unit(),
        Resolved::Bool(b) => visitor.visit_bool(b),
        Resolved::I64(i) => visitor.visit_i64(i),
        Resolved::U64(u) => visitor.visit_u64(u),
        Resolved::F64(f) => visitor.visit_f64(f),
        Resolved::Str(s) => visitor.visit_str(s),
        Resolved::String(s) => visitor.visit_string(s),
        Resolved::Message {
            bytes,
            message: m,
            depth,
        } => match message(bytes, m, depth) {
            Ok(fields) => visitor.visit_map(&mut Map::Fields(fields)),
            Err(e) => Err(e),
        },
        Resolved::Merged {
            bytes,
            message: m,
            depth,
        } => match message(&bytes, m, depth) {
            Ok(fields) => visitor.visit_map(&mut Map::Fields(fields)),
            Err(e) => Err(e),
        },
        Resolved::Entries(entries) => visitor.visit_map(&mut Map::Entries(entries)),
        Resolved::Items(items) => visitor.visit_seq(&mut Seq::Items(items)),
        Resolved::JsonArray(items) => {
            let mut seq = Seq::Json {
                len: items.len(),
                values: items.into_iter(),
            };
            visitor
                .visit_seq(&mut seq)
                .and_then(|out| seq.finish().map(|()| out))
        }
        Resolved::JsonObject(entries) => {
            let mut map = Map::Json(JsonMap {
                len: entries.len(),
                entries: entries.into_iter(),
                value: None,
            });
            visitor
                .visit_map(&mut map)
                .and_then(|out| map.finish().map(|()| out))
        }
        Resolved::RawJson(text) => {
            let mut cur = Cursor::new(text);
            match text_token(&mut cur) {
                Ok(token) => visit((token, None), visitor).and_then(|out| cur.end().map(|()| out)),
                Err(e) => Err(e),
            }
        }
        Resolved::TextObject(cur) => {
            let mut map = Map::Text {
                cur,
                first: true,
                done: false,
            };
            visitor
                .visit_map(&mut map)
                .and_then(|out| map.finish().map(|()| out))
        }
        Resolved::TextArray(cur) => {
            let mut seq = Seq::Text {
                cur,
                first: true,
                done: false,
            };
            visitor
                .visit_seq(&mut seq)
                .and_then(|out| seq.finish().map(|()| out))
        }
    };
    match at {
        Some(at) => out.map_err(|e| Unsupported(format!("{at}: {e}"))),
        None => out,
    }
}

impl<'de> serde::Deserializer<'de> for ValueDe<'_, '_> {
    type Error = Unsupported;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        visit(self.resolve()?, visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        if !self.may_be_null() {
            return visitor.visit_some(self);
        }
        match self.option()? {
            None => visitor.visit_none(),
            Some(value) => visitor.visit_some(value),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unsupported> {
        // Inside JSON text the ignored value is read past; elsewhere it is a slice
        // already delimited.
        if let ValueDe::Text(cur) = self {
            cur.skip_value()?;
        }
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

    /// A JSON value's enum reads as serde_json reads it; elsewhere as any value.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Unsupported> {
        match self {
            ValueDe::Json(v, at) => {
                serde::Deserializer::deserialize_enum(v, name, variants, visitor).map_err(|e| {
                    match at {
                        Some(at) => Unsupported(format!("{at}: {e}")),
                        None => Unsupported(e.to_string()),
                    }
                })
            }
            other => other.deserialize_any(visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier
    }
}

/// A JSON value as serde_json's `Value` deserializer presents it, with its arrays and
/// objects read through this module's [`Seq`] and [`Map`].
fn json<'w, 'a>(v: Value) -> Result<Resolved<'w, 'a>, Unsupported> {
    Ok(match v {
        Value::Null => Resolved::Unit,
        Value::Bool(b) => Resolved::Bool(b),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Resolved::U64(u)
            } else if let Some(i) = n.as_i64() {
                Resolved::I64(i)
            } else if let Some(f) = n.as_f64() {
                Resolved::F64(f)
            } else {
                return err(format!("the number {n} is out of range"));
            }
        }
        Value::String(s) => Resolved::String(s),
        Value::Array(items) => Resolved::JsonArray(items),
        Value::Object(entries) => Resolved::JsonObject(entries),
    })
}

/// The entries of a JSON object (see [`json`]).
struct JsonMap {
    entries: serde_json::map::IntoIter,
    len: usize,
    /// The value of the key just returned.
    value: Option<Value>,
}

impl JsonMap {
    fn next_key(&mut self) -> Option<Cow<'static, str>> {
        let (k, v) = self.entries.next()?;
        self.value = Some(v);
        Some(Cow::Owned(k))
    }
}

/// A non-repeated value from its occurrences (none: Go's zero value).
fn single<'w, 'a>(
    ty: &'static Ty,
    wires: &'w [Wire<'a>],
    depth: usize,
    at: &'static str,
) -> Result<(Resolved<'w, 'a>, Option<&'static str>), Unsupported> {
    Ok(match (ty, wires) {
        (Ty::Msg(m), [] | [Wire::Len(_)]) => {
            let bytes = match wires {
                [Wire::Len(b)] => *b,
                _ => &[],
            };
            (
                Resolved::Message {
                    bytes,
                    message: m,
                    depth,
                },
                None,
            )
        }
        // Several occurrences of a message merge, as Go's generated Unmarshal merges.
        (Ty::Msg(m), _) => (
            Resolved::Merged {
                bytes: merged(wires, &|| at.to_owned())?,
                message: m,
                depth,
            },
            None,
        ),
        (_, [.., w]) => one(ty, *w, depth, at)?,
        (_, []) => (json(super::zero(ty))?, Some(at)),
    })
}

/// The fields of a nested message.
fn message<'a>(bytes: &'a [u8], m: &'static str, depth: usize) -> Result<Fields<'a>, Unsupported> {
    Deserializer {
        bytes,
        message: m,
        type_meta: None,
        depth,
    }
    .fields()
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

/// A string as read: borrowed when valid UTF-8.
fn text<'w, 'a>(b: &'a [u8]) -> Resolved<'w, 'a> {
    match String::from_utf8_lossy(b) {
        Cow::Borrowed(s) => Resolved::Str(s),
        Cow::Owned(s) => Resolved::String(s),
    }
}

/// One wire value of a type.
fn one<'w, 'a>(
    ty: &'static Ty,
    w: Wire<'a>,
    depth: usize,
    at: &'static str,
) -> Result<(Resolved<'w, 'a>, Option<&'static str>), Unsupported> {
    let value = match (ty, w) {
        (Ty::Str, Wire::Len(b)) => text(b),
        (Ty::Bool, Wire::Varint(v)) => Resolved::Bool(v != 0),
        // Go's int32/int64 travel as two's complement varints; the casts keep the bits.
        (Ty::I32, Wire::Varint(v)) => Resolved::I64(i64::from(v as i32)),
        (Ty::I64, Wire::Varint(v)) => Resolved::I64(v as i64),
        (Ty::U32, Wire::Varint(v)) => Resolved::U64(u64::from(v as u32)),
        (Ty::U64, Wire::Varint(v)) => Resolved::U64(v),
        (Ty::Msg(m), Wire::Len(b)) => Resolved::Message {
            bytes: b,
            message: m,
            depth,
        },
        (Ty::Msg(m), w) => Resolved::Merged {
            bytes: merged(&[w], &|| at.to_owned())?,
            message: m,
            depth,
        },
        (Ty::Quantity, Wire::Len(b)) => {
            let mut s: &[u8] = &[];
            for e in Reader(b) {
                if let (1, Wire::Len(x)) = e? {
                    s = x;
                }
            }
            if s.is_empty() {
                return err(format!("{at}: a quantity without a value"));
            }
            text(s)
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
                Resolved::I64(i64::from(int))
            } else {
                text(s)
            }
        }
        (Ty::Raw, _) => {
            return Ok(match raw_text(w)? {
                None => (Resolved::Unit, None),
                Some(text) => (Resolved::RawJson(text), Some(at)),
            })
        }
        _ => {
            let v: Value = json_decoder().value(ty, w, &|| at.to_owned())?;
            return Ok((json(v)?, Some(at)));
        }
    };
    Ok((value, None))
}

/// The JSON text of a `RawExtension` (its field 1, the last occurrence as Go's decoder
/// keeps); `None` for none or no bytes, which encoding/json writes as null.
fn raw_text(w: Wire<'_>) -> Result<Option<&[u8]>, Unsupported> {
    let Wire::Len(b) = w else {
        return err("a RawExtension: unexpected wire type");
    };
    let mut raw: Option<&[u8]> = None;
    for e in Reader(b) {
        if let (1, Wire::Len(r)) = e? {
            raw = Some(r);
        }
    }
    Ok(raw.filter(|r| !r.is_empty()))
}

/// Whether a `RawExtension` value (its last occurrence) reads as null: absent, no bytes,
/// or the JSON text `null`.
fn raw_is_null(wires: &[Wire<'_>]) -> Result<bool, Unsupported> {
    let Some(w) = wires.last() else {
        return Ok(true);
    };
    let Some(text) = raw_text(*w)? else {
        return Ok(true);
    };
    let mut cur = Cursor::new(text);
    if !cur.at_null() {
        return Ok(false);
    }
    cur.token()?;
    cur.end()?;
    Ok(true)
}

/// The next token of JSON text as a resolved value (an object or array entered).
fn text_token<'w, 'a>(cur: &'w mut Cursor<'a>) -> Result<Resolved<'w, 'a>, Unsupported> {
    Ok(match cur.token()? {
        Token::Null => Resolved::Unit,
        Token::Bool(b) => Resolved::Bool(b),
        Token::U64(u) => Resolved::U64(u),
        Token::I64(i) => Resolved::I64(i),
        Token::F64(f) => Resolved::F64(f),
        Token::Str(s) => Resolved::Str(s),
        Token::String(s) => Resolved::String(s),
        Token::Object => Resolved::TextObject(cur),
        Token::Array => Resolved::TextArray(cur),
    })
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

impl<'a> Items<'_, 'a> {
    /// The next item's wire value.
    fn next_wire(&mut self) -> Result<Option<Wire<'a>>, Unsupported> {
        let ty = self.ty;
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
        Ok(Some(wire))
    }
}

/// The entries of a map field.
struct Entries<'w, 'a> {
    vt: &'static Ty,
    wires: &'w [Wire<'a>],
    /// The value occurrences of the entry whose key was just returned.
    value: Option<Ws<'a>>,
    depth: usize,
}

impl<'a> Entries<'_, 'a> {
    fn next_key(&mut self) -> Result<Option<Cow<'a, str>>, Unsupported> {
        let Some((w, rest)) = self.wires.split_first() else {
            return Ok(None);
        };
        self.wires = rest;
        let Wire::Len(b) = w else {
            return err("a map entry is not length-delimited");
        };
        let mut key: &[u8] = &[];
        let mut value = Ws::Many(Vec::new());
        for e in Reader(b) {
            match e? {
                (1, Wire::Len(k)) => key = k,
                (2, v) => value.push(v),
                _ => {}
            }
        }
        self.value = Some(value);
        Ok(Some(String::from_utf8_lossy(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// `raw` as the JSON text of a RawExtension list item, decoded into a `Value`
    /// through the typed decoder's path for JSON text.
    fn through_text(raw: &[u8]) -> Result<Value, String> {
        static RAW: Ty = Ty::Raw;
        let mut ext = vec![0x0a];
        let mut n = raw.len();
        while n >= 0x80 {
            ext.push((n as u8) | 0x80);
            n >>= 7;
        }
        ext.push(n as u8);
        ext.extend_from_slice(raw);
        Value::deserialize(ValueDe::Item {
            ty: &RAW,
            wire: Wire::Len(&ext),
            depth: 0,
        })
        .map_err(|e| e.to_string())
    }

    /// The text path accepts what serde_json accepts and gives the same value.
    fn agrees(raw: &[u8]) {
        let ours = through_text(raw);
        let theirs = serde_json::from_slice::<Value>(raw);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{:?}", String::from_utf8_lossy(raw)),
            (Err(_), Err(_)) => {}
            _ => panic!(
                "{:?}: text path {ours:?}, serde_json {theirs:?}",
                String::from_utf8_lossy(raw)
            ),
        }
    }

    const JSON_DOCUMENTS: &[&str] = &[
        r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}"#,
        r#" { "a" : [ 1 , -2 , 3.5 , 1e3 , -0 , 0.0 , 1E-7 , 12345678901234567890 ] , "b" : null , "c" : true , "d" : false } "#,
        r#"{"n":[18446744073709551615,18446744073709551616,-9223372036854775808,-9223372036854775809,1.7976931348623157e308]}"#,
        r#"{"s":"plain","e":"tab\there \"quoted\" \\ \/ \b\f\n\r \u00e9 \ud83d\ude00","u":"é ✓ 😀"}"#,
        r#"{"dup":1,"dup":2,"empty":{},"list":[],"nested":[[[]],[{}]]}"#,
        r#"[1,"two",{"three":[3]}]"#,
        r#""just a string""#,
        "42",
        "-1.25e-3",
        "true",
        "null",
        "\t\n\r {}\n",
    ];

    #[test]
    fn json_text_reads_as_serde_json_reads_it() {
        for doc in JSON_DOCUMENTS {
            agrees(doc.as_bytes());
        }
        for bad in [
            " ",
            "{",
            "}",
            "[",
            "]",
            "{,}",
            "[,]",
            "[1,]",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":}"#,
            "{1:2}",
            "{'a':1}",
            "01",
            "+1",
            ".5",
            "1.",
            "1e",
            "-",
            "--1",
            "1e400",
            "nul",
            "nulll",
            "tru",
            "[1 2]",
            r#"{"a":1 "b":2}"#,
            "\"open",
            "\"bad \\x escape\"",
            "\"\\ud800\"",
            "\"ctl \u{1}\"",
            "{} {}",
            "1 2",
            "[1]]",
            r#"{"a":1}}"#,
            "NaN",
            "Infinity",
            "[-]",
            "\"\\u12\"",
        ] {
            assert!(through_text(bad.as_bytes()).is_err(), "{bad:?} was read");
            agrees(bad.as_bytes());
        }
        agrees(b"\"\xff\"");
        agrees(b"{\"k\xc3\":1}");
    }

    #[test]
    fn json_text_nests_as_deep_as_serde_json() {
        for depth in [126, 127, 128, 129] {
            let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            agrees(arrays.as_bytes());
            let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
            agrees(objects.as_bytes());
        }
    }

    #[test]
    fn json_text_agrees_with_serde_json_on_every_one_byte_change() {
        let interesting = b"{}[],:\"\\ 0-1.eE+tfnu\x01\xffa";
        let mut checked = 0;
        for doc in &JSON_DOCUMENTS[..5] {
            let doc = doc.as_bytes();
            for at in 0..doc.len() {
                for &b in interesting {
                    let mut changed = doc.to_vec();
                    changed[at] = b;
                    agrees(&changed);
                    checked += 1;
                }
                let mut cut = doc.to_vec();
                cut.remove(at);
                agrees(&cut);
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    #[test]
    fn raw_json_text_null_and_empty_read_as_null() {
        assert_eq!(through_text(b"null"), Ok(Value::Null));
        assert_eq!(through_text(b" null "), Ok(Value::Null));
        assert!(through_text(b"null x").is_err());
        assert_eq!(through_text(b""), Ok(Value::Null));
        // As an optional field: None for null text, Some for any other value.
        assert_eq!(
            Option::<Value>::deserialize(ValueDe::Item {
                ty: &Ty::Raw,
                wire: Wire::Len(b"\x0a\x04null"),
                depth: 0,
            }),
            Ok(None)
        );
        assert_eq!(
            Option::<Value>::deserialize(ValueDe::Item {
                ty: &Ty::Raw,
                wire: Wire::Len(b"\x0a\x02{}"),
                depth: 0,
            }),
            Ok(Some(serde_json::json!({})))
        );
    }

    #[test]
    fn a_field_passed_by_when_absent_is_one_encoding_json_omits() {
        let mut quiet = 0;
        for (name, fields) in &table().messages {
            for f in fields {
                if f.quiet_when_absent {
                    quiet += 1;
                    assert_eq!(
                        shape(f, &[]).ok(),
                        Some(None),
                        "{name}.{} is passed by when absent but encoding/json writes it",
                        f.json
                    );
                }
            }
        }
        assert!(
            quiet > 1000,
            "only {quiet} fields are passed by when absent"
        );
    }

    #[test]
    fn every_message_the_table_names_is_found_by_address_as_by_name() {
        let t = table();
        let mut checked = 0;
        for fields in t.messages.values() {
            for f in fields {
                if let Ty::Msg(m) = &f.ty {
                    let by_name = t.messages[m].as_slice();
                    assert!(std::ptr::eq(fields_of(m).unwrap(), by_name), "{m}");
                    assert!(by_address().contains_key(&(m.as_ptr() as usize, m.len())));
                    checked += 1;
                }
            }
        }
        assert!(checked > 500, "only {checked} message fields");
    }

    #[test]
    fn a_prefix_of_a_table_name_is_looked_up_by_its_own_name() {
        let t = table();
        let spec = t
            .messages
            .values()
            .flatten()
            .find_map(|f| match &f.ty {
                Ty::Msg(m) if m == "core/v1.PodSpec" => Some(m),
                _ => None,
            })
            .expect("a field of type PodSpec");
        // Same address as the table's "…PodSpec", shorter: must be Pod's fields.
        let pod = &spec[..spec.len() - "Spec".len()];
        assert!(std::ptr::eq(
            fields_of(pod).unwrap(),
            t.messages["core/v1.Pod"].as_slice()
        ));
        assert!(fields_of("core/v1.NoSuchKind").is_err());
    }
}
