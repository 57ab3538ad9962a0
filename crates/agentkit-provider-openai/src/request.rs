//! The transcript as a Chat Completions request body.
//!
//! Every item kind and part has a place: system and developer items become
//! instruction messages, user-side items (user, context, notification)
//! become user messages with text and image blocks, assistant items carry
//! their text and `tool_calls`, and each tool result is its own `tool`
//! message. Reasoning is never sent back as text: Chat Completions has no
//! field for it, and replaying it as content would change what the model
//! believes it said. Messages providers reject (an assistant message with
//! neither content nor tool calls, an empty user message) are left out.
//!
//! Each item's messages are encoded once and kept in the session's
//! [`EncodedTranscript`]: a turn encodes only the items added (or changed by
//! a mutator) since the last one, and the body is written from the cached
//! bytes.

use crate::{MaxTokensField, OpenAiConfig, ToolChoice};
use agentkit_core::{
    DataRef, FilePart, Item, ItemKind, MediaPart, Modality, Part, ToolCallPart, ToolOutput,
    ToolResultPart,
};
use agentkit_http::codec::write_str;
use agentkit_loop::{
    BlockWriter, EncodedTranscript, OutputSchema, PromptCacheMode, PromptCacheRequest,
    PromptCacheRetention, TurnRequest,
};
use agentkit_tools_core::{SchemaDialect, ToolSpec, normalize_for};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// Builds the JSON body for one streamed turn, encoding only the items
/// `encoded` does not hold yet.
pub(crate) fn request_body(
    config: &OpenAiConfig,
    request: &TurnRequest,
    cache: Option<&PromptCacheRequest>,
    encoded: &mut EncodedTranscript,
    tools: &ToolEncodings,
) -> Vec<u8> {
    encoded.sync(&request.transcript, |item, out| {
        encode_item(config, item, out)
    });
    let options = options(config, request, cache);
    let tools = tools.for_request(request, &config.extra_body);
    write_body_with(
        "messages",
        encoded,
        0..encoded.len(),
        &write_options(&options, tools.as_deref()),
    )
}

/// The most tool encodings an adapter keeps (the oldest goes first): room
/// for a host whose sessions offer hundreds of MCP tools, at about a
/// kilobyte each.
const MAX_TOOL_ENCODINGS: usize = 1024;

/// Each tool's entry of the `tools` array as JSON, shared by an adapter's
/// sessions.
///
/// Encoding a tool (its schema normalized for OpenAI, then serialized) cost
/// about 17,000 instructions per tool and request, a sixth of a small
/// request's client-side cost, and gives the same bytes every time: every
/// session of a host offers the same few tools. Kept per spec and found
/// through the tool's name, then by pointer or by what the encoding reads
/// (description and input schema), so sessions that each build their own
/// tool registry share them too; a lookup costs the same with 5 tools kept
/// as with 1,000. A spec is immutable behind its `Arc`, so an entry never
/// goes stale. (With serde_json's `preserve_order`, `Value` equality ignores
/// member order, so schemas that differ only in it share the first one's
/// bytes: the same JSON.)
pub(crate) struct ToolEncodings {
    /// A tool's entry as the API takes it.
    encode: fn(&ToolSpec) -> Value,
    entries: std::sync::Mutex<Entries>,
}

/// A spec and its entry of the `tools` array.
type ToolEncoding = (Arc<ToolSpec>, Arc<[u8]>);

/// The kept encodings: by tool name (specs of one name rarely differ, so a
/// name's list is short), and the order they came in, for eviction.
#[derive(Default)]
struct Entries {
    by_name: HashMap<String, Vec<ToolEncoding>, foldhash::fast::RandomState>,
    oldest_first: std::collections::VecDeque<Arc<ToolSpec>>,
}

impl Entries {
    fn find(&self, spec: &Arc<ToolSpec>) -> Option<Arc<[u8]>> {
        self.by_name
            .get(spec.name.as_str())?
            .iter()
            .find(|(known, _)| Arc::ptr_eq(known, spec) || same_encoding(known, spec))
            .map(|(_, bytes)| bytes.clone())
    }

