//! The transcript as a Messages API request body.
//!
//! System and developer items that open the transcript go to the
//! top-level `system` field; one added later stays in place as user text,
//! so the conversation keeps its order and its cached prefix. The rest
//! alternate between `user` and `assistant` messages made of content blocks.
//! Consecutive items of the same role are merged into one message, which is
//! what puts the results of parallel tool calls into a single user message,
//! as the API requires. Reasoning goes back exactly as it came: a thinking
//! block with its signature unchanged, or the redacted block's opaque data;
//! reasoning without either (from another provider) cannot be verified by
//! Anthropic and is left out.
//!
//! Structured output is a tool whose input is the answer, with
//! `tool_choice` forcing it (extended thinking does not allow a forced
//! tool; the API then refuses the request).
//!
//! Prompt caching is explicit here: up to four `cache_control` breakpoints,
//! placed after the tools, the system prompt, or a transcript item, as the
//! [`PromptCacheRequest`] asks.

use crate::{AnthropicConfig, ToolChoice};
use agentkit_core::{
    DataRef, FilePart, Item, ItemKind, MediaPart, Modality, Part, ReasoningPart, ToolOutput,
    ToolResultPart,
};
use agentkit_loop::{
    CacheBreakpoint, PromptCacheMode, PromptCacheRequest, PromptCacheRetention,
    PromptCacheStrategy, TurnRequest,
};
use agentkit_tools_core::{SchemaDialect, normalize_for};
use serde_json::{Map, Value, json};

/// The API accepts at most this many `cache_control` breakpoints.
pub(crate) const MAX_BREAKPOINTS: usize = 4;

struct Message {
    role: &'static str,
    blocks: Vec<Value>,
}

/// Where an item's content ended up: `(message, block)` of its last block.
type Position = Option<(usize, usize)>;

