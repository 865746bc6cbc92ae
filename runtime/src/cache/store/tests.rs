use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;

use super::*;
use crate::cache::keys::KnownObjects;

/// A bare key/value object, as SEMANTICS' store tests use.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Kv {
    key: String,
    val: String,
}

fn kv(key: &str, val: &str) -> Kv {
    Kv {
        key: key.into(),
        val: val.into(),
    }
}

fn kv_key() -> KeyFunc<Kv> {
    Arc::new(|o: &Kv| Ok(o.key.clone()))
}

fn by_val() -> IndexFunc<Kv> {
    Arc::new(|o: &Kv| Ok(vec![o.val.clone()]))
}

/// Index by the comma-separated parts of `val` (no parts for an empty value).
fn split_on_comma() -> IndexFunc<Kv> {
    Arc::new(|o: &Kv| {
        Ok(o.val
            .split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect())
    })
}

fn indexers(list: Vec<(&str, IndexFunc<Kv>)>) -> Indexers<Kv> {
    list.into_iter().map(|(n, f)| (n.to_owned(), f)).collect()
}

fn pod(ns: &str, name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn pod_with(name: &str, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Pod {
    let mut p = pod("default", name);
    let to_map = |kv: &[(&str, &str)]| {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>()
    };
    p.metadata.labels = Some(to_map(labels));
    p.metadata.annotations = Some(to_map(annotations));
    p
}

fn node(name: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn names<K: kube::Resource>(objs: &[Arc<K>]) -> BTreeSet<String> {
    objs.iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect()
}

fn keys_of(objs: &[Arc<Kv>]) -> BTreeSet<String> {
    objs.iter().map(|o| o.key.clone()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn meta_namespace_keys() {
    // SEMANTICS 1.1
    let f = meta_namespace_key_func::<Pod>();
    assert_eq!(f(&pod("ns", "foo")).unwrap(), "ns/foo");
    assert_eq!(
        meta_namespace_key_func::<Node>()(&node("n1")).unwrap(),
        "n1"
    );
    assert_eq!(
        meta_namespace_key_func::<ExplicitKey>()(&ExplicitKey("a/b".into())).unwrap(),
        "a/b"
    );
    let erased: Arc<dyn AnyObject> = Arc::new(pod("ns", "foo"));
    assert_eq!(
        meta_namespace_key_func::<dyn AnyObject>()(&*erased).unwrap(),
        "ns/foo"
    );
    // A typed object always has metadata; a key function that cannot compute a key (the
    // "object has no meta" case) makes the store fail with a KeyError, storing nothing.
    let failing: KeyFunc<Kv> = Arc::new(|o: &Kv| {
        Err(KeyError::new(format!(
            "object has no meta: {:?} is a bare value",
            o.val
        )))
    });
    let store = Indexer::new(failing, Indexers::new());
    let err = store.add(kv("", "x")).unwrap_err();
    assert!(matches!(err, StoreError::Key(_)));
    assert_eq!(
        err.to_string(),
        r#"couldn't create key for object: object has no meta: "x" is a bare value"#
    );
    assert!(store.is_empty());
}

#[test]
fn tombstones_are_keyed_by_their_recorded_key() {
    // SEMANTICS 1.3
    let gone = DeletedFinalStateUnknown::<Pod> {
        key: "ns/x".into(),
        obj: None,
    };
    assert_eq!(meta_namespace_key_func()(&gone).unwrap(), "ns/x");
    // And the indexer removes it by that key.
    let indexer = Indexer::new(meta_namespace_key_func(), namespace_indexers());
    indexer.add(pod("ns", "x")).unwrap();
    indexer.delete_by_key(&gone.key);
    assert!(indexer.is_empty());
    assert!(indexer.list_index_func_values(NAMESPACE_INDEX).is_empty());
}

#[test]
fn add_update_delete() {
    // SEMANTICS 1.4
    let store = Indexer::new(kv_key(), Indexers::new());
    store.add(kv("foo", "bar")).unwrap();
    assert_eq!(store.get_by_key("foo").unwrap().val, "bar");
    store.update(kv("foo", "baz")).unwrap();
    assert_eq!(store.get_by_key("foo").unwrap().val, "baz");
    assert_eq!(store.get(&kv("foo", "")).unwrap().unwrap().val, "baz");
    assert_eq!(store.len(), 1);
    store.delete(&kv("foo", "")).unwrap();
    assert!(store.get_by_key("foo").is_none());
    assert!(store.get(&kv("foo", "")).unwrap().is_none());
    assert!(store.is_empty());
}

#[test]
fn replace_swaps_the_whole_content() {
    // SEMANTICS 1.5
    let store = Indexer::new(kv_key(), Indexers::new());
    for k in ["a", "c", "e"] {
        store.add(kv(k, k)).unwrap();
    }
    store
        .replace([Arc::new(kv("foo", "1")), Arc::new(kv("bar", "2"))], "42")
        .unwrap();
    assert_eq!(keys_of(&store.list()), set(&["foo", "bar"]));
    assert_eq!(
        store.list_keys().into_iter().collect::<BTreeSet<_>>(),
        set(&["foo", "bar"])
    );
    assert_eq!(store.last_store_sync_resource_version(), "42");
    store.bookmark("43");
    assert_eq!(store.last_store_sync_resource_version(), "43");
    assert_eq!(store.len(), 2);
}

#[test]
fn deleting_an_absent_object_is_a_no_op() {
    // SEMANTICS 1.6
    let store = Indexer::new(kv_key(), indexers(vec![("by_val", by_val())]));
    store.add(kv("a", "b")).unwrap();
    store.delete(&kv("never", "b")).unwrap();
    store.delete_by_key("never");
    assert_eq!(keys_of(&store.list()), set(&["a"]));
    assert_eq!(store.index_keys("by_val", "b").unwrap(), ["a"]);
}

fn by_val_store() -> Indexer<Kv> {
    let store = Indexer::new(kv_key(), indexers(vec![("by_val", by_val())]));
    for (k, v) in [("a", "b"), ("c", "b"), ("e", "f"), ("g", "h")] {
        store.add(kv(k, v)).unwrap();
    }
    store
}

#[test]
fn index_returns_objects_sharing_a_value() {
    // SEMANTICS 1.7
    let store = by_val_store();
    let got = store.index("by_val", &kv("", "b")).unwrap();
    assert_eq!(keys_of(&got), set(&["a", "c"]));
    assert_eq!(got.len(), 2);
    let got = store.index("by_val", &kv("", "f")).unwrap();
    assert_eq!(keys_of(&got), set(&["e"]));
    assert!(store.index("by_val", &kv("", "zzz")).unwrap().is_empty());
}

#[test]
fn index_unions_multiple_values_without_duplicates() {
    // SEMANTICS 1.7
    let store = Indexer::new(kv_key(), indexers(vec![("split", split_on_comma())]));
    store.add(kv("k1", "x,y")).unwrap();
    store.add(kv("k2", "y")).unwrap();
    store.add(kv("k3", "z")).unwrap();
    let got = store.index("split", &kv("", "x,y")).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(keys_of(&got), set(&["k1", "k2"]));
}

fn testmodes() -> IndexFunc<Pod> {
    Arc::new(|p: &Pod| {
        Ok(p.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("foo"))
            .cloned()
            .into_iter()
            .collect())
    })
}

#[test]
fn list_index_func_values_lists_present_values() {
    // SEMANTICS 1.8
    let store = Indexer::new(
        meta_namespace_key_func(),
        HashMap::from([("testmodes".to_string(), testmodes())]),
    );
    store.add(pod_with("one", &[("foo", "bar")], &[])).unwrap();
    store.add(pod_with("two", &[("foo", "bar")], &[])).unwrap();
    store.add(pod_with("tre", &[("foo", "biz")], &[])).unwrap();
    assert_eq!(store.list_index_func_values("testmodes"), ["bar", "biz"]);
}

fn by_user() -> IndexFunc<Pod> {
    Arc::new(|p: &Pod| {
        Ok(p.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("users"))
            .map(|u| u.split(',').map(String::from).collect())
            .unwrap_or_default())
    })
}

#[test]
fn multi_value_index() {
    // SEMANTICS 1.9
    let store = Indexer::new(
        meta_namespace_key_func(),
        HashMap::from([("byUser".to_string(), by_user())]),
    );
    store
        .add(pod_with("one", &[], &[("users", "ernie,bert")]))
        .unwrap();
    store
        .add(pod_with("two", &[], &[("users", "bert,oscar")]))
        .unwrap();
    store
        .add(pod_with("tre", &[], &[("users", "ernie,elmo")]))
        .unwrap();
    let by = |user: &str| names(&store.by_index("byUser", user).unwrap());
    assert_eq!(by("ernie"), set(&["one", "tre"]));
    assert_eq!(by("bert"), set(&["one", "two"]));
    assert_eq!(by("elmo"), set(&["tre"]));
    assert_eq!(by("oscar"), set(&["two"]));
    assert_eq!(by("elmo1"), set(&[]));

    store.delete_by_key("default/tre");
    assert_eq!(by("ernie"), set(&["one"]));
    assert_eq!(by("elmo"), set(&[]));

    store
        .update(pod_with("two", &[], &[("users", "oscar")]))
        .unwrap();
    assert_eq!(by("bert"), set(&["one"]));
    assert_eq!(by("oscar"), set(&["two"]));
}

#[test]
fn multi_value_index_follows_set_arithmetic() {
    // SEMANTICS 1.10
    let store = ThreadSafeStore::new(indexers(vec![("split", split_on_comma())]));
    let put = |k: &str, v: &str| store.update(k, Arc::new(kv(k, v))).unwrap();
    let state = |store: &ThreadSafeStore<Kv>| -> BTreeMap<String, Vec<String>> {
        ["foo", "bar", "baz"]
            .into_iter()
            .map(|v| (v.to_string(), store.index_keys("split", v).unwrap()))
            .collect()
    };
    let expect = |foo: &[&str], bar: &[&str], baz: &[&str]| -> BTreeMap<String, Vec<String>> {
        [("foo", foo), ("bar", bar), ("baz", baz)]
            .into_iter()
            .map(|(v, ks)| (v.to_string(), ks.iter().map(|k| k.to_string()).collect()))
            .collect()
    };
    put("key1", "foo");
    put("key2", "bar");
    assert_eq!(state(&store), expect(&["key1"], &["key2"], &[]));
    put("key2", "foo,bar");
    assert_eq!(state(&store), expect(&["key1", "key2"], &["key2"], &[]));
    put("key1", "foo,bar");
    assert_eq!(
        state(&store),
        expect(&["key1", "key2"], &["key1", "key2"], &[])
    );
    put("key3", "foo,bar,baz");
    assert_eq!(
        state(&store),
        expect(
            &["key1", "key2", "key3"],
            &["key1", "key2", "key3"],
            &["key3"]
        )
    );
    put("key1", "foo");
    assert_eq!(
        state(&store),
        expect(&["key1", "key2", "key3"], &["key2", "key3"], &["key3"])
    );
    put("key2", "bar");
    assert_eq!(
        state(&store),
        expect(&["key1", "key3"], &["key2", "key3"], &["key3"])
    );
    store.delete("key1");
    assert_eq!(
        state(&store),
        expect(&["key3"], &["key2", "key3"], &["key3"])
    );
    store.delete("key3");
    assert_eq!(state(&store), expect(&[], &["key2"], &[]));
    assert_eq!(store.list_index_func_values("split"), ["bar"]);
}

#[test]
fn emptied_index_values_disappear() {
    // SEMANTICS 1.11
    let store = by_val_store();
    assert_eq!(store.list_index_func_values("by_val"), ["b", "f", "h"]);
    store.delete_by_key("e");
    assert_eq!(store.list_index_func_values("by_val"), ["b", "h"]);
    store.delete_by_key("a");
    assert_eq!(store.list_index_func_values("by_val"), ["b", "h"]);
    store.delete_by_key("c");
    assert_eq!(store.list_index_func_values("by_val"), ["h"]);
    // Moving the last object off a value removes the value too.
    store.update(kv("g", "i")).unwrap();
    assert_eq!(store.list_index_func_values("by_val"), ["i"]);
}

#[test]
fn unknown_index_is_an_error() {
    // SEMANTICS 1.12
    let store = by_val_store();
    let msg = "Index with name x does not exist";
    let err = store.index("x", &kv("a", "b")).unwrap_err();
    assert_eq!(err, StoreError::IndexNotFound("x".into()));
    assert_eq!(err.to_string(), msg);
    assert_eq!(store.by_index("x", "b").unwrap_err().to_string(), msg);
    assert_eq!(store.index_keys("x", "b").unwrap_err().to_string(), msg);
    assert!(store.list_index_func_values("x").is_empty());
    // A known index and a value nobody has: empty, no error.
    assert!(store.by_index("by_val", "nobody").unwrap().is_empty());
    assert!(store.index_keys("by_val", "nobody").unwrap().is_empty());
}

#[test]
fn index_keys_are_sorted() {
    // SEMANTICS 1.13
    let store = ThreadSafeStore::new(indexers(vec![("by_val", by_val())]));
    for k in ["k2", "k1", "k3", "k0"] {
        store.add(k, Arc::new(kv(k, "v"))).unwrap();
    }
    assert_eq!(
        store.index_keys("by_val", "v").unwrap(),
        ["k0", "k1", "k2", "k3"]
    );
}

#[test]
fn add_indexers_conflicts_and_backfills() {
    // SEMANTICS 1.14
    let store = by_val_store();
    let err = store
        .add_indexers(indexers(vec![
            ("by_val", by_val()),
            ("other", split_on_comma()),
        ]))
        .unwrap_err();
    assert_eq!(err, StoreError::IndexerConflict(vec!["by_val".into()]));
    assert!(err.to_string().contains("indexer conflict"));
    assert_eq!(err.to_string(), "indexer conflict: by_val");
    // Nothing was registered by the failed call.
    assert!(!store.thread_safe_store().has_index("other"));

    let by_len: IndexFunc<Kv> = Arc::new(|o: &Kv| Ok(vec![o.val.len().to_string()]));
    store
        .add_indexers(indexers(vec![("by_len", by_len)]))
        .unwrap();
    assert_eq!(
        store.index_keys("by_len", "1").unwrap(),
        ["a", "c", "e", "g"]
    );
    // And new objects are indexed by it too.
    store.add(kv("long", "abcd")).unwrap();
    assert_eq!(store.index_keys("by_len", "4").unwrap(), ["long"]);
    let mut names: Vec<String> = store.get_indexers().into_keys().collect();
    names.sort();
    assert_eq!(names, ["by_len", "by_val"]);
}

#[test]
fn namespace_index() {
    // SEMANTICS 1.15
    let store: Indexer<dyn AnyObject> =
        Indexer::new(meta_namespace_key_func(), namespace_indexers());
    let objs: Vec<Arc<dyn AnyObject>> = vec![
        Arc::new(pod("ns1", "a")),
        Arc::new(pod("ns1", "b")),
        Arc::new(pod("ns2", "c")),
        Arc::new(node("n")),
    ];
    for o in objs {
        store.add(o).unwrap();
    }
    let names = |ns: &str| -> BTreeSet<String> {
        store
            .by_index(NAMESPACE_INDEX, ns)
            .unwrap()
            .iter()
            .map(|o| o.object_meta().name.clone().unwrap_or_default())
            .collect()
    };
    assert_eq!(names("ns1"), set(&["a", "b"]));
    assert_eq!(names(""), set(&["n"]));
    assert_eq!(names("ns2"), set(&["c"]));
    assert_eq!(
        store.list_index_func_values(NAMESPACE_INDEX),
        ["", "ns1", "ns2"]
    );
}

#[test]
fn update_moves_between_index_values() {
    // SEMANTICS 1.16
    let store = Indexer::new(kv_key(), indexers(vec![("by_val", by_val())]));
    store.add(kv("a", "x")).unwrap();
    store.update(kv("a", "y")).unwrap();
    assert!(store.by_index("by_val", "x").unwrap().is_empty());
    assert_eq!(
        keys_of(&store.by_index("by_val", "y").unwrap()),
        set(&["a"])
    );
    // An update keeping the value replaces the object seen through the index.
    let newer = Arc::new(kv("a", "y"));
    store.update(Arc::clone(&newer)).unwrap();
    let got = store.by_index("by_val", "y").unwrap();
    assert!(Arc::ptr_eq(&got[0], &newer));
}

#[test]
fn replace_rebuilds_indices_from_new_items() {
    // SEMANTICS 1.17
    let store = by_val_store();
    store
        .replace([Arc::new(kv("p", "new1")), Arc::new(kv("q", "new2"))], "7")
        .unwrap();
    assert_eq!(store.list_index_func_values("by_val"), ["new1", "new2"]);
    assert!(store.by_index("by_val", "b").unwrap().is_empty());
    assert_eq!(store.index_keys("by_val", "new1").unwrap(), ["p"]);
}

#[test]
fn transformer_applies_on_add_update_replace_not_delete() {
    // SEMANTICS 1.18
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let upper: TransformFunc<Kv> = Arc::new(move |o: Arc<Kv>| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(kv(&o.key, &o.val.to_uppercase())))
    });
    let store =
        Indexer::new(kv_key(), indexers(vec![("by_val", by_val())])).with_transformer(upper);
    store.add(kv("a", "x")).unwrap();
    assert_eq!(store.get_by_key("a").unwrap().val, "X");
    assert_eq!(store.index_keys("by_val", "X").unwrap(), ["a"]);
    store.update(kv("a", "y")).unwrap();
    assert_eq!(store.get_by_key("a").unwrap().val, "Y");
    store.replace([Arc::new(kv("b", "z"))], "1").unwrap();
    assert_eq!(store.get_by_key("b").unwrap().val, "Z");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    store.delete(&kv("b", "z")).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(store.is_empty());

    // A failing transformer stores nothing.
    let reject: TransformFunc<Kv> = Arc::new(|_| Err(TransformError::new("no")));
    let store = Indexer::new(kv_key(), Indexers::new()).with_transformer(reject);
    assert_eq!(
        store.add(kv("a", "x")).unwrap_err().to_string(),
        "transforming: no"
    );
    assert!(store.is_empty());
}

#[test]
fn failing_index_function_changes_nothing() {
    let picky: IndexFunc<Kv> = Arc::new(|o: &Kv| {
        if o.val == "bad" {
            Err(IndexError::new("bad value"))
        } else {
            Ok(vec![o.val.clone()])
        }
    });
    let store = Indexer::new(kv_key(), indexers(vec![("picky", picky)]));
    store.add(kv("a", "good")).unwrap();
    let err = store.update(kv("a", "bad")).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"unable to calculate an index entry for key "a" on index "picky": bad value"#
    );
    assert_eq!(store.get_by_key("a").unwrap().val, "good");
    assert_eq!(store.index_keys("picky", "good").unwrap(), ["a"]);
    assert!(store
        .replace([Arc::new(kv("b", "bad"))], "9")
        .unwrap_err()
        .to_string()
        .contains("bad value"));
    assert_eq!(keys_of(&store.list()), set(&["a"]));
    assert_eq!(store.last_store_sync_resource_version(), "");
    assert!(matches!(
        store.index("picky", &kv("", "bad")).unwrap_err(),
        StoreError::IndexQuery { .. }
    ));
}

