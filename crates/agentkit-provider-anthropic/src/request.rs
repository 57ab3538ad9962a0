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
//! [`PromptCacheRequest`] asks. The automatic strategy marks the tools, the
//! system prompt, the end of the stable prefix (what the previous request
//! sent and this one repeats unchanged, so it is read from the cache however
//! many blocks were added since) and the last item (written for the next
//! turn).
//!
//! Each item's content blocks are encoded once and kept in the session's
//! [`EncodedTranscript`]; a turn encodes only new or changed items, lays the
//! cached blocks out into messages and splices the cache marks in.

use crate::{AnthropicConfig, ToolChoice};
use agentkit_core::{
    DataRef, FilePart, Item, ItemKind, MediaPart, Modality, Part, ReasoningPart, ToolCallPart,
    ToolOutput, ToolResultPart,
};
use agentkit_http::codec::{write_str, write_value};
use agentkit_loop::{
    BlockWriter, CacheBreakpoint, EncodedTranscript, PromptCacheMode, PromptCacheRequest,
    PromptCacheRetention, PromptCacheStrategy, TurnRequest,
};
use agentkit_tools_core::{SchemaDialect, normalize_for};
use serde_json::{Map, Value, json};

/// The API accepts at most this many `cache_control` breakpoints.
pub(crate) const MAX_BREAKPOINTS: usize = 4;

/// Block tags in the session's [`EncodedTranscript`]: the message role a
/// block goes to, and whether it may carry a cache mark.
mod tag {
    /// A user-role block.
    pub const USER: u8 = 0;
    /// An assistant-role block.
    pub const ASSISTANT: u8 = 1;
    /// An instruction's text as a `system` block (used while no message
    /// came before it).
    pub const SYSTEM: u8 = 2;
    /// The same instruction as tagged user text (used after a message).
    pub const INLINE: u8 = 3;
    /// The roles above, without this flag.
    pub const ROLE: u8 = 3;
    /// Set on thinking blocks, which may not carry `cache_control`.
    pub const NOT_CACHEABLE: u8 = 4;
}

/// One message of the body: its role and its blocks (indexes into the
/// encoded blocks), `blocks[start..end]` of the layout's list.
struct Message {
    role: u8,
    end: usize,
}

/// Where every encoded block of this turn goes.
#[derive(Default)]
struct Layout {
    /// Blocks of the `system` field.
    system: Vec<usize>,
    /// Blocks of the messages, in order; `messages[i].end` cuts it.
    blocks: Vec<usize>,
    messages: Vec<Message>,
    /// Per item, the position in `blocks` of the last message block after
    /// it (`None` while only system blocks were written).
    positions: Vec<Option<usize>>,
}

impl Layout {
    fn push(&mut self, role: u8, block: usize) {
        self.blocks.push(block);
        let end = self.blocks.len();
        match self.messages.last_mut() {
            Some(last) if last.role == role => last.end = end,
            _ => self.messages.push(Message { role, end }),
        }
    }

    /// The message range `blocks[start..end]` holding position `at`.
    fn message_start(&self, at: usize) -> usize {
        let index = self.messages.partition_point(|m| m.end <= at);
        match index {
            0 => 0,
            i => self.messages[i - 1].end,
        }
    }
}