/// Builds the JSON body for one streamed turn.
pub(crate) fn request_body(
    config: &AnthropicConfig,
    request: &TurnRequest,
    cache: Option<&PromptCacheRequest>,
) -> Value {
    let items = request.transcript.read();
    let mut system = Vec::new();
    let mut messages: Vec<Message> = Vec::new();
    let mut positions: Vec<Position> = Vec::with_capacity(items.len());
    for item in items.iter() {
        let instruction = matches!(item.kind, ItemKind::System | ItemKind::Developer);
        if instruction && messages.is_empty() {
            let text = joined_text(item);
            if !text.is_empty() {
                system.push(json!({ "type": "text", "text": text }));
            }
            positions.push(None);
            continue;
        }
        if instruction {
            // An instruction added mid session stays where it is, as user
            // text: moving it into `system` would reorder the conversation
            // and invalidate the prompt cache of everything after it.
            let text = joined_text(item);
            if !text.is_empty() {
                let tag = if item.kind == ItemKind::System {
                    "system"
                } else {
                    "developer"
                };
                let block = json!({ "type": "text", "text": format!("<{tag}>\n{text}\n</{tag}>") });
                push_blocks(&mut messages, "user", vec![block]);
            }
            positions.push(
                messages
                    .last()
                    .filter(|m| !m.blocks.is_empty())
                    .map(|m| (messages.len() - 1, m.blocks.len() - 1)),
            );
            continue;
        }
        for (role, blocks) in item_messages(item) {
            push_blocks(&mut messages, role, blocks);
        }
        positions.push(
            messages
                .last()
                .filter(|m| !m.blocks.is_empty())
                .map(|m| (messages.len() - 1, m.blocks.len() - 1)),
        );
    }
    drop(items);

    let mut tools: Vec<Value> = request
        .available_tools
        .iter()
        .map(|spec| {
            json!({
                "name": spec.name,
                "description": spec.description,
                // `$ref`s inlined, keywords Anthropic rejects removed.
                "input_schema": normalize_for(SchemaDialect::Anthropic, &spec.input_schema),
            })
        })
        .collect();
    if let Some(schema) = &request.output_schema {
        // Structured output: a tool whose input is the answer, forced.
        let description = schema.description.clone().unwrap_or_else(|| {
            "Give your final answer by calling this tool; its input is the answer.".to_owned()
        });
        tools.push(json!({
            "name": schema.name,
            "description": description,
            "input_schema": schema.schema,
        }));
    }

    if let Some(cache) = cache.filter(|c| c.mode != PromptCacheMode::Disabled) {
        let marker = cache_marker(cache.retention);
        let breakpoints = match &cache.strategy {
            PromptCacheStrategy::Explicit { breakpoints } => breakpoints.clone(),
            _ => vec![
                CacheBreakpoint::Tools,
                CacheBreakpoint::System,
                CacheBreakpoint::LastItem,
            ],
        };
        let mut placed = 0;
        for breakpoint in &breakpoints {
            if placed == MAX_BREAKPOINTS {
                tracing::debug!(
                    ?breakpoint,
                    "more than four cache breakpoints; the rest are dropped"
                );
                break;
            }
            let target = match breakpoint {
                CacheBreakpoint::Tools => tools.last_mut(),
                CacheBreakpoint::System => system.last_mut(),
                CacheBreakpoint::Item { index } => {
                    // An item that produced no block (a system item, an
                    // empty one) caches what precedes it.
                    let at = positions[..(*index + 1).min(positions.len())]
                        .iter()
                        .rev()
                        .find_map(|p| *p);
                    at.and_then(|(m, b)| cacheable_block(&mut messages[m].blocks, b))
                }
                CacheBreakpoint::LastItem => messages.last_mut().and_then(|m| {
                    let last = m.blocks.len().checked_sub(1)?;
                    cacheable_block(&mut m.blocks, last)
                }),
                _ => None,
            };
            if let Some(block) = target.filter(|b| b.get("cache_control").is_none()) {
                block["cache_control"] = marker.clone();
                placed += 1;
            }
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    body.insert("max_tokens".into(), json!(config.max_tokens));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let messages = messages
        .into_iter()
        .map(|m| json!({ "role": m.role, "content": m.blocks }))
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(std::mem::take(&mut tools)));
        if let Some(schema) = &request.output_schema {
            body.insert(
                "tool_choice".into(),
                tool_choice(&ToolChoice::Tool(schema.name.clone())),
            );
        } else if let Some(choice) = &config.tool_choice {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
    }
    if let Some(budget) = config.thinking_budget {
        body.insert(
            "thinking".into(),
            json!({ "type": "enabled", "budget_tokens": budget }),
        );
    }
    body.insert("stream".into(), json!(true));
    for (name, value) in &config.extra_body {
        body.insert(name.clone(), value.clone());
    }
    Value::Object(body)
}

fn cache_marker(retention: Option<PromptCacheRetention>) -> Value {
    match retention {
        Some(PromptCacheRetention::Long) => json!({ "type": "ephemeral", "ttl": "1h" }),
        _ => json!({ "type": "ephemeral" }),
    }
}

/// The block at `index`, or the nearest one before it that may carry
/// `cache_control` (thinking blocks may not).
fn cacheable_block(blocks: &mut [Value], index: usize) -> Option<&mut Value> {
    let at = (0..=index.min(blocks.len().checked_sub(1)?))
        .rev()
        .find(|&i| {
            !matches!(
                blocks[i]["type"].as_str(),
                Some("thinking" | "redacted_thinking")
            )
        })?;
    blocks.get_mut(at)
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Any => json!({ "type": "any" }),
        ToolChoice::None => json!({ "type": "none" }),
        ToolChoice::Tool(name) => json!({ "type": "tool", "name": name }),
        _ => json!({ "type": "auto" }),
    }
}

fn joined_text(item: &Item) -> String {
    item.parts
        .iter()
        .filter_map(Part::as_text)
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Appends blocks, merging into the previous message when the role repeats.
fn push_blocks(messages: &mut Vec<Message>, role: &'static str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    match messages.last_mut() {
        Some(last) if last.role == role => last.blocks.extend(blocks),
        _ => messages.push(Message { role, blocks }),
    }
}

/// One item as `(role, blocks)` pairs: usually one, two when an item mixes
/// tool results into a non-user item.
fn item_messages(item: &Item) -> Vec<(&'static str, Vec<Value>)> {
    let role = if item.kind == ItemKind::Assistant {
        "assistant"
    } else {
        "user"
    };
    let mut own = Vec::new();
    let mut results = Vec::new();
    for part in &item.parts {
        match part {
            Part::ToolResult(result) => results.push(tool_result(result)),
            Part::ToolCall(call) if role == "assistant" => own.push(json!({
                "type": "tool_use",
                "id": call.id.as_str(),
                "name": call.name,
                "input": call.input,
            })),
            Part::Reasoning(reasoning) if role == "assistant" => own.extend(thinking(reasoning)),
            other => own.extend(content_block(other)),
        }
    }
    // Tool results open the user message they belong to.
    if role == "user" {
        results.extend(own);
        vec![("user", results)]
    } else {
        vec![("assistant", own), ("user", results)]
    }
}

