//! Object decoding shared by lists and watches: optional removal of
//! `metadata.managedFields` before the typed decode, and parallel decoding of large list
//! pages.
//!
//! Contract: [`decode_object`] with `without_managed_fields` yields exactly the object a
//! plain decode yields, except that `metadata.managedFields` is absent (it is skipped
//! during the one decoding pass, never allocated). Only the top-level `metadata`'s
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

/// Decodes one object, without its `metadata.managedFields` when asked; with `exact`,
/// every vector at its final capacity (see [`super::exact`]: for objects that are
/// cached, which would otherwise keep the slack of vectors grown by doubling).
pub(crate) fn decode_object<K: DeserializeOwned>(
    json: &str,
    without_managed_fields: bool,
    exact: bool,
) -> Result<K, serde_json::Error> {
    let decode = || {
        let mut de = serde_json::Deserializer::from_str(json);
        let obj = deserialize(&mut de, without_managed_fields)?;
        de.end()?;
        Ok(obj)
    };
    super::exact::with_lengths_if(exact, json, decode)
}

/// A JSON body decoded as [`decode_object`] does (one deserializer stack for every
/// JSON read, so `K`'s `Deserialize` is compiled once for them all).
pub(crate) fn json<K: DeserializeOwned>(body: &[u8]) -> Result<K, serde_json::Error> {
    let text = std::str::from_utf8(body).map_err(serde::de::Error::custom)?;
    decode_object(text, false, false)
}

/// A JSON list body's metadata and items, each item decoded as [`decode_object`] does
/// (for the answers of writes: see [`json`]).
pub(crate) fn json_list<K: DeserializeOwned>(
    body: &[u8],
) -> Result<(Option<super::WireListMeta>, Vec<K>), serde_json::Error> {
    let text = std::str::from_utf8(body).map_err(serde::de::Error::custom)?;
    let env: Envelope<'_> = serde_json::from_str(text)?;
    let items = env
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|raw| decode_object(raw.get(), false, false))
        .collect::<Result<_, _>>()?;
    Ok((env.metadata, items))
}

/// `K::deserialize(de)` for JSON input, through the adapters: managedFields are skipped
/// in the same pass when asked (see `super::skip`), vectors sized exactly when the
/// caller runs this inside `super::exact::with_lengths` (see `super::exact`; outside it
/// the adapter only forwards).
///
/// The adapters are always there and switched at run time, not chosen by type: every
/// adapter combination would be a different deserializer type, and each one compiles
/// `K`'s `Deserialize` (and that of every type inside it) again in the user's crate.
/// One stack per input kind keeps a user crate's build time to one copy.
pub(crate) fn deserialize<'de, K, D>(de: D, without_managed_fields: bool) -> Result<K, D::Error>
where
    K: serde::Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    use super::exact::Exact;
    use super::skip::SkipManagedFields;
    K::deserialize(SkipManagedFields::with(
        Exact::new(de),
        without_managed_fields,
    ))
}

/// [`deserialize`] for protobuf input: no exact adapter (protobuf gives the counts).
pub(crate) fn deserialize_protobuf<'de, K, D>(
    de: D,
    without_managed_fields: bool,
) -> Result<K, D::Error>
where
    K: serde::Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    K::deserialize(super::skip::SkipManagedFields::with(
        de,
        without_managed_fields,
    ))
}

/// Bodies of at least this size whose metadata comes first are decoded whole, in one
/// pass, as one job on the decoding threads (several pages decode at once); larger than
/// [`CHUNKED_MIN_BYTES`], they are split into items and decoded in parallel chunks.
pub(crate) const WHOLE_PAGE_MIN_BYTES: usize = 512 * 1024;
/// See [`WHOLE_PAGE_MIN_BYTES`].
pub(crate) const CHUNKED_MIN_BYTES: usize = 16 * 1024 * 1024;

