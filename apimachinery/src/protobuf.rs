//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) of built-in
//! kinds: decoded into the JSON kube-apiserver would write ([`decode`], what the
//! in-memory server does with request bodies), or straight into typed objects through
//! serde ([`from_envelope`], [`Deserializer`]: what the runtime's client does with
//! responses).
//!
//! client-go's typed clients send built-in kinds as protobuf by default and never fall
//! back to JSON (not even on 415); kubectl's `create` subcommands and typed deletes do
//! too. So the server decodes every built-in kind, as kube-apiserver does.
//!
//! How:
//! - The envelope is the 4-byte magic `k8s\0` and a `runtime.Unknown` whose `raw` holds
//!   the object; its `typeMeta` gives `apiVersion` and `kind`.
//! - `protobuf/table.json` describes every message of the built-in kinds: each field's
//!   number, JSON name, type, and the Go facts that decide its JSON (pointer, slice,
//!   `omitempty`, `omitzero`, `inline`). `hack/update-builtin-protobuf.sh` writes it by
//!   reflection over the Go types of `k8s.io/api` (tests/go-conformance/protobufgen).
//! - The decoder turns the bytes into the JSON kube-apiserver would produce from them:
//!   it decodes protobuf into the Go types and encodes those with `encoding/json`. So a
//!   zero value is written or omitted as Go's `omitempty` would, a pointer sent as zero
//!   (`replicas: 0`) is kept, `Time` becomes RFC 3339 (seconds), `MicroTime` RFC 3339
//!   with microseconds, `Duration` Go's duration string, `Quantity` its string,
//!   `IntOrString` a number or string, `[]byte` base64, `RawExtension`/`FieldsV1` their
//!   JSON. The corpus test (random objects of every kind, encoded by apimachinery's
//!   protobuf serializer, with encoding/json's output) holds it to that.
//! - Field numbers the table does not know are skipped, as Go's generated decoders skip
//!   them. A kind the table does not know (a custom resource: kube-apiserver has no
//!   protobuf for those either), a malformed body, or a `raw` that is not JSON is an
//!   error, which the caller answers with 415 and the media types that always work.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Number, Value};

mod de;
mod enc;
pub mod fast;
mod text;

pub use de::{envelope, from_envelope, watch_event, Deserializer, Envelope, Event, List};
pub use enc::{encode_list, encode_object, watch_frame};

/// The protobuf media type of Kubernetes objects.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// Why a protobuf body was not decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unsupported {}

fn err<T>(msg: impl Into<String>) -> Result<T, Unsupported> {
    Err(Unsupported(msg.into()))
}

/// A field's type, as `table.json` spells it.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Str,
    Bool,
    I32,
    I64,
    U32,
    U64,
    Double,
    Bytes,
    Time,
    MicroTime,
    Duration,
    /// `RawExtension`, `FieldsV1`: a message whose field 1 holds JSON bytes.
    Raw,
    Quantity,
    IntOrString,
    Msg(String),
    /// A named Go slice sent as a message with the items in field 1 (`ExtraValue`).
    List(Box<Ty>),
    /// A map with string keys.
    Map(Box<Ty>),
    /// apiextensions' `JSONSchemaPropsOrArray` (field 1 a schema, 2 schemas), written as
    /// the array when it has items, else the schema; the name is the schema message.
    SchemaOrArray(String),
    /// `JSONSchemaPropsOrBool` (1 allows, 2 a schema): the schema if set, else the bool.
    SchemaOrBool(String),
    /// `JSONSchemaPropsOrStringArray` (1 a schema, 2 strings): the strings if any, else
    /// the schema, else null.
    SchemaOrStringArray(String),
}

impl Ty {
    fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "string" => Ty::Str,
            "bool" => Ty::Bool,
            "int32" => Ty::I32,
            "int64" => Ty::I64,
            "uint32" => Ty::U32,
            "uint64" => Ty::U64,
            "double" => Ty::Double,
            "bytes" => Ty::Bytes,
            "time" => Ty::Time,
            "microtime" => Ty::MicroTime,
            "duration" => Ty::Duration,
            "raw" => Ty::Raw,
            "quantity" => Ty::Quantity,
            "intorstring" => Ty::IntOrString,
            _ => {
                if let Some(m) = s.strip_prefix("msg:") {
                    Ty::Msg(m.to_string())
                } else if let Some(m) = s.strip_prefix("schemaorarray:") {
                    Ty::SchemaOrArray(m.to_string())
                } else if let Some(m) = s.strip_prefix("schemaorbool:") {
                    Ty::SchemaOrBool(m.to_string())
                } else if let Some(m) = s.strip_prefix("schemaorstringarray:") {
                    Ty::SchemaOrStringArray(m.to_string())
                } else if let Some(t) = s.strip_prefix("list:") {
                    Ty::List(Box::new(Ty::parse(t)?))
                } else {
                    Ty::Map(Box::new(Ty::parse(s.strip_prefix("map:")?)?))
                }
            }
        })
    }

    /// Whether Go's `omitempty` can drop a value of this type (structs are never
    /// dropped by it; `Quantity`, `Time`, ... are structs).
    fn omitempty_applies(&self) -> bool {
        !matches!(
            self,
            Ty::Msg(_)
                | Ty::Time
                | Ty::MicroTime
                | Ty::Duration
                | Ty::Raw
                | Ty::Quantity
                | Ty::IntOrString
                | Ty::SchemaOrArray(_)
                | Ty::SchemaOrBool(_)
                | Ty::SchemaOrStringArray(_)
        )
    }
}