fn thinking(reasoning: &ReasoningPart) -> Option<Value> {
    if let Some(data) = &reasoning.encrypted {
        return Some(json!({ "type": "redacted_thinking", "data": data }));
    }
    let signature = reasoning.signature.as_ref()?;
    Some(json!({
        "type": "thinking",
        "thinking": reasoning.summary.clone().unwrap_or_default(),
        "signature": signature,
    }))
}

fn tool_result(result: &ToolResultPart) -> Value {
    let mut block = json!({ "type": "tool_result", "tool_use_id": result.call_id.as_str() });
    let content = match &result.output {
        ToolOutput::Text(text) => json!(text),
        ToolOutput::Parts(parts) => {
            let blocks: Vec<Value> = parts.iter().filter_map(content_block).collect();
            if blocks.is_empty() {
                json!(result.output.to_text())
            } else {
                Value::Array(blocks)
            }
        }
        other => json!(other.to_text()),
    };
    // An empty string is refused; no content at all is fine.
    if content != json!("") {
        block["content"] = content;
    }
    if result.is_error {
        block["is_error"] = json!(true);
    }
    block
}

fn content_block(part: &Part) -> Option<Value> {
    match part {
        Part::Text(text) if text.text.is_empty() => None,
        Part::Text(text) => Some(json!({ "type": "text", "text": text.text })),
        Part::Structured(s) => Some(json!({ "type": "text", "text": s.value.to_string() })),
        Part::Media(media) => media_block(media),
        Part::File(file) => file_block(file),
        _ => None,
    }
}

fn source(mime_type: &str, data: &DataRef) -> Option<Value> {
    Some(match data {
        DataRef::Bytes { .. } => json!({
            "type": "base64",
            "media_type": mime_type,
            "data": data.to_base64()?,
        }),
        DataRef::Url { url } => json!({ "type": "url", "url": url }),
        DataRef::ProviderFile { file_id } => json!({ "type": "file", "file_id": file_id }),
        DataRef::Text { text } => {
            json!({ "type": "text", "media_type": "text/plain", "data": text })
        }
        _ => return None,
    })
}

fn media_block(media: &MediaPart) -> Option<Value> {
    if media.modality != Modality::Image {
        tracing::debug!(mime_type = %media.mime_type, "the Messages API takes no audio or video; left out");
        return None;
    }
    Some(json!({ "type": "image", "source": source(&media.mime_type, &media.data)? }))
}

fn file_block(file: &FilePart) -> Option<Value> {
    let mime = file.mime_type.as_deref().unwrap_or("application/pdf");
    let mut block = json!({ "type": "document", "source": source(mime, &file.data)? });
    if let Some(name) = &file.name {
        block["title"] = json!(name);
    }
    Some(block)
}

#[cfg(test)]
mod normalized_tools {
    use super::*;
    use agentkit_core::Item;
    use agentkit_loop::TranscriptView;
    use agentkit_tools_core::ToolSpec;
    use std::sync::Arc;

    #[test]
    fn tool_schemas_are_normalized_for_anthropic() {
        let spec = ToolSpec::new(
            "pick",
            "Picks.",
            json!({
                "type": "object",
                "properties": { "choice": { "$ref": "#/$defs/Choice" } },
                "$defs": { "Choice": { "type": "string" } }
            }),
        )
        .unwrap();
        let mut request = TurnRequest::new(
            "s",
            "t".into(),
            TranscriptView::from_items(vec![Item::user("hi")]),
        );
        request.available_tools = vec![Arc::new(spec)];
        let body = request_body(&AnthropicConfig::new("key", "claude"), &request, None);
        let schema = &body["tools"][0]["input_schema"];
        assert_eq!(schema["properties"]["choice"]["type"], "string");
        assert!(schema.get("$defs").is_none(), "{schema}");
    }
}
