//! The transcript as a Responses API request body.
//!
//! The Responses API takes a list of input items rather than chat messages:
//! messages (`system`, `developer`, `user`, `assistant`), `function_call`
//! items for the model's tool calls, `function_call_output` items for their
//! results, and `reasoning` items. Reasoning this adapter received goes back
//! as it came, with its item id and encrypted content, so a reasoning model
//! keeps its chain of thought across tool rounds with `store: false`;
//! reasoning from another provider (no id, nothing encrypted) cannot be
//! verified by OpenAI and is left out. Hosted tools' items go back as they
//! came, and an `openai.mcp_approval_response` part as the API's approval
//! item. With `previous_response_id`, the
//! items up to the last stored response are not sent again.
//!
//! Each item's input items are encoded once and kept in the session's
//! [`EncodedTranscript`]; a turn encodes only new or changed items.

use super::ResponsesConfig;
use super::stream::{ITEM_ID, PROVIDER};
use crate::ToolChoice;
use crate::request::ToolEncodings;
use agentkit_core::keys;
use agentkit_core::{
    DataRef, FilePart, Item, ItemKind, MediaPart, Modality, Part, ReasoningPart, ToolOutput,
    ToolResultPart,
};
use agentkit_http::codec::write_str;
use agentkit_loop::{
    BlockWriter, EncodedTranscript, OutputSchema, PromptCacheMode, PromptCacheRequest, TurnRequest,
};
use agentkit_tools_core::{SchemaDialect, ToolSpec, normalize_for};
use serde_json::{Map, Value, json};
use std::ops::Range;

/// Builds the JSON body for one streamed turn, encoding only the items
/// `encoded` does not hold yet. `chain`: continue from the last stored
/// response when the config asks for it (`false` sends the whole history,
/// for a server that no longer has that response).
pub(crate) fn request_body(
    config: &ResponsesConfig,
    request: &TurnRequest,
    cache: Option<&PromptCacheRequest>,
    encoded: &mut EncodedTranscript,
    chain: bool,
    tools: &ToolEncodings,
) -> Vec<u8> {
    encoded.sync(&request.transcript, encode_item);
    let (previous, start) = match config.previous_response_id && chain {
        true => continuation(request.transcript.read().items()),
        false => (None, 0),
    };
    let mut options = options(config, request, cache);
    if let Some(id) = previous {
        options.insert("previous_response_id".into(), json!(id));
    }
    let tools = tools.for_request(request, &config.openai.extra_body);
    crate::request::write_body_with(
        "input",
        encoded,
        start..encoded.len(),
        &crate::request::write_options(&options, tools.as_deref()),
    )
}

/// Encodings of Responses tool entries ([`ToolEncodings`]).
pub(crate) fn tool_encodings() -> ToolEncodings {
    ToolEncodings::new(tool)
}

/// One item's input items, each a block of the session's cache.
fn encode_item(item: &Item, out: &mut BlockWriter<'_>) {
    if encode_plain_item(item, out) {
        return;
    }
    let mut input = Vec::new();
    item_inputs(item, &mut input);
    for value in &input {
        out.block(0, |buf| {
            serde_json::to_writer(buf, value).unwrap_or_default()
        });
    }
}

