//! ConverseStream events turned into the loop's turn events, and Bedrock's
//! errors into typed ones.
//!
//! Every frame is an event (`:message-type` `event`, its name in
//! `:event-type`) with a JSON payload, or an exception (`exception`, the
//! name in `:exception-type`) or an error (`error`, `:error-code`). Text
//! and reasoning stream as deltas; a tool call's input arrives as JSON text
//! fragments and is parsed when its block stops. `messageStop` carries the
//! stop reason and `metadata`, the last event, the usage.

use crate::eventstream::Frame;
use agentkit_core::keys;
use agentkit_core::{
    Delta, FinishReason, MetadataMap, PartId, PartKind, TokenUsage, ToolCallPart, ToolInput, Usage,
};
use agentkit_loop::{ModelError, ModelErrorKind as M, ModelTurnEvent, ModelTurnResult};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};

/// The `agentkit.provider` value of this adapter's parts and answers.
pub(crate) const PROVIDER: &str = "bedrock";

enum Block {
    Text(PartId),
    Reasoning(PartId),
    Tool {
        id: String,
        name: String,
        input: String,
    },
}

/// Decodes one streamed answer.
#[derive(Default)]
pub(crate) struct ConverseDecoder {
    blocks: HashMap<u64, Block>,
    next_part: u32,
    calls: usize,
    stop_reason: Option<String>,
    finished: bool,
}

impl ConverseDecoder {
    /// `true` once the final event was decoded.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    /// Decodes one frame into `out`.
    pub(crate) fn on_frame(
        &mut self,
        frame: &Frame,
        out: &mut VecDeque<ModelTurnEvent>,
    ) -> Result<(), ModelError> {
        let payload: Value = serde_json::from_slice(&frame.payload).map_err(|err| {
            ModelError::new(
                M::Protocol,
                format!("a ConverseStream payload is not JSON: {err}"),
            )
        })?;
        match frame.header(":message-type").unwrap_or("event") {
            "exception" => {
                let name = frame.header(":exception-type").unwrap_or("exception");
                return Err(classify(None, name, message_of(&payload)));
            }
            "error" => {
                let name = frame.header(":error-code").unwrap_or("error");
                let message = frame.header(":error-message").unwrap_or("");
                return Err(classify(None, name, message));
            }
            _ => {}
        }
        let index = payload["contentBlockIndex"].as_u64().unwrap_or(0);
        match frame.header(":event-type").unwrap_or("") {
            "contentBlockStart" => {
                if let Some(tool) = payload["start"].get("toolUse") {
                    let field = |f: &str| tool[f].as_str().unwrap_or_default().to_owned();
                    self.blocks.insert(
                        index,
                        Block::Tool {
                            id: field("toolUseId"),
                            name: field("name"),
                            input: String::new(),
                        },
                    );
                }
            }
            "contentBlockDelta" => self.on_delta(index, &payload["delta"], out)?,
            "contentBlockStop" => self.stop_block(index, out)?,
            "messageStop" => {
                self.stop_reason = payload["stopReason"].as_str().map(str::to_owned);
            }
            "metadata" => {
                out.push_back(ModelTurnEvent::Usage(usage_of(&payload["usage"])));
                self.finish(out)?;
            }
            // messageStart and anything newer carry nothing to show.
            _ => {}
        }
        Ok(())
    }

    fn on_delta(
        &mut self,
        index: u64,
        delta: &Value,
        out: &mut VecDeque<ModelTurnEvent>,
    ) -> Result<(), ModelError> {
        if let Some(fragment) = delta["toolUse"]["input"].as_str() {
            match self.blocks.get_mut(&index) {
                Some(Block::Tool { input, .. }) => input.push_str(fragment),
                _ => return Err(protocol("a toolUse delta outside a toolUse block")),
            }
        } else if let Some(text) = delta["text"].as_str() {
            let part_id = self.open(index, PartKind::Text, out);
            out.push_back(ModelTurnEvent::Delta(Delta::AppendText {
                part_id,
                chunk: text.into(),
            }));
        } else if let Some(reasoning) = delta.get("reasoningContent") {
            let part_id = self.open(index, PartKind::Reasoning, out);
            if let Some(text) = reasoning["text"].as_str() {
                out.push_back(ModelTurnEvent::Delta(Delta::AppendText {
                    part_id: part_id.clone(),
                    chunk: text.into(),
                }));
            }
            let signature = reasoning["signature"].as_str().map(str::to_owned);
            let encrypted = reasoning["redactedContent"].as_str().map(str::to_owned);
            if signature.is_some() || encrypted.is_some() {
                out.push_back(ModelTurnEvent::Delta(Delta::ReasoningOpaque {
                    part_id,
                    signature,
                    encrypted,
                }));
            }
        }
        Ok(())
    }

    /// The part of block `index`, begun if needed.
    fn open(&mut self, index: u64, kind: PartKind, out: &mut VecDeque<ModelTurnEvent>) -> PartId {
        match self.blocks.get(&index) {
            Some(Block::Text(id)) if kind == PartKind::Text => return id.clone(),
            Some(Block::Reasoning(id)) if kind == PartKind::Reasoning => return id.clone(),
            _ => {}
        }
        let part_id = PartId::numbered("p", self.next_part.into());
        self.next_part += 1;
        out.push_back(ModelTurnEvent::Delta(Delta::BeginPart {
            part_id: part_id.clone(),
            kind: kind.clone(),
        }));
        let block = if kind == PartKind::Reasoning {
            let mut metadata = MetadataMap::new();
            metadata.insert(keys::PROVIDER.into(), PROVIDER.into());
            out.push_back(ModelTurnEvent::Delta(Delta::SetMetadata {
                part_id: part_id.clone(),
                metadata,
            }));
            Block::Reasoning(part_id.clone())
        } else {
            Block::Text(part_id.clone())
        };
        self.blocks.insert(index, block);
        part_id
    }

