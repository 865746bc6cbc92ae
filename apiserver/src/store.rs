//! Storage: objects as serialized JSON plus parsed metadata, one global resourceVersion,
//! and a bounded history of changes per resource.
//!
//! Contract:
//! - Every write takes the next global resourceVersion and re-serializes the object once,
//!   with that version inside the stored bytes; reads never serialize objects again.
//! - Each change is kept as an [`Event`] whose watch frame (`{"type":..,"object":..}\n`)
//!   is encoded once, and the stored object is a slice of that frame.
//! - The history of a resource holds its most recent changes: at most `history_limit`
//!   of them and at most `history_bytes` bytes (the estimate of [`Event::size`]; the
//!   newest change is always kept); `oldest` is the version after which the history is
//!   complete. The state at any
//!   version `>= oldest` can be rebuilt (current state with later changes undone); older
//!   versions are compacted.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ops::{Bound, Range};
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::errors::StatusError;

use super::registry::Registration;

/// The type of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub(crate) fn frame_prefix(self) -> &'static [u8] {
        match self {
            EventType::Added => b"{\"type\":\"ADDED\",\"object\":",
            EventType::Modified => b"{\"type\":\"MODIFIED\",\"object\":",
            EventType::Deleted => b"{\"type\":\"DELETED\",\"object\":",
        }
    }
}

/// What ends every watch frame.
pub(crate) const FRAME_SUFFIX: &[u8] = b"}\n";

/// One stored object: its JSON (with `kind` and `apiVersion`) and parsed metadata.
#[derive(Debug)]
pub(crate) struct Stored {
    /// The object, `{"kind":..,"apiVersion":..,"metadata":{"resourceVersion":..,..},..}`.
    pub bytes: Bytes,
    /// Where `"metadata"` starts: `{` + `bytes[body_start..]` is the object without
    /// `kind`/`apiVersion`.
    pub body_start: usize,
    /// Where the resourceVersion digits are in `bytes`.
    pub rv_range: Range<usize>,
    pub rv: u64,
    pub key: Arc<str>,
    pub namespace: Arc<str>,
    /// Shared with the object's other versions when only its resourceVersion changed.
    pub labels: Arc<BTreeMap<String, String>>,
    /// The values of the fields a field selector may use.
    pub fields: Arc<BTreeMap<String, String>>,
}

impl Stored {
    /// The object as a JSON value (for writes, which are rarer than reads).
    pub(crate) fn to_value(&self) -> Result<Map<String, Value>, StatusError> {
        serde_json::from_slice(&self.bytes).map_err(StatusError::internal)
    }

    /// A watch frame of the given type carrying this object.
    pub(crate) fn frame(&self, ty: EventType) -> Bytes {
        let p = ty.frame_prefix();
        let mut buf = Vec::with_capacity(p.len() + self.bytes.len() + FRAME_SUFFIX.len());
        buf.extend_from_slice(p);
        buf.extend_from_slice(&self.bytes);
        buf.extend_from_slice(FRAME_SUFFIX);
        buf.into()
    }

    /// Appends the object as a list item, with or without type metadata.
    pub(crate) fn write_item(&self, out: &mut Vec<u8>, type_meta: bool) {
        if type_meta {
            out.extend_from_slice(&self.bytes);
        } else {
            out.push(b'{');
            out.extend_from_slice(&self.bytes[self.body_start..]);
        }
    }
}

/// One change of one resource.
#[derive(Debug)]
pub(crate) struct Event {
    pub rv: u64,
    pub ty: EventType,
    /// The object after the change (for a deletion: its last state, at the deletion's
    /// version).
    pub obj: Arc<Stored>,
    /// The object before the change.
    pub prev: Option<Arc<Stored>>,
    /// The encoded watch frame, shared by every watcher.
    pub frame: Bytes,
}

/// How many bytes of history each resource keeps by default: 64 MiB. kube-apiserver's
/// watch cache is bounded by a count of events (and etcd by time, compacting every five
/// minutes); a byte bound keeps a test that rewrites large objects from holding every
/// version it ever wrote.
pub(crate) const DEFAULT_HISTORY_BYTES: usize = 64 << 20;

