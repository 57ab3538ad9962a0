//! Sessions kept in an `agentkit-store` [`SessionStore`] (feature `store`).
//!
//! With [`AcpServer::session_store`](crate::AcpServer::session_store) every
//! session the editor opens is created in the store and leased; its items
//! are appended as they happen and the driver's snapshot is saved at every
//! step (`agentkit_store::Session`). `session/load` leases the stored
//! session, resumes it exactly where it stopped (a session another program
//! saved in the same store too, such as the coding agent's terminal
//! sessions), and replays its transcript to the editor. When the
//! connection ends, every session is saved and its lease given up.

use crate::AcpError;
use crate::session::Drive;
use crate::updates::UpdateSink;
use agent_client_protocol::v1::schema as acp;
use agentkit_loop::{AgentBuilder, LoopDriver, LoopStep, ModelAdapter, ModelSession};
use agentkit_store::{Session, SessionLease, SessionStore};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Sessions per `session/list` page.
const PAGE: usize = 50;

/// The store and how long its leases last.
#[derive(Clone)]
pub(crate) struct StoreConfig {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) lease_ttl: Duration,
}

impl<S: ModelSession> Drive for Session<S>
where
    LoopDriver<S>: Send,
{
    type Session = S;

    fn driver(&mut self) -> &mut LoopDriver<S> {
        self.driver_mut()
    }

    async fn step(&mut self) -> Result<LoopStep, String> {
        self.next().await.map_err(|err| err.to_string())
    }

    async fn close(self) {
        let id = self.session_id().clone();
        if let Err(err) = Session::close(self).await {
            tracing::warn!(session = %id, "the stored session was not closed cleanly: {err}");
        }
    }
}

/// `builder` recording into `lease`, then streaming to the editor through
/// `updates`. The order matters: observers run in the order they were
/// added, so the store holds a call's start (its `ToolStarted` mark) before
/// the editor is told the call is in progress. An agent killed after the
/// editor saw `in_progress` then always loads the call as interrupted.
pub(crate) fn observed<M: ModelAdapter>(
    lease: &SessionLease,
    builder: AgentBuilder<M>,
    updates: Arc<UpdateSink>,
) -> AgentBuilder<M> {
    lease.record(builder).observer_arc(updates)
}

/// Answers `session/list`: the stored sessions that have a working
/// directory (the ACP answer needs one), newest first, those of `cwd` only
/// when the editor asks for one. The cursor is the offset of the next page.
pub(crate) async fn list(
    config: &StoreConfig,
    request: &acp::ListSessionsRequest,
) -> Result<acp::ListSessionsResponse, AcpError> {
    let start = match &request.cursor {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .map_err(|_| AcpError::BadCursor(cursor.clone()))?,
    };
    let listed = config
        .store
        .list()
        .await
        .map_err(|err| AcpError::List(Box::new(err)))?;
    let matching: Vec<acp::SessionInfo> = listed
        .into_iter()
        .filter_map(|info| {
            let cwd = info.cwd?;
            if request.cwd.as_ref().is_some_and(|wanted| *wanted != cwd) {
                return None;
            }
            Some(
                acp::SessionInfo::new(info.id.as_str().to_owned(), cwd)
                    .title(info.title)
                    .updated_at(iso8601(info.last_activity)),
            )
        })
        .collect();
    let end = (start + PAGE).min(matching.len());
    let next = (end < matching.len()).then(|| end.to_string());
    let page = matching.get(start..end).unwrap_or_default().to_vec();
    Ok(acp::ListSessionsResponse::new(page).next_cursor(next))
}

/// `time` as ISO 8601 in UTC, to the second (`2026-11-26T23:31:36Z`),
/// rearranged from its HTTP date (`Thu, 26 Nov 2026 23:31:36 GMT`).
fn iso8601(time: SystemTime) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let http = httpdate::fmt_http_date(time.max(UNIX_EPOCH));
    match http.split(' ').collect::<Vec<_>>()[..] {
        [_, day, month, year, clock, _] => {
            let month = MONTHS.iter().position(|m| *m == month).unwrap_or(0) + 1;
            format!("{year}-{month:02}-{day}T{clock}Z")
        }
        _ => http,
    }
}

#[cfg(test)]
mod tests {
    use super::iso8601;
    use std::time::{Duration, UNIX_EPOCH};

    mod killed {
        //! An agent killed at the worst moment for the editor: right after
        //! it was told a call is in progress. The kill is a copy of the
        //! SQLite files taken at that instant, inside the update sink (one
        //! thread, so nothing else writes meanwhile): what a SIGKILL leaves
        //! on disk. No timing luck: the copy is taken at exactly that point.

        use crate::ToolKind;
        use crate::updates::{UpdateSink, round_updates};
        use agent_client_protocol::v1::schema as acp;
        use agentkit_core::{Item, SessionId};
        use agentkit_loop::{Agent, LoopInterrupt, LoopStep};
        use agentkit_store::{NewSession, SessionLease, SessionStore, SqliteStore, StoreError};
        use agentkit_testkit::{AskFor, GuardedTool, ScriptedModel, ScriptedTurn};
        use agentkit_tools_core::ToolRegistry;
        use serde_json::json;
        use std::path::Path;
        use std::sync::Arc;
        use std::time::Duration;

