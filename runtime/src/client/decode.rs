//! Object decoding shared by lists and watches: optional removal of
//! `metadata.managedFields` before the typed decode, and parallel decoding of large list
//! pages.
//!
//! Contract: [`decode_object`] with `without_managed_fields` yields exactly the object a
//! plain decode yields, except that `metadata.managedFields` is absent (it is never
//! decoded, which saves its many small allocations). Only the top-level `metadata`'s
//! field is touched; a field of the same name anywhere else is kept.
//! [`decode_items`] returns the items in their order in the body, decoding chunks of a
//! large page on the decoding threads ([`super::pool`]), all at once.

use std::ops::Range;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Pages with fewer items than this are decoded inline.
pub(crate) const PARALLEL_MIN_ITEMS: usize = 256;
/// The fewest items one blocking decode task gets.
const CHUNK_MIN_ITEMS: usize = 64;

/// A splice buffer larger than this is not kept for the next object.
const MAX_KEPT_BUFFER: usize = 1 << 20;

thread_local! {
    static SPLICED: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
    metadata: Option<MetaProbe<'a>>,
}

#[derive(Deserialize)]
struct MetaProbe<'a> {
    #[serde(borrow, default, rename = "managedFields")]
    managed_fields: Option<&'a RawValue>,
}

/// Where the value of the top-level `metadata.managedFields` sits in `json`, if present.
fn managed_fields_range(json: &str) -> Option<Range<usize>> {
    let probe: Probe<'_> = serde_json::from_str(json).ok()?;
    let raw = probe.metadata?.managed_fields?.get();
    // `raw` borrows from `json`: its offset is the distance between the two pointers.
    let start = (raw.as_ptr() as usize).checked_sub(json.as_ptr() as usize)?;
    let end = start + raw.len();
    (end <= json.len()).then_some(start..end)
}

/// Decodes one object, without its `metadata.managedFields` when asked.
pub(crate) fn decode_object<K: DeserializeOwned>(
    json: &str,
    without_managed_fields: bool,
) -> Result<K, serde_json::Error> {
    if without_managed_fields {
        if let Some(r) = managed_fields_range(json) {
            // The object with `null` for its managedFields, spliced into a buffer reused
            // by every decode on this thread (no transient allocation per object).
            return SPLICED.with(|buf| {
                let mut s = buf.borrow_mut();
                s.clear();
                s.push_str(&json[..r.start]);
                s.push_str("null");
                s.push_str(&json[r.end..]);
                let decoded = serde_json::from_str(&s);
                if s.capacity() > MAX_KEPT_BUFFER {
                    *s = String::new();
                }
                decoded
            });
        }
    }
    serde_json::from_str(json)
}

/// A list body's envelope, with the items left undecoded.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    metadata: Option<super::WireListMeta>,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

/// A list body split into its metadata and the byte ranges of its items.
pub(crate) struct RawList {
    pub(crate) metadata: Option<super::WireListMeta>,
    body: Bytes,
    items: Vec<Range<usize>>,
}

impl RawList {
    /// Splits a list body (one pass over its bytes, no item decoded).
    pub(crate) fn parse(body: Bytes) -> Result<RawList, serde_json::Error> {
        let text = std::str::from_utf8(&body).map_err(serde::de::Error::custom)?;
        let env: Envelope<'_> = serde_json::from_str(text)?;
        let base = text.as_ptr() as usize;
        let items = env
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|raw| {
                let start = raw.get().as_ptr() as usize - base;
                start..start + raw.get().len()
            })
            .collect();
        Ok(RawList {
            metadata: env.metadata,
            body,
            items,
        })
    }

    /// How many items the list has.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Decodes the items, in order; large pages in parallel chunks on the decoding pool
    /// (see [`super::pool`]).
    pub(crate) async fn decode_items<K>(
        self,
        without_managed_fields: bool,
    ) -> Result<Vec<K>, serde_json::Error>
    where
        K: DeserializeOwned + Send + 'static,
    {
        let n = self.items.len();
        if n < PARALLEL_MIN_ITEMS {
            return decode_ranges(&self.body, &self.items, without_managed_fields);
        }
        let workers = super::pool::width();
        let per_chunk = n.div_ceil(workers).max(CHUNK_MIN_ITEMS);
        let mut tasks = Vec::new();
        let mut ranges = self.items;
        while !ranges.is_empty() {
            let rest = ranges.split_off(per_chunk.min(ranges.len()));
            let chunk = std::mem::replace(&mut ranges, rest);
            let body = self.body.clone();
            tasks.push(super::pool::run(move || {
                decode_ranges::<K>(&body, &chunk, without_managed_fields)
            }));
        }
        let mut out = Vec::with_capacity(n);
        for t in tasks {
            let part = t
                .await
                .map_err(<serde_json::Error as serde::de::Error>::custom)??;
            out.extend(part);
        }
        Ok(out)
    }
}

fn decode_ranges<K: DeserializeOwned>(
    body: &[u8],
    ranges: &[Range<usize>],
    without_managed_fields: bool,
) -> Result<Vec<K>, serde_json::Error> {
    let text = std::str::from_utf8(body).map_err(serde::de::Error::custom)?;
    ranges
        .iter()
        .map(|r| decode_object(&text[r.clone()], without_managed_fields))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn managed_fields_are_dropped_only_from_top_level_metadata() {
        let obj = json!({
            "metadata": {"name": "a", "managedFields": [{"manager": "m", "fieldsV1": {"f:x": {}}}]},
            "spec": {"metadata": {"managedFields": "kept"}, "managedFields": 1},
        });
        let text = obj.to_string();
        let v: Value = decode_object(&text, true).unwrap();
        assert_eq!(v["metadata"]["managedFields"], Value::Null);
        assert_eq!(v["metadata"]["name"], "a");
        assert_eq!(v["spec"], obj["spec"]);
        let kept: Value = decode_object(&text, false).unwrap();
        assert_eq!(kept, obj);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn large_pages_decode_in_order() {
        let items: Vec<Value> = (0..1000)
            .map(|i| json!({"metadata": {"name": format!("p{i}"), "managedFields": [{"manager": "m"}]}}))
            .collect();
        let body = json!({"metadata": {"resourceVersion": "7", "continue": "c"}, "items": items});
        let raw = RawList::parse(Bytes::from(body.to_string())).unwrap();
        assert_eq!(
            raw.metadata.as_ref().and_then(|m| m.continue_.as_deref()),
            Some("c")
        );
        let out: Vec<Value> = raw.decode_items(true).await.unwrap();
        assert_eq!(out.len(), 1000);
        for (i, v) in out.iter().enumerate() {
            assert_eq!(v["metadata"]["name"], format!("p{i}"));
            assert_eq!(v["metadata"]["managedFields"], Value::Null);
        }
    }
}
