//! Free-form metadata attached to items, parts and results.
//!
//! Sorted by key, so serialized transcripts are byte-for-byte stable, which
//! keeps snapshot tests and prompt caches steady.
//!
//! Most maps hold zero to three entries (the loop writes one to each
//! assistant item), and a session keeps every one of them. A `BTreeMap`
//! allocates a node of eleven slots for its first entry (632 bytes here);
//! [`MetadataMap`] keeps its entries in one boxed slice sized exactly, so an
//! empty map allocates nothing and a one-entry map allocates 56 bytes. The
//! slice's own handle is boxed too, so the map is one pointer (8 bytes, null
//! when empty) in every item and part, which are mostly without metadata.
//! Lookups are a binary search; inserting copies the entries, which for
//! maps this small is cheaper than a tree's node.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::borrow::Borrow;
use std::fmt;

/// String keys to JSON values, sorted by key.
///
/// Keys that agentkit itself writes start with `agentkit.` (for example
/// `agentkit.interrupted`); use your own prefix for yours. It serializes as
/// a JSON object with its keys in order, like the `BTreeMap` it replaces,
/// and reads any JSON object (a repeated key keeps its last value).
///
/// ```
/// use agentkit_core::MetadataMap;
///
/// let mut metadata = MetadataMap::new();
/// metadata.insert("b".into(), 2.into());
/// metadata.insert("a".into(), 1.into());
/// assert_eq!(metadata.get("a"), Some(&1.into()));
/// assert_eq!(metadata.keys().collect::<Vec<_>>(), ["a", "b"]);
/// assert_eq!(serde_json::to_string(&metadata).unwrap(), r#"{"a":1,"b":2}"#);
/// ```
#[derive(Default, PartialEq, Eq)]
pub struct MetadataMap {
    /// Sorted by key, keys unique, no spare capacity; `None` when empty.
    entries: Option<Box<Entries>>,
}

type Entries = Box<[(String, Value)]>;

/// Nearly every map dropped is empty (a null pointer): the check is
/// inline, so dropping a part, a call or a request does not call out for
/// it (about 17 instructions each, five times a tool round).
impl Drop for MetadataMap {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(entries) = self.entries.take() {
            drop_entries(entries);
        }
    }
}

/// The entries of a map that has some, dropped out of line.
#[inline(never)]
fn drop_entries(entries: Box<Entries>) {
    drop(entries);
}

impl MetadataMap {
    /// An empty map; allocates nothing.
    pub fn new() -> Self {
        Self { entries: None }
    }

    /// The entries, in key order.
    fn slice(&self) -> &[(String, Value)] {
        match &self.entries {
            Some(entries) => entries,
            None => &[],
        }
    }

    fn slice_mut(&mut self) -> &mut [(String, Value)] {
        match &mut self.entries {
            Some(entries) => entries,
            None => &mut [],
        }
    }

    /// Takes the entries out as a vector, leaving the map empty.
    fn take_vec(&mut self) -> Vec<(String, Value)> {
        self.entries
            .take()
            .map_or_else(Vec::new, |entries| entries.into_vec())
    }

    /// Entries already sorted and unique.
    fn from_sorted(entries: Vec<(String, Value)>) -> Self {
        Self {
            entries: (!entries.is_empty()).then(|| Box::new(entries.into_boxed_slice())),
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.slice().len()
    }

    /// `true` when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_none()
    }

