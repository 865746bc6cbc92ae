//! A small least-recently-used map for the correlator's caches (client-go's
//! `golang-lru` with a fixed size): `get` and `insert` make a key the most recent, and
//! inserting beyond capacity evicts the least recent key.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

#[derive(Debug)]
pub(crate) struct Lru<K, V> {
    cap: usize,
    tick: u64,
    map: HashMap<K, (V, u64)>,
    order: BTreeMap<u64, K>,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// A map of at most `cap` keys (at least one).
    pub(crate) fn new(cap: usize) -> Self {
        Lru {
            cap: cap.max(1),
            tick: 0,
            map: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    fn touch(&mut self, key: &K) -> Option<&mut V> {
        self.tick += 1;
        let tick = self.tick;
        let (v, t) = self.map.get_mut(key)?;
        self.order.remove(t);
        *t = tick;
        self.order.insert(tick, key.clone());
        Some(v)
    }

    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.touch(key)
    }

    pub(crate) fn insert(&mut self, key: K, value: V) {
        if let Some(v) = self.touch(&key) {
            *v = value;
            return;
        }
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.map.insert(key, (value, self.tick));
        while self.map.len() > self.cap {
            match self.order.pop_first() {
                Some((_, old)) => {
                    self.map.remove(&old);
                }
                None => break,
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;

    #[test]
    fn evicts_the_least_recently_used() {
        let mut lru = Lru::new(2);
        lru.insert("a", 1);
        lru.insert("b", 2);
        assert_eq!(lru.get_mut(&"a").copied(), Some(1));
        lru.insert("c", 3);
        assert_eq!(lru.len(), 2);
        assert!(lru.get_mut(&"b").is_none());
        assert!(lru.get_mut(&"a").is_some() && lru.get_mut(&"c").is_some());
    }
}
