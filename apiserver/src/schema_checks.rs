//! The parts of a structural schema's validation beyond types and bounds that
//! kube-apiserver checks on a custom resource: `format`, list types (`set`, `map`),
//! property counts, and the causes of the composition keywords.
//!
//! Contract (each as kube-apiserver 1.36 answers, checked against it):
//! - `format`: the string formats kube-apiserver keeps (`date`, `date-time`, `duration`,
//!   `byte`, `ipv4`, `ipv6`, `cidr`, `mac`, `uuid`, `uuid3`, `uuid4`, `uuid5`, `email`,
//!   `uri`, `hostname`) are a `FieldValueTypeInvalid` cause at the field ("must be of type
//!   <format>"); an integer out of `int32`/`int64` range or a number out of `float` range
//!   is a cause without a field (`<nil>`: "Checked value must be of type integer with
//!   format int32 in <path>"). Other formats (`password`, `double`, unknown ones) are not
//!   checked.
//! - `x-kubernetes-list-type: set`: a value repeated is a `FieldValueDuplicate` at its
//!   first repetition; `map`: two items with the same values of the
//!   `x-kubernetes-list-map-keys` (absent keys count as equal) are a `FieldValueDuplicate`
//!   at the later item.
//! - `maxProperties` is `FieldValueTooMany`, `minProperties` `FieldValueInvalid`.
//! - `oneOf` not matched exactly once, `anyOf` matched by none, `not` matched: a `<nil>`
//!   cause naming the path, as kube-apiserver reports composition failures. `allOf`
//!   branches validate as the schema itself (the caller's job).
//! - Not done: the rarely used formats `bsonobjectid`, `isbn*`, `creditcard`, `ssn`,
//!   `hexcolor`, `rgbcolor`.

use std::net::{IpAddr, Ipv4Addr};

use base64::Engine;
use serde_json::Value;

use crate::errors::{cause, StatusCause};

/// The field of a cause kube-apiserver reports without one.
pub(crate) const NIL_FIELD: &str = "<nil>";

fn nil_cause(message: String) -> StatusCause {
    StatusCause {
        reason: cause::FIELD_VALUE_INVALID.into(),
        message: format!("Invalid value: \"\": {message}"),
        field: NIL_FIELD.into(),
    }
}

/// The cause of a value that breaks its schema's `format`, if it does.
pub(crate) fn format(v: &Value, s: &Value, path: &str) -> Option<StatusCause> {
    let f = s.get("format").and_then(Value::as_str)?;
    match v {
        Value::String(x) => {
            let ok = match f {
                "date" => date(x),
                "date-time" => date_time(x),
                "duration" => duration(x),
                "byte" => {
                    !x.is_empty() && base64::engine::general_purpose::STANDARD.decode(x).is_ok()
                }
                "ipv4" => x.parse::<Ipv4Addr>().is_ok(),
                "ipv6" => x.contains(':') && x.parse::<IpAddr>().is_ok(),
                "cidr" => cidr(x),
                "mac" => mac(x),
                "uuid" => uuid(x, None),
                "uuid3" => uuid(x, Some('3')),
                "uuid4" => uuid(x, Some('4')),
                "uuid5" => uuid(x, Some('5')),
                "email" => email(x),
                "uri" => uri(x),
                "hostname" => hostname(x),
                _ => true,
            };
            (!ok).then(|| StatusCause {
                reason: cause::FIELD_VALUE_TYPE_INVALID.into(),
                message: format!("Invalid value: {v}: {path} in body must be of type {f}: {v}"),
                field: path.into(),
            })
        }
        Value::Number(n) => {
            let ok = match f {
                "int32" => n.as_i64().is_none_or(|i| i32::try_from(i).is_ok()),
                "int64" => n.is_i64() || n.is_f64(),
                "float" => n.as_f64().is_none_or(|x| x.abs() <= f64::from(f32::MAX)),
                _ => true,
            };
            let ty = if f == "float" { "number" } else { "integer" };
            (!ok).then(|| {
                nil_cause(format!(
                    "Checked value must be of type {ty} with format {f} in {path}"
                ))
            })
        }
        _ => None,
    }
}

