//! The cancellation check every adapter owes: a turn is cancelled by
//! dropping it, so dropping it mid-stream must close the connection.
//!
//! Written once here so each adapter's test suite runs the same check
//! against its own stalled stream on the local test server: the suite
//! supplies the first event in its wire format and how to build its adapter
//! for a base URL; the server, the session, the turn and the waiting are
//! the same for every provider. (It lives here rather than in
//! `agentkit_http::testing` because it drives agentkit-loop's model traits,
//! which the HTTP layer does not know.)

use agentkit_core::{Item, TurnId};
use agentkit_http::testing::{Ending, ScriptedResponse, TestServer};
use agentkit_loop::{
    ModelAdapter, ModelSession, ModelTurn, SessionConfig, TranscriptView, TurnRequest,
};
use std::time::Duration;

/// How long each step may take on a loaded machine before the check fails.
const DEADLINE: Duration = Duration::from_secs(30);

/// Runs the whole check for one adapter: serves `first_event` (one event in
/// the provider's wire format) and then stalls, builds the adapter with
/// `adapter(base_url)` (the test server's `http://127.0.0.1:port`, without a
/// path), begins a turn asking "Hi", reads the first event, drops the turn
/// and waits for the server to see the client hang up. Panics, naming the
/// step, if any step fails.
///
/// Each provider crate's suite calls it with its own first event, for
/// example `ScriptedResponse::sse("data: {...}\n\n")` and
/// `|url| OpenAiAdapter::new(OpenAiConfig::compatible(format!("{url}/v1"), "m")).unwrap()`.
pub async fn assert_dropping_a_turn_closes_the_connection<A: ModelAdapter>(
    first_event: ScriptedResponse,
    adapter: impl FnOnce(&str) -> A,
) {
    let server = TestServer::start([first_event.ending(Ending::Stall)])
        .await
        .expect("the test server starts");
    let adapter = adapter(server.url());
    let mut session = adapter
        .start_session(SessionConfig::new("s-drop"))
        .await
        .expect("the session starts");
    let request = TurnRequest::new(
        "s-drop",
        TurnId::new("turn-drop"),
        TranscriptView::from_items(vec![Item::user("Hi")]),
    );
    let turn = tokio::time::timeout(DEADLINE, session.begin_turn(request))
        .await
        .expect("the turn begins in time")
        .expect("the turn begins");
    assert_drop_closes_connection(turn, &server, DEADLINE).await;
}

/// Reads the first event of `turn` (whose response the server stalls, see
/// [`Ending::Stall`]), checks the connection is still open, drops the turn
/// and waits up to `deadline` for the server to see the client hang up.
/// Panics, naming the step, if any step fails. For a turn built by hand;
/// [`assert_dropping_a_turn_closes_the_connection`] does the whole set-up.
pub async fn assert_drop_closes_connection(
    mut turn: impl ModelTurn,
    server: &TestServer,
    deadline: Duration,
) {
    let first = tokio::time::timeout(deadline, turn.next_event())
        .await
        .expect("the first event arrives");
    assert!(matches!(first, Ok(Some(_))), "{first:?}");
    assert_eq!(server.hung_up(), 0, "the stream is still open");
    drop(turn);
    assert!(
        server.wait_for_hang_ups(1, deadline).await,
        "dropping the turn closed the connection"
    );
}
