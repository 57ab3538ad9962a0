//! The shared suite against a real PostgreSQL server that the test starts
//! (see `agentkit_testkit::pg`): one throwaway cluster per test.

mod support;

use agentkit_store::{PgStore, SessionStore, StoreResult};
use agentkit_testkit::pg::TempCluster;
use std::sync::Arc;
use support::Backend;

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

shared_suite!(Postgres {
    cluster: TempCluster::start()
});

#[tokio::test]
async fn events_are_kept_in_order_and_never_rewritten() {
    let cluster = TempCluster::start();
    let store = PgStore::connect(&cluster.conninfo()).await.unwrap();
    support::events::events_are_kept_in_order_and_never_rewritten(&store).await;
}
