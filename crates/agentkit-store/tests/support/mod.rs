//! The test suite every backend passes, and what it needs.
#![allow(dead_code)]

pub mod events;
pub mod stamp;
pub mod starts;
pub mod suite;
pub mod tools;
pub mod unrecorded;

use agentkit_store::{SessionStore, StoreResult};
use std::sync::Arc;

/// A database the suite can open several times, as several workers would.
pub trait Backend: Send + Sync {
    /// A new store on the database (a new connection).
    fn open(&self) -> impl Future<Output = StoreResult<Arc<dyn SessionStore>>> + Send;

    /// Pretends a newer build migrated the database to `version`.
    fn set_schema_version(&self, version: i64) -> impl Future<Output = ()> + Send;
}

/// One `#[tokio::test]` per suite function, each with a fresh backend made
/// by `$make`.
#[macro_export]
macro_rules! shared_suite {
    ($make:expr) => {
        $crate::shared_suite!(
            @tests $make;
            appends_items_as_they_happen,
            resume_surfaces_a_pending_approval_again,
            queued_input_and_messages_survive_a_restart,
            two_workers_race_and_one_wins,
            leases_expire_unless_renewed,
            list_fork_and_delete,
            rewrites_by_mutators_are_stored,
            newer_schemas_are_refused,
            input_logs_are_stored_replayed_and_forked,
            a_kill_after_a_compaction_keeps_what_followed_it,
        );
    };
    (@tests $make:expr; $($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let backend = $make;
            support::suite::$name(&backend).await;
        }
    )*};
}
