//! The shared suite against a real PostgreSQL server that the test starts
//! (see `support/pg.rs`): one throwaway cluster per test.

mod support;

use agentkit_store::{PgStore, SessionStore, StoreResult};
use std::sync::Arc;
use support::Backend;
use support::pg::TempCluster;

struct Postgres {
    cluster: TempCluster,
}

impl Backend for Postgres {
    async fn open(&self) -> StoreResult<Arc<dyn SessionStore>> {
        Ok(Arc::new(PgStore::connect(&self.cluster.conninfo()).await?))
    }

    async fn set_schema_version(&self, version: i64) {
        let (client, connection) =
            tokio_postgres::connect(&self.cluster.conninfo(), tokio_postgres::NoTls)
                .await
                .unwrap();
        tokio::spawn(connection);
        client
            .execute("UPDATE agentkit_store_schema SET version = $1", &[&version])
            .await
            .unwrap();
    }
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let backend = Postgres { cluster: TempCluster::start() };
            support::suite::$name(&backend).await;
        }
    )*};
}

suite!(
    appends_items_as_they_happen,
    resume_surfaces_a_pending_approval_again,
    queued_input_and_messages_survive_a_restart,
    two_workers_race_and_one_wins,
    leases_expire_unless_renewed,
    list_fork_and_delete,
    rewrites_by_mutators_are_stored,
    newer_schemas_are_refused,
);
