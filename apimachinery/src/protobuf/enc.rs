//! The encoder: the JSON of a built-in object (as kube-apiserver writes it) into the
//! protobuf kube-apiserver would answer with, by the same table as the decoder.
//!
//! Contract: `decode(encode_object(o)) == o` for every object `o` that is the JSON Go's
//! encoding/json writes for a built-in kind (the corpus test holds it to that on every
//! kind), so a server that keeps JSON can answer protobuf clients. Absent and `null`
//! fields are not sent (the zero value); repeated scalars are sent unpacked, map entries
//! in key order. A value of the wrong JSON type for its field is an error naming the
//! field.

use serde_json::{Map, Value};

use super::{err, table, Field, Table, Ty, Unsupported, MAGIC};

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_key(out: &mut Vec<u8>, num: u64, wire: u64) {
    put_varint(out, num << 3 | wire);
}

fn put_len(out: &mut Vec<u8>, num: u64, b: &[u8]) {
    put_key(out, num, 2);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// The `k8s\0` envelope (`runtime.Unknown`) around an encoded object.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut tm = Vec::with_capacity(api_version.len() + kind.len() + 4);
    put_len(&mut tm, 1, api_version.as_bytes());
    put_len(&mut tm, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(raw.len() + tm.len() + 16);
    out.extend_from_slice(MAGIC);
    put_len(&mut out, 1, &tm);
    put_len(&mut out, 2, raw);
    // contentEncoding and contentType: empty, as kube-apiserver sends them.
    put_len(&mut out, 3, b"");
    put_len(&mut out, 4, b"");
    out
}

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

/// Encodes a whole object (its `apiVersion` and `kind` name the message) as a protobuf
/// body: `k8s\0` and a `runtime.Unknown`.
pub fn encode_object(obj: &Map<String, Value>) -> Result<Vec<u8>, Unsupported> {
    let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (s("apiVersion"), s("kind"));
    let t = table();
    let mut raw = Vec::with_capacity(1024);
    message(t, &mut raw, obj, message_of(t, api_version, kind)?, 0)?;
    Ok(envelope(api_version, kind, &raw))
}

/// Encodes a list (`<Kind>List` of `api_version`) with its `metadata` (a `ListMeta`)
/// and items (objects of `Kind`, with or without `apiVersion` and `kind`).
pub fn encode_list<'a>(
    api_version: &str,
    list_kind: &str,
    meta: &Map<String, Value>,
    items: impl IntoIterator<Item = &'a Map<String, Value>>,
) -> Result<Vec<u8>, Unsupported> {
    let Some(kind) = list_kind.strip_suffix("List") else {
        return err(format!("{list_kind:?} is not a list kind"));
    };
    let t = table();
    let item_message = message_of(t, api_version, kind)?;
    let mut raw = Vec::with_capacity(4096);
    let mut buf = Vec::new();
    message(t, &mut buf, meta, "meta/v1.ListMeta", 0)?;
    put_len(&mut raw, 1, &buf);
    for item in items {
        buf.clear();
        message(t, &mut buf, item, item_message, 0)?;
        put_len(&mut raw, 2, &buf);
    }
    Ok(envelope(api_version, list_kind, &raw))
}

/// One frame of a protobuf watch: the 4-byte big-endian length and a
/// `metav1.WatchEvent` of this type whose object is `object` (a whole protobuf body).
pub fn watch_frame(ty: &str, object: &[u8]) -> Vec<u8> {
    let mut raw_ext = Vec::with_capacity(object.len() + 8);
    put_len(&mut raw_ext, 1, object);
    let mut ev = Vec::with_capacity(raw_ext.len() + ty.len() + 8);
    put_len(&mut ev, 1, ty.as_bytes());
    put_len(&mut ev, 2, &raw_ext);
    // A frame longer than 4 GiB cannot be written; objects are far below etcd's 1.5 MiB.
    let len = u32::try_from(ev.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(ev.len() + 4);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&ev);
    out
}

