//! The cancellation check every adapter owes: a turn is cancelled by
//! dropping it, so dropping it mid-stream must close the connection.
//!
//! Written once here so each adapter's test suite runs the same check
//! against its own stalled stream on the local test server.

use agentkit_http::testing::TestServer;
use agentkit_loop::ModelTurn;
use std::time::Duration;

/// Reads the first event of `turn` (whose response the server stalls, see
/// [`Ending::Stall`](agentkit_http::testing::Ending::Stall)), checks the
/// connection is still open, drops the turn and waits up to `deadline` for
/// the server to see the client hang up. Panics, naming the step, if any
/// step fails.
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
