//! The transcript as a Converse request body.
//!
//! Converse is uniform across model families: `messages` of role `user` or
//! `assistant` holding content blocks (`text`, `image`, `toolUse`,
//! `toolResult`, `reasoningContent`), `system` blocks, `toolConfig` and
//! `inferenceConfig`. Consecutive items of one role are merged, so the
//! answers to parallel calls travel together as the API requires.
//!
//! Per family: extended thinking is asked of Anthropic models only
//! (`additionalModelRequestFields.thinking`); reasoning goes back only
//! when Bedrock signed it; Llama models accept no forced tool choice, so
//! only `auto` is sent to them.

use crate::BedrockConfig;
use crate::config::ToolChoice;
use crate::stream::PROVIDER;
use agentkit_core::keys;
use agentkit_core::{DataRef, Item, ItemKind, Part, ToolOutput, ToolResultPart};
use agentkit_loop::TurnRequest;
use serde_json::{Map, Value, json};

/// Builds the JSON body for one streamed turn.
pub(crate) fn request_body(config: &BedrockConfig, request: &TurnRequest) -> Vec<u8> {
    let items = request.transcript.read();
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for item in items.iter() {
        let role = match item.kind {
            ItemKind::System | ItemKind::Developer => {
                system.extend(
                    item.parts
                        .iter()
                        .filter_map(|p| p.as_text())
                        .map(|t| json!({ "text": t })),
                );
                continue;
            }
            ItemKind::Assistant => "assistant",
            _ => "user",
        };
        let blocks = item_blocks(item, role == "assistant");
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(existing) = last["content"].as_array_mut() {
                    existing.extend(blocks);
                }
            }
            _ => messages.push(json!({ "role": role, "content": blocks })),
        }
    }
    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    if !request.available_tools.is_empty() {
        let tools: Vec<Value> = request
            .available_tools
            .iter()
            .map(|spec| {
                json!({ "toolSpec": {
                    "name": spec.name,
                    "description": spec.description,
                    "inputSchema": { "json": spec.input_schema },
                }})
            })
            .collect();
        let mut tool_config = json!({ "tools": tools });
        let choice = match &config.tool_choice {
            Some(ToolChoice::Required) if config.family() != "meta" => json!({ "any": {} }),
            Some(ToolChoice::Tool(name)) if config.family() != "meta" => {
                json!({ "tool": { "name": name } })
            }
            Some(_) => json!({ "auto": {} }),
            None => Value::Null,
        };
        if !choice.is_null() {
            tool_config["toolChoice"] = choice;
        }
        body.insert("toolConfig".into(), tool_config);
    }
    let mut inference = Map::new();
    if let Some(max) = config.max_tokens {
        inference.insert("maxTokens".into(), json!(max));
    }
    if let Some(temperature) = config.temperature {
        inference.insert("temperature".into(), json!(temperature));
    }
    if !inference.is_empty() {
        body.insert("inferenceConfig".into(), Value::Object(inference));
    }
    if let Some(budget) = config
        .thinking_budget
        .filter(|_| config.family() == "anthropic")
    {
        body.insert(
            "additionalModelRequestFields".into(),
            json!({ "thinking": { "type": "enabled", "budget_tokens": budget } }),
        );
    }
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

fn item_blocks(item: &Item, assistant: bool) -> Vec<Value> {
    let mut blocks = Vec::new();
    for part in &item.parts {
        let block = match part {
            Part::Text(t) if t.text.is_empty() => None,
            Part::Text(t) => Some(json!({ "text": t.text })),
            Part::Structured(s) => Some(json!({ "text": s.value.to_string() })),
            Part::Media(media) => image(&media.mime_type, &media.data),
            Part::Reasoning(r)
                if assistant
                    && r.signature.is_some()
                    && r.metadata.get(keys::PROVIDER) == Some(&json!(PROVIDER)) =>
            {
                Some(json!({ "reasoningContent": { "reasoningText": {
                    "text": r.summary.clone().unwrap_or_default(),
                    "signature": r.signature,
                }}}))
            }
            Part::ToolCall(call) if assistant => Some(json!({ "toolUse": {
                "toolUseId": call.id.as_str(),
                "name": call.name,
                "input": call.input.to_value(),
            }})),
            Part::ToolResult(result) => Some(tool_result(result)),
            _ => None,
        };
        blocks.extend(block);
    }
    blocks
}

fn tool_result(result: &ToolResultPart) -> Value {
    let content = match &result.output {
        ToolOutput::Structured(value @ Value::Object(_)) => json!([{ "json": value }]),
        ToolOutput::Parts(parts) => {
            let mut content: Vec<Value> = parts
                .iter()
                .filter_map(|part| match part {
                    Part::Text(t) => Some(json!({ "text": t.text })),
                    Part::Media(m) => image(&m.mime_type, &m.data),
                    _ => None,
                })
                .collect();
            if content.is_empty() {
                content.push(json!({ "text": result.output.to_text() }));
            }
            Value::Array(content)
        }
        output => json!([{ "text": output.to_text() }]),
    };
    json!({ "toolResult": {
        "toolUseId": result.call_id.as_str(),
        "content": content,
        "status": if result.is_error { "error" } else { "success" },
    }})
}

/// An inline image (`png`, `jpeg`, `gif`, `webp`); Converse takes no URLs.
fn image(mime_type: &str, data: &DataRef) -> Option<Value> {
    let format = mime_type.strip_prefix("image/")?;
    let format = if format == "jpg" { "jpeg" } else { format };
    let bytes = data.to_base64()?;
    Some(json!({ "image": { "format": format, "source": { "bytes": bytes } } }))
}