/// Duplicates in a `set` or `map` list.
pub(crate) fn list_type(items: &[Value], s: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for (i, x) in items.iter().enumerate() {
                let first = items.iter().position(|y| y == x);
                let repeated_before = items[..i].iter().filter(|y| *y == x).count();
                if first != Some(i) && repeated_before == 1 {
                    causes.push(duplicate(path, i, x.to_string()));
                }
            }
        }
        Some("map") => {
            let keys: Vec<&str> = s
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let key_of = |x: &Value| -> Vec<Option<Value>> {
                keys.iter().map(|k| x.get(k).cloned()).collect()
            };
            let all: Vec<Vec<Option<Value>>> = items.iter().map(key_of).collect();
            for (i, k) in all.iter().enumerate() {
                if all[..i].iter().filter(|x| *x == k).count() == 1 {
                    let shown: serde_json::Map<String, Value> = keys
                        .iter()
                        .zip(k)
                        .filter_map(|(name, v)| Some(((*name).to_owned(), v.clone()?)))
                        .collect();
                    causes.push(duplicate(path, i, Value::Object(shown).to_string()));
                }
            }
        }
        _ => {}
    }
}

fn duplicate(path: &str, i: usize, shown: String) -> StatusCause {
    StatusCause {
        reason: cause::FIELD_VALUE_DUPLICATE.into(),
        message: format!("Duplicate value: {shown}"),
        field: format!("{path}[{i}]"),
    }
}

/// `maxProperties` and `minProperties`.
pub(crate) fn property_count(n: usize, s: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    let n = n as u64;
    if let Some(max) = s.get("maxProperties").and_then(Value::as_u64) {
        if n > max {
            let items = if max == 1 { "item" } else { "items" };
            causes.push(StatusCause {
                reason: cause::FIELD_VALUE_TOO_MANY.into(),
                message: format!("Too many: {n}: must have at most {max} {items}"),
                field: path.into(),
            });
        }
    }
    if let Some(min) = s.get("minProperties").and_then(Value::as_u64) {
        if n < min {
            causes.push(StatusCause {
                reason: cause::FIELD_VALUE_INVALID.into(),
                message: format!(
                    "Invalid value: {n}: {path} in body should have at least {min} properties"
                ),
                field: path.into(),
            });
        }
    }
}

/// The causes of `oneOf`, `anyOf` and `not`, given whether `v` validates against a
/// schema (`fits`).
pub(crate) fn composition(
    s: &Value,
    path: &str,
    fits: impl Fn(&Value) -> bool,
    causes: &mut Vec<StatusCause>,
) {
    let branches = |k: &str| s.get(k).and_then(Value::as_array).filter(|b| !b.is_empty());
    if let Some(one_of) = branches("oneOf") {
        let valid = one_of.iter().filter(|b| fits(b)).count();
        if valid != 1 {
            let found = match valid {
                0 => "Found none valid".to_owned(),
                n => format!("Found {n} valid alternatives"),
            };
            causes.push(nil_cause(format!(
                "{path:?} must validate one and only one schema (oneOf). {found}"
            )));
        }
    }
    if let Some(any_of) = branches("anyOf") {
        if !any_of.iter().any(&fits) {
            causes.push(nil_cause(format!(
                "{path:?} must validate at least one schema (anyOf)"
            )));
        }
    }
    if let Some(not) = s.get("not").filter(|n| n.is_object()) {
        if fits(not) {
            causes.push(nil_cause(format!(
                "{path:?} must not validate the schema (not)"
            )));
        }
    }
}

fn digits(x: &str) -> bool {
    !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit())
}

