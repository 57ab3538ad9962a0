//! The server over real HTTP on 127.0.0.1 with a SQLite file: AG-UI runs,
//! approvals through interrupts and `resume`, messages typed during a run,
//! cancel, list and load, `Last-Event-ID`, and tenant isolation written as
//! the attacks.

mod support;

use agentkit_core::FinishReason;
use agentkit_testkit::ScriptedTurn;
use serde_json::json;
use std::sync::atomic::Ordering;
use support::{Events, TOKEN_A, TOKEN_B, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_streams_agui_events_and_the_session_is_kept() {
    let server = start(vec![
        ScriptedTurn::new()
            .say_chunks(&["Hel", "lo!"])
            .finish(FinishReason::Completed),
    ])
    .await;
    let mut events = server.say(TOKEN_A, "t1", "run-1", "hi").await;
    events.rest().await;
    assert_eq!(
        events.types(),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    let started = &events.seen[0].data;
    assert_eq!(
        (started["threadId"].as_str(), started["runId"].as_str()),
        (Some("t1"), Some("run-1"))
    );
    let finished = &events.seen[5].data;
    assert_eq!(finished["runId"], "run-1");
    assert_eq!(finished["outcome"]["type"], "success");
    let text: String = events
        .of("TEXT_MESSAGE_CONTENT")
        .iter()
        .map(|e| e.data["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello!");
    let ids: Vec<u64> = events.seen.iter().map(|e| e.id.unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids ascend: {ids:?}");

    let listed: serde_json::Value = server.get_json(TOKEN_A, "/sessions").await;
    assert_eq!(listed["sessions"][0]["threadId"], "t1");
    assert_eq!(listed["sessions"][0]["title"], "hi");
    let loaded: serde_json::Value = server.get_json(TOKEN_A, "/sessions/t1").await;
    let messages = loaded["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        (
            messages[0]["role"].as_str(),
            messages[0]["content"].as_str()
        ),
        (Some("user"), Some("hi"))
    );
    assert_eq!(
        (
            messages[1]["role"].as_str(),
            messages[1]["content"].as_str()
        ),
        (Some("assistant"), Some("Hello!"))
    );
    assert_eq!(loaded["running"], false);

    // The client resends the whole conversation: only the new message counts.
    server.model.push_turns([ScriptedTurn::text("Again.")]);
    let history = json!({ "messages": [
        { "id": "run-1-user", "role": "user", "content": "hi" },
        { "id": "a1", "role": "assistant", "content": "Hello!" },
        { "id": "u2", "role": "user", "content": "once more" },
    ]});
    Events::new(server.run(TOKEN_A, "t1", "run-2", history).await)
        .rest()
        .await;
    let loaded: serde_json::Value = server.get_json(TOKEN_A, "/sessions/t1").await;
    let texts = support::contents(&loaded);
    assert_eq!(texts, ["hi", "Hello!", "once more", "Again."]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenant_gets_404_and_no_token_gets_401() {
    let server = start(vec![
        ScriptedTurn::text("A's secret plan."),
        ScriptedTurn::text("B's own."),
    ])
    .await;
    server
        .say(TOKEN_A, "t1", "run-1", "plan")
        .await
        .rest()
        .await;

    // Tenant B asks for A's session every way the API allows.
    let attacks = [
        ("GET", "/sessions/t1", json!(null)),
        ("GET", "/sessions/t1/events", json!(null)),
        (
            "POST",
            "/sessions/t1/messages",
            json!({ "text": "leak it" }),
        ),
        ("POST", "/sessions/t1/cancel", json!({})),
        ("GET", "/sessions/a~t1", json!(null)),
        ("GET", "/sessions/..%2Fa~t1", json!(null)),
    ];
    for (method, path, body) in &attacks {
        let response = if *method == "GET" {
            server.get(TOKEN_B, path).await
        } else {
            server.post(TOKEN_B, path, body.clone()).await
        };
        let status = response.status().as_u16();
        assert!(
            status == 404 || status == 400,
            "{method} {path} answered {status}"
        );
        assert!(
            !response.text().await.unwrap().contains("secret"),
            "{method} {path} leaked"
        );
    }
    let listed: serde_json::Value = server.get_json(TOKEN_B, "/sessions").await;
    assert_eq!(listed["sessions"], json!([]));

    // B's thread of the same name is B's own session: A's is untouched.
    let mut b = server.say(TOKEN_B, "t1", "run-b", "mine").await;
    b.rest().await;
    let a: serde_json::Value = server.get_json(TOKEN_A, "/sessions/t1").await;
    let texts = support::contents(&a);
    assert_eq!(texts, ["plan", "A's secret plan."]);

    // No token, a wrong token, another scheme: 401 on every route.
    for auth in [None, Some("Bearer nope"), Some("Basic token-of-tenant-a")] {
        let mut request = server.http.get(format!("{}/sessions", server.url));
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        assert_eq!(request.send().await.unwrap().status(), 401, "{auth:?}");
    }
    let anonymous = server
        .http
        .post(format!("{}/agui", server.url))
        .json(&json!({ "threadId": "t9", "runId": "r", "messages": [] }))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_ends_the_run_with_an_interrupt_and_resume_answers_it() {
    let server = start(vec![
        ScriptedTurn::tool_call("call-1", "deploy", json!({})),
        ScriptedTurn::text("The site is live."),
        ScriptedTurn::tool_call("call-2", "deploy", json!({})),
        ScriptedTurn::text("Not deploying."),
    ])
    .await;
    let mut first = server.say(TOKEN_A, "t1", "run-1", "deploy").await;
    first.rest().await;
    assert_eq!(
        first.types(),
        [
            "RUN_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "RUN_FINISHED"
        ]
    );
    let outcome = &first.seen[4].data["outcome"];
    assert_eq!(outcome["type"], "interrupt");
    assert_eq!(outcome["interrupts"][0]["toolCallId"], "call-1");
    assert_eq!(outcome["interrupts"][0]["id"], "call-1");
    assert_eq!(server.deploy.runs.load(Ordering::SeqCst), 0);

    let loaded: serde_json::Value = server.get_json(TOKEN_A, "/sessions/t1").await;
    assert_eq!(loaded["pendingApprovals"][0]["toolCallId"], "call-1");

    // A new message without an answer, and answers to nothing, are refused.
    let refused = server
        .say_status(
            TOKEN_A,
            "t1",
            json!({ "messages": [{ "id": "x", "role": "user", "content": "?" }] }),
        )
        .await;
    assert_eq!(refused, 409);
    let wrong = server
        .say_status(
            TOKEN_A,
            "t1",
            json!({ "resume": [{ "interruptId": "call-9", "status": "resolved" }] }),
        )
        .await;
    assert_eq!(wrong, 409);
    let malformed = server.say_status(TOKEN_A, "t1", json!({ "resume": [{ "interruptId": "call-1", "status": "resolved", "payload": { "approved": "yes" } }] })).await;
    assert_eq!(malformed, 400);

    let approve = json!({ "resume": [{ "interruptId": "call-1", "status": "resolved", "payload": { "approved": true } }] });
    let mut second = Events::new(server.run(TOKEN_A, "t1", "run-2", approve).await);
    second.rest().await;
    let result = second.until_seen("TOOL_CALL_RESULT");
    assert_eq!(
        (result["toolCallId"].as_str(), result["content"].as_str()),
        (Some("call-1"), Some("deployed"))
    );
    assert_eq!(
        second.seen.last().unwrap().data["outcome"]["type"],
        "success"
    );
    assert_eq!(second.seen[0].data["runId"], "run-2");
    assert_eq!(server.deploy.runs.load(Ordering::SeqCst), 1);

    // Denied: the model reads the reason; the tool does not run.
    server
        .say(TOKEN_A, "t1", "run-3", "deploy again")
        .await
        .rest()
        .await;
    let deny = json!({ "resume": [{ "interruptId": "call-2", "status": "resolved", "payload": { "approved": false, "reason": "not on a Friday" } }] });
    let mut denied = Events::new(server.run(TOKEN_A, "t1", "run-4", deny).await);
    denied.rest().await;
    assert!(
        denied.until_seen("TOOL_CALL_RESULT")["content"]
            .as_str()
            .unwrap()
            .contains("not on a Friday")
    );
    assert_eq!(server.deploy.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_typed_during_a_run_are_queued_then_delivered() {
    let server = start(vec![
        ScriptedTurn::tool_call("call-1", "wait", json!({})),
        ScriptedTurn::text("Done, and noted."),
    ])
    .await;
    let mut events = server.say(TOKEN_A, "t1", "run-1", "wait for it").await;
    events.until("TOOL_CALL_END").await; // the tool runs now
    let queued = server
        .post(
            TOKEN_A,
            "/sessions/t1/messages",
            json!({ "text": "also tell me the time" }),
        )
        .await;
    assert_eq!(queued.status(), 202);
    let queued: serde_json::Value = queued.json().await.unwrap();
    assert_eq!(queued["queued"], true);
    let loaded: serde_json::Value = server.get_json(TOKEN_A, "/sessions/t1").await;
    assert_eq!(loaded["queued"][0]["text"], "also tell me the time");
    assert_eq!(loaded["running"], true);
    let bad = server
        .post(
            TOKEN_A,
            "/sessions/t1/messages",
            json!({ "text": "x", "delivery": "shout" }),
        )
        .await;
    assert_eq!(bad.status(), 400);

    server.gate.open();
    events.rest().await;
    let types = events.types();
    let queued_at = types.iter().position(|t| *t == "CUSTOM").unwrap();
    assert_eq!(
        events.seen[queued_at].data["name"],
        "agentkit.message_queued"
    );
    let delivered = events
        .of("CUSTOM")
        .into_iter()
        .find(|e| e.data["name"] == "agentkit.messages_delivered")
        .expect("delivered");
    assert_eq!(delivered.data["value"]["text"], "also tell me the time");
    assert_eq!(*types.last().unwrap(), "RUN_FINISHED");
    // The model's second call saw the tool result, then the message.
    let seen = server.model.requests()[1].transcript.read().to_vec();
    assert_eq!(seen.last().unwrap().text_content(), "also tell me the time");

    // While idle, a message starts a run of its own.
    server.model.push_turns([ScriptedTurn::text("Noon.")]);
    let mut all = Events::new(
        server
            .get_stream(
                TOKEN_A,
                "/sessions/t1/events",
                events.seen.last().unwrap().id,
            )
            .await,
    );
    let started = server
        .post(TOKEN_A, "/sessions/t1/messages", json!({ "text": "time?" }))
        .await;
    let started: serde_json::Value = started.json().await.unwrap();
    assert_eq!(started["queued"], false);
    let run_started = all.until("RUN_STARTED").await;
    assert_eq!(run_started.data["runId"], started["runId"]);
    all.until("RUN_FINISHED").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_the_run_and_the_transcript_stays_valid() {
    let server = start(vec![
        ScriptedTurn::tool_call("call-1", "wait", json!({})),
        ScriptedTurn::tool_call("call-2", "deploy", json!({})),
        ScriptedTurn::text("After the cancel."),
    ])
    .await;
    let mut events = server.say(TOKEN_A, "t1", "run-1", "wait").await;
    events.until("TOOL_CALL_END").await;
    assert_eq!(
        server
            .post(TOKEN_A, "/sessions/t1/cancel", json!({}))
            .await
            .status(),
        202
    );
    events.rest().await;
    let finished = events.seen.last().unwrap();
    assert_eq!(
        (finished.kind(), finished.data["outcome"]["type"].as_str()),
        ("RUN_FINISHED", Some("cancelled"))
    );
    let result = events.until_seen("TOOL_CALL_RESULT");
    assert_eq!(result["toolCallId"], "call-1");

    // Cancelling an approval wait abandons the turn: the call is answered.
    server
        .say(TOKEN_A, "t1", "run-2", "deploy")
        .await
        .rest()
        .await;
    let mut all = Events::new(
        server
            .get_stream(TOKEN_A, "/sessions/t1/events", None)
            .await,
    );
    assert_eq!(
        server
            .post(TOKEN_A, "/sessions/t1/cancel", json!({}))
            .await
            .status(),
        202
    );
    let custom = all.until("CUSTOM").await;
    if custom.data["name"] != "agentkit.turn_cancelled" {
        all.until("RUN_FINISHED").await;
    }
    let loaded = loop {
        let loaded: serde_json::Value = server.get_json(TOKEN_A, "/sessions/t1").await;
        if loaded["pendingApprovals"] == json!([]) {
            break loaded;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let tools: Vec<&str> = loaded["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["call-1", "call-2"], "every call answered once");
    assert_eq!(server.deploy.runs.load(Ordering::SeqCst), 0);

    // The session goes on.
    let mut next = server.say(TOKEN_A, "t1", "run-3", "hello").await;
    next.rest().await;
    assert_eq!(next.seen.last().unwrap().data["outcome"]["type"], "success");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnecting_with_last_event_id_replays_what_was_missed() {
    let server = start(vec![
        ScriptedTurn::new()
            .say_chunks(&["a", "b", "c"])
            .finish(FinishReason::Completed),
    ])
    .await;
    let mut run = server.say(TOKEN_A, "t1", "run-1", "go").await;
    run.rest().await;
    let all = run.seen.clone();
    let cut = all[2].id.unwrap();
    let mut replay = Events::new(
        server
            .get_stream(TOKEN_A, "/sessions/t1/events", Some(cut))
            .await,
    );
    for expected in &all[3..] {
        let got = replay.next().await.unwrap();
        assert_eq!((got.id, &got.data), (expected.id, &expected.data));
    }
    let bad = server
        .http
        .get(format!("{}/sessions/t1/events", server.url))
        .bearer_auth(TOKEN_A)
        .header("last-event-id", "yesterday")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_stored_so_another_server_replays_them() {
    let first = start(vec![
        ScriptedTurn::new()
            .say_chunks(&["x", "y", "z"])
            .finish(FinishReason::Completed),
    ])
    .await;
    let mut run = first.say(TOKEN_A, "t1", "run-1", "go").await;
    run.rest().await;
    let streamed = run.seen.clone();
    let dir = first.stop().await;

    // Another process on the same database: the client reconnects there.
    let second = support::start_in(dir, vec![ScriptedTurn::text("Later.")]).await;
    let cut = streamed[1].id.unwrap();
    let mut replay = Events::new(
        second
            .get_stream(TOKEN_A, "/sessions/t1/events", Some(cut))
            .await,
    );
    for expected in &streamed[2..] {
        let got = replay.next().await.unwrap();
        assert_eq!((got.id, &got.data), (expected.id, &expected.data));
    }
    // New events continue the numbering.
    let mut next = second.say(TOKEN_A, "t1", "run-2", "again").await;
    next.rest().await;
    assert_eq!(
        next.seen[0].id,
        Some(streamed.last().unwrap().id.unwrap() + 1)
    );
    assert_eq!(replay.until("RUN_FINISHED").await.data["runId"], "run-2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resting_session_is_released_so_another_server_serves_it() {
    let first = support::start_with(
        std::sync::Arc::new(tempfile::tempdir().unwrap()),
        vec![ScriptedTurn::text("Hi.")],
        |builder| builder.idle_release(std::time::Duration::from_millis(200)),
    )
    .await;
    let mut run = first.say(TOKEN_A, "t1", "run-1", "hello").await;
    run.rest().await;
    // The first server's event stream ends when it lets the session go.
    let mut stream = Events::new(first.get_stream(TOKEN_A, "/sessions/t1/events", None).await);
    while stream.next().await.is_some() {}
    assert_eq!(stream.seen.len(), run.seen.len());

    // Both servers run, on one database: the second serves the session.
    let second = support::start_in(first.dir.clone(), vec![ScriptedTurn::text("Again.")]).await;
    let mut next = second.say(TOKEN_A, "t1", "run-2", "again").await;
    next.rest().await;
    assert_eq!(next.seen.last().unwrap().data["outcome"]["type"], "success");
    let loaded = second.get_json(TOKEN_A, "/sessions/t1").await;
    assert_eq!(
        support::contents(&loaded),
        ["hello", "Hi.", "again", "Again."]
    );
}

/// A request that reaches a server after its shutdown (or while it drains)
/// is refused and leaves no session hosted: the lease goes back at once, so
/// another replica can take the session without waiting for it to expire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_shutdown_a_run_is_refused_and_holds_no_lease() {
    use agentkit_core::SessionId;
    use agentkit_store::{SessionStore, SqliteStore};
    let server = start(vec![ScriptedTurn::text("never sent")]).await;
    server.server.shutdown().await;
    let body = json!({ "messages": [{ "id": "u1", "role": "user", "content": "hi" }] });
    assert_eq!(server.say_status(TOKEN_A, "t1", body).await, 503);
    let store = SqliteStore::open(server.dir.path().join("sessions.db")).unwrap();
    store
        .acquire(&SessionId::new("a~t1"), std::time::Duration::from_secs(5))
        .await
        .expect("no replica holds the session");
    assert!(server.model.requests().is_empty(), "nothing ran");
}
