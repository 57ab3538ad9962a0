//! Messages API stream events turned into the loop's turn events.
//!
//! The stream is a small protocol of its own: `message_start` (ids, input
//! usage), then for each content block a `content_block_start`, its
//! `content_block_delta`s and a `content_block_stop`, then `message_delta`
//! (stop reason, output usage) and `message_stop`; `ping` may come at any
//! time and `error` ends the stream. Text and thinking blocks map to parts
//! one to one. Thinking keeps its signature, and redacted thinking its
//! opaque data, exactly as sent, because the API checks them when they come
//! back. A tool-use block becomes a tool call at its `content_block_stop`,
//! once its streamed JSON input is complete and checked.

use crate::usage::WireUsage;
use agentkit_core::keys;
use agentkit_core::{
    Delta, FinishReason, MetadataMap, PartId, PartKind, TextChunk, ToolCallPart, ToolInput,
};
use agentkit_http::codec::{self, Layout};
use agentkit_http::{DataAhead, DataEnd, Outputs, PriceTable, ProviderError, SseEventRef};
use agentkit_loop::{ModelTurnEvent, ModelTurnResult};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;

/// Content blocks by index: looked up by every delta, so hashed with
/// foldhash rather than SipHash.
type Blocks = HashMap<u64, Block, foldhash::fast::RandomState>;
use std::sync::Arc;

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u64,
        delta: Value,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error,
    #[serde(other)]
    Unknown,
}

/// A `content_block_delta` event, parsed straight into its fields: most
/// events of a stream are these, and the tagged [`StreamEvent`] would buffer
/// each one into an intermediate tree first.
#[derive(Deserialize)]
struct DeltaEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: u64,
    #[serde(borrow)]
    delta: DeltaBody<'a>,
}

/// A content block delta's fields (which are set depends on its type).
#[derive(Deserialize, Default)]
struct DeltaBody<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Cow<'a, str>,
    text: Option<Cow<'a, str>>,
    thinking: Option<Cow<'a, str>>,
    signature: Option<Cow<'a, str>>,
    #[serde(borrow)]
    partial_json: Option<Cow<'a, str>>,
}