    fn find<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.slice()
            .binary_search_by(|(k, _)| Borrow::<Q>::borrow(k).cmp(key))
    }

    /// The value of `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<&Value>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let index = self.find(key).ok()?;
        Some(&self.slice()[index].1)
    }

    /// The value of `key`, to change it in place.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut Value>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let index = self.find(key).ok()?;
        Some(&mut self.slice_mut()[index].1)
    }

    /// `true` when `key` has a value.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).is_ok()
    }

    /// Sets `key` to `value`; returns the value it replaced.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        match self.find(key.as_str()) {
            Ok(index) => Some(std::mem::replace(&mut self.slice_mut()[index].1, value)),
            Err(index) => {
                let mut entries = self.take_vec();
                entries.reserve_exact(1);
                entries.insert(index, (key, value));
                *self = Self::from_sorted(entries);
                None
            }
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<Value>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let index = self.find(key).ok()?;
        let mut entries = self.take_vec();
        let (_, value) = entries.remove(index);
        *self = Self::from_sorted(entries);
        Some(value)
    }

    /// Keeps only the entries `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut Value) -> bool) {
        let mut entries = self.take_vec();
        entries.retain_mut(|(k, v)| keep(k, v));
        *self = Self::from_sorted(entries);
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.entries = None;
    }

    /// The entries in key order.
    pub fn iter(&self) -> MetadataIter<'_> {
        MetadataIter(self.slice().iter())
    }

    /// The entries in key order, values mutable.
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = (&String, &mut Value)> {
        self.slice_mut().iter_mut().map(|(k, v)| (&*k, v))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &String> {
        self.slice().iter().map(|(k, _)| k)
    }

    /// The values in key order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &Value> {
        self.slice().iter().map(|(_, v)| v)
    }

    /// A map of `entries` in any order; a repeated key keeps its last value.
    fn from_vec(mut entries: Vec<(String, Value)>) -> Self {
        // Stable, so equal keys stay in input order and the last one wins.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut deduped: Vec<(String, Value)> = Vec::with_capacity(entries.len());
        for entry in entries {
            match deduped.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => deduped.push(entry),
            }
        }
        Self::from_sorted(deduped)
    }
}

impl Clone for MetadataMap {
    /// Most maps are empty; copying an item clones several, so the empty
    /// case copies a null pointer.
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
        }
    }
}

/// The entries of a [`MetadataMap`] in key order.
#[derive(Clone, Debug)]
pub struct MetadataIter<'a>(std::slice::Iter<'a, (String, Value)>);

impl<'a> Iterator for MetadataIter<'a> {
    type Item = (&'a String, &'a Value);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for MetadataIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, v))
    }
}

impl ExactSizeIterator for MetadataIter<'_> {}

impl<'a> IntoIterator for &'a MetadataMap {
    type Item = (&'a String, &'a Value);
    type IntoIter = MetadataIter<'a>;

    fn into_iter(self) -> MetadataIter<'a> {
        self.iter()
    }
}

impl IntoIterator for MetadataMap {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;

    fn into_iter(mut self) -> Self::IntoIter {
        self.entries
            .take()
            .map_or_else(Vec::new, |entries| entries.into_vec())
            .into_iter()
    }
}

impl FromIterator<(String, Value)> for MetadataMap {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        Self::from_vec(iter.into_iter().collect())
    }
}

impl Extend<(String, Value)> for MetadataMap {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, iter: I) {
        let mut entries = self.take_vec();
        entries.extend(iter);
        *self = Self::from_vec(entries);
    }
}

impl<const N: usize> From<[(String, Value); N]> for MetadataMap {
    fn from(entries: [(String, Value); N]) -> Self {
        Self::from_vec(entries.into())
    }
}

impl From<std::collections::BTreeMap<String, Value>> for MetadataMap {
    fn from(map: std::collections::BTreeMap<String, Value>) -> Self {
        // Already sorted and unique.
        Self::from_sorted(map.into_iter().collect())
    }
}

impl From<MetadataMap> for std::collections::BTreeMap<String, Value> {
    fn from(map: MetadataMap) -> Self {
        map.into_iter().collect()
    }
}

impl<Q> std::ops::Index<&Q> for MetadataMap
where
    String: Borrow<Q>,
    Q: Ord + ?Sized,
{
    type Output = Value;

    /// The value of `key`; panics when there is none, as `BTreeMap` does.
    fn index(&self, key: &Q) -> &Value {
        self.get(key).expect("no entry found for key")
    }
}