#[test]
fn non_deterministic_index_function_cannot_leave_stale_entries() {
    // Fails on every second call: the old object's values cannot always be recomputed.
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let flaky: IndexFunc<Kv> = Arc::new(move |o: &Kv| {
        if c.fetch_add(1, Ordering::SeqCst) % 2 == 1 {
            Err(IndexError::new("flaky"))
        } else {
            Ok(vec![o.val.clone()])
        }
    });
    let store = ThreadSafeStore::new(indexers(vec![("flaky", flaky)]));
    store.add("a", Arc::new(kv("a", "x"))).unwrap(); // call 0: ok
    store.add("b", Arc::new(kv("b", "x"))).unwrap_err(); // call 1: fails, nothing stored
    store.add("b", Arc::new(kv("b", "x"))).unwrap(); // call 2: ok
    store.delete("a"); // call 3 fails on the old object: scanned out instead
    assert_eq!(store.index_keys("flaky", "x").unwrap(), ["b"]);
}

#[test]
fn identity_is_preserved() {
    let store = Indexer::new(kv_key(), indexers(vec![("by_val", by_val())]));
    let obj = Arc::new(kv("a", "b"));
    store.add(Arc::clone(&obj)).unwrap();
    assert!(Arc::ptr_eq(&store.get_by_key("a").unwrap(), &obj));
    assert!(Arc::ptr_eq(&store.list()[0], &obj));
    assert!(Arc::ptr_eq(
        &store.by_index("by_val", "b").unwrap()[0],
        &obj
    ));
    let known: &dyn KnownObjects<Kv> = &store;
    assert!(Arc::ptr_eq(&known.get_by_key("a").unwrap(), &obj));
    assert_eq!(known.list_keys(), ["a"]);
}

