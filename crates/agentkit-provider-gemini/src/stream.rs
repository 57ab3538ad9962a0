//! `streamGenerateContent` chunks turned into the loop's turn events.
//!
//! With `alt=sse` every event is a whole `GenerateContentResponse`: the
//! candidate's new parts, the cumulative `usageMetadata`, and on the last
//! one a `finishReason`. There is no end marker: the answer is over when
//! the body ends, and a body that ends before any finish reason (or a
//! prompt-level block) was cut.
//!
//! Parts are text, thought summaries (`"thought": true`), and function
//! calls, which arrive whole. A `thoughtSignature` may ride on any part;
//! it is kept where it came (the text part's or the tool call's metadata,
//! or a reasoning part's signature) so the request can put it back on the
//! same part, as Gemini requires for thinking models to call functions.

use agentkit_core::keys;
use agentkit_core::{
    Delta, FinishReason, MetadataMap, PartId, PartKind, TokenUsage, ToolCallPart, ToolInput, Usage,
};
use agentkit_http::{Outputs, PriceTable, ProviderError, SseEventRef};
use agentkit_loop::{ModelTurnEvent, ModelTurnResult};
use serde_json::{Value, json};

use std::sync::Arc;

/// The `agentkit.provider` value of this adapter's parts and answers.
pub(crate) const PROVIDER: &str = "gemini";
/// The metadata key of a thought signature on a text part or tool call.
pub(crate) const SIGNATURE: &str = "gemini.thought_signature";
/// The metadata key of a function call id Gemini chose itself.
pub(crate) const CALL_ID: &str = "gemini.call_id";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thought,
}

/// Decodes one streamed answer.
pub(crate) struct GeminiDecoder {
    fallback_ids: String,
    pricing: Option<(Arc<PriceTable>, String)>,
    next_part: u32,
    open: Option<(PartId, Open)>,
    calls: usize,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    block_reason: Option<String>,
    response_id: Option<String>,
    model: Option<String>,
    finished: bool,
}

impl GeminiDecoder {
    /// A decoder naming calls without an id `<fallback_ids><position>`.
    pub(crate) fn new(
        fallback_ids: impl Into<String>,
        pricing: Option<(Arc<PriceTable>, String)>,
    ) -> Self {
        Self {
            fallback_ids: fallback_ids.into(),
            pricing,
            next_part: 0,
            open: None,
            calls: 0,
            usage: None,
            finish_reason: None,
            block_reason: None,
            response_id: None,
            model: None,
            finished: false,
        }
    }

    fn on_chunk(&mut self, chunk: &Value, out: &mut Outputs<ModelTurnEvent>) {
        if let Some(reason) = chunk["promptFeedback"]["blockReason"].as_str() {
            self.block_reason = Some(reason.to_owned());
        }
        if let Some(usage) = chunk.get("usageMetadata").filter(|u| u.is_object()) {
            self.usage = Some(usage_of(usage));
        }
        for (field, slot) in [
            ("responseId", &mut self.response_id),
            ("modelVersion", &mut self.model),
        ] {
            if slot.is_none() {
                *slot = chunk[field].as_str().map(str::to_owned);
            }
        }
        // We never ask for more than one candidate.
        let candidate = &chunk["candidates"][0];
        for part in candidate["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            self.on_part(part, out);
        }
        if let Some(reason) = candidate["finishReason"].as_str() {
            self.finish_reason = Some(reason.to_owned());
        }
    }

    fn on_part(&mut self, part: &Value, out: &mut Outputs<ModelTurnEvent>) {
        let signature = part["thoughtSignature"].as_str().filter(|s| !s.is_empty());
        if let Some(call) = part.get("functionCall") {
            self.commit(out);
            let given = call["id"].as_str().filter(|id| !id.is_empty());
            let id = given.map_or_else(
                || format!("{}{}", self.fallback_ids, self.calls),
                str::to_owned,
            );
            // Kept as text: the chunk's parsed value goes with the chunk.
            let input = match &call["args"] {
                Value::Null => ToolInput::empty_object(),
                args => ToolInput::from_value(args),
            };
            let mut tool_call =
                ToolCallPart::new(id, call["name"].as_str().unwrap_or_default(), input);
            if let Some(id) = given {
                tool_call.metadata.insert(CALL_ID.into(), json!(id));
            }
            if let Some(signature) = signature {
                tool_call
                    .metadata
                    .insert(SIGNATURE.into(), json!(signature));
            }
            self.calls += 1;
            out.push(ModelTurnEvent::ToolCall(tool_call));
            return;
        }
        let Some(text) = part["text"].as_str() else {
            return;
        };
        let kind = if part["thought"] == true {
            Open::Thought
        } else {
            Open::Text
        };
        if !text.is_empty() {
            let part_id = self.open(kind, out);
            out.push(ModelTurnEvent::Delta(Delta::AppendText {
                part_id,
                chunk: text.into(),
            }));
        }
        let Some(signature) = signature else {
            return;
        };
        match &self.open {
            Some((part_id, Open::Text)) if kind == Open::Text => {
                let mut metadata = MetadataMap::new();
                metadata.insert(SIGNATURE.into(), json!(signature));
                out.push(ModelTurnEvent::Delta(Delta::SetMetadata {
                    part_id: part_id.clone(),
                    metadata,
                }));
            }
            // On a thought, or alone: a reasoning part carries it.
            _ => {
                let part_id = self.open(Open::Thought, out);
                out.push(ModelTurnEvent::Delta(Delta::ReasoningOpaque {
                    part_id,
                    signature: Some(signature.to_owned()),
                    encrypted: None,
                }));
            }
        }
    }

