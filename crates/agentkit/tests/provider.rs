//! The provider picked at run time: each configuration from the
//! environment drives a real agent through its real adapter against a local
//! server speaking that provider's wire format.

use agentkit::agent::{
    Agent, LoopStep, ModelAdapter, ModelSession, ModelTurn, ModelTurnEvent, OutputSchema,
    SessionConfig, TranscriptView, TurnRequest,
};
use agentkit::core::{DeltaFolder, FinishReason, Item, ItemKind, TurnId};
use agentkit::provider::{ProviderConfig, ProviderKind, parse_structured_items};
use agentkit_http::testing::{ScriptedResponse, TestServer};
use std::time::Duration;

fn fixture(crate_name: &str, name: &str) -> String {
    let path = format!(
        "{}/../{crate_name}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn lookup(vars: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
    move |name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    }
}

async fn answer(config: ProviderConfig) -> (String, FinishReason) {
    let model = config.build().expect("the adapter builds");
    let agent = Agent::builder()
        .model(model)
        .input(vec![Item::user("Salut ?")])
        .build()
        .unwrap();
    let run = async {
        let mut driver = agent.start(SessionConfig::new("dyn")).await.unwrap();
        match driver.next().await.unwrap() {
            LoopStep::Finished(result) => {
                let text = result
                    .items
                    .iter()
                    .filter(|i| i.kind == ItemKind::Assistant)
                    .map(Item::text_content)
                    .collect();
                (text, result.finish_reason)
            }
            other => panic!("unexpected step {other:?}"),
        }
    };
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("in time")
}

