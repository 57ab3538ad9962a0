//! Free-form metadata attached to items, parts and results.
//!
//! A sorted map so serialized transcripts are byte-for-byte stable, which
//! keeps snapshot tests and prompt caches steady.

/// String keys to JSON values, sorted by key.
///
/// Keys that agentkit itself writes start with `agentkit.` (for example
/// `agentkit.interrupted`); use your own prefix for yours.
pub type MetadataMap = std::collections::BTreeMap<String, serde_json::Value>;