impl Event {
    /// An estimate of the memory an event keeps alive: its frame (which the stored
    /// object is a slice of), the key and the bookkeeping around them.
    pub(crate) fn size(&self) -> usize {
        // The Event, the Stored, their Arcs and the leaf nodes of the label and field
        // maps (about 560 bytes each, however few entries), measured with the
        // `history_memory` example: 100 000 events of 4 KiB objects took 5.3 KB each.
        const OVERHEAD: usize = 1024;
        let map = |m: &BTreeMap<String, String>| {
            m.iter().map(|(k, v)| k.len() + v.len() + 48).sum::<usize>()
        };
        self.frame.len()
            + self.obj.key.len()
            + self.obj.namespace.len()
            + map(&self.obj.labels)
            + map(&self.obj.fields)
            + OVERHEAD
    }
}

/// The key of an object in storage: `namespace/name`, or `name`.
pub(crate) fn storage_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

fn push_json(buf: &mut Vec<u8>, v: &impl serde::Serialize) -> Result<(), StatusError> {
    serde_json::to_writer(&mut *buf, v).map_err(StatusError::internal)
}

fn field_value(obj: &Map<String, Value>, path: &str) -> String {
    let mut parts = path.split('.');
    let mut cur = parts.next().and_then(|p| obj.get(p));
    for p in parts {
        cur = cur.and_then(|v| v.get(p));
    }
    match cur {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// Serializes `obj` at version `rv` into a watch frame of type `ty`, returning the frame
/// and the stored object (a slice of it).
pub(crate) fn encode(
    reg: &Registration,
    obj: &Map<String, Value>,
    rv: u64,
    ty: EventType,
) -> Result<(Bytes, Stored), StatusError> {
    let empty = Map::new();
    let meta = obj
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let text = |k: &str| {
        meta.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let name = text("name");
    let namespace = text("namespace");
    let labels: BTreeMap<String, String> = meta
        .get("labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let mut fields = BTreeMap::new();
    fields.insert("metadata.name".to_owned(), name.clone());
    if reg.namespaced {
        fields.insert("metadata.namespace".to_owned(), namespace.clone());
    }
    for f in &reg.selectable_fields {
        fields.insert(f.clone(), field_value(obj, f));
    }

    let prefix = ty.frame_prefix();
    let mut buf = Vec::with_capacity(prefix.len() + 512);
    buf.extend_from_slice(prefix);
    let start = buf.len();
    buf.extend_from_slice(b"{\"kind\":");
    push_json(&mut buf, &reg.kind)?;
    buf.extend_from_slice(b",\"apiVersion\":");
    push_json(&mut buf, &reg.api_version())?;
    buf.push(b',');
    let body_start = buf.len() - start;
    buf.extend_from_slice(b"\"metadata\":{\"resourceVersion\":\"");
    let rv_start = buf.len() - start;
    push_u64(&mut buf, rv);
    let rv_end = buf.len() - start;
    buf.push(b'"');
    for (k, v) in meta.iter().filter(|(k, _)| *k != "resourceVersion") {
        buf.push(b',');
        push_json(&mut buf, k)?;
        buf.push(b':');
        push_json(&mut buf, v)?;
    }
    buf.push(b'}');
    for (k, v) in obj
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "kind" | "apiVersion" | "metadata"))
    {
        buf.push(b',');
        push_json(&mut buf, k)?;
        buf.push(b':');
        push_json(&mut buf, v)?;
    }
    buf.push(b'}');
    let end = buf.len();
    buf.extend_from_slice(FRAME_SUFFIX);
    // The history keeps frames for a long time: no spare capacity (up to half of a
    // doubled Vec) may ride along, or the history's byte bound would be off by 2x.
    buf.shrink_to_fit();
    let frame = Bytes::from(buf);
    let stored = Stored {
        bytes: frame.slice(start..end),
        body_start,
        rv_range: rv_start..rv_end,
        rv,
        key: storage_key(&namespace, &name).into(),
        namespace: namespace.into(),
        labels: Arc::new(labels),
        fields: Arc::new(fields),
    };
    Ok((frame, stored))
}

/// Appends the decimal digits of `n` without allocating.
fn push_u64(buf: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// The same object at a new version: the stored bytes with the resourceVersion replaced,
/// without parsing or serializing anything.
pub(crate) fn respliced(old: &Stored, rv: u64, ty: EventType) -> (Bytes, Stored) {
    let prefix = ty.frame_prefix();
    let mut buf = Vec::with_capacity(prefix.len() + old.bytes.len() + 24);
    buf.extend_from_slice(prefix);
    let start = buf.len();
    buf.extend_from_slice(&old.bytes[..old.rv_range.start]);
    let digits_at = buf.len();
    push_u64(&mut buf, rv);
    let digits = buf.len() - digits_at;
    buf.extend_from_slice(&old.bytes[old.rv_range.end..]);
    let end = buf.len();
    buf.extend_from_slice(FRAME_SUFFIX);
    // The history keeps frames for a long time: no spare capacity (up to half of a
    // doubled Vec) may ride along, or the history's byte bound would be off by 2x.
    buf.shrink_to_fit();
    let frame = Bytes::from(buf);
    let stored = Stored {
        bytes: frame.slice(start..end),
        body_start: old.body_start,
        rv_range: old.rv_range.start..old.rv_range.start + digits,
        rv,
        key: old.key.clone(),
        namespace: old.namespace.clone(),
        labels: old.labels.clone(),
        fields: old.fields.clone(),
    };
    (frame, stored)
}

/// One resource's objects and history.
#[derive(Debug)]
pub(crate) struct Collection {
    pub reg: Arc<Registration>,
    pub objects: BTreeMap<String, Arc<Stored>>,
    pub history: VecDeque<Arc<Event>>,
    /// The estimated bytes the history holds (the sum of [`Event::size`]).
    pub history_size: usize,
    /// The history holds every change after this version.
    pub oldest: u64,
    /// The version of the newest change ever made (0 if none).
    pub last_rv: u64,
    /// The version of the latest change, for watchers to wait on.
    pub notify: watch::Sender<u64>,
    /// Whether requests reach it (false once its CRD was deleted).
    pub served: bool,
    /// Whether the schema changed since objects were stored: reads then show them
    /// through the current schema.
    pub schema_changed: bool,
    /// Whether it holds objects written at another version of its CRD (the storage
    /// version changed since): reads then convert them.
    pub mixed_versions: bool,
}

/// Key bounds of a namespace (or everything), starting after `start_after`; `None` when
/// the range is empty (a BTreeMap range must not start after its end).
fn bounds(ns: Option<&str>, start_after: Option<&str>) -> Option<(Bound<String>, Bound<String>)> {
    let (lo, hi) = match ns {
        Some(ns) => (
            Bound::Included(format!("{ns}/")),
            Bound::Excluded(format!("{ns}0")),
        ),
        None => (Bound::Unbounded, Bound::Unbounded),
    };
    let lo = match (start_after, &lo) {
        (Some(s), Bound::Included(l)) if s < l.as_str() => lo,
        (Some(s), _) => Bound::Excluded(s.to_owned()),
        (None, _) => lo,
    };
    match (&lo, &hi) {
        (Bound::Excluded(l), Bound::Excluded(h)) if l >= h => None,
        _ => Some((lo, hi)),
    }
}

/// Whether `key` lies within `range`.
fn in_bounds(range: &(Bound<String>, Bound<String>), key: &str) -> bool {
    let above = match &range.0 {
        Bound::Included(l) => key >= l.as_str(),
        Bound::Excluded(l) => key > l.as_str(),
        Bound::Unbounded => true,
    };
    let below = match &range.1 {
        Bound::Included(h) => key <= h.as_str(),
        Bound::Excluded(h) => key < h.as_str(),
        Bound::Unbounded => true,
    };
    above && below
}

impl Collection {
    pub(crate) fn new(reg: Arc<Registration>, oldest: u64) -> Self {
        Collection {
            reg,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            history_size: 0,
            oldest,
            last_rv: 0,
            notify: watch::channel(oldest).0,
            served: true,
            schema_changed: false,
            mixed_versions: false,
        }
    }

    /// How many objects there were at `at` (`None`: now) within `ns` and after
    /// `start_after`: the keys in range are counted without reading any object, then
    /// corrected by the changes made after `at` (an `remainingItemCount` costs one pass
    /// over the keys, not one object read per key).
    pub(crate) fn count(
        &self,
        at: Option<u64>,
        ns: Option<&str>,
        start_after: Option<&str>,
    ) -> u64 {
        let Some(range) = bounds(ns, start_after) else {
            return 0;
        };
        let mut n = self.objects.range::<String, _>(range.clone()).count() as i64;
        if let Some(at) = at {
            // The state at `at` of every key changed since: its first change after `at`
            // says whether it existed then (`prev`), and whether it exists now is in
            // `objects`.
            let first = self.history.partition_point(|e| e.rv <= at);
            let mut seen: HashSet<&str> = HashSet::new();
            for e in self.history.range(first..) {
                let key = &*e.obj.key;
                if !in_bounds(&range, key) || !seen.insert(key) {
                    continue;
                }
                let then = e.prev.is_some();
                let now = self.objects.contains_key(key);
                n += i64::from(then) - i64::from(now);
            }
        }
        n.max(0) as u64
    }

    /// Visits the objects as they were at `at` (`None`: now), in key order, within `ns`
    /// and after `start_after`, until `visit` returns false. The caller checks that
    /// `at >= oldest`.
    pub(crate) fn visit(
        &self,
        at: Option<u64>,
        ns: Option<&str>,
        start_after: Option<&str>,
        mut visit: impl FnMut(&Arc<Stored>) -> bool,
    ) {
        let Some(range) = bounds(ns, start_after) else {
            return;
        };
        let mut base = self.objects.range::<String, _>(range.clone()).peekable();
        let mut overrides: BTreeMap<&str, Option<&Arc<Stored>>> = BTreeMap::new();
        if let Some(at) = at {
            let first = self.history.partition_point(|e| e.rv <= at);
            for e in self.history.range(first..) {
                overrides.entry(&*e.obj.key).or_insert(e.prev.as_ref());
            }
        }
        let lo = match &range.0 {
            Bound::Included(s) => Bound::Included(s.as_str()),
            Bound::Excluded(s) => Bound::Excluded(s.as_str()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let hi = match &range.1 {
            Bound::Included(s) => Bound::Included(s.as_str()),
            Bound::Excluded(s) => Bound::Excluded(s.as_str()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut over = overrides.range::<&str, _>((lo, hi)).peekable();
        loop {
            let next = match (base.peek(), over.peek()) {
                (None, None) => return,
                (Some((_, bv)), None) => {
                    let v = *bv;
                    base.next();
                    Some(v)
                }
                (None, Some((_, ov))) => {
                    let v = **ov;
                    over.next();
                    v
                }
                (Some((bk, bv)), Some((ok, ov))) => {
                    if bk.as_str() < **ok {
                        let v = *bv;
                        base.next();
                        Some(v)
                    } else {
                        if bk.as_str() == **ok {
                            base.next();
                        }
                        let v = **ov;
                        over.next();
                        v
                    }
                }
            };
            if let Some(obj) = next {
                if !visit(obj) {
                    return;
                }
            }
        }
    }
}

/// All resources, the global resourceVersion and the registry.
#[derive(Debug)]
pub(crate) struct State {
    pub rv: u64,
    pub collections: Vec<Collection>,
    pub index: HashMap<(String, String), usize>,
    pub history_limit: usize,
    /// How many bytes of history each resource keeps at most.
    pub history_bytes: usize,
    /// Whether objects whose owners do not exist are collected (the `owners` module).
    pub collect_dangling: bool,
    /// Objects written with owner references since the collector last ran.
    pub owner_checks: Vec<(usize, Arc<str>)>,
}

impl State {
    pub(crate) fn new(history_limit: usize) -> Self {
        State {
            rv: 1,
            collections: Vec::new(),
            index: HashMap::new(),
            history_limit,
            history_bytes: DEFAULT_HISTORY_BYTES,
            collect_dangling: false,
            owner_checks: Vec::new(),
        }
    }

    /// Registers a resource and returns its index; a second registration of the same
    /// group/version/resource replaces the description (schema, columns, ...) and
    /// serves it again, keeping the objects.
    pub(crate) fn register(&mut self, mut reg: Registration) -> usize {
        // Compiled here (the schema may have been set after `Registration::new`, and a
        // registration is immutable once registered), unless `from_crd` compiled this very
        // schema with the CRD's other versions.
        let own = reg.version_schemas.get(&reg.api_version());
        reg.cel = match (own, &reg.schema) {
            (Some((s, rules)), Some(schema)) if s == schema => rules.clone(),
            _ => crate::cel_rules::CelRules::compile(reg.schema.as_ref()),
        };
        let key = (reg.api_version(), reg.plural.clone());
        let (group, plural) = (reg.group.clone(), reg.plural.clone());
        let i = if let Some(i) = self.index.get(&key).copied() {
            let c = &mut self.collections[i];
            if *c.reg != reg {
                if c.reg.schema != reg.schema && !c.objects.is_empty() {
                    c.schema_changed = true;
                }
                c.reg = Arc::new(reg);
            }
            c.served = true;
            i
        } else {
            let i = self.collections.len();
            self.collections
                .push(Collection::new(Arc::new(reg), self.rv));
            self.index.insert(key, i);
            i
        };
        self.gather(&group, &plural);
        i
    }

    /// Moves the objects of a CRD's versions that are no longer its storage version
    /// into the storage version's collection, unchanged (as etcd keeps objects in the
    /// version they were written at until they are written again): one storage per
    /// resource across its versions.
    fn gather(&mut self, group: &str, plural: &str) {
        let from: Vec<usize> = (0..self.collections.len())
            .filter(|i| {
                let c = &self.collections[*i];
                c.reg.custom
                    && c.reg.group == group
                    && c.reg.plural == plural
                    && !c.reg.storage_version.is_empty()
                    && !c.objects.is_empty()
            })
            .collect();
        for i in from {
            let Some((to, _, _)) = self.storage_of(i) else {
                continue;
            };
            let objects = std::mem::take(&mut self.collections[i].objects);
            let last_rv = self.collections[i].last_rv;
            let dest = &mut self.collections[to];
            for (k, o) in objects {
                dest.objects.entry(k).or_insert(o);
            }
            dest.mixed_versions = true;
            dest.last_rv = dest.last_rv.max(last_rv);
        }
    }

    /// The index of a served resource by apiVersion and plural.
    pub(crate) fn lookup(&self, api_version: &str, plural: &str) -> Option<usize> {
        self.index
            .get(&(api_version.to_owned(), plural.to_owned()))
            .copied()
            .filter(|i| self.collections[*i].served)
    }

    /// The collection holding the objects of `idx` when that is another version's (a
    /// CRD version that is not the storage version), with the two apiVersions.
    pub(crate) fn storage_of(&self, idx: usize) -> Option<(usize, String, String)> {
        let reg = &self.collections[idx].reg;
        let builtin = matches!(reg.conversion, crate::Conversion::Builtin(_));
        if !(reg.custom || builtin)
            || reg.storage_version.is_empty()
            || reg.storage_version == reg.version
        {
            return None;
        }
        let storage_av = format!("{}/{}", reg.group, reg.storage_version);
        let s = self.lookup(&storage_av, &reg.plural)?;
        Some((s, storage_av, reg.api_version()))
    }

    /// Stops serving a resource (its CRD is gone); registering it again serves it.
    pub(crate) fn unserve(&mut self, reg: &Registration) {
        if let Some(i) = self.index.get(&(reg.api_version(), reg.plural.clone())) {
            self.collections[*i].served = false;
        }
    }

    /// Records a change already encoded at version `self.rv` and wakes the resource's
    /// watchers.
    pub(crate) fn commit(
        &mut self,
        idx: usize,
        ty: EventType,
        frame: Bytes,
        obj: Stored,
    ) -> Arc<Stored> {
        let out = self.record(idx, ty, frame, obj);
        let coll = &self.collections[idx];
        coll.notify.send_replace(coll.last_rv);
        out
    }

    /// Records `obj` again at the next resourceVersion as a MODIFIED change, its bytes
    /// respliced rather than re-encoded; returns that version. Watchers are not woken.
    pub(crate) fn record_respliced(&mut self, idx: usize, obj: &Stored) -> u64 {
        let rv = self.rv + 1;
        let (frame, stored) = respliced(obj, rv, EventType::Modified);
        self.rv = rv;
        self.record(idx, EventType::Modified, frame, stored);
        rv
    }

    /// Records a change without waking watchers (the caller wakes them once for a batch).
    pub(crate) fn record(
        &mut self,
        idx: usize,
        ty: EventType,
        frame: Bytes,
        obj: Stored,
    ) -> Arc<Stored> {
        let limit = self.history_limit.max(1);
        if self.collect_dangling
            && ty != EventType::Deleted
            && obj.bytes.windows(17).any(|w| w == b"\"ownerReferences\"")
        {
            self.owner_checks.push((idx, obj.key.clone()));
        }
        let coll = &mut self.collections[idx];
        let obj = Arc::new(obj);
        let prev = match ty {
            EventType::Deleted => coll.objects.remove(&*obj.key),
            _ => match coll.objects.get_mut(&*obj.key) {
                Some(slot) => Some(std::mem::replace(slot, obj.clone())),
                None => coll.objects.insert(obj.key.to_string(), obj.clone()),
            },
        };
        let event = Event {
            rv: obj.rv,
            ty,
            obj: obj.clone(),
            prev,
            frame,
        };
        coll.history_size += event.size();
        coll.history.push_back(Arc::new(event));
        while coll.history.len() > limit
            || (coll.history_size > self.history_bytes && coll.history.len() > 1)
        {
            let Some(e) = coll.history.pop_front() else {
                break;
            };
            coll.history_size -= e.size();
            coll.oldest = e.rv;
        }
        coll.last_rv = obj.rv;
        obj
    }

    /// Drops all history up to the current version.
    pub(crate) fn compact(&mut self) {
        let rv = self.rv;
        for c in &mut self.collections {
            c.history.clear();
            c.history_size = 0;
            c.oldest = rv;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::ApiServer;

    fn pod(ns: &str, name: &str) -> serde_json::Value {
        json!({"metadata": {"name": name, "namespace": ns}})
    }

    #[test]
    fn count_matches_the_objects_visited_at_every_snapshot() {
        let server = ApiServer::new();
        let mut versions = vec![server.resource_version()];
        for i in 0..12 {
            let ns = ["a", "b", "c"][i % 3];
            server.create("pods", pod(ns, &format!("p{i:02}"))).unwrap();
            versions.push(server.resource_version());
        }
        for (ns, name) in [("a", "p00"), ("b", "p04"), ("c", "p11")] {
            server.delete("pods", ns, name).unwrap();
            versions.push(server.resource_version());
        }
        server.create("pods", pod("b", "p04")).unwrap();
        server.touch("pods", "a", "p03").unwrap();
        server.create("pods", pod("a", "p99")).unwrap();
        versions.push(server.resource_version());

        let idx = server.inner.resolve("pods").unwrap();
        let st = server.inner.state.read();
        let coll = &st.collections[idx];
        let starts = [
            None,
            Some("a/p03"),
            Some("a/p99"),
            Some("b/p04"),
            Some("c/p11"),
            Some("z"),
        ];
        for at in versions.iter().map(|v| Some(*v)).chain([None]) {
            for ns in [None, Some("a"), Some("b"), Some("c"), Some("d")] {
                for start in starts {
                    let mut visited = 0;
                    coll.visit(at, ns, start, |_| {
                        visited += 1;
                        true
                    });
                    assert_eq!(
                        coll.count(at, ns, start),
                        visited,
                        "at {at:?} ns {ns:?} after {start:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn history_is_bounded_by_bytes() {
        let server = ApiServer::builder().history_bytes(64 * 1024).build();
        let payload = "x".repeat(1000);
        let cm = |i: usize| json!({"metadata": {"name": "c", "namespace": "a"}, "data": {"v": format!("{i}{payload}")}});
        server.create("configmaps", cm(0)).unwrap();
        for i in 1..1000 {
            server.update("configmaps", cm(i)).unwrap();
        }
        let idx = server.inner.resolve("configmaps").unwrap();
        let st = server.inner.state.read();
        let coll = &st.collections[idx];
        let measured: usize = coll.history.iter().map(|e| e.size()).sum();
        assert_eq!(coll.history_size, measured);
        assert!(coll.history_size <= 64 * 1024, "{}", coll.history_size);
        // About 2.3 KB an event (1 KB of data and the bookkeeping): some thirty of the
        // thousand changes are kept, the newest.
        assert!(
            coll.history.len() > 20 && coll.history.len() < 100,
            "{}",
            coll.history.len()
        );
        assert_eq!(coll.history.back().map(|e| e.rv), Some(st.rv));
        assert_eq!(coll.oldest + 1, coll.history.front().map_or(0, |e| e.rv));
    }

    #[test]
    fn the_newest_change_is_kept_whatever_its_size() {
        let server = ApiServer::builder().history_bytes(1).build();
        server.create("pods", pod("a", "p")).unwrap();
        server.touch("pods", "a", "p").unwrap();
        let idx = server.inner.resolve("pods").unwrap();
        let st = server.inner.state.read();
        assert_eq!(st.collections[idx].history.len(), 1);
        assert_eq!(st.collections[idx].oldest + 1, st.rv);
    }
}