    fn insert(&mut self, spec: &Arc<ToolSpec>, bytes: Arc<[u8]>) {
        if self.oldest_first.len() >= MAX_TOOL_ENCODINGS
            && let Some(oldest) = self.oldest_first.pop_front()
            && let Some(named) = self.by_name.get_mut(oldest.name.as_str())
        {
            named.retain(|(known, _)| !Arc::ptr_eq(known, &oldest));
            if named.is_empty() {
                self.by_name.remove(oldest.name.as_str());
            }
        }
        self.oldest_first.push_back(spec.clone());
        self.by_name
            .entry(spec.name.clone())
            .or_default()
            .push((spec.clone(), bytes));
    }
}

impl ToolEncodings {
    /// Encodings of Chat Completions tool entries.
    pub(crate) fn chat() -> Self {
        Self::new(tool)
    }

    /// Encodings made by `encode` (which must read only a spec's name,
    /// description and input schema).
    pub(crate) fn new(encode: fn(&ToolSpec) -> Value) -> Self {
        Self {
            encode,
            entries: std::sync::Mutex::default(),
        }
    }

    /// The request's `tools` entries, encoded; `None` when it offers none or
    /// the configuration's extra body replaces the member.
    pub(crate) fn for_request(
        &self,
        request: &TurnRequest,
        extra_body: &Map<String, Value>,
    ) -> Option<Vec<Arc<[u8]>>> {
        (!request.available_tools.is_empty() && !extra_body.contains_key("tools")).then(|| {
            request
                .available_tools
                .iter()
                .map(|spec| self.encoded(spec))
                .collect()
        })
    }

    /// `spec`'s entry of the `tools` array, encoded once.
    pub(crate) fn encoded(&self, spec: &Arc<ToolSpec>) -> Arc<[u8]> {
        let lock = || self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(bytes) = lock().find(spec) {
            return bytes;
        }
        // Encoded outside the lock; two sessions racing on a new tool both
        // encode it, and the second keeps the first's bytes.
        // Serializing a `Value` cannot fail: its keys are strings.
        let bytes: Arc<[u8]> = serde_json::to_vec(&(self.encode)(spec))
            .unwrap_or_default()
            .into();
        let mut entries = lock();
        if let Some(known) = entries.find(spec) {
            return known;
        }
        entries.insert(spec, bytes.clone());
        bytes
    }

    /// How many encodings are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().unwrap().oldest_first.len()
    }

    /// Whether `spec` itself (not an equal one) is kept.
    #[cfg(test)]
    fn holds(&self, spec: &Arc<ToolSpec>) -> bool {
        let entries = self.entries.lock().unwrap();
        entries
            .oldest_first
            .iter()
            .any(|known| Arc::ptr_eq(known, spec))
            && entries.by_name[spec.name.as_str()]
                .iter()
                .any(|(known, _)| Arc::ptr_eq(known, spec))
    }
}

/// Whether two specs encode the same: the encoders read only these.
fn same_encoding(a: &ToolSpec, b: &ToolSpec) -> bool {
    a.name == b.name && a.description == b.description && a.input_schema == b.input_schema
}

/// The options object as serde_json writes it (compact, in the map's
/// order), with the `tools` member, when given, written from its encoded
/// entries.
pub(crate) fn write_options(options: &Map<String, Value>, tools: Option<&[Arc<[u8]>]>) -> Vec<u8> {
    let tools_len: usize = tools.map_or(0, |t| t.iter().map(|t| t.len() + 1).sum());
    let mut out = Vec::with_capacity(256 + tools_len);
    out.push(b'{');
    for (n, (key, value)) in options.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        // Serializing a string or a `Value` cannot fail.
        serde_json::to_writer(&mut out, key).unwrap_or_default();
        out.push(b':');
        if let (Some(tools), "tools") = (tools, key.as_str()) {
            out.push(b'[');
            for (n, tool) in tools.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(tool);
            }
            out.push(b']');
        } else {
            serde_json::to_writer(&mut out, value).unwrap_or_default();
        }
    }
    out.push(b'}');
    out
}

