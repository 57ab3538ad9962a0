//! Responses API stream events turned into the loop's turn events.
//!
//! Every event names its `type` and the output item it belongs to
//! (`output_index`). Output items are messages (text streamed by
//! `response.output_text.delta`, refusals by `response.refusal.delta`),
//! reasoning items (summaries streamed by
//! `response.reasoning_summary_text.delta`, the encrypted content in the
//! finished item) and function calls (arguments streamed by
//! `response.function_call_arguments.delta`). Text and reasoning become
//! parts as they stream; a reasoning part keeps the item id and encrypted
//! content so it can be sent back. Tool calls are handed over only when the
//! response is complete, once their arguments parse as JSON.
//!
//! Hosted tools' items (web search, file search, code interpreter, MCP)
//! are kept whole as custom parts (see `hosted`), and a finished message's
//! citations go on its text part; an answer that ends waiting for an MCP
//! approval finishes as `Other("mcp_approval_request")`, never as an empty
//! success.
//!
//! The answer ends with `response.completed`, `response.incomplete`
//! (`max_output_tokens`, `content_filter`) or `response.failed`; an `error`
//! event is an error, and a stream that ends before any of these is cut.

use super::hosted;
use agentkit_core::keys;
use agentkit_core::{
    CostUsage, Delta, FinishReason, MetadataMap, PartId, PartKind, TextChunk, TokenUsage,
    ToolCallPart, ToolInput, Usage,
};
use agentkit_http::codec::{self, Layout};
use agentkit_http::{Outputs, PriceTable, ProviderError, SseEventRef};
use agentkit_loop::{ModelTurnEvent, ModelTurnResult};
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// The `agentkit.provider` value of this adapter's parts and answers.
pub(crate) const PROVIDER: &str = "openai-responses";

/// The metadata key holding an output item's id (`rs_...`, `fc_...`).
pub(crate) const ITEM_ID: &str = "openai.item_id";

/// The metadata key of a text part's citations (`url_citation`,
/// `file_citation` annotations), as the API sent them.
pub(crate) const ANNOTATIONS: &str = "openai.annotations";

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default)]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Response>,
}