/// The `metadata` of a list body, read from its beginning, when it comes before the
/// `items` (as API servers write lists); `None` when the items come first or the body is
/// not a JSON object. Only the bytes up to the end of the metadata are read.
pub(crate) fn leading_metadata(body: &[u8]) -> Option<super::WireListMeta> {
    struct Lead<'s>(&'s mut Option<super::WireListMeta>);
    impl<'de> serde::de::Visitor<'de> for Lead<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "metadata" => {
                        *self.0 = Some(map.next_value()?);
                        // Stop here: the rest of the body is the items.
                        return Err(serde::de::Error::custom("metadata found"));
                    }
                    "items" => return Err(serde::de::Error::custom("items first")),
                    _ => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(())
        }
    }
    let mut found = None;
    let mut de = serde_json::Deserializer::from_slice(body);
    let _ = serde::Deserializer::deserialize_map(&mut de, Lead(&mut found));
    found
}

/// The items of a list body, decoded in one pass (the envelope's other fields skipped),
/// each without `metadata.managedFields` when asked and, with `exact`, with exact
/// vector capacities.
pub(crate) fn decode_page<K: DeserializeOwned>(
    body: &[u8],
    without_managed_fields: bool,
    exact: bool,
) -> Result<Vec<K>, serde_json::Error> {
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::marker::PhantomData;

    struct Page<K>(bool, PhantomData<fn() -> K>);
    impl<'de, K: DeserializeOwned> Visitor<'de> for Page<K> {
        type Value = Vec<K>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<K>, A::Error> {
            let mut items = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                if key == "items" {
                    items = map.next_value_seed(Items(self.0, PhantomData))?;
                } else {
                    // Through the exact adapter, which keeps its array counts in step.
                    map.next_value_seed(super::exact::Ignore)?;
                }
            }
            Ok(items)
        }
    }
    struct Items<K>(bool, PhantomData<fn() -> K>);
    impl<'de, K: DeserializeOwned> DeserializeSeed<'de> for Items<K> {
        type Value = Vec<K>;
        fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Vec<K>, D::Error> {
            de.deserialize_any(self)
        }
    }
    impl<'de, K: DeserializeOwned> Visitor<'de> for Items<K> {
        type Value = Vec<K>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of items")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Vec<K>, E> {
            Ok(Vec::new())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<K>, A::Error> {
            // The items array is decoded here, its elements through the exact adapter.
            super::exact::skip_array();
            let mut out = Vec::new();
            while let Some(obj) = seq.next_element_seed(Item::<K>(self.0, PhantomData))? {
                out.push(obj);
            }
            Ok(out)
        }
    }
    struct Item<K>(bool, PhantomData<fn() -> K>);
    impl<'de, K: DeserializeOwned> DeserializeSeed<'de> for Item<K> {
        type Value = K;
        fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<K, D::Error> {
            deserialize(de, self.0)
        }
    }

    // Validated once here, the text then decodes without a UTF-8 check per string.
    let text = std::str::from_utf8(body).map_err(serde::de::Error::custom)?;
    let decode = || {
        let mut de = serde_json::Deserializer::from_str(text);
        let items = de.deserialize_map(Page::<K>(without_managed_fields, PhantomData))?;
        de.end()?;
        Ok(items)
    };
    super::exact::with_lengths_if(exact, text, decode)
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
        exact: bool,
    ) -> Result<Vec<K>, serde_json::Error>
    where
        K: DeserializeOwned + Send + 'static,
    {
        let n = self.items.len();
        if n < PARALLEL_MIN_ITEMS {
            return decode_ranges(&self.body, &self.items, without_managed_fields, exact);
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
                decode_ranges::<K>(&body, &chunk, without_managed_fields, exact)
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
    exact: bool,
) -> Result<Vec<K>, serde_json::Error> {
    let text = std::str::from_utf8(body).map_err(serde::de::Error::custom)?;
    ranges
        .iter()
        .map(|r| decode_object(&text[r.clone()], without_managed_fields, exact))
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
        let v: Value = decode_object(&text, true, false).unwrap();
        assert_eq!(v["metadata"]["managedFields"], Value::Null);
        assert_eq!(v["metadata"]["name"], "a");
        assert_eq!(v["spec"], obj["spec"]);
        let kept: Value = decode_object(&text, false, true).unwrap();
        assert_eq!(kept, obj);
    }

    #[test]
    fn whole_pages_decode_in_one_pass_after_their_leading_metadata() {
        let items: Vec<Value> = (0..5)
            .map(|i| json!({"metadata": {"name": format!("p{i}"), "managedFields": [{"manager": "m"}]}}))
            .collect();
        // Written in the API server's order (json! would sort the keys).
        let text = format!(
            r#"{{"kind":"PodList","metadata":{{"resourceVersion":"7","continue":"c"}},"items":{}}}"#,
            Value::Array(items.clone())
        )
        .into_bytes();
        let meta = leading_metadata(&text).unwrap();
        assert_eq!(meta.continue_.as_deref(), Some("c"));
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        let out: Vec<Value> = decode_page(&text, true, true).unwrap();
        assert_eq!(out.len(), 5);
        for (i, v) in out.iter().enumerate() {
            assert_eq!(v["metadata"], json!({"name": format!("p{i}")}));
        }
        let kept: Vec<Value> = decode_page(&text, false, false).unwrap();
        assert_eq!(kept, items);
        // Items before metadata, or no object at all: the caller splits the body instead.
        let items_first = br#"{"items": [], "metadata": {"continue": "c"}}"#;
        assert!(leading_metadata(items_first).is_none());
        assert!(leading_metadata(b"[1]").is_none());
        let none: Vec<Value> =
            decode_page(br#"{"metadata": {}, "items": null}"#, true, false).unwrap();
        assert!(none.is_empty());
        assert!(decode_page::<Value>(br#"{"items": [1, }"#, true, false).is_err());
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
        let out: Vec<Value> = raw.decode_items(true, true).await.unwrap();
        assert_eq!(out.len(), 1000);
        for (i, v) in out.iter().enumerate() {
            assert_eq!(v["metadata"]["name"], format!("p{i}"));
            assert_eq!(v["metadata"]["managedFields"], Value::Null);
        }
    }
}

#[cfg(all(test, feature = "testing"))]
mod page_tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use crate::cache::reflector::ListerWatcher;
    use crate::client::{ListOptions, ResourceClient};
    use crate::testing::ApiServer;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pages_of_usual_size_decode_whole_and_match_the_server() {
        let server = ApiServer::new();
        let big = "x".repeat(8 * 1024);
        server
            .seed("pods", 150, |i| {
                json!({"metadata": {"name": format!("p{i:03}"), "namespace": "default",
                    "annotations": {"big": big},
                    "managedFields": [{"manager": "m", "operation": "Update", "fieldsV1": {"f:a": {}}}]},
                    "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}})
            })
            .unwrap();
        let client = kube::Client::new(server.service(), "default");
        let pods = ResourceClient::<Pod>::all(client);
        // (The default server answers JSON: this is the JSON page decoder.)
        let opts = ListOptions::default()
            .limit(100)
            .without_managed_fields(true);
        // 100 items of 8 KiB: above the whole-page threshold.
        let page = ListerWatcher::list_deferred(&pods, opts.clone())
            .await
            .unwrap();
        assert_eq!(page.remaining_item_count, Some(50));
        let token = page.continue_token.clone().unwrap();
        let first = page.items.await.unwrap();
        let rest = ListerWatcher::list(&pods, opts.clone().continue_token(&token))
            .await
            .unwrap();
        assert_eq!(rest.continue_token, None);
        let all: Vec<Pod> = first.into_iter().chain(rest.items).collect();
        assert_eq!(all.len(), 150);
        for (i, pod) in all.iter().enumerate() {
            let stored = server
                .get("pods", "default", &format!("p{i:03}"))
                .unwrap()
                .unwrap();
            let mut want: Pod = serde_json::from_value(stored).unwrap();
            assert!(want.metadata.managed_fields.is_some());
            want.metadata.managed_fields = None;
            assert_eq!(pod, &want);
        }
    }
}