/// [`write_body_with`] from an options `Value`: how bodies were written
/// before the tools' encodings were shared, which the tests compare with.
#[cfg(test)]
pub(crate) fn write_body(
    key: &str,
    encoded: &EncodedTranscript,
    items: std::ops::Range<usize>,
    options: &Value,
) -> Vec<u8> {
    // Serializing a `Value` cannot fail: its keys are strings.
    let options = serde_json::to_vec(options).unwrap_or_default();
    write_body_with(key, encoded, items, &options)
}

/// `{"<key>":[<the items' blocks>],<options>}`: the transcript is copied
/// from the cache, the options object (`{...}`) was written already
/// ([`write_options`]).
pub(crate) fn write_body_with(
    key: &str,
    encoded: &EncodedTranscript,
    items: std::ops::Range<usize>,
    options: &[u8],
) -> Vec<u8> {
    let mut body = Vec::with_capacity(encoded.byte_len() + options.len() + key.len() + 8);
    body.push(b'{');
    // A key is a plain identifier here; written as a JSON string all the same.
    serde_json::to_writer(&mut body, key).unwrap_or_default();
    body.extend_from_slice(b":[");
    encoded.write_joined(items, b",", &mut body);
    body.push(b']');
    match options.get(1..options.len().saturating_sub(1)) {
        Some(inner) if !inner.is_empty() => {
            body.push(b',');
            body.extend_from_slice(inner);
        }
        _ => {}
    }
    body.push(b'}');
    body
}

/// Everything but the messages.
fn options(
    config: &OpenAiConfig,
    request: &TurnRequest,
    cache: Option<&PromptCacheRequest>,
) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    body.insert("stream".into(), json!(true));
    if config.quirks.stream_usage {
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    if let Some(max) = config.max_tokens {
        let field = match config.max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            _ => "max_completion_tokens",
        };
        body.insert(field.into(), json!(max));
    }
    if !request.available_tools.is_empty() {
        // Written from the adapter's encodings ([`write_options`]); the
        // member holds the place serde_json's map gives it.
        body.insert("tools".into(), Value::Null);
        if let Some(choice) = &config.tool_choice {
            body.insert("tool_choice".into(), tool_choice(config, choice));
        }
    }
    if let Some(schema) = &request.output_schema {
        body.insert("response_format".into(), response_format(schema));
    }
    if let Some(cache) =
        cache.filter(|c| c.mode != PromptCacheMode::Disabled && config.quirks.prompt_cache)
    {
        // OpenAI caches prefixes by itself; the key only groups requests
        // that share one, and retention asks for the longer-lived cache.
        if let Some(key) = &cache.key {
            body.insert("prompt_cache_key".into(), json!(key));
        }
        match cache.retention {
            Some(PromptCacheRetention::Long) => {
                body.insert("prompt_cache_retention".into(), json!("24h"));
            }
            Some(PromptCacheRetention::Short) => {
                body.insert("prompt_cache_retention".into(), json!("in_memory"));
            }
            _ => {}
        }
    }
    for (name, value) in &config.extra_body {
        body.insert(name.clone(), value.clone());
    }
    // The transcript's messages are written from the cache.
    body.remove("messages");
    body
}

/// Structured output as Chat Completions asks for it; llama.cpp, vLLM,
/// Ollama and OpenRouter read the same `json_schema` form.
fn response_format(schema: &OutputSchema) -> Value {
    let mut format = json!({
        "name": schema.name,
        "schema": output_schema(schema),
        "strict": schema.strict,
    });
    if let Some(description) = &schema.description {
        format["description"] = json!(description);
    }
    json!({ "type": "json_schema", "json_schema": format })
}

/// The schema as sent: strict mode wants every object closed and every
/// property required, which tools-core's normalisation makes of it.
pub(crate) fn output_schema(schema: &OutputSchema) -> Value {
    if schema.strict {
        normalize_for(SchemaDialect::OpenAiStrict, &schema.schema)
    } else {
        schema.schema.clone()
    }
}

fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            // `$ref`s inlined, keywords OpenAI's validator rejects removed.
            "parameters": normalize_for(SchemaDialect::OpenAi, &spec.input_schema),
        }
    })
}