impl fmt::Debug for MetadataMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for MetadataMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (key, value) in self.iter() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for MetadataMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor;

        impl<'de> Visitor<'de> for MapVisitor {
            type Value = MetadataMap;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of metadata")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<MetadataMap, A::Error> {
                let mut entries = Vec::with_capacity(access.size_hint().unwrap_or(0).min(64));
                while let Some(entry) = access.next_entry::<String, Value>()? {
                    entries.push(entry);
                }
                Ok(MetadataMap::from_vec(entries))
            }
        }

        deserializer.deserialize_map(MapVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn pairs(map: &MetadataMap) -> Vec<(&str, &Value)> {
        map.iter().map(|(k, v)| (k.as_str(), v)).collect()
    }

    #[test]
    fn behaves_like_a_sorted_map() {
        let mut map = MetadataMap::new();
        assert!(map.is_empty());
        assert_eq!(map.insert("b".into(), json!(2)), None);
        assert_eq!(map.insert("a".into(), json!(1)), None);
        assert_eq!(map.insert("c".into(), json!(3)), None);
        assert_eq!(map.insert("b".into(), json!(20)), Some(json!(2)));
        assert_eq!(
            pairs(&map),
            [("a", &json!(1)), ("b", &json!(20)), ("c", &json!(3))]
        );
        assert_eq!(map.len(), 3);
        assert_eq!(map["c"], json!(3));
        assert!(map.contains_key("a") && !map.contains_key("z"));
        *map.get_mut("a").unwrap() = json!("one");
        assert_eq!(map.remove("b"), Some(json!(20)));
        assert_eq!(map.remove("b"), None);
        assert_eq!(pairs(&map), [("a", &json!("one")), ("c", &json!(3))]);
        map.retain(|k, _| k != "a");
        assert_eq!(map.keys().collect::<Vec<_>>(), ["c"]);
        map.clear();
        assert!(map.is_empty());
    }

    #[test]
    fn holds_its_entries_without_spare_room() {
        let mut map = MetadataMap::new();
        assert!(map.entries.is_none(), "an empty map is a null pointer");
        assert_eq!(std::mem::size_of::<MetadataMap>(), 8);
        map.insert("agentkit.finish_reason".into(), json!("tool_call"));
        assert_eq!(map.entries.as_ref().map(|e| e.len()), Some(1));
        map.remove("agentkit.finish_reason");
        assert!(map.entries.is_none(), "emptied, it holds nothing");
        map.insert("agentkit.finish_reason".into(), json!("tool_call"));
        map.extend([("z".to_owned(), json!(1)), ("a".to_owned(), json!(0))]);
        assert_eq!(
            map.keys().map(String::as_str).collect::<Vec<_>>(),
            ["a", "agentkit.finish_reason", "z"]
        );
    }

    #[test]
    fn serializes_like_the_btree_map_it_replaces() {
        let entries = [
            ("zeta".to_owned(), json!({ "nested": [1, 2] })),
            ("alpha".to_owned(), json!(null)),
            ("agentkit.finish_reason".to_owned(), json!("tool_call")),
        ];
        let map = MetadataMap::from(entries.clone());
        let tree: BTreeMap<String, Value> = entries.into_iter().collect();
        assert_eq!(
            serde_json::to_string(&map).unwrap(),
            serde_json::to_string(&tree).unwrap()
        );
        assert_eq!(MetadataMap::from(tree.clone()), map);
        assert_eq!(BTreeMap::from(map.clone()), tree);
        assert_eq!(format!("{map:?}"), format!("{tree:?}"));
    }

    #[test]
    fn reads_any_object_and_the_last_repeated_key_wins() {
        let map: MetadataMap =
            serde_json::from_str(r#"{"b": 1, "a": {"x": true}, "b": 2}"#).unwrap();
        assert_eq!(pairs(&map), [("a", &json!({"x": true})), ("b", &json!(2))]);
        let collected: MetadataMap = [("k".to_owned(), json!(1)), ("k".to_owned(), json!(2))]
            .into_iter()
            .collect();
        assert_eq!(pairs(&collected), [("k", &json!(2))]);
        assert!(serde_json::from_str::<MetadataMap>("[1]").is_err());
    }
}
