//! Two server processes (`examples/replica.rs`) on one real PostgreSQL
//! database. A turn runs on replica A; requests for its session that land
//! on B are forwarded to A (the lease row names A's URL), so they are
//! served and nothing runs twice; A is killed with
//! SIGKILL in the middle of the turn's tool call; the client reconnects to
//! B with `Last-Event-ID`, and B, once A's lease expired, resumes the
//! session: the interrupted call is answered (not run again), the model
//! answers, and the client's stream goes on under the same run id.

mod support;

use agentkit_testkit::process::{ListeningProcess, example_binary};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{Events, PATIENCE};

const TOKEN: &str = "token-of-acme";

/// A replica process (`examples/replica.rs`, built with the crate's
/// tests), killed when dropped.
fn replica(conninfo: &str, dir: &Path) -> ListeningProcess {
    ListeningProcess::spawn(
        Command::new(example_binary("replica"))
            .env("REPLICA_PG", conninfo)
            .env("REPLICA_TOKEN", TOKEN)
            .env("REPLICA_LEASE_MS", "1500")
            .env("REPLICA_DIR", dir),
        "the replica",
    )
}

fn marks(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("started-"))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicas_turn_is_finished_by_the_other_and_the_stream_goes_on() {
    let cluster = agentkit_testkit::pg::TempCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let mut a = replica(&cluster.conninfo(), dir.path());
    let b = replica(&cluster.conninfo(), dir.path());
    let http = support::http_client();

    let input = json!({ "threadId": "t1", "runId": "run-1",
        "messages": [{ "id": "u1", "role": "user", "content": "run the job" }] });
    let response = http
        .post(format!("{}/agui", a.url()))
        .bearer_auth(TOKEN)
        .json(&input)
        .send()
        .await
        .unwrap();
    let mut events = Events::new(response);
    let call = events.until("TOOL_CALL_END").await.data["toolCallId"].clone();
    let deadline = Instant::now() + PATIENCE;
    while marks(dir.path()).is_empty() {
        assert!(Instant::now() < deadline, "the job never started on A");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A request for A's session that lands on B is served: B forwards it
    // to A (the lease names A's URL), A queues the message on its run.
    let forwarded = http
        .post(format!("{}/sessions/t1/messages", b.url()))
        .bearer_auth(TOKEN)
        .json(&json!({ "text": "hurry" }))
        .send()
        .await
        .unwrap();
    assert!(
        forwarded.status().is_success(),
        "{}: {}",
        forwarded.status(),
        forwarded.text().await.unwrap()
    );
    assert!(
        forwarded.headers().get("x-agentkit-holder").is_none(),
        "the holder's address stays between the replicas"
    );
    // Reading the session's events through B streams A's run (the same
    // events, the same ids), never a second run of it.
    let through_b = http
        .get(format!("{}/sessions/t1/events", b.url()))
        .bearer_auth(TOKEN)
        .header("last-event-id", "0")
        .send()
        .await
        .unwrap();
    assert_eq!(through_b.status(), 200);
    let mut mirrored = Events::new(through_b);
    let started = mirrored.until("RUN_STARTED").await;
    assert_eq!(started.data["runId"], "run-1");
    assert_eq!(marks(dir.path()).len(), 1, "the job ran once");
    drop(mirrored);

    a.kill();
    let last = events.seen.last().unwrap().id.unwrap();

    // The client reconnects to B, retrying until A's lease expired.
    let deadline = Instant::now() + PATIENCE;
    let resumed = loop {
        let response = http
            .get(format!("{}/sessions/t1/events", b.url()))
            .bearer_auth(TOKEN)
            .header("last-event-id", last.to_string())
            .send()
            .await
            .unwrap();
        if response.status() == 503 {
            assert!(Instant::now() < deadline, "B never took the session over");
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        break response;
    };
    let mut rest = Events::new(resumed);
    let finished = rest.until("RUN_FINISHED").await;
    assert_eq!(finished.data["runId"], "run-1", "the same run goes on");
    assert_eq!(finished.data["outcome"]["type"], "success");
    assert_eq!(
        rest.seen[0].id,
        Some(last + 1),
        "no event missed or repeated"
    );
    let result = rest.until_seen("TOOL_CALL_RESULT");
    assert_eq!(result["toolCallId"], call);
    assert!(
        result["content"].as_str().unwrap().contains("interrupted"),
        "{result}"
    );
    let text: String = rest
        .of("TEXT_MESSAGE_CONTENT")
        .iter()
        .map(|e| e.data["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The job is done.");

    // The job ran once, on A; the transcript is whole.
    assert_eq!(marks(dir.path()).len(), 1, "{:?}", marks(dir.path()));
    let session: serde_json::Value = http
        .get(format!("{}/sessions/t1", b.url()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let roles: Vec<&str> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
}
