//! One session as a client sees it: `POST /agui` to its home replica, the
//! event stream followed to `RUN_FINISHED`, and when the stream breaks (its
//! replica died), a reconnect to another replica with `Last-Event-ID`,
//! retried while the dead replica's lease has not expired (503).

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const TOKEN: &str = "token-of-acme";

/// How long a session may take before it counts as lost: generous, a
/// loaded 2-core machine is slow, never this slow.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// What one session saw.
#[derive(Debug, Default)]
pub struct Outcome {
    /// From sending the run to its first event.
    pub first_event: Option<Duration>,
    /// From sending the run to its first text delta.
    pub first_delta: Option<Duration>,
    /// Streams opened after the first broke.
    pub reconnects: u32,
    /// `RUN_FINISHED` with a success outcome arrived.
    pub finished: bool,
    /// Why not, if not.
    pub error: Option<String>,
}

/// Why a stream stopped before `RUN_FINISHED`.
enum Broken {
    /// The replica went away (connection refused, reset, cut stream) or
    /// cannot serve the session yet (503): try another.
    Retry(String),
    /// The run failed for good.
    Fatal(String),
}

/// Runs session `thread` against `replicas`, starting with `home`.
pub async fn session(
    http: reqwest::Client,
    replicas: Arc<Vec<String>>,
    home: usize,
    thread: String,
) -> Outcome {
    let mut outcome = Outcome::default();
    let started = Instant::now();
    let mut last: Option<u64> = None;
    let mut target = home;
    let mut posted = false;
    loop {
        let url = &replicas[target % replicas.len()];
        let response = if posted {
            let mut request = http
                .get(format!("{url}/sessions/{thread}/events"))
                .bearer_auth(TOKEN);
            request = request.header("last-event-id", last.unwrap_or(0).to_string());
            request.send().await
        } else {
            let input = json!({ "threadId": thread, "runId": "run-1",
                "messages": [{ "id": "u1", "role": "user", "content": "run the job" }] });
            http.post(format!("{url}/agui"))
                .bearer_auth(TOKEN)
                .header("accept", "text/event-stream")
                .json(&input)
                .send()
                .await
        };
        let result = match response {
            Err(err) => Err(Broken::Retry(format!("{url}: {err}"))),
            Ok(response) if response.status() == 404 && posted => {
                // The run request never reached the replica that died:
                // nothing of this session exists, send it again.
                posted = false;
                Err(Broken::Retry("not created yet".into()))
            }
            Ok(response) if response.status() == 503 => Err(Broken::Retry(format!("{url}: 503"))),
            Ok(response) if !response.status().is_success() => {
                let status = response.status();
                let body = response.text().await.unwrap_or_default();
                Err(Broken::Fatal(format!("{url}: {status}: {body}")))
            }
            Ok(response) => {
                posted = true;
                follow(response, started, &mut last, &mut outcome).await
            }
        };
        match result {
            Ok(()) => {
                outcome.finished = true;
                return outcome;
            }
            Err(Broken::Fatal(why)) => {
                outcome.error = Some(why);
                return outcome;
            }
            Err(Broken::Retry(why)) => {
                if started.elapsed() > PATIENCE {
                    outcome.error = Some(format!("gave up: {why}"));
                    return outcome;
                }
                // The stream or the connection broke: after a cut stream,
                // any replica can serve the session (once the lease of the
                // one that died expired); walk them in turn.
                outcome.reconnects += 1;
                target += 1;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }
}

/// Reads the event stream until `RUN_FINISHED` of `run-1`.
async fn follow(
    mut response: reqwest::Response,
    started: Instant,
    last: &mut Option<u64>,
    outcome: &mut Outcome,
) -> Result<(), Broken> {
    let mut buffer: Vec<u8> = Vec::new();
    loop {
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = buffer.drain(..end + 2).collect();
            let Some((id, data)) = parse(&block) else {
                continue;
            };
            if let Some(id) = id {
                *last = Some(id);
            }
            outcome.first_event.get_or_insert_with(|| started.elapsed());
            match data["type"].as_str() {
                Some("TEXT_MESSAGE_CONTENT") => {
                    outcome.first_delta.get_or_insert_with(|| started.elapsed());
                }
                Some("RUN_FINISHED") if data["runId"] == "run-1" => {
                    return if data["outcome"]["type"] == "success" {
                        Ok(())
                    } else {
                        Err(Broken::Fatal(format!("the run ended with {data}")))
                    };
                }
                Some("RUN_ERROR") => return Err(Broken::Fatal(format!("{data}"))),
                _ => {}
            }
        }
        match tokio::time::timeout(PATIENCE, response.chunk()).await {
            Err(_) => return Err(Broken::Fatal("the stream stalled".into())),
            Ok(Err(err)) => return Err(Broken::Retry(format!("the stream broke: {err}"))),
            Ok(Ok(None)) => return Err(Broken::Retry("the stream ended early".into())),
            Ok(Ok(Some(chunk))) => buffer.extend_from_slice(&chunk),
        }
    }
}

/// An event's id and data; `None` for a comment (keep-alive).
fn parse(block: &[u8]) -> Option<(Option<u64>, Value)> {
    let text = std::str::from_utf8(block).ok()?;
    let mut id = None;
    let mut data = String::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("id:") {
            id = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push_str(v.trim_start());
        }
    }
    if data.is_empty() {
        return None;
    }
    Some((id, serde_json::from_str(&data).ok()?))
}

/// The session's stored transcript through any live replica, checked:
/// user, assistant with one `job` call, its one answer, the final answer.
/// `Ok` is the call's id and whether the tool's run finished (not
/// interrupted by the replica's death).
pub async fn check_transcript(
    http: &reqwest::Client,
    replicas: &[String],
    thread: &str,
) -> Result<(String, bool), String> {
    let deadline = Instant::now() + PATIENCE;
    let mut target = 0;
    let session: Value = loop {
        let url = &replicas[target % replicas.len()];
        target += 1;
        let response = http
            .get(format!("{url}/sessions/{thread}"))
            .bearer_auth(TOKEN)
            .send()
            .await;
        match response {
            Ok(response) if response.status().is_success() => {
                break response.json().await.map_err(|e| e.to_string())?;
            }
            Ok(response) if response.status() != 503 => {
                return Err(format!("{url}: {}", response.status()));
            }
            _ if Instant::now() > deadline => {
                return Err(format!("{thread}: no replica serves it"));
            }
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    };
    let messages = session["messages"].as_array().cloned().unwrap_or_default();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    if roles != ["user", "assistant", "tool", "assistant"] {
        return Err(format!("{thread}: roles {roles:?}"));
    }
    let call = messages[1]["toolCalls"][0]["id"].as_str().unwrap_or("");
    if call.is_empty() || messages[2]["toolCallId"] != call {
        return Err(format!(
            "{thread}: the call and its answer differ: {messages:?}"
        ));
    }
    let result = messages[2]["content"].as_str().unwrap_or("");
    let ran = result == "finished";
    if !ran && !result.contains("interrupted") {
        return Err(format!("{thread}: tool result {result:?}"));
    }
    if messages[3]["content"] != "The job is done." {
        return Err(format!("{thread}: final answer {}", messages[3]["content"]));
    }
    Ok((call.to_owned(), ran))
}