/// An item made only of text, tool calls and text results (nearly every
/// item of a session), written straight from its parts: byte for byte the
/// input items [`item_inputs`] builds as `Value`s and serde_json writes,
/// without the trees. `false` (nothing written) for any other item.
fn encode_plain_item(item: &Item, out: &mut BlockWriter<'_>) -> bool {
    if !crate::request::is_plain(item) {
        return false;
    }
    let role = match item.kind {
        ItemKind::System => "system",
        ItemKind::Developer => "developer",
        ItemKind::Assistant => "assistant",
        _ => "user",
    };
    // The non-empty text parts of `parts[range]`: one message's texts.
    let texts = |range: Range<usize>| {
        item.parts[range].iter().filter_map(|part| match part {
            Part::Text(text) if !text.text.is_empty() => Some(text.text.as_str()),
            _ => None,
        })
    };
    // The parts holding the texts waiting to become one message (anything
    // else in between carries nothing), without collecting them.
    let flush = |pending: &mut Option<Range<usize>>, out: &mut BlockWriter<'_>| {
        let Some(range) = pending.take() else {
            return;
        };
        out.block(0, |buf| {
            buf.extend_from_slice(br#"{"type":"message","role":"#);
            write_str(buf, role);
            buf.extend_from_slice(br#","content":"#);
            if role == "assistant" {
                buf.push(b'[');
                for (n, text) in texts(range).enumerate() {
                    if n > 0 {
                        buf.push(b',');
                    }
                    buf.extend_from_slice(br#"{"type":"output_text","text":"#);
                    write_str(buf, text);
                    buf.push(b'}');
                }
                buf.push(b']');
            } else {
                let mut pieces = texts(range.clone());
                match (pieces.next(), pieces.next()) {
                    (Some(one), None) => write_str(buf, one),
                    _ => write_str(buf, &texts(range).collect::<Vec<_>>().join("\n\n")),
                }
            }
            buf.push(b'}');
        });
    };
    let mut pending: Option<Range<usize>> = None;
    for (index, part) in item.parts.iter().enumerate() {
        match part {
            Part::Text(text) if !text.text.is_empty() => {
                let start = pending.as_ref().map_or(index, |range| range.start);
                pending = Some(start..index + 1);
            }
            Part::ToolCall(call) if role == "assistant" => {
                flush(&mut pending, out);
                out.block(0, |buf| {
                    buf.extend_from_slice(br#"{"type":"function_call","call_id":"#);
                    write_str(buf, call.id.as_str());
                    buf.extend_from_slice(br#","name":"#);
                    write_str(buf, &call.name);
                    buf.extend_from_slice(br#","arguments":"#);
                    write_str(buf, call.input.as_str());
                    buf.push(b'}');
                });
            }
            Part::ToolResult(result) => {
                flush(&mut pending, out);
                out.block(0, |buf| {
                    let head = br#"{"type":"function_call_output","call_id":"#;
                    crate::request::write_result(buf, head, result, b"output");
                });
            }
            // Empty text, and calls outside the assistant, carry nothing.
            _ => {}
        }
    }
    flush(&mut pending, out);
    true
}

/// Everything but the input items.
fn options(
    config: &ResponsesConfig,
    request: &TurnRequest,
    cache: Option<&PromptCacheRequest>,
) -> Map<String, Value> {
    let openai = &config.openai;
    let mut body = Map::new();
    body.insert("model".into(), json!(openai.model));
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(config.store));
    if !config.store {
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if let Some(max) = openai.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(summary) = &config.reasoning_summary {
        body.insert("reasoning".into(), json!({ "summary": summary }));
    }
    if !request.available_tools.is_empty() {
        // Written from the adapter's encodings
        // ([`crate::request::write_options`]); the member holds the place
        // serde_json's map gives it.
        body.insert("tools".into(), Value::Null);
        if let Some(choice) = &openai.tool_choice {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
    }
    if let Some(schema) = &request.output_schema {
        body.insert("text".into(), json!({ "format": text_format(schema) }));
    }
    if let Some(key) = cache
        .filter(|c| c.mode != PromptCacheMode::Disabled && openai.quirks.prompt_cache)
        .and_then(|c| c.key.as_ref())
    {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    for (name, value) in &openai.extra_body {
        body.insert(name.clone(), value.clone());
    }
    // The transcript's input items are written from the cache.
    body.remove("input");
    body
}

/// `true` when the transcript ends after a response this adapter stored,
/// which a chained request continues from.
pub(crate) fn continues_a_response(request: &TurnRequest) -> bool {
    continuation(request.transcript.read().items()).0.is_some()
}

/// The last stored response of this adapter and the index of the first
/// item after it.
fn continuation(items: agentkit_loop::TranscriptItems<'_>) -> (Option<String>, usize) {
    for (at, item) in items.iter().enumerate().rev() {
        if item.kind != ItemKind::Assistant {
            continue;
        }
        let from_us = item.metadata.get(keys::PROVIDER) == Some(&json!(PROVIDER));
        if let Some(id) = item
            .metadata
            .get(keys::RESPONSE_ID)
            .and_then(Value::as_str)
            .filter(|_| from_us)
        {
            return (Some(id.to_owned()), at + 1);
        }
    }
    (None, 0)
}

/// Structured output as `text.format`.
fn text_format(schema: &OutputSchema) -> Value {
    let mut format = json!({
        "type": "json_schema",
        "name": schema.name,
        "schema": crate::request::output_schema(schema),
        "strict": schema.strict,
    });
    if let Some(description) = &schema.description {
        format["description"] = json!(description);
    }
    format
}

fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        // `$ref`s inlined, keywords OpenAI's validator rejects removed; not
        // strict, so optional properties stay optional.
        "parameters": normalize_for(SchemaDialect::OpenAi, &spec.input_schema),
        "strict": false,
    })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({ "type": "function", "name": name }),
        _ => json!("auto"),
    }
}

/// Appends the input items one transcript item becomes, in part order.
fn item_inputs(item: &Item, input: &mut Vec<Value>) {
    let role = match item.kind {
        ItemKind::System => "system",
        ItemKind::Developer => "developer",
        ItemKind::Assistant => "assistant",
        _ => "user",
    };
    // Content blocks waiting to become one message.
    let mut blocks: Vec<Value> = Vec::new();
    let flush = |blocks: &mut Vec<Value>, input: &mut Vec<Value>| {
        if !blocks.is_empty() {
            input.push(message(role, std::mem::take(blocks)));
        }
    };
    for part in &item.parts {
        match part {
            Part::ToolCall(call) if role == "assistant" => {
                flush(&mut blocks, input);
                input.push(json!({
                    "type": "function_call",
                    "call_id": call.id.as_str(),
                    "name": call.name,
                    "arguments": call.input.to_string(),
                }));
            }
            Part::ToolResult(result) => {
                flush(&mut blocks, input);
                input.push(function_call_output(result));
            }
            Part::Reasoning(reasoning) if role == "assistant" => {
                flush(&mut blocks, input);
                input.extend(reasoning_item(reasoning));
            }
            Part::Custom(custom) => {
                // Hosted tools' items go back as they came; approval
                // answers as the API's own item.
                if let Some(value) = super::hosted::input_item(custom, role == "assistant") {
                    flush(&mut blocks, input);
                    input.push(value);
                }
            }
            other => blocks.extend(content_block(role, other)),
        }
    }
    flush(&mut blocks, input);
}

fn message(role: &str, blocks: Vec<Value>) -> Value {
    let all_text = blocks
        .iter()
        .all(|b| matches!(b["type"].as_str(), Some("input_text" | "output_text")));
    let content = if all_text && role != "assistant" {
        let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
        json!(texts.join("\n\n"))
    } else {
        Value::Array(blocks)
    };
    json!({ "type": "message", "role": role, "content": content })
}

fn reasoning_item(reasoning: &ReasoningPart) -> Option<Value> {
    let id = reasoning.metadata.get(ITEM_ID).and_then(Value::as_str);
    if id.is_none() && reasoning.encrypted.is_none() {
        return None;
    }
    let summary: Vec<Value> = reasoning
        .summary
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| json!({ "type": "summary_text", "text": s }))
        .collect();
    let mut item = json!({ "type": "reasoning", "summary": summary });
    if let Some(id) = id {
        item["id"] = json!(id);
    }
    if let Some(encrypted) = &reasoning.encrypted {
        item["encrypted_content"] = json!(encrypted);
    }
    Some(item)
}

fn function_call_output(result: &ToolResultPart) -> Value {
    let mut text = match &result.output {
        ToolOutput::Text(text) => text.clone(),
        other => other.to_text(),
    };
    if text.is_empty() {
        text = "(no output)".to_owned();
    }
    json!({
        "type": "function_call_output",
        "call_id": result.call_id.as_str(),
        "output": text,
    })
}

/// One content block (`input_*` for the user side, `output_text` for the
/// assistant), or `None` for parts the API cannot carry.
fn content_block(role: &str, part: &Part) -> Option<Value> {
    let text_type = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    match part {
        Part::Text(text) if text.text.is_empty() => None,
        Part::Text(text) => Some(json!({ "type": text_type, "text": text.text })),
        Part::Structured(s) => Some(json!({ "type": text_type, "text": s.value.to_string() })),
        Part::Media(media) if role != "assistant" => media_block(media),
        Part::File(file) if role != "assistant" => file_block(file),
        _ => None,
    }
}

fn data_url(mime_type: &str, data: &DataRef) -> Option<String> {
    match data {
        DataRef::Url { url } => Some(url.clone()),
        DataRef::Bytes { .. } => Some(format!(
            "data:{mime_type};base64,{}",
            data.to_base64().unwrap_or_default()
        )),
        _ => None,
    }
}

fn media_block(media: &MediaPart) -> Option<Value> {
    if media.modality != Modality::Image {
        tracing::debug!(mime_type = %media.mime_type, "the Responses API input takes images only; left out");
        return None;
    }
    if let DataRef::ProviderFile { file_id } = &media.data {
        return Some(json!({ "type": "input_image", "file_id": file_id }));
    }
    let url = data_url(&media.mime_type, &media.data)?;
    Some(json!({ "type": "input_image", "image_url": url }))
}

fn file_block(file: &FilePart) -> Option<Value> {
    let name = file.name.clone().unwrap_or_else(|| "file".to_owned());
    match &file.data {
        DataRef::Text { text } => Some(json!({
            "type": "input_text",
            "text": format!("<file name=\"{name}\">\n{text}\n</file>"),
        })),
        DataRef::ProviderFile { file_id } => {
            Some(json!({ "type": "input_file", "file_id": file_id }))
        }
        DataRef::Url { url } => Some(json!({ "type": "input_file", "file_url": url })),
        data => {
            let mime = file
                .mime_type
                .as_deref()
                .unwrap_or("application/octet-stream");
            let url = data_url(mime, data)?;
            Some(json!({ "type": "input_file", "filename": name, "file_data": url }))
        }
    }
}

#[cfg(test)]
mod normalized_tools {
    use super::*;

    #[test]
    fn tool_schemas_are_normalized_for_openai() {
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
        let parameters = &tool(&spec)["parameters"];
        assert_eq!(parameters["properties"]["choice"]["type"], "string");
        assert!(parameters.get("$defs").is_none(), "{parameters}");
    }

    #[test]
    fn bodies_with_shared_tool_encodings_are_the_bytes_serde_json_writes() {
        use agentkit_core::TurnId;
        use agentkit_loop::TranscriptView;
        use std::sync::Arc;
        let config: ResponsesConfig = crate::OpenAiConfig::compatible("http://127.0.0.1:9/v1", "m")
            .with_tool_choice(ToolChoice::Required)
            .into();
        let spec = |name: &str| {
            Arc::new(
                ToolSpec::new(
                    name,
                    "Picks.",
                    json!({"type": "object", "properties": {"q": {"type": "string"}}}),
                )
                .unwrap(),
            )
        };
        let mut request = TurnRequest::new(
            "s",
            TurnId::new("t"),
            TranscriptView::from_items(vec![Item::system("Be brief."), Item::user("Pick.")]),
        );
        request.available_tools = vec![spec("pick"), spec("a_tool")].into();
        // The whole options object, tools included, serialized at once.
        let mut encoded = EncodedTranscript::new();
        encoded.sync(&request.transcript, encode_item);
        let mut options = options(&config, &request, None);
        let tools = request.available_tools.iter().map(|s| tool(s)).collect();
        options.insert("tools".into(), Value::Array(tools));
        let whole = crate::request::write_body(
            "input",
            &encoded,
            0..encoded.len(),
            &Value::Object(options),
        );
        let encodings = tool_encodings();
        let written = |request: &TurnRequest| {
            let body = request_body(
                &config,
                request,
                None,
                &mut EncodedTranscript::new(),
                true,
                &encodings,
            );
            String::from_utf8(body).unwrap()
        };
        let whole = String::from_utf8(whole).unwrap();
        // Encoded, then from the encodings.
        assert_eq!(written(&request), whole);
        assert_eq!(written(&request), whole);
        // A second session's own specs share the encodings.
        request.available_tools = vec![spec("pick"), spec("a_tool")].into();
        assert_eq!(written(&request), whole);
        assert_eq!(encodings.len(), 2);
    }
}

#[cfg(test)]
mod hosted_items {
    use super::*;
    use agentkit_core::{CustomPart, MetadataMap};

    fn custom(kind: &str, value: Value) -> Part {
        Part::Custom(CustomPart {
            kind: kind.into(),
            value,
            metadata: MetadataMap::new(),
        })
    }

    #[test]
    fn hosted_items_and_approval_answers_go_back_as_input_items() {
        let search = json!({"id": "ws_1", "type": "web_search_call", "status": "completed",
            "action": {"type": "search", "query": "weather", "sources": [{"type": "url", "url": "https://example.com"}]}});
        let request = json!({"id": "mcpr_1", "type": "mcp_approval_request",
            "name": "create_short_url", "arguments": "{}", "server_label": "zip1"});
        let assistant = Item::new(
            ItemKind::Assistant,
            vec![
                custom("openai.web_search_call", search.clone()),
                Part::text("Found it."),
                custom("openai.mcp_approval_request", request.clone()),
                // Another provider's custom part, and one whose value does
                // not match its kind: neither is sent.
                custom("acme.note", json!({"type": "note"})),
                custom("openai.mcp_call", json!({"type": "web_search_call"})),
            ],
        );
        let mut input = Vec::new();
        item_inputs(&assistant, &mut input);
        assert_eq!(input.len(), 3, "{input:#?}");
        assert_eq!(input[0], search);
        assert_eq!(input[1]["type"], "message");
        assert_eq!(input[2], request);

        let answer = crate::mcp_approval_response("mcpr_1", false, Some("not now"));
        let user = Item::new(ItemKind::User, vec![answer]);
        let mut input = Vec::new();
        item_inputs(&user, &mut input);
        assert_eq!(
            input,
            vec![
                json!({"type": "mcp_approval_response", "approval_request_id": "mcpr_1",
                "approve": false, "reason": "not now"})
            ]
        );
        // A hosted item in a user item is not the model's own: left out.
        let user = Item::new(
            ItemKind::User,
            vec![custom("openai.web_search_call", search)],
        );
        let mut input = Vec::new();
        item_inputs(&user, &mut input);
        assert!(input.is_empty());
    }
}

#[cfg(test)]
mod plain_items {
    use super::*;
    use crate::request::plain_items::{assert_same, blocks};

    #[test]
    fn plain_items_are_written_as_their_values_serialize() {
        let plain = blocks(|item, out| assert!(encode_plain_item(item, out)));
        let general = blocks(|item, out| {
            let mut input = Vec::new();
            item_inputs(item, &mut input);
            for value in &input {
                out.block(0, |buf| serde_json::to_writer(buf, value).unwrap());
            }
        });
        assert_same(plain, general);
    }
}
