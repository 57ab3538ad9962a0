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
use agent_client_protocol::v1::schema as acp;
use agentkit_loop::{LoopDriver, LoopStep, ModelSession};
use agentkit_store::{Session, SessionStore};
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