fn date(x: &str) -> bool {
    x.len() == 10 && chrono::NaiveDate::parse_from_str(x, "%Y-%m-%d").is_ok()
}

fn date_time(x: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(x).is_ok()
        || chrono::NaiveDateTime::parse_from_str(x, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
}

/// Go's `time.ParseDuration` forms, and the spelled-out units (`3d`, `2 weeks`) the
/// OpenAPI `duration` format also takes.
fn duration(x: &str) -> bool {
    if crate::cel_rules::go_duration(x).is_some() {
        return true;
    }
    const UNITS: &[&str] = &[
        "ns",
        "us",
        "µs",
        "ms",
        "s",
        "m",
        "h",
        "d",
        "w",
        "nanosecond",
        "nanoseconds",
        "microsecond",
        "microseconds",
        "millisecond",
        "milliseconds",
        "second",
        "seconds",
        "sec",
        "secs",
        "minute",
        "minutes",
        "min",
        "mins",
        "hour",
        "hours",
        "hr",
        "hrs",
        "day",
        "days",
        "week",
        "weeks",
        "wk",
        "wks",
    ];
    let mut rest = x.trim();
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if n == 0 {
            return false;
        }
        rest = rest[n..].trim_start();
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c.is_whitespace())
            .unwrap_or(rest.len());
        if !UNITS.contains(&&rest[..u]) {
            return false;
        }
        rest = rest[u..].trim_start();
    }
    true
}

fn cidr(x: &str) -> bool {
    let Some((ip, bits)) = x.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    digits(bits) && bits.len() <= 3 && bits.parse::<u32>().is_ok_and(|b| b <= max)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx`, `xx-xx` or `xxxx.xxxx`.
fn mac(x: &str) -> bool {
    let hex = |g: &str, n: usize| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit());
    let octets_ok = |n: usize| matches!(n, 6 | 8 | 20);
    for sep in [':', '-'] {
        if x.contains(sep) {
            let groups: Vec<&str> = x.split(sep).collect();
            return octets_ok(groups.len()) && groups.iter().all(|g| hex(g, 2));
        }
    }
    let groups: Vec<&str> = x.split('.').collect();
    octets_ok(groups.len() * 2) && groups.iter().all(|g| hex(g, 4))
}

fn uuid(x: &str, version: Option<char>) -> bool {
    let groups: Vec<&str> = x.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    let shape = groups.len() == 5
        && groups
            .iter()
            .zip(lens)
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    let variant_ok = || {
        groups[3]
            .chars()
            .next()
            .is_some_and(|c| matches!(c.to_ascii_lowercase(), '8' | '9' | 'a' | 'b'))
    };
    match version {
        None => shape,
        Some(v) => shape && groups[2].starts_with(v) && variant_ok(),
    }
}

fn email(x: &str) -> bool {
    let addr = match (x.find('<'), x.rfind('>')) {
        (Some(a), Some(b)) if a < b && b == x.len() - 1 => &x[a + 1..b],
        _ => x,
    };
    match addr.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !addr.chars().any(char::is_whitespace)
        }
        None => false,
    }
}

/// Go's `url.ParseRequestURI`: an absolute URI (`scheme:...`) or an absolute path.
fn uri(x: &str) -> bool {
    if x.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if x.starts_with('/') {
        return true;
    }
    match x.split_once(':') {
        Some((scheme, _)) => {
            let mut cs = scheme.chars();
            cs.next().is_some_and(|c| c.is_ascii_alphabetic())
                && cs.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// RFC 1123 host names: dot-separated labels of letters, digits and inner dashes, at
/// most 63 characters each and 255 in all.
fn hostname(x: &str) -> bool {
    if x.is_empty() || x.len() > 255 {
        return false;
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.chars().count() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_alphanumeric() || c == '-')
    };
    x.trim_end_matches('.').split('.').all(label_ok)
}

#[cfg(test)]
mod tests;