/// Checks every index value against a brute-force filter over the items.
fn assert_consistent(store: &ThreadSafeStore<Kv>) {
    let items = store.list();
    let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for o in &items {
        for part in o.val.split(',').filter(|s| !s.is_empty()) {
            expected
                .entry(part.to_string())
                .or_default()
                .insert(o.key.clone());
        }
    }
    let values = store.list_index_func_values("split");
    assert_eq!(
        values.iter().cloned().collect::<BTreeSet<_>>(),
        expected.keys().cloned().collect::<BTreeSet<_>>()
    );
    for (value, keys) in &expected {
        let got = store.by_index("split", value).unwrap();
        assert_eq!(&keys_of(&got), keys, "value {value}");
        assert_eq!(got.len(), keys.len());
    }
}

#[derive(Debug, Clone)]
enum Op {
    Put(u8, Vec<u8>),
    Delete(u8),
    Replace(Vec<(u8, Vec<u8>)>),
}

fn val_of(parts: &[u8]) -> String {
    parts
        .iter()
        .map(|p| format!("v{p}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn op() -> impl Strategy<Value = Op> {
    let parts = prop::collection::vec(0u8..6, 0..4);
    prop_oneof![
        6 => (0u8..12, parts.clone()).prop_map(|(k, p)| Op::Put(k, p)),
        3 => (0u8..12).prop_map(Op::Delete),
        1 => prop::collection::vec((0u8..12, parts), 0..6).prop_map(Op::Replace),
    ]
}

proptest! {
    /// A random sequence of writes keeps the items equal to a model map and every
    /// index equal to a brute-force filter over the items.
    #[test]
    fn indices_match_a_model(ops in prop::collection::vec(op(), 1..60)) {
        let store = ThreadSafeStore::new(indexers(vec![("split", split_on_comma())]));
        let mut model: BTreeMap<String, String> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put(k, parts) => {
                    let key = format!("k{k}");
                    let val = val_of(&parts);
                    store.update(&key, Arc::new(kv(&key, &val))).unwrap();
                    model.insert(key, val);
                }
                Op::Delete(k) => {
                    let key = format!("k{k}");
                    store.delete(&key);
                    model.remove(&key);
                }
                Op::Replace(items) => {
                    model = items
                        .iter()
                        .map(|(k, p)| (format!("k{k}"), val_of(p)))
                        .collect();
                    store
                        .replace(
                            items.iter().map(|(k, p)| {
                                let key = format!("k{k}");
                                (key.clone(), Arc::new(kv(&key, &val_of(p))))
                            }),
                            "1",
                        )
                        .unwrap();
                }
            }
            let got: BTreeMap<String, String> = store
                .list()
                .iter()
                .map(|o| (o.key.clone(), o.val.clone()))
                .collect();
            prop_assert_eq!(&got, &model);
            assert_consistent(&store);
        }
    }
}

