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

/// A call's `ToolStarted` mark is in the database before the call does
/// anything, although PostgreSQL writes go through a writer task: a kill
/// at the call's first instruction must not let it run again on resume.
/// Single-threaded, and the probe blocks, so the writer task cannot catch
/// up while the tool looks.
#[tokio::test]
async fn a_call_starts_only_after_its_start_mark_is_stored() {
    use agentkit_core::{FinishReason, Item};
    use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SimpleTaskManager, TaskRouting};
    use agentkit_store::{NewSession, SessionLease};
    use agentkit_testkit::{ScriptedModel, ScriptedTurn};
    use agentkit_tools_core::ToolRegistry;
    use serde_json::json;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};
    use support::tools::MarkProbe;

    let cluster = TempCluster::start();
    let conninfo = cluster.conninfo();
    let store: Arc<dyn SessionStore> = Arc::new(PgStore::connect(&conninfo).await.unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let probe = move |call_id: &str| {
        let conninfo = conninfo.clone();
        let wanted = json!({ "mark": "tool_started", "call_id": call_id });
        // Its own thread and runtime: this one stays blocked.
        let marked = std::thread::spawn(move || {
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
                let rows = client
                    .query(
                        "SELECT mark FROM agentkit_marks WHERE session_id = 'probed'",
                        &[],
                    )
                    .await
                    .unwrap();
                rows.iter().any(|row| {
                    serde_json::from_str::<serde_json::Value>(row.get(0)).unwrap() == wanted
                })
            })
        })
        .join()
        .unwrap();
        log.lock().unwrap().push((call_id.to_owned(), marked));
        marked
    };
    let lease = SessionLease::create(store, NewSession::new().with_id("probed"))
        .await
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("inline", "probe", json!({}))
            .call("background", "probe", json!({}))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("done"),
    ]);
    let agent = lease
        .record(
            Agent::builder()
                .model(model)
                .add_tool_source(ToolRegistry::new().with(MarkProbe {
                    probe: Arc::new(probe),
                }))
                .task_manager(SimpleTaskManager::new().with_routing(|request| {
                    if request.call_id.as_str() == "background" {
                        TaskRouting::Background
                    } else {
                        TaskRouting::Foreground
                    }
                }))
                .input(vec![Item::user("probe both")]),
        )
        .build()
        .unwrap();
    let mut session = lease.open(&agent).await.unwrap();
    loop {
        match session.next().await.unwrap() {
            LoopStep::Finished(_) => break,
            // The pause after the round.
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
            other => panic!("{other:?}"),
        }
    }
    // The background call runs on in its own task.
    let waited = Instant::now();
    while seen.lock().unwrap().len() < 2 {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the background call never ran"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen,
        [("background".to_owned(), true), ("inline".to_owned(), true)]
    );
    session.close().await.unwrap();
}