/// Builds the JSON body for one streamed turn, encoding only the items
/// `encoded` does not hold yet.
pub(crate) fn request_body(
    config: &AnthropicConfig,
    request: &TurnRequest,
    cache: Option<&PromptCacheRequest>,
    encoded: &mut EncodedTranscript,
) -> Vec<u8> {
    encoded.sync(&request.transcript, encode_item);
    let mut layout = Layout::default();
    layout.positions.reserve(encoded.len());
    // Room for every block, and for a message per block (the most there
    // can be): grown by doubling instead, the messages were copied by
    // `realloc` whenever the allocator could not extend them in place,
    // which depended on what else the heap held (4% of turn N+1).
    let blocks = encoded.blocks_of_items(0..encoded.len()).len();
    layout.blocks.reserve(blocks);
    layout.messages.reserve(blocks);
    for item in 0..encoded.len() {
        for block in encoded.item_blocks(item) {
            match encoded.tag(block) & tag::ROLE {
                tag::SYSTEM if layout.messages.is_empty() => layout.system.push(block),
                tag::SYSTEM => {}
                tag::INLINE if layout.messages.is_empty() => {}
                tag::INLINE => layout.push(tag::USER, block),
                role => layout.push(role, block),
            }
        }
        layout.positions.push(layout.blocks.len().checked_sub(1));
    }

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

    // Blocks (system positions, message positions) that get the marker.
    let mut marked_system: Vec<usize> = Vec::new();
    let mut marked: Vec<usize> = Vec::new();
    let mut marker = Value::Null;
    if let Some(cache) = cache.filter(|c| c.mode != PromptCacheMode::Disabled) {
        marker = cache_marker(cache.retention);
        let breakpoints = match &cache.strategy {
            PromptCacheStrategy::Explicit { breakpoints } => breakpoints.clone(),
            // The tools, the system prompt, the end of the prefix the
            // previous request sent (read from the cache whatever was added
            // since), and the end (written for the next turn).
            _ => {
                let mut automatic = vec![CacheBreakpoint::Tools, CacheBreakpoint::System];
                let stable = encoded.stable_prefix();
                if stable > 0 && stable < encoded.len() {
                    automatic.push(CacheBreakpoint::Item { index: stable - 1 });
                }
                automatic.push(CacheBreakpoint::LastItem);
                automatic
            }
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
            let newly = match breakpoint {
                CacheBreakpoint::Tools => match tools.last_mut() {
                    Some(tool) if tool.get("cache_control").is_none() => {
                        tool["cache_control"] = marker.clone();
                        true
                    }
                    _ => false,
                },
                CacheBreakpoint::System => match layout.system.len().checked_sub(1) {
                    Some(at) if !marked_system.contains(&at) => {
                        marked_system.push(at);
                        true
                    }
                    _ => false,
                },
                CacheBreakpoint::Item { index } => {
                    // An item that produced no block (a system item, an
                    // empty one) caches what precedes it.
                    let at = layout.positions[..(*index + 1).min(layout.positions.len())]
                        .iter()
                        .rev()
                        .find_map(|p| *p);
                    mark(&layout, encoded, at, &mut marked)
                }
                CacheBreakpoint::LastItem => mark(
                    &layout,
                    encoded,
                    layout.blocks.len().checked_sub(1),
                    &mut marked,
                ),
                _ => false,
            };
            if newly {
                placed += 1;
            }
        }
    }

    let mut options = Map::new();
    options.insert("model".into(), json!(config.model));
    options.insert("max_tokens".into(), json!(config.max_tokens));
    if !tools.is_empty() {
        options.insert("tools".into(), Value::Array(std::mem::take(&mut tools)));
        if let Some(schema) = &request.output_schema {
            options.insert(
                "tool_choice".into(),
                tool_choice(&ToolChoice::Tool(schema.name.clone())),
            );
        } else if let Some(choice) = &config.tool_choice {
            options.insert("tool_choice".into(), tool_choice(choice));
        }
    }
    if let Some(budget) = config.thinking_budget {
        options.insert(
            "thinking".into(),
            json!({ "type": "enabled", "budget_tokens": budget }),
        );
    }
    options.insert("stream".into(), json!(true));
    for (name, value) in &config.extra_body {
        options.insert(name.clone(), value.clone());
    }
    // The transcript is written from the cache.
    options.remove("messages");
    options.remove("system");
    write_body(encoded, &layout, &marked_system, &marked, &marker, &options)
}