/// A text delta laid out exactly as the Responses API writes it (nearly
/// every event of an answer; any other is read with [`codec::from_str`]): `{"type":"response.output_text.delta",
/// "sequence_number":N,"item_id":"..","output_index":N,"content_index":N,
/// "delta":".."[,"logprobs":[]][,"obfuscation":".."]}`, its fixed parts
/// compared at once and its values read and checked. Gives (output_index,
/// delta), what the general reader would read; `None` for any other
/// layout, which the general reader takes.
///
/// `known` is the middle (from `,"item_id"` to `"delta":`) of the last
/// delta read and the output index in it: the deltas of one text repeat
/// it byte for byte, so one comparison checks it (the same bytes read the
/// same). The third value is the middle's span when it was read instead.
fn read_text_delta<'a>(data: &'a str, known: Option<(&str, u64)>) -> Option<TextDelta<'a>> {
    let mut layout = Layout::new(data);
    layout.fixed(r#"{"type":"response.output_text.delta","sequence_number":"#)?;
    layout.u64()?;
    let (index, middle) = match known {
        Some((middle, index)) if layout.optional(middle) => (index, None),
        _ => {
            let start = layout.offset();
            layout.fixed(r#","item_id":"#)?;
            layout.str()?;
            layout.fixed(r#","output_index":"#)?;
            let index = layout.u64()?;
            layout.fixed(r#","content_index":"#)?;
            layout.u64()?;
            layout.fixed(r#","delta":"#)?;
            (index, Some((start, layout.offset())))
        }
    };
    let delta = layout.str()?;
    layout.optional(r#","logprobs":[]"#);
    if layout.optional(r#","obfuscation":"#) {
        layout.str()?;
    }
    layout.fixed("}")?;
    layout.end()?;
    Some((index, delta, middle))
}

/// (output index, delta, the middle's span when it was read) of a text
/// delta.
type TextDelta<'a> = (u64, Cow<'a, str>, Option<(usize, usize)>);

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
    /// Reported by gateways such as OpenRouter, in US dollars.
    #[serde(default)]
    cost: Option<f64>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: u64,
}

impl WireUsage {
    fn into_usage(self) -> Usage {
        let mut usage = Usage::from_tokens(TokenUsage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: self.output_tokens_details.map_or(0, |d| d.reasoning_tokens),
            cache_read_tokens: self.input_tokens_details.map_or(0, |d| d.cached_tokens),
            cache_write_tokens: 0,
        });
        usage.cost = self.cost.filter(|c| c.is_finite()).map(|amount| CostUsage {
            amount,
            currency: "USD".to_owned(),
        });
        usage
    }
}

/// A function call being streamed.
#[derive(Default)]
struct CallBuilder {
    item_id: String,
    call_id: String,
    name: String,
    arguments: String,
    /// Set once `response.output_item.done` gave the final arguments.
    done: bool,
}

/// Decodes one streamed response.
pub(crate) struct ResponsesDecoder {
    next_part: u32,
    /// Open text or reasoning parts, by output index (and summary index
    /// for reasoning, whose summaries are joined into one part).
    open: HashMap<u64, (PartId, PartKind, Option<u64>), foldhash::fast::RandomState>,
    /// The open text part the last text delta went to, by output index
    /// (always one of `open`): the next delta most likely extends it.
    text_part: Option<(u64, PartId)>,
    calls: Vec<(u64, CallBuilder)>,
    fallback_ids: String,
    pricing: Option<(Arc<PriceTable>, String)>,
    /// Whether a hosted MCP tool asked for the host's approval.
    awaiting_approval: bool,
    /// The middle of the last text delta read (item id, output and content
    /// index) and its output index: the next delta most likely repeats it.
    middle: Option<(String, u64)>,
    finished: bool,
}

impl ResponsesDecoder {
    /// A decoder naming id-less calls `<fallback_ids><position>` and
    /// computing costs from `pricing` when none is reported.
    pub(crate) fn new(
        fallback_ids: impl Into<String>,
        pricing: Option<(Arc<PriceTable>, String)>,
    ) -> Self {
        Self {
            next_part: 0,
            open: HashMap::default(),
            text_part: None,
            calls: Vec::new(),
            fallback_ids: fallback_ids.into(),
            pricing,
            awaiting_approval: false,
            middle: None,
            finished: false,
        }
    }

    fn begin(
        &mut self,
        index: u64,
        kind: PartKind,
        item_id: Option<&str>,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> PartId {
        if let Some((id, open_kind, _)) = self.open.get(&index)
            && same_kind(open_kind, &kind)
        {
            return id.clone();
        }
        self.commit(index, out);
        let part_id = PartId::numbered("p", self.next_part.into());
        self.next_part += 1;
        let reasoning = kind == PartKind::Reasoning;
        out.push(ModelTurnEvent::Delta(Delta::BeginPart {
            part_id: part_id.clone(),
            kind: kind.clone(),
        }));
        if reasoning {
            let mut metadata = MetadataMap::new();
            metadata.insert(keys::PROVIDER.into(), PROVIDER.into());
            if let Some(id) = item_id {
                metadata.insert(ITEM_ID.into(), id.into());
            }
            out.push(ModelTurnEvent::Delta(Delta::SetMetadata {
                part_id: part_id.clone(),
                metadata,
            }));
        }
        self.open.insert(index, (part_id.clone(), kind, None));
        part_id
    }

    fn commit(&mut self, index: u64, out: &mut Outputs<ModelTurnEvent>) {
        if self
            .text_part
            .as_ref()
            .is_some_and(|(open, _)| *open == index)
        {
            self.text_part = None;
        }
        if let Some((part_id, _, _)) = self.open.remove(&index) {
            out.push(ModelTurnEvent::Delta(Delta::CommitPart { part_id }));
        }
    }

    fn on_text(&mut self, index: u64, text: TextChunk, out: &mut Outputs<ModelTurnEvent>) {
        if text.is_empty() {
            return;
        }
        let part_id = match &self.text_part {
            Some((open, part_id)) if *open == index => part_id.clone(),
            _ => {
                let part_id = self.begin(index, PartKind::Text, None, out);
                self.text_part = Some((index, part_id.clone()));
                part_id
            }
        };
        out.push(ModelTurnEvent::Delta(Delta::AppendText {
            part_id,
            chunk: text,
        }));
    }

    fn on_summary(
        &mut self,
        index: u64,
        summary: Option<u64>,
        text: Cow<'_, str>,
        out: &mut Outputs<ModelTurnEvent>,
    ) {
        let part_id = self.begin(index, PartKind::Reasoning, None, out);
        let Some(open) = self.open.get_mut(&index) else {
            return;
        };
        // Summaries of one item are paragraphs of one part.
        let chunk = if open.2.is_some() && open.2 != summary {
            TextChunk::from(format!("\n\n{text}"))
        } else {
            text.into()
        };
        open.2 = summary.or(Some(0));
        if !chunk.is_empty() {
            out.push(ModelTurnEvent::Delta(Delta::AppendText { part_id, chunk }));
        }
    }

    fn on_item_added(&mut self, index: u64, item: &Value, out: &mut Outputs<ModelTurnEvent>) {
        match item["type"].as_str() {
            Some("reasoning") => {
                self.begin(index, PartKind::Reasoning, item["id"].as_str(), out);
            }
            Some("function_call") => {
                let call = self.call(index);
                call.item_id = item["id"].as_str().unwrap_or_default().to_owned();
                call.call_id = item["call_id"].as_str().unwrap_or_default().to_owned();
                call.name = item["name"].as_str().unwrap_or_default().to_owned();
                call.arguments = item["arguments"].as_str().unwrap_or_default().to_owned();
            }
            _ => {}
        }
    }

    fn on_item_done(&mut self, index: u64, item: &Value, out: &mut Outputs<ModelTurnEvent>) {
        match item["type"].as_str() {
            Some("reasoning") => {
                let part_id = self.begin(index, PartKind::Reasoning, item["id"].as_str(), out);
                // The summary deltas may have been skipped by a server; the
                // finished item has the whole summary.
                let streamed = self.open.get(&index).is_some_and(|o| o.2.is_some());
                if !streamed {
                    let summary: Vec<&str> = item["summary"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|s| s["text"].as_str())
                        .collect();
                    if !summary.is_empty() {
                        out.push(ModelTurnEvent::Delta(Delta::AppendText {
                            part_id: part_id.clone(),
                            chunk: summary.join("\n\n").into(),
                        }));
                    }
                }
                if let Some(encrypted) = item["encrypted_content"].as_str() {
                    out.push(ModelTurnEvent::Delta(Delta::ReasoningOpaque {
                        part_id,
                        signature: None,
                        encrypted: Some(encrypted.to_owned()),
                    }));
                }
                self.commit(index, out);
            }
            Some("function_call") => {
                let call = self.call(index);
                for (field, value) in [
                    (&mut call.item_id, &item["id"]),
                    (&mut call.call_id, &item["call_id"]),
                    (&mut call.name, &item["name"]),
                ] {
                    if let Some(text) = value.as_str().filter(|t| !t.is_empty()) {
                        *field = text.to_owned();
                    }
                }
                if let Some(arguments) = item["arguments"].as_str() {
                    call.arguments = arguments.to_owned();
                }
                call.done = true;
            }
            Some("message") => {
                self.annotate(index, item, out);
                self.commit(index, out);
            }
            Some(other) => match hosted::hosted_kind(other) {
                Some(kind) => {
                    self.awaiting_approval |= other == "mcp_approval_request";
                    self.hosted(index, kind, item, out);
                }
                None => self.commit(index, out),
            },
            None => self.commit(index, out),
        }
    }

    /// A hosted tool's finished item, whole, as a custom part.
    fn hosted(
        &mut self,
        index: u64,
        name: String,
        item: &Value,
        out: &mut Outputs<ModelTurnEvent>,
    ) {
        self.commit(index, out);
        let part_id = PartId::numbered("p", self.next_part.into());
        self.next_part += 1;
        let mut metadata = MetadataMap::new();
        metadata.insert(keys::PROVIDER.into(), PROVIDER.into());
        if let Some(id) = item["id"].as_str() {
            metadata.insert(ITEM_ID.into(), id.into());
        }
        out.extend(
            [
                Delta::BeginPart {
                    part_id: part_id.clone(),
                    kind: PartKind::Custom { name },
                },
                Delta::ReplaceStructured {
                    part_id: part_id.clone(),
                    value: item.clone(),
                },
                Delta::SetMetadata {
                    part_id: part_id.clone(),
                    metadata,
                },
                Delta::CommitPart { part_id },
            ]
            .map(ModelTurnEvent::Delta),
        );
    }

    /// A finished message's citations (web search sources, file search
    /// hits) on its text part, under `openai.annotations`.
    fn annotate(&mut self, index: u64, item: &Value, out: &mut Outputs<ModelTurnEvent>) {
        let Some((part_id, PartKind::Text, _)) = self.open.get(&index) else {
            return;
        };
        let annotations: Vec<Value> = item["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|content| content["annotations"].as_array())
            .flatten()
            .cloned()
            .collect();
        if annotations.is_empty() {
            return;
        }
        let mut metadata = MetadataMap::new();
        metadata.insert(ANNOTATIONS.into(), Value::Array(annotations));
        out.push(ModelTurnEvent::Delta(Delta::SetMetadata {
            part_id: part_id.clone(),
            metadata,
        }));
    }

    fn call(&mut self, index: u64) -> &mut CallBuilder {
        let at = match self.calls.iter().position(|(i, _)| *i == index) {
            Some(at) => at,
            None => {
                self.calls.push((index, CallBuilder::default()));
                self.calls.len() - 1
            }
        };
        &mut self.calls[at].1
    }

    /// Checks the calls and ends the answer; nothing is emitted when a
    /// call is broken.
    fn finish(
        &mut self,
        response: Response,
        incomplete: bool,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        let mut calls = Vec::with_capacity(self.calls.len());
        for (position, (_, builder)) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            calls.push(self.tool_call(position, builder)?);
        }
        let mut open: Vec<u64> = self.open.keys().copied().collect();
        open.sort_unstable();
        for index in open {
            self.commit(index, out);
        }
        let has_calls = !calls.is_empty();
        out.extend(calls.into_iter().map(ModelTurnEvent::ToolCall));
        let mut usage = match response.usage {
            Some(usage) => usage.into_usage(),
            None => Usage::unknown(),
        };
        if let Some((prices, model)) = &self.pricing {
            prices.fill_cost(response.model.as_deref().unwrap_or(model), &mut usage);
        }
        out.push(ModelTurnEvent::Usage(usage));
        let reason = match response.incomplete_details.and_then(|d| d.reason) {
            Some(reason) if incomplete => match reason.as_str() {
                "max_output_tokens" => FinishReason::MaxTokens,
                "content_filter" => FinishReason::Blocked,
                other => FinishReason::Other(other.to_owned()),
            },
            None if incomplete => FinishReason::Other("incomplete".to_owned()),
            _ if has_calls => FinishReason::ToolCall,
            // Nothing happens until the host approves or declines.
            _ if self.awaiting_approval => FinishReason::Other(hosted::AWAITING_APPROVAL.into()),
            _ => FinishReason::Completed,
        };
        let mut result = ModelTurnResult::new(reason);
        result
            .metadata
            .insert(keys::PROVIDER.into(), PROVIDER.into());
        if let Some(id) = response.id {
            result.metadata.insert(keys::RESPONSE_ID.into(), id.into());
        }
        if let Some(model) = response.model {
            result.metadata.insert(keys::MODEL.into(), model.into());
        }
        out.push(ModelTurnEvent::Finished(result));
        self.finished = true;
        Ok(())
    }

    fn tool_call(
        &self,
        position: usize,
        builder: CallBuilder,
    ) -> Result<ToolCallPart, ProviderError> {
        if builder.name.is_empty() {
            return Err(ProviderError::protocol(format!(
                "function call {position} has no name"
            )));
        }
        if !builder.done {
            return Err(ProviderError::protocol(format!(
                "function call {} ({}) was never finished",
                builder.name, builder.call_id
            )));
        }
        let input = ToolInput::from_arguments(&builder.arguments).map_err(|err| {
            ProviderError::protocol(format!(
                "the arguments of function call {} ({}) are not valid JSON ({err}): {}",
                builder.name,
                builder.call_id,
                excerpt(&builder.arguments)
            ))
        })?;
        let id = if builder.call_id.is_empty() {
            format!("{}{position}", self.fallback_ids)
        } else {
            builder.call_id
        };
        let mut call = ToolCallPart::new(id, builder.name, input);
        if !builder.item_id.is_empty() {
            call.metadata.insert(ITEM_ID.into(), json!(builder.item_id));
        }
        Ok(call)
    }
}

impl agentkit_http::SseDecoder for ResponsesDecoder {
    type Output = ModelTurnEvent;

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        let data = event.trimmed_data();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let known = self
            .middle
            .as_ref()
            .map(|(middle, index)| (middle.as_str(), *index));
        if let Some((index, delta, middle)) = read_text_delta(data, known) {
            if let Some((start, end)) = middle {
                let kept = self.middle.get_or_insert_with(Default::default);
                data[start..end].clone_into(&mut kept.0);
                kept.1 = index;
            }
            self.on_text(index, delta.into(), out);
            return Ok(());
        }
        let parsed = codec::from_str::<Event<'_>>(data).map_err(|err| {
            ProviderError::protocol(format!(
                "a stream event is not valid JSON ({err}): {}",
                excerpt(data)
            ))
        })?;
        let index = parsed.output_index.unwrap_or(0);
        match parsed.kind.as_ref() {
            "response.output_text.delta" | "response.refusal.delta" => {
                self.on_text(index, parsed.delta.unwrap_or_default().into(), out);
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let text = parsed.delta.unwrap_or_default();
                self.on_summary(index, parsed.summary_index, text, out);
            }
            "response.function_call_arguments.delta" => {
                let delta = parsed.delta.unwrap_or_default();
                self.call(index).arguments.push_str(&delta);
            }
            "response.output_item.added" => {
                if let Some(item) = &parsed.item {
                    self.on_item_added(index, item, out);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = &parsed.item {
                    self.on_item_done(index, item, out);
                }
            }
            "response.completed" | "response.incomplete" => {
                let incomplete = parsed.kind == "response.incomplete";
                let response = parsed.response.ok_or_else(|| {
                    ProviderError::protocol(format!("{} without its response", parsed.kind))
                })?;
                self.finish(response, incomplete, out)?;
            }
            "response.failed" => {
                let error = parsed
                    .response
                    .and_then(|r| r.error)
                    .unwrap_or_else(|| json!({ "message": "the response failed" }));
                return Err(ProviderError::from_stream_error(
                    &json!({ "error": error }).to_string(),
                ));
            }
            "error" => return Err(ProviderError::from_stream_error(data)),
            // Lifecycle and bookkeeping events carry nothing new:
            // response.created / in_progress / queued, content_part.*,
            // *.done duplicates of streamed text, annotations.
            _ => {}
        }
        Ok(())
    }

    fn on_end(&mut self, _out: &mut Outputs<ModelTurnEvent>) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        Err(ProviderError::protocol(
            "the stream ended before the response was completed",
        ))
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}

/// `a == b`, without a call for the two kinds parts are begun with here.
#[inline]
fn same_kind(a: &PartKind, b: &PartKind) -> bool {
    match (a, b) {
        (PartKind::Text, PartKind::Text) | (PartKind::Reasoning, PartKind::Reasoning) => true,
        (PartKind::Text | PartKind::Reasoning, _) => false,
        _ => a == b,
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

    #[test]
    fn the_text_delta_reader_reads_what_the_general_readers_read_or_leaves_it() {
        let head = r#"{"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":2,"content_index":0,"delta":"#;
        let events = [
            format!(r#"{head}"caf\u00e9 \"x\"\n"}}"#),
            format!(r#"{head}"a","logprobs":[],"obfuscation":"Qv3"}}"#),
            format!(r#"{head}""}}"#),
            // Not the layout: the general readers decide.
            format!(r#"{head}"a","logprobs":[1]}}"#),
            format!(r#"{head}"a" }}"#),
            format!(r#"{head}null}}"#),
            format!(r#"{head}"\ud800"}}"#),
            format!(r#"{head}"a"}}}}"#),
            format!(r#"{head}"a","output_index":3}}"#),
        ];
        let mut read = 0;
        for data in &events {
            let Some((index, delta, middle)) = read_text_delta(data, None) else {
                continue;
            };
            read += 1;
            // The middle read is what the next delta is compared with; one
            // that differs is read.
            let (start, end) = middle.expect("the middle was read");
            let middle = &data[start..end];
            assert!(middle.starts_with(r#","item_id":"#) && middle.ends_with(r#""delta":"#));
            let again = read_text_delta(data, Some((middle, 7))).expect("read again");
            assert_eq!((again.0, &again.1, again.2), (7, &delta, None));
            let other = read_text_delta(data, Some((r#","item_id":"x"#, 7))).expect("read");
            assert_eq!(
                (other.0, &other.1, other.2),
                (index, &delta, Some((start, end)))
            );
            let general: Event<'_> = codec::from_str(data).expect("the general reader reads it");
            let serde: Event<'_> = serde_json::from_str(data).expect("serde_json reads it");
            for event in [general, serde] {
                assert_eq!(event.kind, "response.output_text.delta");
                assert_eq!(event.output_index, Some(index), "{data}");
                assert_eq!(event.delta.as_deref(), Some(delta.as_ref()), "{data}");
            }
        }
        assert_eq!(read, 3, "the usual layouts take the exact path");
    }
}