/// One field of a message, in Go declaration order.
#[derive(Debug)]
struct Field {
    num: u64,
    json: String,
    ty: Ty,
    pointer: bool,
    repeated: bool,
    omitempty: bool,
    omitzero: bool,
    inline: bool,
    /// Absent from the wire, the field is omitted from encoding/json's output (a nil
    /// slice, map or pointer under `omitempty`/`omitzero`, an empty scalar under
    /// `omitempty`): the decoder can pass it by without looking at it. `false` where that
    /// is not decided by the flags alone (the field then takes the general path).
    quiet_when_absent: bool,
}

impl Field {
    fn quiet_when_absent(&self) -> bool {
        let omittable = self.omitempty || self.omitzero;
        if self.inline {
            false
        } else if self.repeated
            || matches!(self.ty, Ty::Map(_) | Ty::Bytes | Ty::List(_))
            || self.pointer
        {
            omittable
        } else {
            self.omitempty && self.ty.omitempty_applies()
        }
    }
}

struct Table {
    /// group/version -> kind -> message.
    kinds: HashMap<String, HashMap<String, String>>,
    /// meta/v1 kinds (DeleteOptions, ...), accepted under any group/version.
    meta_kinds: HashMap<String, String>,
    messages: HashMap<String, Vec<Field>, Fnv>,
}

/// FNV-1a: the message names are short, trusted (the table's own) and looked up once
/// per decoded message, where SipHash's DoS resistance buys nothing.
#[derive(Default)]
struct FnvHasher(u64);

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        self.0 = h;
    }
}

type Fnv = std::hash::BuildHasherDefault<FnvHasher>;

/// The table (`protobuf/table.json`): every message of the built-in kinds, each field as
/// `[number, JSON name, type, flags]` under `"messages"`. Code generators read it to
/// write decoders (see [`fast`]).
pub const TABLE: &str = include_str!("protobuf/table.json");

fn table() -> &'static Table {
    static PARSED: OnceLock<Table> = OnceLock::new();
    PARSED.get_or_init(|| {
        parse_table(TABLE)
            .unwrap_or_else(|e| panic!("apiserver/src/protobuf/table.json is malformed: {e}"))
    })
}

fn parse_table(text: &str) -> Result<Table, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let strings = |v: &Value| -> Result<HashMap<String, String>, String> {
        v.as_object()
            .ok_or("not an object")?
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.as_str().ok_or("not a string")?.to_string())))
            .collect()
    };
    let kinds = v["kinds"]
        .as_object()
        .ok_or("no kinds")?
        .iter()
        .map(|(gv, ks)| Ok((gv.clone(), strings(ks)?)))
        .collect::<Result<_, String>>()?;
    let meta_kinds = strings(&v["metaKinds"])?;
    let mut messages = HashMap::default();
    for (name, fields) in v["messages"].as_object().ok_or("no messages")? {
        let fields = fields
            .as_array()
            .ok_or("fields are not an array")?
            .iter()
            .map(|f| {
                let (num, json, ty, flags) = (
                    f[0].as_u64().ok_or("number")?,
                    f[1].as_str().ok_or("json name")?,
                    f[2].as_str().ok_or("type")?,
                    f[3].as_str().ok_or("flags")?,
                );
                let mut field = Field {
                    num,
                    json: json.to_string(),
                    ty: Ty::parse(ty).ok_or_else(|| format!("{name}: type {ty:?}"))?,
                    pointer: flags.contains('p'),
                    repeated: flags.contains('r'),
                    omitempty: flags.contains('o'),
                    omitzero: flags.contains('z'),
                    inline: flags.contains('i'),
                    quiet_when_absent: false,
                };
                field.quiet_when_absent = field.quiet_when_absent();
                Ok(field)
            })
            .collect::<Result<Vec<_>, String>>()?;
        messages.insert(name.clone(), fields);
    }
    Ok(Table {
        kinds,
        meta_kinds,
        messages,
    })
}

/// Whether objects of this kind travel as protobuf: a built-in kind of the k8s.io/api
/// version the table was written from (custom resources never do).
pub fn is_built_in(api_version: &str, kind: &str) -> bool {
    table()
        .kinds
        .get(api_version)
        .is_some_and(|ks| ks.contains_key(kind))
}

/// Decodes a protobuf body (`k8s\0` and a `runtime.Unknown`) into the JSON object
/// kube-apiserver would write for it.
pub fn decode(body: &[u8]) -> Result<Map<String, Value>, Unsupported> {
    let Some(rest) = body.strip_prefix(MAGIC) else {
        return err("the body does not start with the k8s protobuf magic");
    };
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    for field in Reader(rest) {
        match field? {
            (1, Wire::Len(tm)) => {
                for f in Reader(tm) {
                    match f? {
                        (1, Wire::Len(s)) => api_version = utf8(s),
                        (2, Wire::Len(s)) => kind = utf8(s),
                        _ => {}
                    }
                }
            }
            (2, Wire::Len(r)) => raw = r,
            (3, Wire::Len(enc)) if !enc.is_empty() => {
                return err(format!(
                    "content encoding {:?} is not supported",
                    String::from_utf8_lossy(enc)
                ))
            }
            _ => {}
        }
    }
    let t = table();
    let Some(message) = t
        .kinds
        .get(&api_version)
        .and_then(|ks| ks.get(&kind))
        .or_else(|| t.meta_kinds.get(&kind))
    else {
        return err(format!(
            "{kind:?} in {api_version:?} is not a built-in kind; protobuf is only for built-in kinds, send JSON or YAML"
        ));
    };
    let mut obj = Decoder {
        t,
        depth: Default::default(),
    }
    .message(raw, message)?;
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(kind));
    Ok(obj)
}