/// Marks the cacheable block at or before message position `at`, within
/// its message (thinking blocks may not carry `cache_control`); `true`
/// when a new mark was placed.
fn mark(
    layout: &Layout,
    encoded: &EncodedTranscript,
    at: Option<usize>,
    marked: &mut Vec<usize>,
) -> bool {
    let Some(at) = at else {
        return false;
    };
    let start = layout.message_start(at);
    let found = (start..=at)
        .rev()
        .find(|&position| encoded.tag(layout.blocks[position]) & tag::NOT_CACHEABLE == 0);
    match found {
        Some(position) if !marked.contains(&position) => {
            marked.push(position);
            true
        }
        _ => false,
    }
}

/// Writes the body: system and messages from the cached blocks (a mark
/// spliced in before a marked block's closing brace), then the options.
fn write_body(
    encoded: &EncodedTranscript,
    layout: &Layout,
    marked_system: &[usize],
    marked: &[usize],
    marker: &Value,
    options: &Map<String, Value>,
) -> Vec<u8> {
    let marker = serde_json::to_vec(marker).unwrap_or_default();
    let write_block = |out: &mut Vec<u8>, block: usize, mark: bool| {
        let bytes = encoded.block(block).1;
        match bytes.split_last() {
            Some((b'}', head)) if mark => {
                out.extend_from_slice(head);
                out.extend_from_slice(br#","cache_control":"#);
                out.extend_from_slice(&marker);
                out.push(b'}');
            }
            _ => out.extend_from_slice(bytes),
        }
    };
    let options = serde_json::to_vec(&Value::Object(options.clone())).unwrap_or_default();
    let mut body =
        Vec::with_capacity(encoded.byte_len() + options.len() + 64 + 32 * layout.messages.len());
    body.extend_from_slice(br#"{"messages":["#);
    let mut start = 0;
    for (n, message) in layout.messages.iter().enumerate() {
        if n > 0 {
            body.push(b',');
        }
        body.extend_from_slice(match message.role {
            tag::ASSISTANT => br#"{"role":"assistant","content":["#.as_slice(),
            _ => br#"{"role":"user","content":["#.as_slice(),
        });
        // A message's blocks are usually consecutive in the cache: without
        // a mark among them they are one run of its buffer, copied at once.
        let positions = start..message.end;
        let unmarked = !marked.iter().any(|at| positions.contains(at));
        let first = layout.blocks[start];
        let consecutive = layout.blocks[positions.clone()]
            .iter()
            .zip(first..)
            .all(|(&block, expected)| block == expected);
        if unmarked && consecutive {
            body.extend_from_slice(encoded.run(first..first + positions.len()));
        } else {
            for position in positions {
                if position > start {
                    body.push(b',');
                }
                write_block(
                    &mut body,
                    layout.blocks[position],
                    marked.contains(&position),
                );
            }
        }
        body.extend_from_slice(b"]}");
        start = message.end;
    }
    body.push(b']');
    if !layout.system.is_empty() {
        body.extend_from_slice(br#","system":["#);
        for (n, &block) in layout.system.iter().enumerate() {
            if n > 0 {
                body.push(b',');
            }
            write_block(&mut body, block, marked_system.contains(&n));
        }
        body.push(b']');
    }
    if let Some(inner) = options
        .get(1..options.len().saturating_sub(1))
        .filter(|i| !i.is_empty())
    {
        body.push(b',');
        body.extend_from_slice(inner);
    }
    body.push(b'}');
    body
}

/// One item's blocks. An instruction is encoded both ways (system text,
/// tagged user text); the layout picks one by where it stands.
fn encode_item(item: &Item, out: &mut BlockWriter<'_>) {
    if matches!(item.kind, ItemKind::System | ItemKind::Developer) {
        let text = joined_text(item);
        if text.is_empty() {
            return;
        }
        out.block(tag::SYSTEM, |buf| write_text_block(buf, &text));
        // An instruction added mid session stays where it is, as user
        // text: moving it into `system` would reorder the conversation and
        // invalidate the prompt cache of everything after it.
        let name = if item.kind == ItemKind::System {
            "system"
        } else {
            "developer"
        };
        let text = format!("<{name}>\n{text}\n</{name}>");
        out.block(tag::INLINE, |buf| write_text_block(buf, &text));
        return;
    }
    for_each_block(item, |role, block| {
        let flag = if block.is_thinking() {
            tag::NOT_CACHEABLE
        } else {
            0
        };
        out.block(role | flag, |buf| block.write(buf));
    });
}

/// `{"type":"text","text":<text>}`, as serde_json writes it.
fn write_text_block(buf: &mut Vec<u8>, text: &str) {
    buf.extend_from_slice(br#"{"type":"text","text":"#);
    write_str(buf, text);
    buf.push(b'}');
}

/// One content block of a message: the shapes nearly every item is made
/// of (text, a tool call, a text result) are written straight from the
/// parts, byte for byte what serde_json writes for their `Value`s, with
/// no tree built; the others go through a `Value`.
enum Block<'a> {
    Text(&'a str),
    ToolUse(&'a ToolCallPart),
    TextResult(&'a ToolResultPart, &'a str),
    Value(Value),
}

impl Block<'_> {
    fn is_thinking(&self) -> bool {
        match self {
            Block::Value(block) => matches!(
                block["type"].as_str(),
                Some("thinking" | "redacted_thinking")
            ),
            _ => false,
        }
    }

    fn write(&self, buf: &mut Vec<u8>) {
        match self {
            Block::Text(text) => write_text_block(buf, text),
            Block::ToolUse(call) => {
                buf.extend_from_slice(br#"{"type":"tool_use","id":"#);
                write_str(buf, call.id.as_str());
                buf.extend_from_slice(br#","name":"#);
                write_str(buf, &call.name);
                buf.extend_from_slice(br#","input":"#);
                buf.extend_from_slice(call.input.as_str().as_bytes());
                buf.push(b'}');
            }
            Block::TextResult(result, text) => {
                buf.extend_from_slice(br#"{"type":"tool_result","tool_use_id":"#);
                write_str(buf, result.call_id.as_str());
                // An empty string is refused; no content at all is fine.
                if !text.is_empty() {
                    buf.extend_from_slice(br#","content":"#);
                    write_str(buf, text);
                }
                if result.is_error {
                    buf.extend_from_slice(br#","is_error":true"#);
                }
                buf.push(b'}');
            }
            Block::Value(value) => write_value(buf, value),
        }
    }
}

fn cache_marker(retention: Option<PromptCacheRetention>) -> Value {
    match retention {
        Some(PromptCacheRetention::Long) => json!({ "type": "ephemeral", "ttl": "1h" }),
        _ => json!({ "type": "ephemeral" }),
    }
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

/// One item's blocks with their roles, handed to `f` in order: an
/// assistant item's own blocks, then its tool results as user blocks; a
/// user-side item's tool results first (they open the user message they
/// belong to), then its own.
fn for_each_block<'a>(item: &'a Item, mut f: impl FnMut(u8, Block<'a>)) {
    let assistant = item.kind == ItemKind::Assistant;
    let role = if assistant { tag::ASSISTANT } else { tag::USER };
    if assistant {
        for block in item.parts.iter().filter_map(|part| own_block(part, true)) {
            f(role, block);
        }
    }
    for block in item.parts.iter().filter_map(result_block) {
        f(tag::USER, block);
    }
    if !assistant {
        for block in item.parts.iter().filter_map(|part| own_block(part, false)) {
            f(role, block);
        }
    }
}

/// The block of a tool result; `None` for any other part.
fn result_block(part: &Part) -> Option<Block<'_>> {
    match part {
        Part::ToolResult(result) => Some(match &result.output {
            ToolOutput::Text(text) => Block::TextResult(result, text),
            _ => Block::Value(tool_result(result)),
        }),
        _ => None,
    }
}

/// The block of a part other than a tool result, if it has one.
fn own_block(part: &Part, assistant: bool) -> Option<Block<'_>> {
    match part {
        Part::ToolResult(_) => None,
        Part::ToolCall(call) if assistant => Some(Block::ToolUse(call)),
        Part::Reasoning(reasoning) if assistant => thinking(reasoning).map(Block::Value),
        Part::Text(text) if !text.text.is_empty() => Some(Block::Text(&text.text)),
        other => content_block(other).map(Block::Value),
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
        request.available_tools = vec![Arc::new(spec)].into();
        let body = request_body(
            &AnthropicConfig::new("key", "claude"),
            &request,
            None,
            &mut EncodedTranscript::new(),
        );
        let body: Value = serde_json::from_slice(&body).unwrap();
        let schema = &body["tools"][0]["input_schema"];
        assert_eq!(schema["properties"]["choice"]["type"], "string");
        assert!(schema.get("$defs").is_none(), "{schema}");
    }
}

#[cfg(test)]
mod plain_blocks {
    use super::*;
    use agentkit_core::{Item, ToolResultPart};
    use agentkit_loop::TranscriptView;

    /// What serde_json writes for the `Value` of a plain block.
    fn as_value(block: &Block<'_>) -> Value {
        match block {
            Block::Text(text) => json!({ "type": "text", "text": text }),
            Block::ToolUse(call) => json!({
                "type": "tool_use",
                "id": call.id.as_str(),
                "name": call.name,
                "input": call.input,
            }),
            Block::TextResult(result, _) => tool_result(result),
            Block::Value(value) => value.clone(),
        }
    }

    #[test]
    fn plain_blocks_are_written_as_their_values_serialize() {
        let odd = "quote \" backslash \\ tab \t nl \n cr \r \u{8}\u{c}\u{0}\u{1f}\u{7f} caf\u{e9} \u{1f980}";
        let input = json!({ "path": odd, "n": [1, null, 2.5], "nested": { "b": 1, "a": "x" } });
        let items = vec![
            Item::user(odd),
            Item::new(
                ItemKind::Assistant,
                vec![
                    Part::text(odd),
                    Part::text(""),
                    Part::ToolCall(ToolCallPart::new("call_1", "fs_read", input)),
                ],
            ),
            Item::tool_result(ToolResultPart::success("call_1", odd)),
            Item::tool_result(ToolResultPart::success("call_2", "")),
            Item::tool_result(ToolResultPart::error("call_3", "it failed")),
        ];
        let ordered =
            serde_json::to_string(&json!({ "b": 1, "a": 2 })).unwrap() == r#"{"b":1,"a":2}"#;
        let mut blocks = 0;
        for item in &items {
            for_each_block(item, |_, block| {
                let mut written = Vec::new();
                block.write(&mut written);
                let expected = serde_json::to_vec(&as_value(&block)).unwrap();
                let parsed: Value = serde_json::from_slice(&written).unwrap();
                assert_eq!(parsed, as_value(&block));
                if ordered {
                    assert_eq!(written, expected);
                }
                blocks += 1;
            });
        }
        assert_eq!(blocks, 6);
        // System text too, through the whole encoder.
        let mut encoded = EncodedTranscript::new();
        encoded.sync(
            &TranscriptView::from_items(vec![Item::system(odd)]),
            encode_item,
        );
        let system: Vec<Value> = encoded
            .blocks(0..1)
            .map(|(_, bytes)| serde_json::from_slice(bytes).unwrap())
            .collect();
        let inline = format!("<system>\n{odd}\n</system>");
        assert_eq!(
            system,
            [
                json!({ "type": "text", "text": odd }),
                json!({ "type": "text", "text": inline })
            ]
        );
    }
}