fn message(
    t: &'static Table,
    out: &mut Vec<u8>,
    obj: &Map<String, Value>,
    name: &str,
    depth: usize,
) -> Result<(), Unsupported> {
    if depth >= super::MAX_DEPTH {
        return err(format!(
            "{name}: objects nested deeper than {}",
            super::MAX_DEPTH
        ));
    }
    let Some(fields) = t.messages.get(name) else {
        return err(format!("no protobuf description of {name}"));
    };
    for f in fields {
        let at = || format!("{name}.{}", f.json);
        if f.inline {
            let Ty::Msg(m) = &f.ty else {
                return err(format!("{} is inline but not a message", at()));
            };
            let mut sub = Vec::new();
            message(t, &mut sub, obj, m, depth + 1)?;
            if !(f.pointer && sub.is_empty()) {
                put_len(out, f.num, &sub);
            }
            continue;
        }
        // apiextensions' "schema or array" types are set but empty when their JSON is
        // `null` (Go's MarshalJSON writes an empty one so): an empty message keeps them
        // set, as Go encodes them.
        if obj.get(&f.json).is_some_and(Value::is_null)
            && matches!(f.ty, Ty::SchemaOrArray(_) | Ty::SchemaOrStringArray(_))
        {
            put_len(out, f.num, &[]);
            continue;
        }
        let Some(v) = obj.get(&f.json).filter(|v| !v.is_null()) else {
            continue;
        };
        field(t, out, f, v, depth, &at)?;
    }
    Ok(())
}

fn field(
    t: &'static Table,
    out: &mut Vec<u8>,
    f: &Field,
    v: &Value,
    depth: usize,
    at: &dyn Fn() -> String,
) -> Result<(), Unsupported> {
    if f.repeated {
        let Value::Array(items) = v else {
            return err(format!("{}: not a list", at()));
        };
        for item in items {
            value(t, out, f.num, &f.ty, item, depth, at)?;
        }
        return Ok(());
    }
    if let Ty::Map(vt) = &f.ty {
        let Value::Object(m) = v else {
            return err(format!("{}: not an object", at()));
        };
        let mut entries: Vec<(&String, &Value)> = m.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let mut entry = Vec::new();
        for (k, v) in entries {
            entry.clear();
            put_len(&mut entry, 1, k.as_bytes());
            if !v.is_null() {
                value(t, &mut entry, 2, vt, v, depth, at)?;
            }
            put_len(out, f.num, &entry);
        }
        return Ok(());
    }
    value(t, out, f.num, &f.ty, v, depth, at)
}

