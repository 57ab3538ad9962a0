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

impl Postgres {
    async fn admin(&self, sql: &str) {
        let (client, connection) =
            tokio_postgres::connect(&self.cluster.conninfo(), tokio_postgres::NoTls)
                .await
                .unwrap();
        tokio::spawn(connection);
        client.batch_execute(sql).await.unwrap();
    }
}

impl support::unrecorded::Refusing for Postgres {
    async fn refuse_calls(&self) {
        self.admin(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN RAISE EXCEPTION 'disk full'; END $$;
             CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON agentkit_items FOR EACH ROW
                WHEN (NEW.item LIKE '%\"tool_call\"%') EXECUTE FUNCTION refuse();",
        )
        .await;
    }

    async fn accept(&self) {
        self.admin("DROP TRIGGER refuse ON agentkit_items; DROP FUNCTION refuse();")
            .await;
    }
}

/// PostgreSQL refuses an answer's row: none of its calls runs unrecorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_answer_runs_none_of_its_calls() {
    let backend = Postgres {
        cluster: TempCluster::start(),
    };
    let store = backend.open().await.unwrap();
    support::unrecorded::a_refused_answer_runs_none_of_its_calls(store, &backend).await;
}

/// A rewrite the rows cannot follow: the next call does not run unrecorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_after_an_unfollowed_rewrite_does_not_run_unrecorded() {
    let backend = Postgres {
        cluster: TempCluster::start(),
    };
    let store = backend.open().await.unwrap();
    support::unrecorded::a_call_after_an_unfollowed_rewrite_does_not_run_unrecorded(store).await;
}

#[tokio::test]
async fn events_are_kept_in_order_and_never_rewritten() {
    let cluster = TempCluster::start();
    let store = PgStore::connect(&cluster.conninfo()).await.unwrap();
    support::events::events_are_kept_in_order_and_never_rewritten(&store).await;
}

/// A non-idempotent rewrite before a model call, a kill while the call
/// streams: resumed from PostgreSQL, the call is made without a second run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_is_not_run_again_after_a_kill() {
    use support::stamp::{Stamped, a_rewrite_is_not_run_again_after_a_kill};
    let cluster = TempCluster::start();
    for case in [Stamped::AfterARound, Stamped::FirstOfATurn] {
        let store = Arc::new(PgStore::connect(&cluster.conninfo()).await.unwrap());
        a_rewrite_is_not_run_again_after_a_kill(store, case).await;
    }
}

/// A call runs only once PostgreSQL holds its start (its answer's row
/// after the checkpoint, or its `ToolStarted` mark), although writes go
/// through a writer task: a kill at the call's first instruction must not
/// let it run again on resume. Single-threaded, and the probe blocks, so
/// the writer task cannot catch up while the tool looks.
#[tokio::test]
async fn a_call_starts_only_after_its_start_is_stored() {
    use support::starts::{PROBED, start_known};

    let cluster = TempCluster::start();
    let conninfo = cluster.conninfo();
    let store: Arc<dyn SessionStore> = Arc::new(PgStore::connect(&conninfo).await.unwrap());
    let probe = move |call_id: &str| {
        let conninfo = conninfo.clone();
        let call_id = call_id.to_owned();
        // Its own thread and runtime: this one stays blocked.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let (client, connection) =
                    tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
                        .await
                        .unwrap();
                tokio::spawn(connection);
                let column = |rows: Vec<tokio_postgres::Row>| -> Vec<String> {
                    rows.iter().map(|row| row.get(0)).collect()
                };
                let items = client
                    .query(
                        "SELECT item FROM agentkit_items WHERE session_id = $1 AND seq >=
                            (SELECT transcript_len FROM agentkit_sessions WHERE id = $1)",
                        &[&PROBED],
                    )
                    .await
                    .unwrap();
                let marks = client
                    .query(
                        "SELECT mark FROM agentkit_marks WHERE session_id = $1",
                        &[&PROBED],
                    )
                    .await
                    .unwrap();
                let snapshot: Option<String> = client
                    .query_one(
                        "SELECT snapshot FROM agentkit_sessions WHERE id = $1",
                        &[&PROBED],
                    )
                    .await
                    .unwrap()
                    .get(0);
                start_known(
                    &call_id,
                    &column(items),
                    &column(marks),
                    snapshot.as_deref(),
                )
            })
        })
        .join()
        .unwrap()
    };
    support::starts::calls_run_only_once_their_start_is_stored(store, probe).await;
}