    fn stop_block(
        &mut self,
        index: u64,
        out: &mut VecDeque<ModelTurnEvent>,
    ) -> Result<(), ModelError> {
        match self.blocks.remove(&index) {
            Some(Block::Text(part_id) | Block::Reasoning(part_id)) => {
                out.push_back(ModelTurnEvent::Delta(Delta::CommitPart { part_id }));
            }
            Some(Block::Tool { id, name, input }) => {
                let input = ToolInput::from_arguments(&input).map_err(|err| {
                    protocol(format!("the input of tool call {id} is not JSON: {err}"))
                })?;
                self.calls += 1;
                out.push_back(ModelTurnEvent::ToolCall(ToolCallPart::new(id, name, input)));
            }
            None => {}
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut VecDeque<ModelTurnEvent>) -> Result<(), ModelError> {
        let Some(raw) = self.stop_reason.take() else {
            return Err(protocol("metadata arrived before messageStop"));
        };
        let mut indexes: Vec<u64> = self.blocks.keys().copied().collect();
        indexes.sort_unstable();
        for index in indexes {
            self.stop_block(index, out)?;
        }
        let reason = match raw.as_str() {
            "end_turn" | "stop_sequence" if self.calls > 0 => FinishReason::ToolCall,
            "end_turn" | "stop_sequence" => FinishReason::Completed,
            "tool_use" => FinishReason::ToolCall,
            "max_tokens" | "model_context_window_exceeded" => FinishReason::MaxTokens,
            "guardrail_intervened" | "content_filtered" => FinishReason::Blocked,
            other => FinishReason::Other(other.to_owned()),
        };
        let mut result = ModelTurnResult::new(reason);
        result
            .metadata
            .insert(keys::PROVIDER.into(), PROVIDER.into());
        result
            .metadata
            .insert("bedrock.stop_reason".into(), raw.into());
        out.push_back(ModelTurnEvent::Finished(result));
        self.finished = true;
        Ok(())
    }
}

/// Converse's counts: `inputTokens` excludes the cache, so the cached
/// tokens are added back to make the input total.
fn usage_of(usage: &Value) -> Usage {
    let count = |field: &str| usage[field].as_u64().unwrap_or(0);
    let (read, write) = (
        count("cacheReadInputTokens"),
        count("cacheWriteInputTokens"),
    );
    Usage::from_tokens(TokenUsage {
        input_tokens: count("inputTokens") + read + write,
        output_tokens: count("outputTokens"),
        reasoning_tokens: 0,
        cache_read_tokens: read,
        cache_write_tokens: write,
    })
}

fn protocol(message: impl Into<String>) -> ModelError {
    ModelError::new(M::Protocol, message)
}

/// The `message` (or `Message`) of an error body.
pub(crate) fn message_of(body: &Value) -> &str {
    body["message"]
        .as_str()
        .or_else(|| body["Message"].as_str())
        .unwrap_or("")
}

/// A Bedrock error, by its exception name (`ThrottlingException`, from the
/// stream or the `x-amzn-ErrorType` header) and, failing that, its status.
pub(crate) fn classify(status: Option<u16>, name: &str, message: &str) -> ModelError {
    let name = name.split(':').next().unwrap_or(name).to_ascii_lowercase();
    let lower = message.to_ascii_lowercase();
    let too_long = [
        "too long",
        "too many input tokens",
        "context length",
        "context window",
        "maximum context",
    ]
    .iter()
    .any(|w| lower.contains(w));
    let kind = match name.trim_end_matches("exception") {
        "throttling" | "toomanyrequests" => M::RateLimited,
        "serviceunavailable" | "modelnotready" => M::Overloaded,
        "internalserver" | "modelstreamerror" | "internalfailure" => M::Server,
        "modeltimeout" => M::Timeout,
        "validation" | "modelerror" if too_long => M::ContextLengthExceeded,
        "validation" | "resourcenotfound" | "modelerror" | "serialization" => M::InvalidRequest,
        "accessdenied"
        | "unrecognizedclient"
        | "expiredtoken"
        | "invalidsignature"
        | "incompletesignature"
        | "missingauthenticationtoken" => M::Authentication,
        // The account's quota for the model is used up: raising it takes a
        // person, so waiting and retrying does not help.
        "servicequotaexceeded" => M::QuotaExceeded,
        _ => match status {
            Some(429) => M::RateLimited,
            Some(503) => M::Overloaded,
            Some(401 | 403) => M::Authentication,
            Some(400) if too_long => M::ContextLengthExceeded,
            Some(400..=499) => M::InvalidRequest,
            Some(_) => M::Server,
            // Mid-stream and unnamed: the service gave up on the answer.
            None => M::Server,
        },
    };
    let message = if message.is_empty() {
        name.clone()
    } else {
        format!("{name}: {message}")
    };
    let mut error = ModelError::new(kind, message);
    error.status = status;
    error
}