#[allow(clippy::too_many_arguments)]
fn value(
    t: &'static Table,
    out: &mut Vec<u8>,
    num: u64,
    ty: &Ty,
    v: &Value,
    depth: usize,
    at: &dyn Fn() -> String,
) -> Result<(), Unsupported> {
    let bad = |what: &str| Unsupported(format!("{}: {v} is not {what}", at()));
    let str_of = |v: &Value| v.as_str().map(str::to_owned).ok_or_else(|| bad("a string"));
    match ty {
        Ty::Str => put_len(out, num, str_of(v)?.as_bytes()),
        Ty::Bool => {
            put_key(out, num, 0);
            put_varint(out, u64::from(v.as_bool().ok_or_else(|| bad("a boolean"))?));
        }
        // Go sends negative int32 and int64 as ten-byte two's complement varints.
        Ty::I32 | Ty::I64 => {
            put_key(out, num, 0);
            put_varint(out, v.as_i64().ok_or_else(|| bad("an integer"))? as u64);
        }
        Ty::U32 | Ty::U64 => {
            put_key(out, num, 0);
            put_varint(out, v.as_u64().ok_or_else(|| bad("an unsigned integer"))?);
        }
        Ty::Double => {
            put_key(out, num, 1);
            let x = v.as_f64().ok_or_else(|| bad("a number"))?;
            out.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        Ty::Bytes => {
            let b = base64_decode(&str_of(v)?).ok_or_else(|| bad("base64"))?;
            put_len(out, num, &b);
        }
        Ty::Time | Ty::MicroTime => {
            let (secs, nanos) =
                parse_rfc3339(&str_of(v)?).ok_or_else(|| bad("an RFC 3339 time"))?;
            let mut m = Vec::new();
            put_key(&mut m, 1, 0);
            put_varint(&mut m, secs as u64);
            if nanos != 0 {
                put_key(&mut m, 2, 0);
                put_varint(&mut m, u64::from(nanos));
            }
            put_len(out, num, &m);
        }
        Ty::Duration => {
            let d = parse_go_duration(&str_of(v)?).ok_or_else(|| bad("a Go duration"))?;
            let mut m = Vec::new();
            put_key(&mut m, 1, 0);
            put_varint(&mut m, d as u64);
            put_len(out, num, &m);
        }
        Ty::Raw => {
            let json = serde_json::to_vec(v).map_err(|e| bad(&e.to_string()))?;
            let mut m = Vec::new();
            put_len(&mut m, 1, &json);
            put_len(out, num, &m);
        }
        Ty::Quantity => {
            let s = match v {
                Value::Number(n) => n.to_string(),
                _ => str_of(v)?,
            };
            let mut m = Vec::new();
            put_len(&mut m, 1, s.as_bytes());
            put_len(out, num, &m);
        }
        Ty::IntOrString => {
            let mut m = Vec::new();
            match v {
                Value::Number(n) => {
                    put_key(&mut m, 1, 0);
                    put_varint(&mut m, 0);
                    put_key(&mut m, 2, 0);
                    put_varint(&mut m, n.as_i64().ok_or_else(|| bad("an int32"))? as u64);
                }
                Value::String(s) => {
                    put_key(&mut m, 1, 0);
                    put_varint(&mut m, 1);
                    put_len(&mut m, 3, s.as_bytes());
                }
                _ => return Err(bad("an integer or a string")),
            }
            put_len(out, num, &m);
        }
        Ty::Msg(name) => {
            let Value::Object(o) = v else {
                return Err(bad("an object"));
            };
            let mut m = Vec::new();
            message(t, &mut m, o, name, depth + 1)?;
            put_len(out, num, &m);
        }
        Ty::List(item) => {
            let Value::Array(items) = v else {
                return Err(bad("a list"));
            };
            let mut m = Vec::new();
            for i in items {
                value(t, &mut m, 1, item, i, depth, at)?;
            }
            put_len(out, num, &m);
        }
        Ty::Map(_) => return err(format!("{}: a map inside a map", at())),
        Ty::SchemaOrArray(name) | Ty::SchemaOrStringArray(name) => {
            let item = match ty {
                Ty::SchemaOrArray(_) => Ty::Msg(name.clone()),
                _ => Ty::Str,
            };
            let mut m = Vec::new();
            match v {
                Value::Array(items) => {
                    for i in items {
                        value(t, &mut m, 2, &item, i, depth, at)?;
                    }
                }
                Value::Object(_) => value(t, &mut m, 1, &Ty::Msg(name.clone()), v, depth, at)?,
                _ => return Err(bad("a schema or a list")),
            }
            put_len(out, num, &m);
        }
        Ty::SchemaOrBool(name) => {
            let mut m = Vec::new();
            put_key(&mut m, 1, 0);
            match v {
                Value::Bool(b) => put_varint(&mut m, u64::from(*b)),
                Value::Object(_) => {
                    put_varint(&mut m, 1);
                    value(t, &mut m, 2, &Ty::Msg(name.clone()), v, depth, at)?;
                }
                _ => return Err(bad("a schema or a boolean")),
            }
            put_len(out, num, &m);
        }
    }
    Ok(())
}

/// Standard base64 (padding optional), as Go's JSON writes `[]byte`.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2006-01-02T15:04:05[.999999999](Z|+07:00)` as Unix seconds and nanoseconds.
fn parse_rfc3339(s: &str) -> Option<(i64, u32)> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut i = 19;
    let mut nanos = 0u32;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let digits = s.get(start..i)?;
        if digits.is_empty() || digits.len() > 9 {
            return None;
        }
        nanos = digits.parse::<u32>().ok()? * 10u32.pow(9 - digits.len() as u32);
    }
    let offset = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        b'+' | b'-' if i + 6 == b.len() => {
            let sign = if b[i] == b'-' { -1 } else { 1 };
            sign * (num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60)
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se - offset;
    Some((secs, nanos))
}

/// Go's `time.ParseDuration` (`1h2m3.5s`, `-1.5ms`, `0`) in nanoseconds.
fn parse_go_duration(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..end].parse().ok()?;
        rest = &rest[end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += n * scale;
    }
    let v = total.round() as i64;
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_durations_parse_as_go_writes_them() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(
            parse_rfc3339("2023-11-14T22:13:20.000005Z"),
            Some((1_700_000_000, 5_000))
        );
        assert_eq!(
            parse_rfc3339("2023-11-14T23:13:20+01:00"),
            Some((1_700_000_000, 0))
        );
        assert_eq!(
            parse_rfc3339("0001-01-01T00:00:00Z"),
            Some((super::super::GO_ZERO_TIME_UNIX, 0))
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
        for (s, ns) in [
            ("0s", 0),
            ("1.5µs", 1_500),
            ("2.25ms", 2_250_000),
            ("1m1.5s", 61_500_000_000),
            ("1h0m0s", 3_600_000_000_000),
            ("-1m30s", -90_000_000_000),
        ] {
            assert_eq!(parse_go_duration(s), Some(ns), "{s}");
            assert_eq!(super::super::go_duration(ns), s);
        }
        assert_eq!(base64_decode("aGVsbG8="), Some(b"hello".to_vec()));
    }
}