/// Go's protobuf decoders do not check UTF-8; encoding/json writes U+FFFD for bad bytes.
fn utf8(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One field's wire value.
#[derive(Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Len(&'a [u8]),
    Fixed64(u64),
    Fixed32(u32),
}

/// Iterates over the fields of a message.
struct Reader<'a>(&'a [u8]);

fn varint(b: &mut &[u8]) -> Result<u64, Unsupported> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some((&byte, rest)) = b.split_first() else {
            return err("truncated varint");
        };
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    err("varint too long")
}

fn take<'a>(b: &mut &'a [u8], n: usize) -> Result<&'a [u8], Unsupported> {
    if n > b.len() {
        return err("truncated field");
    }
    let (v, rest) = b.split_at(n);
    *b = rest;
    Ok(v)
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<(u64, Wire<'a>), Unsupported>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let mut step = || -> Result<(u64, Wire<'a>), Unsupported> {
            let key = varint(&mut self.0)?;
            let v = match key & 7 {
                0 => Wire::Varint(varint(&mut self.0)?),
                2 => {
                    let Ok(n) = usize::try_from(varint(&mut self.0)?) else {
                        return err("length too large");
                    };
                    Wire::Len(take(&mut self.0, n)?)
                }
                1 => {
                    let b = take(&mut self.0, 8)?;
                    Wire::Fixed64(u64::from_le_bytes(
                        b.try_into()
                            .map_err(|_| Unsupported("truncated fixed64".into()))?,
                    ))
                }
                5 => {
                    let b = take(&mut self.0, 4)?;
                    Wire::Fixed32(u32::from_le_bytes(
                        b.try_into()
                            .map_err(|_| Unsupported("truncated fixed32".into()))?,
                    ))
                }
                w => return err(format!("wire type {w} is not supported")),
            };
            Ok((key >> 3, v))
        };
        let r = step();
        if r.is_err() {
            self.0 = &[];
        }
        Some(r)
    }
}

/// The wire values of one field of a message, in order.
type Occurrences<'a> = Vec<Wire<'a>>;

/// Decodes messages by the table.
struct Decoder {
    t: &'static Table,
    /// Messages being decoded: JSONSchemaProps is recursive, so a crafted body could
    /// nest without end; past [`MAX_DEPTH`] it is an error, not a stack overflow.
    depth: std::cell::Cell<usize>,
}

/// Deeper than any real object (a CRD schema nests a few levels per property level).
const MAX_DEPTH: usize = 200;