fn tool_choice(config: &OpenAiConfig, choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!(config.quirks.required_tool_choice),
        ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
        _ => json!("auto"),
    }
}

/// The role an item's content is sent under.
fn role(config: &OpenAiConfig, kind: ItemKind) -> &'static str {
    match kind {
        ItemKind::System => "system",
        ItemKind::Developer if config.developer_role => "developer",
        ItemKind::Developer => "system",
        ItemKind::Assistant => "assistant",
        // Context and notifications are things the model is told; the user
        // role is the one every server accepts for that.
        _ => "user",
    }
}

/// One item's messages, each a block of the session's cache.
fn encode_item(config: &OpenAiConfig, item: &Item, out: &mut BlockWriter<'_>) {
    if encode_plain_item(config, item, out) {
        return;
    }
    let mut messages = Vec::new();
    item_messages(config, item, &mut messages);
    for message in &messages {
        out.block(0, |buf| {
            serde_json::to_writer(buf, message).unwrap_or_default()
        });
    }
}

/// An item made only of text, tool calls and text results (nearly every
/// item of a session), written straight from its parts: byte for byte the
/// messages [`item_messages`] builds as `Value`s and serde_json writes,
/// without the trees. `false` (nothing written) for any other item.
fn encode_plain_item(config: &OpenAiConfig, item: &Item, out: &mut BlockWriter<'_>) -> bool {
    if !is_plain(item) {
        return false;
    }
    let role = role(config, item.kind);
    let texts = || {
        item.parts.iter().filter_map(|part| match part {
            Part::Text(text) if !text.text.is_empty() => Some(text.text.as_str()),
            _ => None,
        })
    };
    // The assistant's text is concatenated, the others' joined by a blank
    // line; one piece (the usual case) is written as it is.
    let separator = if role == "assistant" { "" } else { "\n\n" };
    let mut pieces = texts();
    let text: Option<Cow<'_, str>> = match (pieces.next(), pieces.next()) {
        (None, _) => None,
        (Some(one), None) => Some(Cow::Borrowed(one)),
        (Some(_), Some(_)) => Some(Cow::Owned(texts().collect::<Vec<_>>().join(separator))),
    };
    let mut calls = item.parts.iter().filter_map(|part| match part {
        Part::ToolCall(call) => Some(call),
        _ => None,
    });
    if role == "assistant" {
        if text.is_some() || calls.clone().next().is_some() {
            out.block(0, |buf| {
                buf.extend_from_slice(br#"{"role":"assistant","content":"#);
                write_str(buf, text.as_deref().unwrap_or_default());
                if let Some(first) = calls.next() {
                    buf.extend_from_slice(br#","tool_calls":["#);
                    for (n, call) in std::iter::once(first).chain(calls).enumerate() {
                        if n > 0 {
                            buf.push(b',');
                        }
                        buf.extend_from_slice(br#"{"id":"#);
                        write_str(buf, call.id.as_str());
                        buf.extend_from_slice(br#","type":"function","function":{"name":"#);
                        write_str(buf, &call.name);
                        buf.extend_from_slice(br#","arguments":"#);
                        write_str(buf, call.input.as_str());
                        buf.extend_from_slice(b"}}");
                    }
                    buf.push(b']');
                }
                buf.push(b'}');
            });
        }
    } else if let Some(text) = &text {
        out.block(0, |buf| {
            buf.extend_from_slice(br#"{"role":"#);
            write_str(buf, role);
            buf.extend_from_slice(br#","content":"#);
            write_str(buf, text);
            buf.push(b'}');
        });
    }
    for part in &item.parts {
        if let Part::ToolResult(result) = part {
            out.block(0, |buf| {
                write_result(
                    buf,
                    br#"{"role":"tool","tool_call_id":"#,
                    result,
                    b"content",
                );
            });
        }
    }
    true
}

/// Whether an item is made only of text, tool calls and text results:
/// what the plain encoders write.
pub(crate) fn is_plain(item: &Item) -> bool {
    item.parts.iter().all(|part| match part {
        Part::Text(_) | Part::ToolCall(_) => true,
        Part::ToolResult(result) => matches!(result.output, ToolOutput::Text(_)),
        _ => false,
    })
}

/// A text result: `<head><call id>,"<key>":<text>}`, the text `(no
/// output)` when empty (some servers refuse empty tool content).
pub(crate) fn write_result(buf: &mut Vec<u8>, head: &[u8], result: &ToolResultPart, key: &[u8]) {
    let text = match &result.output {
        ToolOutput::Text(text) if !text.is_empty() => text.as_str(),
        _ => "(no output)",
    };
    buf.extend_from_slice(head);
    write_str(buf, result.call_id.as_str());
    buf.extend_from_slice(b",\"");
    buf.extend_from_slice(key);
    buf.extend_from_slice(b"\":");
    write_str(buf, text);
    buf.push(b'}');
}

/// The messages one item becomes: its content (when it has any), then one
/// `tool` message per result.
fn item_messages(config: &OpenAiConfig, item: &Item, messages: &mut Vec<Value>) {
    {
        let role = role(config, item.kind);
        let mut blocks = Vec::new();
        let mut calls = Vec::new();
        let mut results = Vec::new();
        let mut reasoning = String::new();
        for part in &item.parts {
            match part {
                Part::Reasoning(r) if config.quirks.reasoning_content_back => {
                    reasoning.push_str(r.summary.as_deref().unwrap_or_default());
                }
                Part::ToolCall(call) => calls.push(call),
                Part::ToolResult(result) => results.push(result),
                other => blocks.extend(content_block(other)),
            }
        }
        match role {
            "assistant" => {
                if let Some(mut message) = assistant_message(&blocks, &calls) {
                    if !reasoning.is_empty() && !calls.is_empty() {
                        message["reasoning_content"] = json!(reasoning);
                    }
                    messages.push(message);
                }
            }
            // Tool calls only make sense from the assistant; elsewhere they
            // would be rejected, so they are dropped with the kind's content.
            _ if !blocks.is_empty() => messages.push(json!({
                "role": role,
                "content": content(role, blocks),
            })),
            _ => {}
        }
        messages.extend(results.into_iter().map(tool_message));
    }
}

/// The assistant's text and tool calls; `None` when it has neither, which
/// providers reject.
fn assistant_message(blocks: &[Value], calls: &[&ToolCallPart]) -> Option<Value> {
    let text: String = blocks
        .iter()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    // Always a string, empty beside tool calls: OpenAI, vLLM, Ollama, LM
    // Studio and OpenRouter accept `""`, and llama.cpp's chat templates fail
    // on a missing key or `null`.
    message.insert("content".into(), json!(text));
    if !calls.is_empty() {
        let calls = calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id.as_str(),
                    "type": "function",
                    "function": {
                        "name": call.name,
                        // The API wants the arguments as a JSON string.
                        "arguments": call.input.to_string(),
                    }
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(message))
}

/// Plain text as a string (what every server accepts); anything else as an
/// array of blocks.
fn content(role: &str, blocks: Vec<Value>) -> Value {
    let all_text = blocks.iter().all(|b| b["type"] == "text");
    if all_text || role != "user" {
        let texts: Vec<&str> = blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        json!(texts.join("\n\n"))
    } else {
        Value::Array(blocks)
    }
}

fn tool_message(result: &ToolResultPart) -> Value {
    let mut text = match &result.output {
        ToolOutput::Text(text) => text.clone(),
        other => other.to_text(),
    };
    if text.is_empty() {
        // Some servers refuse empty tool content; say it plainly instead.
        text = "(no output)".to_owned();
    }
    json!({
        "role": "tool",
        "tool_call_id": result.call_id.as_str(),
        "content": text,
    })
}

/// One content block, or `None` for parts Chat Completions cannot carry
/// (reasoning, custom parts).
fn content_block(part: &Part) -> Option<Value> {
    match part {
        Part::Text(text) if text.text.is_empty() => None,
        Part::Text(text) => Some(json!({ "type": "text", "text": text.text })),
        Part::Structured(structured) => {
            Some(json!({ "type": "text", "text": structured.value.to_string() }))
        }
        Part::Media(media) => media_block(media),
        Part::File(file) => file_block(file),
        Part::Reasoning(_) | Part::Custom(_) => None,
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
    match media.modality {
        Modality::Image => {
            let url = data_url(&media.mime_type, &media.data)?;
            Some(json!({ "type": "image_url", "image_url": { "url": url } }))
        }
        Modality::Audio => {
            let data = media.data.to_base64()?;
            let format = media.mime_type.rsplit('/').next().unwrap_or("wav");
            let format = if format == "mpeg" { "mp3" } else { format };
            Some(
                json!({ "type": "input_audio", "input_audio": { "data": data, "format": format } }),
            )
        }
        _ => {
            tracing::debug!(mime_type = %media.mime_type, "Chat Completions cannot carry this media; left out");
            None
        }
    }
}

fn file_block(file: &FilePart) -> Option<Value> {
    let name = file.name.clone().unwrap_or_else(|| "file".to_owned());
    match &file.data {
        DataRef::Text { text } => Some(json!({
            "type": "text",
            "text": format!("<file name=\"{name}\">\n{text}\n</file>"),
        })),
        DataRef::ProviderFile { file_id } => {
            Some(json!({ "type": "file", "file": { "file_id": file_id } }))
        }
        data => {
            let mime = file
                .mime_type
                .as_deref()
                .unwrap_or("application/octet-stream");
            let url = data_url(mime, data)?;
            Some(json!({ "type": "file", "file": { "filename": name, "file_data": url } }))
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
                "$defs": { "Choice": { "type": "string", "enum": ["a", "b"] } }
            }),
        )
        .unwrap();
        let encoded = tool(&spec);
        let parameters = &encoded["function"]["parameters"];
        assert_eq!(parameters["properties"]["choice"]["type"], "string");
        assert!(parameters.get("$defs").is_none(), "{parameters}");
    }
}

#[cfg(test)]
mod tool_encodings {
    use super::*;
    use agentkit_core::TurnId;
    use agentkit_loop::TranscriptView;

    fn spec(name: &str, description: &str) -> ToolSpec {
        ToolSpec::new(
            name,
            description,
            json!({
                "type": "object",
                "properties": { "choice": { "$ref": "#/$defs/Choice" }, "why": { "type": "string" } },
                "$defs": { "Choice": { "type": "string", "enum": ["a", "b"] } }
            }),
        )
        .unwrap()
    }

    fn request(tools: Vec<Arc<ToolSpec>>) -> TurnRequest {
        let mut request = TurnRequest::new(
            "s",
            TurnId::new("t"),
            TranscriptView::from_items(vec![Item::system("Be brief."), Item::user("Pick.")]),
        );
        request.available_tools = tools.into();
        request
    }

    /// The body as it was written before the encodings were shared: the
    /// whole options object, tools included, serialized by serde_json.
    fn written_whole(config: &OpenAiConfig, request: &TurnRequest) -> Vec<u8> {
        let mut encoded = EncodedTranscript::new();
        encoded.sync(&request.transcript, |item, out| {
            encode_item(config, item, out)
        });
        let mut options = options(config, request, None);
        if !request.available_tools.is_empty() && !config.extra_body.contains_key("tools") {
            let tools = request.available_tools.iter().map(|s| tool(s)).collect();
            options.insert("tools".into(), Value::Array(tools));
        }
        write_body(
            "messages",
            &encoded,
            0..encoded.len(),
            &Value::Object(options),
        )
    }

    fn written(config: &OpenAiConfig, request: &TurnRequest, tools: &ToolEncodings) -> Vec<u8> {
        request_body(config, request, None, &mut EncodedTranscript::new(), tools)
    }

    #[test]
    fn bodies_are_the_bytes_serde_json_writes() {
        let config = OpenAiConfig::compatible("http://127.0.0.1:9/v1", "m")
            .with_tool_choice(ToolChoice::Required);
        let tools = ToolEncodings::chat();
        let specs = vec![
            Arc::new(spec("pick", "Picks.")),
            Arc::new(spec("b_tool", "B.")),
        ];
        let request = request(specs);
        // Twice: encoded, then from the encodings.
        for _ in 0..2 {
            assert_eq!(
                String::from_utf8(written(&config, &request, &tools)).unwrap(),
                String::from_utf8(written_whole(&config, &request)).unwrap()
            );
        }
        assert_eq!(tools.len(), 2);
        let none = self::request(Vec::new());
        assert_eq!(
            written(&config, &none, &tools),
            written_whole(&config, &none)
        );
    }

    #[test]
    fn an_extra_body_tools_member_still_replaces_the_tools() {
        let mut config = OpenAiConfig::compatible("http://127.0.0.1:9/v1", "m");
        config
            .extra_body
            .insert("tools".into(), json!([{"type": "web_search"}]));
        let request = request(vec![Arc::new(spec("pick", "Picks."))]);
        let body = written(&config, &request, &ToolEncodings::chat());
        assert_eq!(body, written_whole(&config, &request));
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["tools"], json!([{"type": "web_search"}]));
    }

    #[test]
    fn sessions_share_encodings_of_equal_specs_and_keep_changed_ones_apart() {
        let config = OpenAiConfig::compatible("http://127.0.0.1:9/v1", "m");
        let tools = ToolEncodings::chat();
        // Two sessions, each with its own registry's spec: one encoding.
        let first = tools.encoded(&Arc::new(spec("pick", "Picks.")));
        let second = tools.encoded(&Arc::new(spec("pick", "Picks.")));
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(tools.len(), 1);
        // Same name, another description: its own encoding.
        let changed = request(vec![Arc::new(spec("pick", "Picks one of two."))]);
        let body: Value = serde_json::from_slice(&written(&config, &changed, &tools)).unwrap();
        assert_eq!(
            body["tools"][0]["function"]["description"],
            "Picks one of two."
        );
        assert_eq!(tools.len(), 2);
        // Normalized as before.
        let parameters = &body["tools"][0]["function"]["parameters"];
        assert_eq!(parameters["properties"]["choice"]["type"], "string");
    }

    #[test]
    fn the_oldest_encoding_goes_when_full() {
        let tools = ToolEncodings::chat();
        let first = Arc::new(spec("t_0", "0"));
        tools.encoded(&first);
        for n in 1..=MAX_TOOL_ENCODINGS {
            tools.encoded(&Arc::new(spec(&format!("t_{n}"), "x")));
        }
        assert_eq!(tools.len(), MAX_TOOL_ENCODINGS);
        assert!(!tools.holds(&first));
        assert_eq!(
            tools.entries.lock().unwrap().by_name.len(),
            MAX_TOOL_ENCODINGS,
            "the evicted name's list went with it"
        );
        // The first one comes back encoded anew, and the next oldest goes.
        let again = tools.encoded(&first);
        assert_eq!(
            serde_json::from_slice::<Value>(&again).unwrap()["function"]["name"],
            "t_0"
        );
        assert!(tools.holds(&first));
        assert_eq!(tools.len(), MAX_TOOL_ENCODINGS);
    }

    #[test]
    fn specs_of_one_name_are_told_apart_and_evicted_one_by_one() {
        let tools = ToolEncodings::chat();
        let one = Arc::new(spec("read", "Reads a file."));
        let other = Arc::new(spec("read", "Reads a URL."));
        let a = tools.encoded(&one);
        let b = tools.encoded(&other);
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(
            Arc::ptr_eq(&a, &tools.encoded(&one)),
            "found again by pointer"
        );
        assert_eq!(tools.len(), 2);
        for n in 0..MAX_TOOL_ENCODINGS - 1 {
            tools.encoded(&Arc::new(spec(&format!("t_{n}"), "x")));
        }
        // `one` was the oldest: it went, `other` (same name) stayed.
        assert!(!tools.holds(&one));
        assert!(tools.holds(&other));
        assert!(Arc::ptr_eq(&b, &tools.encoded(&other)));
    }
}

#[cfg(test)]
pub(crate) mod plain_items {
    use super::*;
    use agentkit_core::{ToolCallPart, ToolResultPart};
    use agentkit_loop::TranscriptView;

    /// Items of the shapes the plain encoders write, with every character
    /// JSON escapes.
    pub(crate) fn items() -> Vec<Item> {
        let odd = "quote \" backslash \\ tab \t nl \n cr \r \u{8}\u{c}\u{0}\u{1f}\u{7f} caf\u{e9} \u{1f980} \u{2014}";
        let call = |id: &str| {
            Part::ToolCall(ToolCallPart::new(
                id,
                "fs_read",
                json!({ "path": odd, "n": [1, null, 2.5], "nested": { "b": 1, "a": "x" } }),
            ))
        };
        vec![
            Item::system("Be careful."),
            Item::new(
                ItemKind::Developer,
                vec![Part::text("one"), Part::text(odd)],
            ),
            Item::user(odd),
            Item::new(
                ItemKind::User,
                vec![Part::text(""), Part::text("a"), Part::text("b")],
            ),
            Item::new(ItemKind::Assistant, vec![Part::text(odd), call("call_1")]),
            Item::new(ItemKind::Assistant, vec![call("call_2"), call("call_3")]),
            Item::new(
                ItemKind::Assistant,
                vec![Part::text("x"), Part::text(""), Part::text("y")],
            ),
            Item::new(ItemKind::Assistant, vec![Part::text("")]),
            Item::new(ItemKind::User, vec![Part::text("hi"), call("call_dropped")]),
            Item::tool_result(ToolResultPart::success("call_1", odd)),
            Item::tool_result(ToolResultPart::success("call_2", "")),
            Item::tool_result(ToolResultPart::error("call_3", "it failed")),
            Item::new(
                ItemKind::Assistant,
                vec![
                    Part::text("before"),
                    Part::ToolResult(ToolResultPart::success("call_4", "mixed in")),
                    Part::text("after"),
                ],
            ),
        ]
    }

    /// Each item's blocks as `encode` writes them.
    pub(crate) fn blocks(encode: impl FnMut(&Item, &mut BlockWriter<'_>)) -> Vec<Vec<Vec<u8>>> {
        let items = items();
        let mut encoded = EncodedTranscript::new();
        encoded.sync(&TranscriptView::from_items(items.clone()), encode);
        (0..items.len())
            .map(|item| {
                encoded
                    .blocks(item..item + 1)
                    .map(|(_, bytes)| bytes.to_vec())
                    .collect()
            })
            .collect()
    }

    /// Whether serde_json keeps the members of a `Value` in insertion
    /// order (its `preserve_order` feature, on when another crate of the
    /// build asks for it): the plain encoders write that order, so bytes
    /// compare equal then, and parsed documents always.
    pub(crate) fn insertion_ordered() -> bool {
        serde_json::to_string(&json!({ "b": 1, "a": 2 })).unwrap() == r#"{"b":1,"a":2}"#
    }

    pub(crate) fn assert_same(plain: Vec<Vec<Vec<u8>>>, general: Vec<Vec<Vec<u8>>>) {
        assert_eq!(plain.len(), general.len());
        for (n, (plain, general)) in plain.iter().zip(&general).enumerate() {
            let parse = |blocks: &Vec<Vec<u8>>| -> Vec<Value> {
                blocks
                    .iter()
                    .map(|b| serde_json::from_slice(b).expect("a block is JSON"))
                    .collect()
            };
            assert_eq!(parse(plain), parse(general), "item {n}");
            if insertion_ordered() {
                assert_eq!(plain, general, "item {n}");
            }
        }
    }

    #[test]
    fn plain_items_are_written_as_their_values_serialize() {
        let config = OpenAiConfig::compatible("http://127.0.0.1:9/v1", "m");
        let plain = blocks(|item, out| assert!(encode_plain_item(&config, item, out)));
        let general = blocks(|item, out| {
            let mut messages = Vec::new();
            item_messages(&config, item, &mut messages);
            for message in &messages {
                out.block(0, |buf| serde_json::to_writer(buf, message).unwrap());
            }
        });
        assert_same(plain, general);
    }
}