#[tokio::test]
async fn every_configured_provider_answers_through_one_model_type() {
    let cases = [
        (
            "agentkit-provider-openai",
            "text.sse",
            "/v1/chat/completions",
            ProviderKind::Compatible,
            vec![("AGENTKIT_MODEL", "local-model".to_owned())],
            "Bonjour le monde 🌍, ça va ?",
        ),
        (
            "agentkit-provider-openai",
            "responses/text.sse",
            "/v1/responses",
            ProviderKind::OpenAi,
            vec![("OPENAI_API_KEY", "sk-test".to_owned())],
            "Bonjour le monde 🌍, ça va ?",
        ),
        (
            "agentkit-provider-anthropic",
            "text.sse",
            "/v1/messages",
            ProviderKind::Anthropic,
            vec![
                ("AGENTKIT_PROVIDER", "anthropic".to_owned()),
                ("ANTHROPIC_API_KEY", "sk-ant-test".to_owned()),
            ],
            "",
        ),
    ];
    for (crate_name, file, path, kind, mut vars, expected) in cases {
        let server = TestServer::start([ScriptedResponse::sse(fixture(crate_name, file))])
            .await
            .unwrap();
        let url_var = if kind == ProviderKind::Anthropic {
            "ANTHROPIC_BASE_URL"
        } else {
            "OPENAI_BASE_URL"
        };
        vars.push((url_var, format!("{}/v1", server.url())));
        if kind == ProviderKind::OpenAi {
            vars.push(("AGENTKIT_PROVIDER", "openai".to_owned()));
        }
        let config = ProviderConfig::from_lookup(lookup(vars)).unwrap();
        assert_eq!(config.kind, kind);
        let (text, reason) = answer(config).await;
        assert_eq!(reason, FinishReason::Completed, "{kind}");
        if expected.is_empty() {
            assert!(!text.is_empty(), "{kind}: an answer");
        } else {
            assert_eq!(text, expected, "{kind}");
        }
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{kind}");
        assert_eq!(requests[0].path, path, "{kind}");
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
/// A place on a map.
struct Place {
    city: String,
    country: String,
}

#[tokio::test]
async fn a_structured_answer_is_parsed_into_the_type() {
    let server = TestServer::start([ScriptedResponse::sse(fixture(
        "agentkit-provider-anthropic",
        "structured.sse",
    ))])
    .await
    .unwrap();
    let config = ProviderConfig::from_lookup(lookup(vec![
        ("ANTHROPIC_API_KEY", "sk-ant-test".to_owned()),
        ("ANTHROPIC_BASE_URL", format!("{}/v1", server.url())),
    ]))
    .unwrap();
    let model = config.build().unwrap();
    let schema: OutputSchema = agentkit::provider::output_schema_for::<Place>("place");
    assert_eq!(
        schema.schema["required"],
        serde_json::json!(["city", "country"])
    );
    assert_eq!(schema.description.as_deref(), Some("A place on a map."));
    let mut session = model.start_session(SessionConfig::new("s")).await.unwrap();
    let request = TurnRequest::new(
        "s",
        TurnId::new("turn-1"),
        TranscriptView::from_items(vec![Item::user("Where is CERN?")]),
    )
    .with_output_schema(schema);
    let mut turn = session.begin_turn(request, None).await.unwrap();
    let mut folder = DeltaFolder::new();
    while let Some(event) = turn.next_event().await.unwrap() {
        if let ModelTurnEvent::Delta(delta) = event {
            folder.apply(&delta).unwrap();
        }
    }
    let answer = Item::new(ItemKind::Assistant, folder.finish().unwrap());
    let place: Place = parse_structured_items(&[answer]).unwrap();
    assert_eq!(
        place,
        Place {
            city: "Genève".into(),
            country: "CH".into()
        }
    );
    let sent = server.requests()[0].json();
    assert_eq!(sent["tool_choice"]["name"], "place");
}

/// An account out of credit, as each provider reports it, reaches the loop
/// as `QuotaExceeded` with the status kept, and is asked once: the HTTP
/// layer's retry policy (three attempts by default) does not send the same
/// request from the same account again.
#[tokio::test]
async fn an_account_out_of_credit_reaches_the_loop_as_quota_exceeded_and_is_not_retried() {
    use agentkit::agent::{LoopError, ModelErrorKind};
    let openai = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let cases = [
        (
            vec![("AGENTKIT_MODEL", "local-model".to_owned())],
            "OPENAI_BASE_URL",
            402,
            r#"{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}"#,
        ),
        (
            vec![
                ("AGENTKIT_PROVIDER", "openai".to_owned()),
                ("OPENAI_API_KEY", "sk-test".to_owned()),
            ],
            "OPENAI_BASE_URL",
            429,
            openai,
        ),
        (
            vec![
                ("AGENTKIT_PROVIDER", "anthropic".to_owned()),
                ("ANTHROPIC_API_KEY", "sk-ant-test".to_owned()),
            ],
            "ANTHROPIC_BASE_URL",
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}"#,
        ),
        (
            vec![
                ("AGENTKIT_PROVIDER", "gemini".to_owned()),
                ("GEMINI_API_KEY", "g-test".to_owned()),
            ],
            "GEMINI_BASE_URL",
            402,
            r#"{"error":{"code":402,"message":"billing account disabled"}}"#,
        ),
    ];
    for (mut vars, url_var, status, body) in cases {
        let refused = || ScriptedResponse::json(status, body);
        let server = TestServer::start([refused(), refused(), refused()])
            .await
            .unwrap();
        vars.push((url_var, format!("{}/v1", server.url())));
        let config = ProviderConfig::from_lookup(lookup(vars)).unwrap();
        let kind = config.kind;
        let agent = Agent::builder()
            .model(config.build().expect("the adapter builds"))
            .input(vec![Item::user("Salut ?")])
            .build()
            .unwrap();
        let mut driver = agent.start(SessionConfig::new("quota")).await.unwrap();
        let step = tokio::time::timeout(Duration::from_secs(20), driver.next())
            .await
            .expect("in time");
        match step {
            Err(LoopError::Model(error)) => {
                assert_eq!(error.kind, ModelErrorKind::QuotaExceeded, "{kind}: {error}");
                assert_eq!(error.status, Some(status), "{kind}");
                assert!(!error.is_retryable(), "{kind}");
            }
            other => panic!("{kind}: expected a model error, got {other:?}"),
        }
        assert_eq!(server.requests().len(), 1, "{kind}: asked once");
    }
}