impl Decoder {
    fn fields(&self, name: &str) -> Result<&'static [Field], Unsupported> {
        match self.t.messages.get(name) {
            Some(f) => Ok(f),
            None => err(format!("no protobuf description of {name}")),
        }
    }

    /// A message's bytes as the JSON object encoding/json writes for the Go struct
    /// protobuf decodes them into.
    fn message(&self, b: &[u8], name: &str) -> Result<Map<String, Value>, Unsupported> {
        if self.depth.get() >= MAX_DEPTH {
            return err(format!("{name}: messages nested deeper than {MAX_DEPTH}"));
        }
        self.depth.set(self.depth.get() + 1);
        let out = self.message_fields(b, name);
        self.depth.set(self.depth.get() - 1);
        out
    }

    fn message_fields(&self, b: &[u8], name: &str) -> Result<Map<String, Value>, Unsupported> {
        let fields = self.fields(name)?;
        let mut seen: Vec<Occurrences<'_>> = vec![Vec::new(); fields.len()];
        for field in Reader(b) {
            let (num, wire) = field?;
            // Unknown numbers are skipped, as generated Go decoders skip them.
            if let Some(i) = fields.iter().position(|f| f.num == num) {
                seen[i].push(wire);
            }
        }
        let mut out = Map::new();
        for (f, wires) in fields.iter().zip(seen) {
            let at = || format!("{name}.{}", f.json);
            if f.inline {
                if f.pointer && wires.is_empty() {
                    continue;
                }
                let Ty::Msg(m) = &f.ty else {
                    return err(format!("{} is inline but not a message", at()));
                };
                out.extend(self.message(&merged(&wires, &at)?, m)?);
                continue;
            }
            if let Some(v) = self.field(f, &wires, &at)? {
                out.insert(f.json.clone(), v);
            }
        }
        Ok(out)
    }

    /// A field's JSON, or `None` when encoding/json omits it.
    fn field(
        &self,
        f: &Field,
        wires: &[Wire<'_>],
        at: &dyn Fn() -> String,
    ) -> Result<Option<Value>, Unsupported> {
        let omittable = f.omitempty || f.omitzero;
        if f.repeated {
            let mut items = Vec::new();
            for w in wires {
                self.items(&f.ty, *w, &mut items, at)?;
            }
            // An empty repeated field decodes to a nil slice: null, or omitted.
            return Ok(match (items.is_empty(), omittable) {
                (true, true) => None,
                (true, false) => Some(Value::Null),
                (false, _) => Some(Value::Array(items)),
            });
        }
        if let Ty::Map(vt) = &f.ty {
            let mut m = Map::new();
            for w in wires {
                let (k, v) = self.entry(vt, *w, at)?;
                m.insert(k, v);
            }
            return Ok(match (m.is_empty(), omittable) {
                (true, true) => None,
                (true, false) => Some(Value::Null),
                (false, _) => Some(Value::Object(m)),
            });
        }
        if wires.is_empty() && (f.pointer || matches!(f.ty, Ty::Bytes | Ty::List(_))) {
            // A nil pointer, slice or byte slice.
            return Ok((!omittable).then_some(Value::Null));
        }
        let v = self.single(&f.ty, wires, at)?;
        if f.pointer {
            return Ok(Some(v));
        }
        let drop = (f.omitempty && f.ty.omitempty_applies() && is_empty(&f.ty, &v))
            || (f.omitzero && self.is_zero(&f.ty, wires)?);
        Ok((!drop).then_some(v))
    }

    /// The value of a non-repeated field from its occurrences (none: the Go zero value).
    fn single(
        &self,
        ty: &Ty,
        wires: &[Wire<'_>],
        at: &dyn Fn() -> String,
    ) -> Result<Value, Unsupported> {
        match (ty, wires.last()) {
            // Embedded messages merge, as Go's generated Unmarshal merges into the field.
            (Ty::Msg(m), _) => Ok(Value::Object(self.message(&merged(wires, at)?, m)?)),
            (_, Some(w)) => self.value(ty, *w, at),
            (_, None) => Ok(zero(ty)),
        }
    }

    /// Appends the items one occurrence of a repeated field carries (scalars may be packed).
    fn items(
        &self,
        ty: &Ty,
        w: Wire<'_>,
        items: &mut Vec<Value>,
        at: &dyn Fn() -> String,
    ) -> Result<(), Unsupported> {
        match (ty, w) {
            (Ty::Bool | Ty::I32 | Ty::I64 | Ty::U32 | Ty::U64, Wire::Len(mut b)) => {
                while !b.is_empty() {
                    items.push(self.value(ty, Wire::Varint(varint(&mut b)?), at)?);
                }
            }
            (Ty::Double, Wire::Len(mut b)) => {
                while !b.is_empty() {
                    let x = take(&mut b, 8)?;
                    let bits = u64::from_le_bytes(
                        x.try_into()
                            .map_err(|_| Unsupported(format!("{}: truncated", at())))?,
                    );
                    items.push(self.value(ty, Wire::Fixed64(bits), at)?);
                }
            }
            _ => items.push(self.value(ty, w, at)?),
        }
        Ok(())
    }

    /// One map entry (a message with the key in field 1, the value in field 2).
    fn entry(
        &self,
        vt: &Ty,
        w: Wire<'_>,
        at: &dyn Fn() -> String,
    ) -> Result<(String, Value), Unsupported> {
        let Wire::Len(b) = w else {
            return err(format!("{}: a map entry is not length-delimited", at()));
        };
        let mut key = String::new();
        let mut value = Vec::new();
        for e in Reader(b) {
            match e? {
                (1, Wire::Len(k)) => key = utf8(k),
                (2, v) => value.push(v),
                _ => {}
            }
        }
        let v = match vt {
            // A map's []byte value is never nil once decoded: "" rather than null.
            Ty::Bytes if value.is_empty() => Value::String(String::new()),
            // Go's generated map decoding starts from `&ExtraValue{}`: an empty, non-nil slice.
            Ty::List(_) if value.is_empty() => Value::Array(Vec::new()),
            _ => self.single(vt, &value, at)?,
        };
        Ok((key, v))
    }

    /// One wire value of a scalar or special type.
    fn value(&self, ty: &Ty, w: Wire<'_>, at: &dyn Fn() -> String) -> Result<Value, Unsupported> {
        let bad = || Unsupported(format!("{}: unexpected wire type", at()));
        Ok(match (ty, w) {
            (Ty::Bool, Wire::Varint(v)) => Value::Bool(v != 0),
            // Go's int32/int64 travel as two's complement varints; the casts keep the bits.
            (Ty::I32, Wire::Varint(v)) => Value::from(v as i32),
            (Ty::I64, Wire::Varint(v)) => Value::from(v as i64),
            (Ty::U32, Wire::Varint(v)) => Value::from(v as u32),
            (Ty::U64, Wire::Varint(v)) => Value::from(v),
            (Ty::Double, Wire::Fixed64(bits)) => go_float(f64::from_bits(bits))
                .ok_or_else(|| Unsupported(format!("{}: not a finite number", at())))?,
            (Ty::Str, Wire::Len(b)) => Value::String(utf8(b)),
            (Ty::Bytes, Wire::Len(b)) => Value::String(base64(b)),
            (Ty::Msg(m), Wire::Len(b)) => Value::Object(self.message(b, m)?),
            (Ty::List(t), Wire::Len(b)) => {
                let mut items = Vec::new();
                for e in Reader(b) {
                    if let (1, w) = e? {
                        self.items(t, w, &mut items, at)?;
                    }
                }
                Value::Array(items)
            }
            (Ty::Time | Ty::MicroTime, Wire::Len(b)) => {
                if b.is_empty() {
                    return Ok(Value::Null); // the zero time
                }
                let (mut secs, mut nanos) = (0i64, 0i64);
                for e in Reader(b) {
                    match e? {
                        (1, Wire::Varint(s)) => secs = s as i64,
                        (2, Wire::Varint(n)) => nanos = i64::from(n as i32),
                        _ => {}
                    }
                }
                if *ty == Ty::Time {
                    // metav1.Time keeps seconds only.
                    nanos = 0;
                }
                // time.Unix normalizes nanoseconds outside [0, 1e9).
                secs += nanos.div_euclid(1_000_000_000);
                let micros = nanos.rem_euclid(1_000_000_000) / 1000;
                if secs == GO_ZERO_TIME_UNIX && micros == 0 {
                    Value::Null
                } else if *ty == Ty::Time {
                    Value::String(rfc3339(secs, None))
                } else {
                    Value::String(rfc3339(secs, Some(micros)))
                }
            }
            (
                Ty::SchemaOrArray(m) | Ty::SchemaOrBool(m) | Ty::SchemaOrStringArray(m),
                Wire::Len(b),
            ) => {
                let (mut schema, mut items, mut allows) = (Vec::new(), Vec::new(), false);
                let (schema_num, items_num) = match ty {
                    Ty::SchemaOrBool(_) => (2, 0),
                    _ => (1, 2),
                };
                for e in Reader(b) {
                    match e? {
                        (n, w) if n == schema_num => schema.push(w),
                        (n, w) if n == items_num => {
                            let item = if matches!(ty, Ty::SchemaOrArray(_)) {
                                Ty::Msg(m.clone())
                            } else {
                                Ty::Str
                            };
                            items.push(self.value(&item, w, at)?);
                        }
                        (1, Wire::Varint(v)) if matches!(ty, Ty::SchemaOrBool(_)) => {
                            allows = v != 0
                        }
                        _ => {}
                    }
                }
                if !items.is_empty() {
                    Value::Array(items)
                } else if !schema.is_empty() {
                    self.single(&Ty::Msg(m.clone()), &schema, at)?
                } else if matches!(ty, Ty::SchemaOrBool(_)) {
                    Value::Bool(allows)
                } else {
                    Value::Null
                }
            }
            (Ty::Duration, Wire::Len(b)) => {
                let mut d = 0i64;
                for e in Reader(b) {
                    if let (1, Wire::Varint(v)) = e? {
                        d = v as i64;
                    }
                }
                Value::String(go_duration(d))
            }
            (Ty::Raw, Wire::Len(b)) => {
                let mut raw: Option<&[u8]> = None;
                for e in Reader(b) {
                    if let (1, Wire::Len(r)) = e? {
                        raw = Some(r);
                    }
                }
                match raw {
                    // apiextensions' JSON writes no bytes as null (RawExtension would fail).
                    None | Some([]) => Value::Null,
                    Some(r) => serde_json::from_slice(r).map_err(|e| {
                        Unsupported(format!("{}: the embedded object is not JSON: {e}", at()))
                    })?,
                }
            }
            (Ty::Quantity, Wire::Len(b)) => {
                let mut s = String::new();
                for e in Reader(b) {
                    if let (1, Wire::Len(x)) = e? {
                        s = utf8(x);
                    }
                }
                if s.is_empty() {
                    return err(format!("{}: a quantity without a value", at()));
                }
                Value::String(s)
            }
            (Ty::IntOrString, Wire::Len(b)) => {
                let (mut is_str, mut int, mut s) = (false, 0i32, String::new());
                for e in Reader(b) {
                    match e? {
                        (1, Wire::Varint(t)) => is_str = t == 1,
                        (2, Wire::Varint(i)) => int = i as i32,
                        (3, Wire::Len(x)) => s = utf8(x),
                        _ => {}
                    }
                }
                if is_str {
                    Value::String(s)
                } else {
                    Value::from(int)
                }
            }
            _ => return Err(bad()),
        })
    }

    /// Whether the Go value of a field is its type's zero value (for `omitzero`; the
    /// special types answer with their `IsZero`).
    fn is_zero(&self, ty: &Ty, wires: &[Wire<'_>]) -> Result<bool, Unsupported> {
        Ok(match ty {
            Ty::Time | Ty::MicroTime => {
                let at = || "time".to_string();
                self.single(ty, wires, &at)?.is_null()
            }
            Ty::Quantity => {
                let at = || "quantity".to_string();
                match self.single(ty, wires, &at) {
                    Ok(Value::String(s)) => quantity_is_zero(&s),
                    _ => true,
                }
            }
            Ty::Msg(m) => {
                let fields = self.fields(m)?;
                for w in wires {
                    let Wire::Len(b) = w else { return Ok(false) };
                    for field in Reader(b) {
                        let (num, w) = field?;
                        let Some(f) = fields.iter().find(|f| f.num == num) else {
                            continue;
                        };
                        // A set pointer, a non-nil slice or map is not zero.
                        if f.pointer || f.repeated || matches!(f.ty, Ty::Map(_) | Ty::Bytes) {
                            return Ok(false);
                        }
                        if !self.is_zero(&f.ty, &[w])? {
                            return Ok(false);
                        }
                    }
                }
                true
            }
            _ => wires.last().is_none_or(|w| wire_is_zero(ty, *w)),
        })
    }
}

/// A float64 as encoding/json writes it, read back: an integral value below 1e21 is
/// written without a fraction or exponent, so it reads as an integer.
fn go_float(x: f64) -> Option<Value> {
    if x.fract() == 0.0 && x.abs() < 1e21 {
        // The casts are exact: x is integral and in range.
        if x.abs() < 9.0e18 {
            return Some(Value::from(x as i64));
        }
        if x > 0.0 && x < 1.8e19 {
            return Some(Value::from(x as u64));
        }
    }
    Number::from_f64(x).map(Value::Number)
}

/// The Unix seconds of Go's zero `time.Time` (January 1, year 1, UTC).
const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// The bytes of all occurrences of a message field, concatenated: protobuf merges them.
fn merged(wires: &[Wire<'_>], at: &dyn Fn() -> String) -> Result<Vec<u8>, Unsupported> {
    let mut out = Vec::new();
    for w in wires {
        match w {
            Wire::Len(b) => out.extend_from_slice(b),
            _ => return err(format!("{}: a message is not length-delimited", at())),
        }
    }
    Ok(out)
}

/// Whether `omitempty` drops this (non-struct) value: false, 0, "", an empty slice or map.
fn is_empty(ty: &Ty, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty() && matches!(ty, Ty::Map(_)),
    }
}

/// Whether one wire value decodes to its type's zero value.
fn wire_is_zero(ty: &Ty, w: Wire<'_>) -> bool {
    match w {
        Wire::Varint(v) => v == 0,
        Wire::Fixed64(v) => v == 0 || v == 1 << 63,
        Wire::Fixed32(v) => v == 0,
        // A message (or string, bytes) without content; a present []byte is non-nil.
        Wire::Len(b) => b.is_empty() && !matches!(ty, Ty::Bytes),
    }
}

/// The Go zero value of a non-message type, as JSON, for a field the body did not carry.
fn zero(ty: &Ty) -> Value {
    match ty {
        Ty::Str => Value::String(String::new()),
        Ty::Bool => Value::Bool(false),
        Ty::I32 | Ty::I64 | Ty::U32 | Ty::U64 | Ty::IntOrString => Value::from(0),
        Ty::Double => Value::from(0.0),
        Ty::Quantity => Value::String("0".into()),
        Ty::Duration => Value::String("0s".into()),
        Ty::SchemaOrBool(_) => Value::Bool(false),
        Ty::Time
        | Ty::MicroTime
        | Ty::Raw
        | Ty::Bytes
        | Ty::List(_)
        | Ty::Map(_)
        | Ty::Msg(_)
        | Ty::SchemaOrArray(_)
        | Ty::SchemaOrStringArray(_) => Value::Null,
    }
}

/// Whether a quantity string is zero (`resource.Quantity.IsZero`): its digits are all 0.
fn quantity_is_zero(s: &str) -> bool {
    let number = s
        .trim_start_matches(['+', '-'])
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()
        .unwrap_or("");
    number.chars().all(|c| c == '0' || c == '.')
}

/// A duration in nanoseconds as Go's `time.Duration.String` writes it (`1h2m3.5s`,
/// `1.5ms`, `0s`).
fn go_duration(d: i64) -> String {
    if d == 0 {
        return "0s".into();
    }
    let sign = if d < 0 { "-" } else { "" };
    let mut u = d.unsigned_abs();
    // The fraction of `u` below 10^prec, trailing zeros dropped; `u` keeps the rest.
    let frac = |u: &mut u64, prec: u32| -> String {
        let f = *u % 10u64.pow(prec);
        *u /= 10u64.pow(prec);
        if f == 0 {
            return String::new();
        }
        let digits = format!("{f:0width$}", width = prec as usize);
        format!(".{}", digits.trim_end_matches('0'))
    };
    let body = if u < 1_000 {
        format!("{u}ns")
    } else if u < 1_000_000 {
        let f = frac(&mut u, 3);
        format!("{u}{f}µs")
    } else if u < 1_000_000_000 {
        let f = frac(&mut u, 6);
        format!("{u}{f}ms")
    } else {
        let f = frac(&mut u, 9);
        let mut out = format!("{}{f}s", u % 60);
        u /= 60;
        if u > 0 {
            out = format!("{}m{out}", u % 60);
            u /= 60;
            if u > 0 {
                out = format!("{u}h{out}");
            }
        }
        out
    };
    format!("{sign}{body}")
}

/// Standard base64 with padding, as Go's JSON encodes `[]byte`.
pub fn base64(b: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(char::from(T[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Seconds since the epoch as RFC 3339 UTC: `2006-01-02T15:04:05Z`, or with
/// microseconds `2006-01-02T15:04:05.000000Z` (metav1.MicroTime).
fn rfc3339(secs: i64, micros: Option<i64>) -> String {
    let (y, m, d, rem) = civil(secs);
    if !((0..=9999).contains(&y) && micros.is_none_or(|u| (0..1_000_000).contains(&u))) {
        return rfc3339_formatted(secs, micros);
    }
    // Every timestamp of a real object: written digit by digit, without the formatting
    // machinery (a tenth of a protobuf Pod's decode went to `format!`).
    let mut out = String::with_capacity(if micros.is_some() { 27 } else { 20 });
    push_digits(&mut out, y, 4);
    out.push('-');
    push_digits(&mut out, m, 2);
    out.push('-');
    push_digits(&mut out, d, 2);
    out.push('T');
    push_digits(&mut out, rem / 3600, 2);
    out.push(':');
    push_digits(&mut out, rem % 3600 / 60, 2);
    out.push(':');
    push_digits(&mut out, rem % 60, 2);
    if let Some(u) = micros {
        out.push('.');
        push_digits(&mut out, u, 6);
    }
    out.push('Z');
    out
}

/// [`rfc3339`] through `format!`: for years outside 0-9999 (and the reference its
/// digit-by-digit path is tested against).
fn rfc3339_formatted(secs: i64, micros: Option<i64>) -> String {
    let (y, m, d, rem) = civil(secs);
    let frac = micros.map(|u| format!(".{u:06}")).unwrap_or_default();
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{frac}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Seconds since the epoch as (year, month, day, seconds into the day), UTC
/// (civil-from-days, Howard Hinnant's algorithm).
fn civil(secs: i64) -> (i64, i64, i64, i64) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d, rem)
}

/// The `n` last decimal digits of `v` (non-negative), zero-padded.
fn push_digits(out: &mut String, v: i64, n: u32) {
    for i in (0..n).rev() {
        out.push(char::from(b'0' + (v / 10i64.pow(i) % 10) as u8));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(num: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, num << 3 | 2);
        put_varint(&mut out, payload.len() as u64);
        out.extend_from_slice(payload);
        out
    }

    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut tm = field(1, api_version.as_bytes());
        tm.extend(field(2, kind.as_bytes()));
        let mut out = MAGIC.to_vec();
        out.extend(field(1, &tm));
        out.extend(field(2, raw));
        out
    }

    #[test]
    fn secret_with_bytes_and_empty_fields() {
        let mut meta = field(1, b"s");
        meta.extend(field(2, b""));
        let mut entry = field(1, b"k");
        entry.extend(field(2, b"hello"));
        let mut raw = field(1, &meta);
        raw.extend(field(2, &entry));
        raw.extend(field(3, b"Opaque"));
        let obj = decode(&envelope("v1", "Secret", &raw)).unwrap();
        assert_eq!(
            Value::Object(obj),
            serde_json::json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s"}, "data": {"k": "aGVsbG8="}, "type": "Opaque"})
        );
    }

    #[test]
    fn delete_options_keep_a_zero_grace_period_under_any_group_version() {
        for gv in ["meta.k8s.io/v1", "v1", "apps/v1"] {
            let mut raw = vec![1 << 3, 0];
            raw.extend(field(4, b"Foreground"));
            let obj = decode(&envelope(gv, "DeleteOptions", &raw)).unwrap();
            assert_eq!(obj["gracePeriodSeconds"], 0);
            assert_eq!(obj["propagationPolicy"], "Foreground");
        }
    }

    #[test]
    fn a_pointer_sent_as_zero_is_kept_and_a_plain_zero_is_omitted() {
        // DeploymentSpec.replicas (*int32) = 0, minReadySeconds (int32) = 0.
        let spec = [vec![1 << 3, 0], vec![5 << 3, 0]].concat();
        let obj = decode(&envelope("apps/v1", "Deployment", &field(2, &spec))).unwrap();
        assert_eq!(obj["spec"]["replicas"], 0);
        assert!(obj["spec"].get("minReadySeconds").is_none());
        // status is a struct: encoding/json writes it even when empty.
        assert_eq!(obj["status"], serde_json::json!({}));
    }

    #[test]
    fn unknown_kinds_and_malformed_bodies_are_errors_and_unknown_fields_are_skipped() {
        let e = decode(&envelope("example.com/v1", "Gizmo", &[])).unwrap_err();
        assert!(e.0.contains("not a built-in kind"), "{}", e.0);
        let mut raw = field(99, b"x");
        raw.extend(field(2, &[field(1, b"k"), field(2, b"v")].concat()));
        let obj = decode(&envelope("v1", "ConfigMap", &raw)).unwrap();
        assert_eq!(obj["data"], serde_json::json!({"k": "v"}));
        assert!(decode(b"{}").is_err());
        assert!(decode(&envelope("v1", "ConfigMap", &[0x0a, 0x05, 0x01])).is_err());
    }

    /// JSONSchemaProps nests itself (`not`, `items`, `properties`): a crafted body
    /// nested past the bound is an error, not a stack overflow.
    #[test]
    fn nesting_is_bounded() {
        let t = table();
        let schema = "apiextensions/v1.JSONSchemaProps";
        let not = t.messages[schema]
            .iter()
            .find(|f| f.json == "not")
            .map(|f| f.num)
            .unwrap();
        let nested = |levels: usize| {
            let mut raw = Vec::new();
            for _ in 0..levels {
                raw = field(not, &raw);
            }
            raw
        };
        let d = || Decoder {
            t,
            depth: Default::default(),
        };
        let ok = d().message(&nested(50), schema).unwrap();
        assert!(ok["not"]["not"].is_object());
        let e = d().message(&nested(100_000), schema).unwrap_err();
        assert!(e.0.contains("nested deeper"), "{}", e.0);
    }

    #[test]
    fn helpers() {
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(rfc3339(0, None), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000, None), "2023-11-14T22:13:20Z");
        assert_eq!(
            rfc3339(1_700_000_000, Some(5)),
            "2023-11-14T22:13:20.000005Z"
        );
        // The digit-by-digit path writes what the formatted one does, from year 0 to
        // 9999 (leap days, the end of each day, every microsecond width); outside it the
        // formatted path is kept.
        let formatted = rfc3339_formatted;
        let (first, last) = (-62_167_219_200i64, 253_402_300_799i64); // 0000-01-01, 9999-12-31T23:59:59
        let mut secs = first;
        let mut n = 0i64;
        while secs <= last {
            for micros in [None, Some(0), Some(7), Some(999_999)] {
                assert_eq!(
                    rfc3339(secs, micros),
                    formatted(secs, micros),
                    "{secs} {micros:?}"
                );
            }
            n += 1;
            secs += 9 * 86_400 + (n % 13) * 3_601 + 17;
        }
        assert_eq!(rfc3339(last, None), "9999-12-31T23:59:59Z");
        assert_eq!(rfc3339(first, None), "0000-01-01T00:00:00Z");
        assert_eq!(rfc3339(first - 1, None), formatted(first - 1, None));
        assert_eq!(rfc3339(last + 1, None), formatted(last + 1, None));
        for (ns, s) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (1_000_000, "1ms"),
            (2_250_000, "2.25ms"),
            (1_000_000_000, "1s"),
            (61_500_000_000, "1m1.5s"),
            (3_600_000_000_000, "1h0m0s"),
            (-90_000_000_000, "-1m30s"),
        ] {
            assert_eq!(go_duration(ns), s, "{ns}");
        }
        assert!(quantity_is_zero("0") && quantity_is_zero("0.0Gi") && !quantity_is_zero("100m"));
        assert_eq!(go_float(3.0), Some(Value::from(3)));
        assert_eq!(go_float(-0.5), Some(serde_json::json!(-0.5)));
        assert_eq!(go_float(f64::NAN), None);
    }

    /// The first place two JSON values differ, as a path.
    fn difference(a: &Value, b: &Value, path: &str) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for k in x.keys().chain(y.keys()) {
                    let (p, q) = (x.get(k), y.get(k));
                    match (p, q) {
                        (Some(p), Some(q)) => {
                            if let Some(d) = difference(p, q, &format!("{path}.{k}")) {
                                return Some(d);
                            }
                        }
                        _ => return Some(format!("{path}.{k}: {p:?} vs {q:?}")),
                    }
                }
                None
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| difference(p, q, &format!("{path}[{i}]"))),
            _ => (a != b).then(|| format!("{path}: {a} vs {b}")),
        }
    }

    /// Checks a corpus written by `protobufgen corpus`: every line's protobuf decodes to
    /// exactly the JSON encoding/json wrote for the object kube-apiserver decodes.
    fn check_corpus(text: &str) -> usize {
        let mut failures = Vec::new();
        let mut n = 0;
        for line in text.lines().filter(|l| !l.is_empty()) {
            let case: Value = serde_json::from_str(line).unwrap();
            let what = format!("{} {}", case["apiVersion"], case["kind"]);
            let pb = base64_decode(case["protobuf"].as_str().unwrap());
            n += 1;
            match decode(&pb) {
                Ok(got) => {
                    if let Some(d) = difference(&Value::Object(got.clone()), &case["json"], "") {
                        failures.push(format!("{what}: ours vs Go at {d}"));
                    }
                    // What the in-memory server answers protobuf clients with decodes
                    // back to the same JSON.
                    match encode_object(&got).and_then(|b| decode(&b)) {
                        Ok(again) => {
                            if let Some(d) =
                                difference(&Value::Object(again), &Value::Object(got), "")
                            {
                                failures.push(format!("{what}: re-encoded vs decoded at {d}"));
                            }
                        }
                        Err(e) => failures.push(format!("{what}: encoding: {}", e.0)),
                    }
                }
                Err(e) => failures.push(format!("{what}: {}", e.0)),
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {n} objects differ:\n{}",
            failures.len(),
            failures
                .iter()
                .take(20)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
        n
    }

    fn base64_decode(s: &str) -> Vec<u8> {
        const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u32, 0);
        for c in s.bytes().filter(|&c| c != b'=') {
            let v = T.iter().position(|&t| t == c).unwrap() as u32;
            acc = acc << 6 | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        out
    }

    /// The committed corpus: one random object of every built-in kind (seed 1). CI's
    /// client-go stage also checks fresh corpora of many objects per kind, written by
    /// the Go side of the same k8s.io/api version, through `KUBEGEN_PROTOBUF_CORPUS`.
    #[test]
    fn corpus_every_built_in_kind_decodes_as_kube_apiserver_would() {
        let n = check_corpus(include_str!("protobuf/corpus.jsonl"));
        assert!(n >= table().kinds.values().map(HashMap::len).sum::<usize>());
        if let Ok(paths) = std::env::var("KUBEGEN_PROTOBUF_CORPUS") {
            for path in paths.split(':') {
                let text = std::fs::read_to_string(path).unwrap();
                let n = check_corpus(&text);
                eprintln!("{path}: {n} objects decode as encoding/json writes them");
                assert!(n > 0, "{path} is empty");
            }
        }
    }
}
