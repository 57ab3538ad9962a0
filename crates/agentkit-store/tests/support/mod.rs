//! The test suite every backend passes, and what it needs.
#![allow(dead_code)]

pub mod pg;
pub mod suite;
pub mod tools;

use agentkit_store::{SessionStore, StoreResult};
use std::sync::Arc;

/// A database the suite can open several times, as several workers would.
pub trait Backend: Send + Sync {
    /// A new store on the database (a new connection).
    fn open(&self) -> impl Future<Output = StoreResult<Arc<dyn SessionStore>>> + Send;

    /// Pretends a newer build migrated the database to `version`.
    fn set_schema_version(&self, version: i64) -> impl Future<Output = ()> + Send;
}