    /// The open part of this kind, begun (and the other one committed) if
    /// needed.
    fn open(&mut self, kind: Open, out: &mut Outputs<ModelTurnEvent>) -> PartId {
        if let Some((id, open)) = &self.open
            && *open == kind
        {
            return id.clone();
        }
        self.commit(out);
        let part_id = PartId::numbered("p", self.next_part.into());
        self.next_part += 1;
        let part_kind = match kind {
            Open::Text => PartKind::Text,
            Open::Thought => PartKind::Reasoning,
        };
        out.push(ModelTurnEvent::Delta(Delta::BeginPart {
            part_id: part_id.clone(),
            kind: part_kind,
        }));
        if kind == Open::Thought {
            let mut metadata = MetadataMap::new();
            metadata.insert(keys::PROVIDER.into(), PROVIDER.into());
            out.push(ModelTurnEvent::Delta(Delta::SetMetadata {
                part_id: part_id.clone(),
                metadata,
            }));
        }
        self.open = Some((part_id.clone(), kind));
        part_id
    }

    fn commit(&mut self, out: &mut Outputs<ModelTurnEvent>) {
        if let Some((part_id, _)) = self.open.take() {
            out.push(ModelTurnEvent::Delta(Delta::CommitPart { part_id }));
        }
    }

    fn finish(&mut self, out: &mut Outputs<ModelTurnEvent>) {
        self.commit(out);
        let mut usage = self.usage.take().unwrap_or_else(Usage::unknown);
        if let Some((prices, model)) = &self.pricing {
            prices.fill_cost(self.model.as_deref().unwrap_or(model), &mut usage);
        }
        out.push(ModelTurnEvent::Usage(usage));
        let reason = match (self.finish_reason.as_deref(), &self.block_reason) {
            (None, Some(_)) => FinishReason::Blocked,
            (Some("STOP") | None, _) if self.calls > 0 => FinishReason::ToolCall,
            (Some("STOP") | None, _) => FinishReason::Completed,
            (Some("MAX_TOKENS"), _) => FinishReason::MaxTokens,
            (
                Some(
                    "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
                    | "IMAGE_SAFETY" | "LANGUAGE",
                ),
                _,
            ) => FinishReason::Blocked,
            (Some(other), _) => FinishReason::Other(other.to_ascii_lowercase()),
        };
        let mut result = ModelTurnResult::new(reason);
        let metadata = &mut result.metadata;
        metadata.insert(keys::PROVIDER.into(), PROVIDER.into());
        let raw = self.finish_reason.take().or(self.block_reason.take());
        for (key, value) in [
            ("gemini.finish_reason", raw),
            (keys::RESPONSE_ID, self.response_id.take()),
            (keys::MODEL, self.model.take()),
        ] {
            if let Some(value) = value {
                metadata.insert(key.into(), value.into());
            }
        }
        out.push(ModelTurnEvent::Finished(result));
        self.finished = true;
    }
}

/// Gemini's counts: the prompt includes cached tokens; thoughts are
/// counted apart from the candidates, and are output all the same.
fn usage_of(usage: &Value) -> Usage {
    let count = |field: &str| usage[field].as_u64().unwrap_or(0);
    let thoughts = count("thoughtsTokenCount");
    Usage::from_tokens(TokenUsage {
        input_tokens: count("promptTokenCount") + count("toolUsePromptTokenCount"),
        output_tokens: count("candidatesTokenCount") + thoughts,
        reasoning_tokens: thoughts,
        cache_read_tokens: count("cachedContentTokenCount"),
        cache_write_tokens: 0,
    })
}

impl agentkit_http::SseDecoder for GeminiDecoder {
    type Output = ModelTurnEvent;

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.trimmed_data();
        if self.finished || data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|err| {
            let mut end = data.len().min(200);
            while !data.is_char_boundary(end) {
                end -= 1;
            }
            ProviderError::protocol(format!(
                "a stream chunk is not valid JSON ({err}): {}",
                &data[..end]
            ))
        })?;
        if chunk.get("error").is_some() {
            return Err(ProviderError::from_stream_error(data));
        }
        self.on_chunk(&chunk, out);
        Ok(())
    }

    fn on_end(&mut self, out: &mut Outputs<ModelTurnEvent>) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        if self.finish_reason.is_none() && self.block_reason.is_none() {
            return Err(ProviderError::protocol(
                "the stream ended before a finish reason",
            ));
        }
        self.finish(out);
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}