        fn copy_database(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for name in ["sessions.db", "sessions.db-wal"] {
                if from.join(name).exists() {
                    std::fs::copy(from.join(name), to.join(name)).unwrap();
                }
            }
        }

        #[tokio::test(flavor = "current_thread")]
        async fn a_kill_right_after_in_progress_loads_the_call_interrupted_and_never_reruns_it() {
            let dir = tempfile::tempdir().unwrap();
            let live = dir.path().join("live");
            let killed = dir.path().join("killed");
            std::fs::create_dir(&live).unwrap();
            let store: Arc<dyn SessionStore> =
                Arc::new(SqliteStore::open(live.join("sessions.db")).unwrap());
            let id = SessionId::new("s");
            store
                .create(NewSession::new().with_id(id.clone()))
                .await
                .unwrap();
            let ttl = Duration::from_millis(300);
            let lease = SessionLease::acquire_with_ttl(store.clone(), &id, ttl)
                .await
                .unwrap();

            // The sink the server adds, its notifications going to the kill.
            let told = Arc::new(tokio::sync::Notify::new());
            let kill = {
                let (told, live, killed) = (told.clone(), live.clone(), killed.clone());
                move |update: acp::SessionUpdate| {
                    if let acp::SessionUpdate::ToolCallUpdate(update) = &update
                        && update.fields.status == Some(acp::ToolCallStatus::InProgress)
                    {
                        copy_database(&live, &killed);
                        told.notify_one();
                    }
                }
            };
            let updates = Arc::new(UpdateSink::to(kill, Arc::new(ToolKind::guess), None));
            // Counts its runs, then holds until dropped (a long command); every
            // call is asked, as the coding agent asks for `sleep 20`.
            let hold = GuardedTool::holding("hold");
            let model = ScriptedModel::new([ScriptedTurn::tool_call("call_1", "hold", json!({}))]);
            let builder = Agent::builder()
                .model(model)
                .add_tool_source(ToolRegistry::new().with(hold.clone()))
                .permissions(AskFor::all());
            let agent = super::super::observed(&lease, builder, updates)
                .build()
                .unwrap();
            let mut session = lease.open(&agent).await.unwrap();
            let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(input)) =
                session.next().await.unwrap()
            else {
                panic!("a new session waits for input")
            };
            input.submit(&mut session, vec![Item::user("go")]).unwrap();
            let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) =
                session.next().await.unwrap()
            else {
                panic!("the call is asked")
            };
            // Allowed, as the editor's "allow once" does.
            pending.approve(&mut session).unwrap();
            tokio::select! {
                step = session.next() => panic!("the held call never ends: {step:?}"),
                () = told.notified() => {}
            }
            drop(session);
            assert!(
                killed.join("sessions.db").exists(),
                "the editor was told in_progress"
            );

            // A new process loads what the kill left.
            let store: Arc<dyn SessionStore> =
                Arc::new(SqliteStore::open(killed.join("sessions.db")).unwrap());
            let mut attempts = 0;
            let lease = loop {
                // The killed process's lease runs out after `ttl`.
                match SessionLease::acquire_with_ttl(store.clone(), &id, ttl).await {
                    Err(StoreError::Busy { .. }) if attempts < 200 => {
                        attempts += 1;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    other => break other.unwrap(),
                }
            };
            let model = ScriptedModel::new([ScriptedTurn::text("resumed")]);
            let agent = lease
                .record(
                    Agent::builder()
                        .model(model)
                        .add_tool_source(ToolRegistry::new().with(hold.clone()))
                        .permissions(AskFor::all()),
                )
                .build()
                .unwrap();
            let mut session = lease.open(&agent).await.unwrap();

            // What `session/load` shows: the call failed as interrupted.
            let shown = round_updates(&session.snapshot().round);
            assert_eq!(
                shown.len(),
                1,
                "the killed call has a final state: {shown:?}"
            );
            assert_eq!(shown[0].tool_call_id.0.as_ref(), "call_1");
            assert_eq!(shown[0].fields.status, Some(acp::ToolCallStatus::Failed));
            let text = serde_json::to_string(&shown[0].fields.content).unwrap();
            assert!(text.contains("interrupted"), "{text}");

            // Going on answers it as interrupted; it never runs again.
            let turn = loop {
                match session.next().await.unwrap() {
                    LoopStep::Finished(turn) => break turn,
                    LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
                    other => panic!("the resumed turn ends without asking again: {other:?}"),
                }
            };
            assert_eq!(turn.items.last().unwrap().text_content(), "resumed");
            assert_eq!(hold.runs(), 1, "no call runs twice");
            session.close().await.unwrap();
        }
    }

    #[test]
    fn timestamps_are_iso_8601_in_utc() {
        for (secs, text) in [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_795_735_896, "2026-11-26T23:31:36Z"),
            (4_107_542_399, "2100-02-28T23:59:59Z"),
        ] {
            assert_eq!(iso8601(UNIX_EPOCH + Duration::from_secs(secs)), text);
        }
    }
}
