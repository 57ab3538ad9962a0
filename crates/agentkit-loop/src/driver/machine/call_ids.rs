//! The tool-call ids a session has used, so that an id the model repeats
//! gets a fresh one and every call in the transcript is answered exactly
//! once.
//!
//! Every call of every answer is checked, so the check is kept cheap for
//! the usual case: providers make a new id for every call. Until an id is
//! seen twice, the set holds only each id's 64-bit hash, keyed with a
//! random seed per process (`foldhash`, as the set of ids was): no id is
//! cloned into it, growing it moves 8-byte keys that are not hashed again,
//! and a probe compares two integers. The first time a hash is already
//! there (a repeated id, or, about once in 2^64, two ids with one hash)
//! the set is rebuilt from the ids themselves, from the transcript, and
//! stays exact for the rest of the session. So which ids get a fresh one
//! never depends on the seed (a replay gives the same transcript), and a
//! model that repeats ids on purpose (a prompt injection can make it)
//! pays only for one rebuild and then what every check cost before.

use crate::transcript::CallIds;
use agentkit_core::ToolCallId;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};

/// The ids a session used after its starting transcript.
pub(super) enum UsedCallIds {
    /// Every id seen once: their keyed hashes.
    Hashes(HashSet<u64, Keys>),
    /// After an id was seen twice: the ids (boxed: the rare case does not
    /// make every driver larger).
    Ids(Box<CallIds>),
}

impl UsedCallIds {
    /// An empty set.
    pub(super) fn new() -> Self {
        Self::Hashes(HashSet::with_hasher(Keys))
    }

    /// Adds ids the transcript holds now.
    pub(super) fn extend<'a>(&mut self, ids: impl Iterator<Item = &'a ToolCallId>) {
        match self {
            Self::Hashes(hashes) => hashes.extend(ids.map(Keys::key)),
            Self::Ids(set) => set.extend(ids.cloned()),
        }
    }

    /// Takes `id`; `false` when it was taken already. `exact` lists every
    /// id taken so far (the transcript's and the answer's before this
    /// one); it is called at most once in a session, when a hash repeats.
    pub(super) fn insert<I>(&mut self, id: &ToolCallId, exact: impl FnOnce() -> I) -> bool
    where
        I: IntoIterator<Item = ToolCallId>,
    {
        if let Self::Hashes(hashes) = self {
            if hashes.insert(Keys::key(id)) {
                return true;
            }
            *self = Self::Ids(Box::new(exact().into_iter().collect()));
        }
        match self {
            Self::Ids(set) => set.insert(id.clone()),
            Self::Hashes(_) => unreachable!("made exact above"),
        }
    }

    /// `true` once the set holds the ids themselves.
    #[cfg(test)]
    pub(super) fn is_exact(&self) -> bool {
        matches!(self, Self::Ids(_))
    }
}

/// The hashes set's hasher: it keys the ids (`foldhash` under the seed
/// its `RandomState`s share, random per process), and takes a key, a
/// hash already, as it is. No state, so the set is no larger than it was.
#[derive(Clone, Copy, Default)]
pub(super) struct Keys;

impl Keys {
    /// The key of `id`.
    fn key(id: &ToolCallId) -> u64 {
        use foldhash::{SharedSeed, fast::SeedableRandomState};
        // A fixed per-hasher part: the shared seed, random per process, is
        // the key.
        SeedableRandomState::with_seed(0x6361_6c6c_5f69_6473, SharedSeed::global_random())
            .hash_one(id)
    }
}

impl BuildHasher for Keys {
    type Hasher = Keyed;

    fn build_hasher(&self) -> Keyed {
        Keyed(0)
    }
}

/// A key's hasher: the key is a hash already.
pub(super) struct Keyed(u64);

impl Hasher for Keyed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed (`write_u64`); fold anything else in.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(texts: &[&str]) -> Vec<ToolCallId> {
        texts.iter().map(|t| ToolCallId::from(*t)).collect()
    }

    #[test]
    fn new_ids_are_taken_by_their_hash_and_a_repeat_makes_the_set_exact() {
        let transcript = ids(&["toolu_01A09q90qw90lq917835lq9", "call_1"]);
        let mut used = UsedCallIds::new();
        used.extend(transcript.iter());
        let exact = || transcript.clone();
        assert!(
            used.insert(&ToolCallId::from("call_2"), || -> Vec<ToolCallId> {
                panic!("a new id needs no exact check")
            })
        );
        assert!(!used.is_exact());
        // A repeated id, long or short: not taken again, and from then on
        // the ids themselves are compared.
        assert!(!used.insert(&transcript[0], exact));
        assert!(used.is_exact());
        assert!(!used.insert(&transcript[1], exact));
        assert!(used.insert(&ToolCallId::from("call_1_2"), exact));
        assert!(!used.insert(&ToolCallId::from("call_1_2"), exact));
        used.extend(ids(&["call_9"]).iter());
        assert!(!used.insert(&ToolCallId::from("call_9"), exact));
    }

    #[test]
    fn a_hash_seen_before_is_decided_by_the_ids() {
        // What a collision of two different ids' hashes comes to: the hash
        // is there, the id is not among the ids taken, so it is new.
        let taken = ToolCallId::from("call_a");
        let fresh = ToolCallId::from("call_b");
        let mut used = UsedCallIds::new();
        if let UsedCallIds::Hashes(hashes) = &mut used {
            hashes.extend([Keys::key(&taken), Keys::key(&fresh)]);
        }
        assert!(used.insert(&fresh, || [taken.clone()]));
        assert!(used.is_exact());
        assert!(!used.insert(&taken, Vec::new));
    }

    #[test]
    fn a_key_is_the_same_for_equal_ids_and_used_as_it_is() {
        let key = |id: &str| Keys::key(&ToolCallId::from(id));
        assert_eq!(key("call_1"), Keys::key(&ToolCallId::new("call_1")));
        assert_ne!(key("call_1"), key("call_2"));
        assert_eq!(Keys.hash_one(key("call_1")), key("call_1"));
    }

    #[test]
    fn a_driver_does_not_grow() {
        // Every driver keeps the set's slot; the exact set is boxed.
        assert!(size_of::<Option<UsedCallIds>>() <= size_of::<Option<CallIds>>());
    }
}