/// A text or thinking delta laid out exactly as the Messages API writes
/// it (nearly every event of an answer): `{"type":"content_block_delta",
/// "index":N,"delta":{"type":"text_delta","text":"..."}}` (or
/// `thinking_delta` and `thinking`), its fixed parts compared at once and
/// its two values read and checked. Any other layout (other member order,
/// spacing, more members) is read by [`codec::from_str`]. The caller
/// checks what follows the match: the end of the data, or of its line when
/// the data is read ahead.
#[inline(always)]
fn read_text_delta<const LINE: bool>(layout: &mut Layout<'_, LINE>) -> Option<TextDelta> {
    layout.fixed(r#"{"type":"content_block_delta","index":"#)?;
    let index = layout.u64()?;
    let thinking = if layout.optional(r#","delta":{"type":"text_delta","text":"#) {
        false
    } else {
        layout.fixed(r#","delta":{"type":"thinking_delta","thinking":"#)?;
        true
    };
    // Straight into the delta's chunk, escapes and all.
    let text = layout.text()?;
    layout.fixed("}}")?;
    Some(TextDelta {
        index,
        thinking,
        text,
    })
}

/// What [`read_text_delta`] reads.
struct TextDelta {
    index: u64,
    thinking: bool,
    text: TextChunk,
}

impl TextDelta {
    /// The delta as the general path reads it.
    fn body(&self) -> DeltaBody<'_> {
        let text = Some(Cow::Borrowed(self.text.as_str()));
        if self.thinking {
            DeltaBody {
                kind: Cow::Borrowed("thinking_delta"),
                thinking: text,
                ..DeltaBody::default()
            }
        } else {
            DeltaBody {
                kind: Cow::Borrowed("text_delta"),
                text,
                ..DeltaBody::default()
            }
        }
    }
}

#[derive(Deserialize)]
struct StartMessage {
    id: Option<String>,
    model: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
struct MessageDeltaBody {
    stop_reason: Option<String>,
}

enum Block {
    /// A text or thinking part.
    Part(PartId),
    ToolUse {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    /// A block kind we do not map (server tool use and its results).
    Ignored,
}

/// Decodes one streamed message.
#[derive(Default)]
pub(crate) struct EventDecoder {
    blocks: Blocks,
    /// The text or thinking block the last delta went to, and its part
    /// (always an open `Block::Part` of `blocks`): the next delta most
    /// likely extends it.
    text_block: Option<(u64, PartId)>,
    usage: WireUsage,
    stop_reason: Option<String>,
    message_id: Option<String>,
    model: Option<String>,
    finished: bool,
    /// The forced tool that carries a structured answer: its input is the
    /// answer, handed over as text, not a call to run.
    answer_tool: Option<String>,
    /// Whether a real tool call was handed over.
    calls: bool,
    /// Prices, and the model they are looked up by.
    pricing: Option<(Arc<PriceTable>, String)>,
}

/// A text delta's chunk onto its part (nothing for empty text).
#[inline(always)]
fn append(part_id: &PartId, chunk: TextChunk, out: &mut Outputs<ModelTurnEvent>) {
    if !chunk.is_empty() {
        out.push(ModelTurnEvent::Delta(Delta::AppendText {
            part_id: part_id.clone(),
            chunk,
        }));
    }
}

fn protocol(message: impl Into<String>) -> ProviderError {
    ProviderError::protocol(message)
}

fn text_field(value: &Value, name: &str) -> Option<String> {
    value.get(name).and_then(Value::as_str).map(str::to_owned)
}

fn provider_metadata() -> MetadataMap {
    let mut metadata = MetadataMap::new();
    metadata.insert(keys::PROVIDER.into(), "anthropic".into());
    metadata
}

impl agentkit_http::SseDecoder for EventDecoder {
    type Output = ModelTurnEvent;

    #[inline]
    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        EventDecoder::on_event(self, event, out)
    }

    #[inline(always)]
    fn on_data_ahead(
        &mut self,
        ahead: DataAhead<'_>,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Option<DataEnd> {
        EventDecoder::on_data_ahead(self, ahead, out)
    }

    fn on_end(&mut self, out: &mut Outputs<ModelTurnEvent>) -> Result<(), ProviderError> {
        EventDecoder::on_end(self, out)
    }

    fn is_finished(&self) -> bool {
        EventDecoder::is_finished(self)
    }
}

impl EventDecoder {
    /// A decoder that turns calls of `answer_tool` into the answer's text
    /// and computes costs from `pricing`.
    pub(crate) fn new(
        answer_tool: Option<String>,
        pricing: Option<(Arc<PriceTable>, String)>,
    ) -> Self {
        Self {
            answer_tool,
            pricing,
            ..Self::default()
        }
    }

    fn usage_event(&self) -> ModelTurnEvent {
        let mut usage = self.usage.to_usage();
        if let Some((prices, model)) = &self.pricing {
            prices.fill_cost(self.model.as_deref().unwrap_or(model), &mut usage);
        }
        ModelTurnEvent::Usage(usage)
    }

    /// `true` once `Finished` was produced.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    /// Applies one SSE event: a text delta in the API's layout here (it is
    /// inlined into the stream's read loop), anything else in
    /// [`on_other_event`](Self::on_other_event).
    #[inline]
    pub(crate) fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.trimmed_data();
        if self.finished || event.event == "error" {
            return self.on_other_event(event, data, out);
        }
        // A text delta in the API's layout is one whatever the event's
        // name (the general path goes by the JSON `type` too).
        let mut layout = Layout::new(data);
        if let Some(delta) = read_text_delta(&mut layout)
            && layout.end().is_some()
        {
            // Anything but a delta of an open text or thinking block (a
            // block that never started, a tool-use block) as any delta.
            let Some(part_id) = self.open_part(delta.index) else {
                return self.delta(delta.index, delta.body(), out);
            };
            append(part_id, delta.text, out);
            return Ok(());
        }
        self.on_other_event(event, data, out)
    }

    /// The fast path (see [`SseDecoder::on_data_ahead`](agentkit_http::SseDecoder::on_data_ahead)):
    /// a text or thinking delta of an open block in the API's layout,
    /// matched in its line, goes straight onto its part. Anything else is
    /// left to [`on_event`](Self::on_event), untouched.
    #[inline(always)]
    pub(crate) fn on_data_ahead(
        &mut self,
        ahead: DataAhead<'_>,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Option<DataEnd> {
        if self.finished || ahead.event() == "error" {
            return None;
        }
        let mut layout = ahead.layout();
        let delta = read_text_delta(&mut layout)?;
        let end = ahead.end(&layout)?;
        let part_id = self.open_part(delta.index)?;
        append(part_id, delta.text, out);
        Some(end)
    }

    /// The part of the open text or thinking block `index`: the one the
    /// last delta went to without a lookup, or found and remembered.
    #[inline(always)]
    fn open_part(&mut self, index: u64) -> Option<&PartId> {
        match &self.text_block {
            Some((open, _)) if *open == index => self.text_block.as_ref().map(|(_, id)| id),
            _ => match self.blocks.get(&index) {
                Some(Block::Part(part_id)) => {
                    Some(&self.text_block.insert((index, part_id.clone())).1)
                }
                _ => None,
            },
        }
    }

    /// Any event but a text delta in the API's layout.
    #[inline(never)]
    fn on_other_event(
        &mut self,
        event: SseEventRef<'_>,
        data: &str,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        if event.event == "error" {
            return Err(ProviderError::from_stream_error(data));
        }
        if data.is_empty() {
            return Ok(());
        }
        if event.event == "content_block_delta"
            && let Ok(parsed) = codec::from_str::<DeltaEvent<'_>>(data)
            && parsed.kind == "content_block_delta"
        {
            return self.delta(parsed.index, parsed.delta, out);
        }
        // Anything else, or a delta the fast path could not read (the
        // general path reports what is wrong with it).
        let parsed: StreamEvent = codec::from_str(data).map_err(|err| {
            protocol(format!(
                "a `{}` event is not valid JSON ({err}): {}",
                event.event,
                excerpt(data)
            ))
        })?;
        match parsed {
            StreamEvent::MessageStart { message } => {
                self.message_id = message.id;
                self.model = message.model;
                if let Some(usage) = message.usage {
                    self.usage.merge(usage);
                    out.push(self.usage_event());
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, out)?,
            StreamEvent::ContentBlockDelta { index, delta } => {
                let delta = DeltaBody::deserialize(&delta).map_err(|err| {
                    protocol(format!(
                        "a delta of content block {index} is malformed ({err}): {}",
                        excerpt(data)
                    ))
                })?;
                self.delta(index, delta, out)?
            }
            StreamEvent::ContentBlockStop { index } => self.stop_block(index, out)?,
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = usage {
                    self.usage.merge(usage);
                    out.push(self.usage_event());
                }
            }
            StreamEvent::MessageStop => self.finish(out)?,
            StreamEvent::Ping => {}
            StreamEvent::Error => return Err(ProviderError::from_stream_error(data)),
            // The API may add event types; unknown ones are to be ignored.
            StreamEvent::Unknown => {
                tracing::debug!(event = %event.event, "unknown stream event ignored");
            }
        }
        Ok(())
    }

    /// The body ended without `message_stop`.
    pub(crate) fn on_end(
        &mut self,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        if self.stop_reason.is_some() {
            return self.finish(out);
        }
        Err(protocol("the stream ended before the message was complete"))
    }

    fn start_block(
        &mut self,
        index: u64,
        block: Value,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        if self.blocks.contains_key(&index) {
            return Err(protocol(format!("content block {index} started twice")));
        }
        let part_id = PartId::numbered("p", index);
        let begin = |kind| {
            ModelTurnEvent::Delta(Delta::BeginPart {
                part_id: part_id.clone(),
                kind,
            })
        };
        let state = match block["type"].as_str().unwrap_or_default() {
            "text" => {
                out.push(begin(PartKind::Text));
                if let Some(text) = text_field(&block, "text").filter(|t| !t.is_empty()) {
                    out.push(ModelTurnEvent::Delta(Delta::AppendText {
                        part_id: part_id.clone(),
                        chunk: text.into(),
                    }));
                }
                Block::Part(part_id)
            }
            "thinking" => {
                out.push(begin(PartKind::Reasoning));
                out.push(ModelTurnEvent::Delta(Delta::SetMetadata {
                    part_id: part_id.clone(),
                    metadata: provider_metadata(),
                }));
                if let Some(text) = text_field(&block, "thinking").filter(|t| !t.is_empty()) {
                    out.push(ModelTurnEvent::Delta(Delta::AppendText {
                        part_id: part_id.clone(),
                        chunk: text.into(),
                    }));
                }
                if let Some(signature) = text_field(&block, "signature").filter(|s| !s.is_empty()) {
                    out.push(ModelTurnEvent::Delta(Delta::ReasoningOpaque {
                        part_id: part_id.clone(),
                        signature: Some(signature),
                        encrypted: None,
                    }));
                }
                Block::Part(part_id)
            }
            "redacted_thinking" => {
                out.push(begin(PartKind::Reasoning));
                out.push(ModelTurnEvent::Delta(Delta::SetMetadata {
                    part_id: part_id.clone(),
                    metadata: provider_metadata(),
                }));
                out.push(ModelTurnEvent::Delta(Delta::ReasoningOpaque {
                    part_id: part_id.clone(),
                    signature: None,
                    encrypted: Some(text_field(&block, "data").unwrap_or_default()),
                }));
                Block::Part(part_id)
            }
            "tool_use" => Block::ToolUse {
                id: text_field(&block, "id").unwrap_or_default(),
                name: text_field(&block, "name").unwrap_or_default(),
                json: String::new(),
                initial: block.get("input").cloned().unwrap_or(Value::Null),
            },
            other => {
                tracing::debug!(kind = other, "content block kind not mapped; ignored");
                Block::Ignored
            }
        };
        self.blocks.insert(index, state);
        Ok(())
    }

    fn delta(
        &mut self,
        index: u64,
        delta: DeltaBody<'_>,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        let block = self.blocks.get_mut(&index).ok_or_else(|| {
            protocol(format!(
                "a delta for content block {index}, which never started"
            ))
        })?;
        let kind = delta.kind.as_ref();
        match (block, kind) {
            (Block::Part(part_id), "text_delta" | "thinking_delta") => {
                let chunk = if kind == "text_delta" {
                    delta.text
                } else {
                    delta.thinking
                };
                let chunk = chunk.unwrap_or_default();
                if !chunk.is_empty() {
                    out.push(ModelTurnEvent::Delta(Delta::AppendText {
                        part_id: part_id.clone(),
                        chunk: chunk.into(),
                    }));
                }
            }
            (Block::Part(part_id), "signature_delta") => {
                out.push(ModelTurnEvent::Delta(Delta::ReasoningOpaque {
                    part_id: part_id.clone(),
                    signature: delta.signature.map(Cow::into_owned),
                    encrypted: None,
                }));
            }
            (Block::ToolUse { json, .. }, "input_json_delta") => {
                json.push_str(delta.partial_json.as_deref().unwrap_or_default());
            }
            (Block::Ignored, _) | (_, "citations_delta") => {}
            (_, kind) => {
                return Err(protocol(format!(
                    "a `{kind}` delta does not fit content block {index}"
                )));
            }
        }
        Ok(())
    }

    fn stop_block(
        &mut self,
        index: u64,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        let Some(block) = self.blocks.get_mut(&index) else {
            return Err(protocol(format!(
                "content block {index} stopped without starting"
            )));
        };
        if self
            .text_block
            .as_ref()
            .is_some_and(|(open, _)| *open == index)
        {
            self.text_block = None;
        }
        match std::mem::replace(block, Block::Ignored) {
            Block::Part(part_id) => out.push(ModelTurnEvent::Delta(Delta::CommitPart { part_id })),
            Block::ToolUse {
                id,
                name,
                json,
                initial,
            } => {
                let input = if json.trim().is_empty() {
                    match initial {
                        Value::Null => ToolInput::empty_object(),
                        value => ToolInput::from_value(&value),
                    }
                } else {
                    ToolInput::from_json(&json).map_err(|err| {
                        protocol(format!(
                            "the input of tool call {name} ({id}) is not valid JSON ({err}): {}",
                            excerpt(&json)
                        ))
                    })?
                };
                if id.is_empty() || name.is_empty() {
                    return Err(protocol(format!(
                        "tool-use block {index} has no id or name"
                    )));
                }
                if self.answer_tool.as_deref() == Some(name.as_str()) {
                    // The structured answer, as the text of the reply.
                    let part_id = PartId::numbered("p", index);
                    out.push(ModelTurnEvent::Delta(Delta::BeginPart {
                        part_id: part_id.clone(),
                        kind: PartKind::Text,
                    }));
                    out.push(ModelTurnEvent::Delta(Delta::AppendText {
                        part_id: part_id.clone(),
                        chunk: input.to_string().into(),
                    }));
                    out.push(ModelTurnEvent::Delta(Delta::CommitPart { part_id }));
                } else {
                    self.calls = true;
                    out.push(ModelTurnEvent::ToolCall(ToolCallPart::new(id, name, input)));
                }
            }
            Block::Ignored => {}
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Outputs<ModelTurnEvent>) -> Result<(), ProviderError> {
        let mut open: Vec<u64> = self
            .blocks
            .iter()
            .filter(|(_, b)| !matches!(b, Block::Ignored))
            .map(|(i, _)| *i)
            .collect();
        // In index order: the same stream gives the same message (the map's
        // order changes from one decoder to the next; found by fuzzing).
        open.sort_unstable();
        if !open.is_empty() {
            return Err(protocol(format!(
                "the message ended with content block(s) {open:?} still open"
            )));
        }
        let reason = match self.stop_reason.as_deref() {
            Some("end_turn" | "stop_sequence") | None => FinishReason::Completed,
            // Only the forced answer tool was called: the answer is given.
            Some("tool_use") if !self.calls && self.answer_tool.is_some() => {
                FinishReason::Completed
            }
            Some("tool_use") => FinishReason::ToolCall,
            Some("max_tokens" | "model_context_window_exceeded") => FinishReason::MaxTokens,
            Some("refusal") => FinishReason::Blocked,
            Some(other) => FinishReason::Other(other.to_owned()),
        };
        let mut result = ModelTurnResult::new(reason);
        result.metadata = provider_metadata();
        if let Some(id) = self.message_id.take() {
            result.metadata.insert(keys::RESPONSE_ID.into(), id.into());
        }
        if let Some(model) = self.model.take() {
            result.metadata.insert(keys::MODEL.into(), model.into());
        }
        out.push(ModelTurnEvent::Finished(result));
        self.finished = true;
        Ok(())
    }
}