#[test]
fn readers_see_consistent_indices_while_a_writer_runs() {
    use rand::{Rng, SeedableRng};

    let store = Arc::new(ThreadSafeStore::new(indexers(vec![(
        "split",
        split_on_comma(),
    )])));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut checks = 0usize;
                while !done.load(Ordering::SeqCst) || checks == 0 {
                    for v in 0..5 {
                        let value = format!("v{v}");
                        // Every object found under a value has that value, and keys come sorted.
                        for o in store.by_index("split", &value).unwrap() {
                            assert!(o.val.split(',').any(|p| p == value), "{o:?} under {value}");
                        }
                        let keys = store.index_keys("split", &value).unwrap();
                        let mut sorted = keys.clone();
                        sorted.sort();
                        assert_eq!(keys, sorted);
                    }
                    checks += 1;
                }
                checks
            })
        })
        .collect();

    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for step in 0..5_000u32 {
        let key = format!("k{}", rng.random_range(0..40));
        match rng.random_range(0..10) {
            0..=5 => {
                let parts: Vec<u8> = (0..rng.random_range(0..3))
                    .map(|_| rng.random_range(0..5))
                    .collect();
                store
                    .update(&key, Arc::new(kv(&key, &val_of(&parts))))
                    .unwrap();
            }
            6..=8 => store.delete(&key),
            _ => {
                let items: Vec<(String, Arc<Kv>)> = (0..rng.random_range(0..10))
                    .map(|i| {
                        let k = format!("k{i}");
                        (k.clone(), Arc::new(kv(&k, &format!("v{}", step % 5))))
                    })
                    .collect();
                store.replace(items, &step.to_string()).unwrap();
            }
        }
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_consistent(&store);
}

