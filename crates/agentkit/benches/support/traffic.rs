//! Traffic shared by the benchmarks of this crate: a long coding session's
//! history, so every scenario loads, encodes and sends the same realistic
//! items (prose with quotes and non-ASCII, tool calls with JSON inputs,
//! code in tool results), and the adapter sessions that encode them.

// Each benchmark uses a part of this module.
#![allow(dead_code)]

use agentkit::agent::{ModelAdapter, SessionConfig, TranscriptView, TurnRequest};
use agentkit::anthropic::{AnthropicAdapter, AnthropicConfig};
use agentkit::core::{Item, ItemKind, Part, ToolCallPart, ToolResultPart, TurnId};
use agentkit::openai::{OpenAiAdapter, OpenAiConfig, ResponsesAdapter};
use agentkit::tools::ToolSpec;
use serde_json::json;
use std::sync::Arc;

/// `pairs` answered calls after a system prompt: a long coding session.
pub fn history(pairs: usize) -> Vec<Item> {
    let mut items = Vec::with_capacity(pairs * 2 + 2);
    items.push(Item::system("You are a careful coding agent."));
    items.push(Item::user("Fix the failing test in src/lib.rs, please."));
    items.extend((0..pairs).flat_map(round));
    items
}

/// The two items of call number `i`: the model's call and its result.
pub fn round(i: usize) -> [Item; 2] {
    let id = format!("call_{i:08}");
    [
        Item::new(
            ItemKind::Assistant,
            vec![
                Part::text("Let me look at the next file \u{2014} \"carefully\"."),
                Part::ToolCall(ToolCallPart::new(
                    id.clone(),
                    "fs_read",
                    json!({ "path": format!("src/module_{i}.rs"), "limit": 200 }),
                )),
            ],
        ),
        Item::tool_result(ToolResultPart::success(
            id,
            format!("fn f{i}() {{\n    println!(\"{i}\");\n}}\n"),
        )),
    ]
}

/// A provider wire format.
#[derive(Clone, Copy, Debug)]
pub enum Wire {
    Chat,
    Responses,
    Anthropic,
}

/// An adapter session of one wire.
pub enum BodySession {
    Chat(<OpenAiAdapter as ModelAdapter>::Session),
    Responses(<ResponsesAdapter as ModelAdapter>::Session),
    Anthropic(<AnthropicAdapter as ModelAdapter>::Session),
}

impl BodySession {
    /// A session of `wire` whose requests go to `url` (`/v1` appended).
    pub async fn open(wire: Wire, url: &str) -> Self {
        let config = SessionConfig::new("request");
        let base = format!("{url}/v1");
        match wire {
            Wire::Chat => Self::Chat(
                OpenAiAdapter::new(OpenAiConfig::compatible(base, "gpt-bench"))
                    .expect("an adapter")
                    .start_session(config)
                    .await
                    .expect("a session"),
            ),
            Wire::Responses => Self::Responses(
                ResponsesAdapter::new(OpenAiConfig::compatible(base, "gpt-bench"))
                    .expect("an adapter")
                    .start_session(config)
                    .await
                    .expect("a session"),
            ),
            Wire::Anthropic => Self::Anthropic(
                AnthropicAdapter::new(
                    AnthropicConfig::new("key", "claude-bench").with_base_url(base),
                )
                .expect("an adapter")
                .start_session(config)
                .await
                .expect("a session"),
            ),
        }
    }

    /// The body `begin_turn` would send, built in-process.
    pub fn body(&mut self, request: &TurnRequest) -> Vec<u8> {
        match self {
            Self::Chat(session) => session.request_body(request),
            Self::Responses(session) => session.request_body(request),
            Self::Anthropic(session) => session.request_body(request),
        }
    }
}

/// A request for turn `turn` over `view`, offering one tool.
pub fn request(turn: usize, view: TranscriptView) -> TurnRequest {
    let mut request = TurnRequest::new("request", TurnId::new(format!("turn-{turn}")), view);
    request.available_tools = vec![Arc::new(
        ToolSpec::new(
            "fs_read",
            "Reads a file.",
            json!({ "type": "object", "properties": { "path": { "type": "string" } } }),
        )
        .expect("a valid spec"),
    )]
    .into();
    request
}