fn excerpt(text: &str) -> String {
    let mut end = text.len().min(200);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end < text.len() {
        format!("{}…", &text[..end])
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde_json makes of a delta event: (index, type, text).
    fn by_serde(data: &str) -> Option<(u64, String, Option<String>)> {
        let event: DeltaEvent<'_> = serde_json::from_str(data).ok()?;
        (event.kind == "content_block_delta").then_some(())?;
        let text = event.delta.text.map(Cow::into_owned);
        Some((event.index, event.delta.kind.into_owned(), text))
    }

    fn shown(read: Option<(u64, DeltaBody<'_>)>) -> Option<(u64, String, Option<String>)> {
        read.map(|(index, delta)| {
            let text = delta.text.map(Cow::into_owned);
            (index, delta.kind.into_owned(), text)
        })
    }

    /// A delta in the API's layout, and nothing after it.
    fn whole_delta(data: &str) -> Option<TextDelta> {
        let mut layout = Layout::new(data);
        let delta = read_text_delta(&mut layout)?;
        layout.end().map(|()| delta)
    }

    fn fast(data: &str) -> Option<(u64, String, Option<String>)> {
        whole_delta(data).and_then(|delta| shown(Some((delta.index, delta.body()))))
    }

    #[test]
    fn the_readers_give_what_serde_json_gives_or_leave_it_to_serde_json() {
        let events = [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            r#"{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"a \"b\"\n\u00e9 🦀"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"x"}} "#,
            r#"{"index":3,"type":"content_block_delta","delta":{"text":"y","type":"text_delta"}}"#,
            r#"{"type":"content_block_delta", "index":0,"delta":{"type":"text_delta","text":"z"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"z","extra":[1]}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"z"}}}"#,
            r#"{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"z"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud800"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":null}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"text":"a","text":"b"}}"#,
            r#"{"type":"ping"}"#,
        ];
        for data in events {
            let expected = by_serde(data);
            // The layout either gives serde_json's reading or gives up, and
            // the general reader always gives it.
            let read = fast(data);
            if read.is_some() {
                assert_eq!(read, expected, "{data}");
            }
            let general = codec::from_str::<DeltaEvent<'_>>(data)
                .ok()
                .and_then(|event| {
                    (event.kind == "content_block_delta").then_some((event.index, event.delta))
                });
            assert_eq!(shown(general), expected, "{data}");
        }
        // The usual layout takes the exact path; another order the general
        // reader.
        assert!(whole_delta(events[1]).is_some());
        assert!(whole_delta(events[3]).is_none());
        let thinking = r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#;
        let delta = whole_delta(thinking).expect("the thinking layout");
        let body = delta.body();
        assert_eq!(
            (body.kind.as_ref(), body.thinking.as_deref()),
            ("thinking_delta", Some("hm"))
        );
    }
}

#[cfg(test)]
mod block_tests {
    use super::*;

    /// Decodes `events` (name, data) as they would arrive in one read.
    fn decode(
        decoder: &mut EventDecoder,
        events: &[(&str, &str)],
    ) -> Result<Vec<ModelTurnEvent>, ProviderError> {
        let body: String = events
            .iter()
            .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
            .collect();
        let mut out = Outputs::new();
        let mut result = Ok(());
        let mut parser = agentkit_http::SseParser::new(agentkit_http::SseLimits::default());
        let _flow = parser.feed_with(body.as_bytes(), |event| {
            result = decoder.on_event(event, &mut out);
            if result.is_ok() {
                std::ops::ControlFlow::Continue(())
            } else {
                std::ops::ControlFlow::Break(())
            }
        })?;
        result.map(|()| out.into())
    }

    fn feed(decoder: &mut EventDecoder, events: &[(&str, &str)]) -> Vec<ModelTurnEvent> {
        decode(decoder, events).expect("the events decode")
    }

    fn text(part: &str, chunk: &str) -> ModelTurnEvent {
        ModelTurnEvent::Delta(Delta::AppendText {
            part_id: PartId::new(part),
            chunk: chunk.into(),
        })
    }

    fn delta(index: u64, text: &str) -> String {
        format!(
            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{text}"}}}}"#
        )
    }

    #[test]
    fn text_deltas_go_to_their_own_block_whichever_came_last() {
        let mut decoder = EventDecoder::default();
        let start = |index: u64| {
            format!(
                r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"text","text":""}}}}"#
            )
        };
        let (d0, d1, d0b) = (delta(0, "a"), delta(1, "b"), delta(0, "c"));
        let (s0, s1) = (start(0), start(1));
        let events = feed(
            &mut decoder,
            &[
                ("content_block_start", &s0),
                ("content_block_delta", &d0),
                ("content_block_start", &s1),
                ("content_block_delta", &d1),
                ("content_block_delta", &d0b),
                (
                    "content_block_stop",
                    r#"{"type":"content_block_stop","index":0}"#,
                ),
                ("content_block_delta", &d1),
            ],
        );
        let texts: Vec<&ModelTurnEvent> = events
            .iter()
            .filter(|e| matches!(e, ModelTurnEvent::Delta(Delta::AppendText { .. })))
            .collect();
        assert_eq!(
            texts,
            [
                &text("p0", "a"),
                &text("p1", "b"),
                &text("p0", "c"),
                &text("p1", "b")
            ]
        );
        // A delta for a stopped block goes nowhere, as before.
        let after = feed(&mut decoder, &[("content_block_delta", &d0)]);
        assert!(after.is_empty(), "{after:?}");
        // A delta for a block that never started is an error.
        let never = delta(7, "x");
        assert!(decode(&mut decoder, &[("content_block_delta", &never)]).is_err());
    }

    #[test]
    fn escaped_text_reaches_its_delta_whole_on_either_side_of_the_inline_cap() {
        let mut decoder = EventDecoder::default();
        let cap = TextChunk::INLINE_CAP;
        // JSON string bodies as the API writes them: escapes and non-ASCII
        // ending just below, at and just past the chunk's inline room.
        let mut bodies = vec![
            r#"say \"hi\"\n"#.to_owned(),
            r#"caf\u00e9 \ud83e\udd80"#.to_owned(),
        ];
        for plain in cap - 2..=cap + 1 {
            let run = "x".repeat(plain);
            for tail in [r#"\""#, r#"\n\n"#, "é", r#"\u00e9"#] {
                bodies.push(format!("{run}{tail}"));
                bodies.push(format!("{tail}{run}"));
            }
        }
        let start =
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
        let deltas: Vec<String> = bodies.iter().map(|body| delta(0, body)).collect();
        let mut events = vec![("content_block_start", start)];
        events.extend(deltas.iter().map(|d| ("content_block_delta", d.as_str())));
        let decoded = feed(&mut decoder, &events);
        let chunks: Vec<&TextChunk> = decoded
            .iter()
            .filter_map(|event| match event {
                ModelTurnEvent::Delta(Delta::AppendText { chunk, .. }) => Some(chunk),
                _ => None,
            })
            .collect();
        assert_eq!(chunks.len(), bodies.len());
        for (chunk, body) in chunks.iter().zip(&bodies) {
            let expected: String = serde_json::from_str(&format!("\"{body}\"")).unwrap();
            assert_eq!(chunk.as_str(), expected, "{body}");
            assert_eq!(chunk.is_heap_allocated(), expected.len() > cap, "{body}");
        }
    }
}

#[cfg(test)]
mod ahead_tests;