#[test]
fn concurrent_writers_leave_indices_consistent() {
    use rand::{Rng, SeedableRng};

    let store = Arc::new(ThreadSafeStore::new(indexers(vec![(
        "split",
        split_on_comma(),
    )])));
    let writers: Vec<_> = (0..4u64)
        .map(|seed| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                for _ in 0..3_000 {
                    // Overlapping keys: writers race on the same objects.
                    let key = format!("k{}", rng.random_range(0..30));
                    if rng.random_range(0..4) == 0 {
                        store.delete(&key);
                    } else {
                        let parts: Vec<u8> = (0..rng.random_range(0..4))
                            .map(|_| rng.random_range(0..6))
                            .collect();
                        store
                            .update(&key, Arc::new(kv(&key, &val_of(&parts))))
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    // Add an index while the writers run: it must end up as consistent as the others.
    let by_whole: IndexFunc<Kv> = Arc::new(|o: &Kv| Ok(vec![o.val.clone()]));
    store
        .add_indexers(indexers(vec![("whole", by_whole)]))
        .unwrap();
    for w in writers {
        w.join().unwrap();
    }
    assert_consistent(&store);
    for o in store.list() {
        assert!(store.index_keys("whole", &o.val).unwrap().contains(&o.key));
    }
    let whole_total: usize = store
        .list_index_func_values("whole")
        .iter()
        .map(|v| store.index_keys("whole", v).unwrap().len())
        .sum();
    assert_eq!(whole_total, store.len());
}
