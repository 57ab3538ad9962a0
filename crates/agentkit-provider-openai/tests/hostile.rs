//! A hostile or broken server against a whole session: an answer that
//! grows without bound is cut at its cap with a typed error and the driver
//! goes on; a server that echoes the API key it was sent does not get it
//! into anything the session writes.

use agentkit_core::{Item, validate_transcript};
use agentkit_http::testing::{ScriptedResponse, TestServer};
use agentkit_http::{HttpConfig, RetryPolicy, SseLimits};
use agentkit_loop::{Agent, LoopDriver, LoopError, LoopStep, ModelErrorKind, SessionConfig};
use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One text chunk of a Chat Completions stream.
fn chunk(text: &str) -> String {
    format!(
        "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\
         \"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
    )
}

/// A complete short answer.
fn short_answer(text: &str) -> String {
    format!(
        "{}data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\
         \"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n",
        chunk(text)
    )
}

async fn driver_for(
    server: &TestServer,
    key: &str,
    http: HttpConfig,
) -> LoopDriver<<OpenAiAdapter as agentkit_loop::ModelAdapter>::Session> {
    let config = OpenAiConfig::compatible(format!("{}/v1", server.url()), "m")
        .with_api_key(key)
        .with_http(http);
    let agent = Agent::builder()
        .model(OpenAiAdapter::new(config).unwrap())
        .input(vec![Item::user("Say something.")])
        .build()
        .unwrap();
    agent.start(SessionConfig::new("hostile")).await.unwrap()
}

async fn next(
    driver: &mut LoopDriver<impl agentkit_loop::ModelSession>,
) -> Result<LoopStep, LoopError> {
    tokio::time::timeout(Duration::from_secs(30), driver.next())
        .await
        .expect("the step ended in time")
}

#[tokio::test]
async fn an_answer_past_its_cap_fails_typed_and_the_driver_goes_on() {
    // Rows: the byte cap and the part cap, each against an answer that
    // never ends on its own (a thousand chunks and no finish).
    for (row, limits) in [
        ("bytes", SseLimits::default().with_max_answer_bytes(20_000)),
        ("parts", SseLimits::default().with_max_answer_parts(100)),
    ] {
        let endless: String = (0..1000).map(|i| chunk(&format!("word{i} "))).collect();
        let server = TestServer::start([
            ScriptedResponse::sse(endless.into_bytes()).split_every(4096),
            ScriptedResponse::sse(short_answer("fine").into_bytes()),
        ])
        .await
        .unwrap();
        let http = HttpConfig::default()
            .with_retry(RetryPolicy::none())
            .with_sse_limits(limits);
        let mut driver = driver_for(&server, "sk-test-key", http).await;

        match next(&mut driver).await {
            Err(LoopError::Model(error)) => {
                assert_eq!(error.kind, ModelErrorKind::LimitExceeded, "{row}");
                assert!(
                    error.message.contains(&format!("max_answer_{row}")),
                    "{row}: {error}"
                );
            }
            other => panic!("{row}: expected LimitExceeded, got {other:?}"),
        }
        // Nothing of the cut answer is in the transcript, which is valid.
        let items = driver.transcript().to_vec();
        validate_transcript(&items).expect("valid transcript");
        assert!(
            !items.iter().any(|i| i.text_content().contains("word")),
            "{row}"
        );

        // The driver is usable: the same turn runs again and completes.
        match next(&mut driver).await.unwrap() {
            LoopStep::Finished(_) => {}
            other => panic!("{row}: {other:?}"),
        }
        let items = driver.transcript().to_vec();
        validate_transcript(&items).expect("valid transcript");
        assert_eq!(items.last().unwrap().text_content(), "fine", "{row}");
    }
}

/// Everything tracing records (span and event fields and messages), as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<String>>);

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl tracing::Subscriber for Captured {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut text = self.0.lock().unwrap();
        let _ = write!(text, "\nspan {}", span.metadata().name());
        span.record(&mut Fields(&mut text));
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut Fields(&mut self.0.lock().unwrap()));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut text = self.0.lock().unwrap();
        text.push_str("\nevent");
        event.record(&mut Fields(&mut text));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test(flavor = "current_thread")]
async fn a_key_the_server_echoes_appears_nowhere_the_session_writes() {
    const KEY: &str = "sk-planted-31337-abcdefghijklmnop";
    // Rows: each way a server hands the key back.
    let echoes = [
        ScriptedResponse::json(
            401,
            format!(
                r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
            ),
        ),
        ScriptedResponse::json(500, format!("upstream said: Bearer {KEY}")),
        ScriptedResponse::json(
            429,
            format!(r#"{{"error":{{"message":"slow down {KEY}"}}}}"#),
        ),
        // Inside the stream: an error event after a first delta ...
        ScriptedResponse::sse(format!(
            "{}data: {{\"error\":{{\"message\":\"Incorrect API key provided: {KEY}\",\"code\":\"invalid_api_key\"}}}}\n\n",
            chunk("Hel")
        )),
        // ... a named `error` event quoting the header ...
        ScriptedResponse::sse(format!(
            "event: error\ndata: {{\"error\":{{\"message\":\"bad header Bearer {KEY}\"}}}}\n\n"
        )),
        // ... and a plain JSON error sent with status 200.
        ScriptedResponse::json(
            200,
            format!(r#"{{"error":{{"message":"key {KEY} has no quota"}}}}"#),
        ),
    ];
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(captured.clone());
    let mut written = String::new();
    for echo in echoes {
        let server = TestServer::start([echo]).await.unwrap();
        let http = HttpConfig::default().with_retry(RetryPolicy::none());
        let mut driver = driver_for(&server, KEY, http).await;
        let error = next(&mut driver).await.unwrap_err();
        // The request did carry the key: the server saw it.
        let seen = server.requests()[0]
            .header("authorization")
            .unwrap()
            .to_owned();
        assert_eq!(seen, format!("Bearer {KEY}"));
        let _ = write!(written, "{error}\n{error:?}\n");
        let items = driver.transcript().to_vec();
        written.push_str(&serde_json::to_string(&items).unwrap());
        let _ = driver.abandon_turn("the provider refused the key");
        written.push_str(&serde_json::to_string(&driver.transcript().to_vec()).unwrap());
    }
    let traced = captured.0.lock().unwrap().clone();
    assert!(
        traced.contains("request failed"),
        "tracing captured nothing: {traced}"
    );
    for (what, text) in [("errors and transcripts", &written), ("tracing", &traced)] {
        assert!(!text.contains(KEY), "the key leaked into {what}: {text}");
        assert!(
            !text.contains("31337-abcdef"),
            "part of the key leaked into {what}"
        );
    }
    assert!(written.contains("<redacted>"), "{written}");
}
