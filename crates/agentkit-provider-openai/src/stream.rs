//! `chat.completion.chunk` events turned into the loop's turn events.
//!
//! Chunks carry three interleaved things: visible text (`content`),
//! reasoning (`reasoning_content` from DeepSeek, vLLM and llama.cpp,
//! `reasoning` from OpenRouter and Ollama), and tool calls streamed in
//! fragments keyed by `index`. Text and reasoning become parts through
//! begin/append/commit deltas. Tool calls are assembled and handed over only
//! when the answer is complete, once their arguments can be checked as JSON:
//! a call with broken arguments is a protocol error, not a tool failure.
//!
//! The end of an answer is the `finish_reason`; `data: [DONE]` and the usage
//! chunk normally follow it, but a stream that stops after the finish
//! reason is still a complete answer. One that stops before is not.

use crate::usage::WireUsage;
use agentkit_core::keys;
use agentkit_core::{
    Delta, FinishReason, MetadataMap, PartId, PartKind, TextChunk, ToolCallPart, ToolInput,
};
use agentkit_http::PriceTable;
#[cfg(test)]
use agentkit_http::SseEvent;
use agentkit_http::codec::{self, Layout};
use agentkit_http::{Outputs, ProviderError, SseEventRef};
use agentkit_loop::{ModelTurnEvent, ModelTurnResult};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// An optional string, borrowed from the input when it has no escapes.
/// Serde borrows a `Cow<str>` field marked `borrow`, but not one inside an
/// `Option`: that one is always copied into a new `String`.
fn borrowed<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    #[derive(Deserialize)]
    struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Borrowed<'a>>::deserialize(deserializer)?.map(|b| b.0))
}

// Strings borrow from the event's data where they can: at tens of
// thousands of chunks per answer, per-chunk allocations of the id and model
// show up in the decoding cost.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow, deserialize_with = "borrowed")]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "borrowed")]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Choices<'a>,
    usage: Option<WireUsage>,
    /// Groq reports usage here, in the last chunk.
    x_groq: Option<XGroq>,
    // Only its presence matters; the whole event is reported as the error.
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct XGroq {
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(borrow)]
    delta: Option<WireDelta<'a>>,
    #[serde(default, borrow, deserialize_with = "borrowed")]
    finish_reason: Option<Cow<'a, str>>,
}

/// The choices with index 0, in order. We never ask for `n > 1`, so there
/// is one, and collecting the array into a `Vec` would cost an allocation
/// per chunk; other choices are skipped without being kept.
#[derive(Default)]
struct Choices<'a> {
    first: Option<Choice<'a>>,
    more: Vec<Choice<'a>>,
}

impl<'a> Choices<'a> {
    /// Keeps a choice of index 0; others are another answer.
    fn keep(&mut self, choice: Choice<'a>) {
        if choice.index != 0 {
        } else if self.first.is_none() {
            self.first = Some(choice);
        } else {
            self.more.push(choice);
        }
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Choice<'a>> {
        self.first.iter_mut().chain(self.more.iter_mut())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Choices<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<Choice<'a>>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Choices<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Choices<'a>, A::Error> {
                let mut choices = Choices::default();
                while let Some(choice) = seq.next_element::<Choice<'a>>()? {
                    choices.keep(choice);
                }
                Ok(choices)
            }
        }
        deserializer.deserialize_seq(Visit(std::marker::PhantomData))
    }
}

#[derive(Deserialize, Default)]
struct WireDelta<'a> {
    #[serde(default, borrow, deserialize_with = "borrowed")]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "borrowed")]
    refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "borrowed")]
    reasoning_content: Option<Cow<'a, str>>,
    // A string on most servers; some send structured reasoning here, which
    // is ignored rather than failing the whole chunk.
    reasoning: Option<Value>,
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    index: Option<u64>,
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<String>,
}

/// A text delta laid out exactly as OpenAI writes it (nearly every chunk
/// of an answer): `{"id":..,"object":"chat.completion.chunk","created":N,
/// "model":..,["service_tier":..,]["system_fingerprint":..,]"choices":
/// [{"index":0,"delta":{"content":".."},"logprobs":null,
/// "finish_reason":null}][,"usage":null][,"obfuscation":".."]}`: its fixed
/// parts compared at once, its values read and checked. Gives (id, model,
/// content), what [`codec::from_str`] would read from it; `None` for any other
/// layout (member order, spacing, more members), which the general reader
/// takes.
///
/// `known` is what the chunks before showed: every chunk of a stream
/// repeats its head (id, creation time, model, tier, fingerprint: all up to
/// `"choices"`), so a chunk that starts with the last head read, byte for
/// byte, is checked with one comparison (the same bytes read the same);
/// otherwise a chunk carrying the known id and model compares each with
/// one comparison. Either gives `None` for them instead of reading them
/// again.
fn read_content_chunk<'a>(data: &'a str, known: Known<'_>) -> Option<ContentChunk<'a>> {
    let mut layout = Layout::new(data);
    let (id, model, head) = if !known.head.is_empty() && layout.optional(known.head) {
        (None, None, None)
    } else {
        layout.fixed(r#"{"id":"#)?;
        let id = same_or_str(&mut layout, known.id)?;
        layout.fixed(r#","object":"chat.completion.chunk","created":"#)?;
        layout.u64()?;
        layout.fixed(r#","model":"#)?;
        let model = same_or_str(&mut layout, known.model)?;
        if layout.optional(r#","service_tier":"#) {
            layout.str()?;
        }
        if layout.optional(r#","system_fingerprint":"#) {
            layout.str_or_null()?;
        }
        (id, model, Some(layout.offset()))
    };
    layout.fixed(r#","choices":[{"index":0,"delta":{"content":"#)?;
    let content = layout.str()?;
    layout.fixed(r#"},"logprobs":null,"finish_reason":null}]"#)?;
    layout.optional(r#","usage":null"#);
    if layout.optional(r#","obfuscation":"#) {
        layout.str()?;
    }
    layout.fixed("}")?;
    layout.end()?;
    Some(ContentChunk {
        id,
        model,
        content,
        head,
    })
}

/// What [`read_content_chunk`] knows from the chunks before.
#[derive(Clone, Copy, Default)]
struct Known<'k> {
    /// The head of the last chunk it read (empty: none yet).
    head: &'k str,
    /// The stream's id and model, when they are plain JSON strings.
    id: Option<&'k str>,
    model: Option<&'k str>,
}

/// A text chunk, as [`read_content_chunk`] read it.
struct ContentChunk<'a> {
    /// `None` when it is the known one.
    id: Option<Cow<'a, str>>,
    /// `None` when it is the known one.
    model: Option<Cow<'a, str>>,
    content: Cow<'a, str>,
    /// The length of the head, when it was read rather than the known one.
    head: Option<usize>,
}

/// `None` inside when the next string is `known` written without escapes
/// (consumed by one comparison), else the string read.
#[inline]
fn same_or_str<'a>(layout: &mut Layout<'a>, known: Option<&str>) -> Option<Option<Cow<'a, str>>> {
    if let Some(known) = known
        && layout.same_str(known)
    {
        return Some(None);
    }
    layout.str().map(Some)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OpenKind {
    Text,
    Reasoning,
}

#[derive(Default)]
struct CallBuilder {
    id: String,
    name: String,
    arguments: String,
}

impl CallBuilder {
    /// Servers differ in how they send the name: once (OpenAI), repeated in
    /// every fragment (llama.cpp), or cumulatively. Only a genuinely new
    /// fragment is appended.
    fn merge_name(&mut self, name: &str) {
        if name.is_empty() || name == self.name {
        } else if self.name.is_empty() || name.starts_with(self.name.as_str()) {
            self.name = name.to_owned();
        } else {
            self.name.push_str(name);
        }
    }
}

/// Decodes one streamed answer.
#[derive(Default)]
pub(crate) struct ChunkDecoder {
    /// Ids for calls the server sent without one: `<prefix><position>`,
    /// the prefix unique to this turn of this session.
    fallback_ids: String,
    /// Whether the server reported usage; when it did not, the turn's
    /// usage is reported as unknown rather than zero.
    usage_seen: bool,
    /// Prices for computing the cost the server did not report, and the
    /// model they are looked up by.
    pricing: Option<(Arc<PriceTable>, String)>,
    next_part: u32,
    open: Option<(PartId, OpenKind)>,
    calls: Vec<CallBuilder>,
    by_index: HashMap<u64, usize>,
    finish_reason: Option<String>,
    response_id: Option<String>,
    model: Option<String>,
    /// Set once the id and model are known: whether they are plain JSON
    /// strings, which chunks repeating them are checked against.
    plain_known: Option<bool>,
    /// The head of the last text chunk read (everything before
    /// `"choices"`), which the next one most likely repeats.
    head: String,
    finished: bool,
}

impl agentkit_http::SseDecoder for ChunkDecoder {
    type Output = ModelTurnEvent;

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        ChunkDecoder::on_event(self, event, out)
    }

    fn on_end(&mut self, out: &mut Outputs<ModelTurnEvent>) -> Result<(), ProviderError> {
        ChunkDecoder::on_end(self, out)
    }

    fn is_finished(&self) -> bool {
        ChunkDecoder::is_finished(self)
    }
}

impl ChunkDecoder {
    /// A decoder naming id-less tool calls `<fallback_ids><position>`, and
    /// computing costs from `pricing` when the server reports none.
    pub(crate) fn new(
        fallback_ids: impl Into<String>,
        pricing: Option<(Arc<PriceTable>, String)>,
    ) -> Self {
        Self {
            fallback_ids: fallback_ids.into(),
            pricing,
            ..Self::default()
        }
    }

    /// `true` once `Finished` was produced.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    /// Applies one SSE event.
    pub(crate) fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        let data = event.trimmed_data();
        if data == "[DONE]" {
            return self.finish(out);
        }
        if event.event == "error" {
            return Err(ProviderError::from_stream_error(data));
        }
        if data.is_empty() {
            return Ok(());
        }
        self.on_chunk(data, out)
    }

    fn on_chunk(
        &mut self,
        data: &str,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        let mut known = Known {
            head: &self.head,
            ..Known::default()
        };
        if self.plain_known == Some(true) {
            (known.id, known.model) = (self.response_id.as_deref(), self.model.as_deref());
        }
        if let Some(chunk) = read_content_chunk(data, known) {
            // What the general path does with such a chunk, directly.
            if self.response_id.is_none() {
                self.response_id = chunk.id.map(Cow::into_owned);
            }
            if self.model.is_none() {
                self.model = chunk.model.map(Cow::into_owned);
            }
            if let Some(head) = chunk.head {
                data[..head].clone_into(&mut self.head);
            }
            self.check_known();
            if !chunk.content.is_empty() {
                self.append(OpenKind::Text, chunk.content.into(), out);
            }
            return Ok(());
        }
        let mut chunk = parse_chunk(data)?;
        if chunk.error.is_some() {
            return Err(ProviderError::from_stream_error(data));
        }
        if self.response_id.is_none() {
            self.response_id = chunk.id.take().map(Cow::into_owned);
        }
        if self.model.is_none() {
            self.model = chunk.model.take().map(Cow::into_owned);
        }
        self.check_known();
        // We never ask for `n > 1`; other choices would be another answer.
        for choice in chunk.choices.iter_mut() {
            if let Some(delta) = &mut choice.delta {
                self.on_delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason.take().filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason.into_owned());
            }
        }
        if let Some(usage) = chunk.usage.or(chunk.x_groq.and_then(|x| x.usage)) {
            self.usage_seen = true;
            let mut usage = usage.into_usage();
            if let Some((prices, model)) = &self.pricing {
                prices.fill_cost(model, &mut usage);
            }
            out.push(ModelTurnEvent::Usage(usage));
        }
        Ok(())
    }

    /// Once the id and model are known: whether later chunks may compare
    /// them instead of reading them (they are plain JSON strings).
    fn check_known(&mut self) {
        if self.plain_known.is_none()
            && let (Some(id), Some(model)) = (&self.response_id, &self.model)
        {
            self.plain_known = Some(Layout::is_plain(id) && Layout::is_plain(model));
        }
    }

    /// The body ended without `[DONE]`.
    pub(crate) fn on_end(
        &mut self,
        out: &mut Outputs<ModelTurnEvent>,
    ) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        if self.finish_reason.is_some() {
            return self.finish(out);
        }
        Err(ProviderError::protocol(
            "the stream ended before the model finished its answer",
        ))
    }

    fn on_delta(&mut self, delta: &mut WireDelta<'_>, out: &mut Outputs<ModelTurnEvent>) {
        let reasoning =
            delta
                .reasoning_content
                .take()
                .map(TextChunk::from)
                .or(match delta.reasoning.take() {
                    Some(Value::String(text)) => Some(text.into()),
                    _ => None,
                });
        if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
            self.append(OpenKind::Reasoning, text, out);
        }
        for text in [delta.content.take(), delta.refusal.take()]
            .into_iter()
            .flatten()
        {
            if !text.is_empty() {
                self.append(OpenKind::Text, text.into(), out);
            }
        }
        for call in delta.tool_calls.take().into_iter().flatten() {
            self.on_tool_call(call);
        }
    }

    /// Appends to the open part of this kind, committing a part of the
    /// other kind first: reasoning and text alternate, they do not overlap.
    fn append(&mut self, kind: OpenKind, chunk: TextChunk, out: &mut Outputs<ModelTurnEvent>) {
        let part_id = match &self.open {
            Some((id, open)) if *open == kind => id.clone(),
            _ => {
                self.commit_open(out);
                let part_id = PartId::numbered("p", self.next_part.into());
                self.next_part += 1;
                let part_kind = match kind {
                    OpenKind::Text => PartKind::Text,
                    OpenKind::Reasoning => PartKind::Reasoning,
                };
                out.push(ModelTurnEvent::Delta(Delta::BeginPart {
                    part_id: part_id.clone(),
                    kind: part_kind,
                }));
                if kind == OpenKind::Reasoning {
                    let mut metadata = MetadataMap::new();
                    metadata.insert(keys::PROVIDER.into(), "openai".into());
                    out.push(ModelTurnEvent::Delta(Delta::SetMetadata {
                        part_id: part_id.clone(),
                        metadata,
                    }));
                }
                self.open = Some((part_id.clone(), kind));
                part_id
            }
        };
        out.push(ModelTurnEvent::Delta(Delta::AppendText { part_id, chunk }));
    }

    fn commit_open(&mut self, out: &mut Outputs<ModelTurnEvent>) {
        if let Some((part_id, _)) = self.open.take() {
            out.push(ModelTurnEvent::Delta(Delta::CommitPart { part_id }));
        }
    }

    fn on_tool_call(&mut self, mut call: WireToolCall) {
        // An empty id is an absent id: DashScope repeats `"id": ""` in every
        // fragment after the first, at the same index.
        if call.id.as_deref() == Some("") {
            call.id = None;
        }
        let same_call = |builder: &CallBuilder, id: Option<&str>| {
            id.is_none_or(|id| builder.id.is_empty() || builder.id == id)
        };
        let existing = match call.index {
            Some(index) => self
                .by_index
                .get(&index)
                .copied()
                .filter(|&at| same_call(&self.calls[at], call.id.as_deref())),
            // Without an index, a fragment belongs to the call with its id,
            // or (no id either) to the latest call.
            None => match call.id.as_deref() {
                Some(id) => self.calls.iter().position(|b| b.id == id),
                None => self.calls.len().checked_sub(1),
            },
        };
        let at = existing.unwrap_or_else(|| {
            self.calls.push(CallBuilder::default());
            let at = self.calls.len() - 1;
            if let Some(index) = call.index {
                self.by_index.insert(index, at);
            }
            at
        });
        let builder = &mut self.calls[at];
        if let Some(id) = call.id.filter(|_| builder.id.is_empty()) {
            builder.id = id;
        }
        if let Some(function) = call.function {
            if let Some(name) = function.name {
                builder.merge_name(&name);
            }
            if let Some(arguments) = function.arguments {
                builder.arguments.push_str(&arguments);
            }
        }
    }

    /// Checks the tool calls, then closes the answer. Nothing is emitted if
    /// a call is broken, so the loop sees the error and no half-made part.
    fn finish(&mut self, out: &mut Outputs<ModelTurnEvent>) -> Result<(), ProviderError> {
        let mut calls = Vec::with_capacity(self.calls.len());
        for (position, builder) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            calls.push(tool_call(position, builder, &self.fallback_ids)?);
        }
        self.commit_open(out);
        let has_calls = !calls.is_empty();
        out.extend(calls.into_iter().map(ModelTurnEvent::ToolCall));
        if !self.usage_seen {
            // llama.cpp's server (and others) send no usage when streaming:
            // say it is unknown instead of letting it count as zero.
            out.push(ModelTurnEvent::Usage(agentkit_core::Usage::unknown()));
        }
        let reason = match self.finish_reason.as_deref() {
            Some("tool_calls" | "function_call") => FinishReason::ToolCall,
            Some("length") => FinishReason::MaxTokens,
            Some("content_filter") => FinishReason::Blocked,
            // Some servers say `stop` after tool calls; the calls decide.
            Some("stop" | "eos" | "end_turn") | None if has_calls => FinishReason::ToolCall,
            Some("stop" | "eos" | "end_turn") | None => FinishReason::Completed,
            Some(other) => FinishReason::Other(other.to_owned()),
        };
        let mut result = ModelTurnResult::new(reason);
        result
            .metadata
            .insert(keys::PROVIDER.into(), "openai".into());
        if let Some(id) = self.response_id.take() {
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

fn tool_call(
    position: usize,
    builder: CallBuilder,
    fallback_ids: &str,
) -> Result<ToolCallPart, ProviderError> {
    if builder.name.is_empty() {
        return Err(ProviderError::protocol(format!(
            "tool call {position} has no name"
        )));
    }
    let input = ToolInput::from_arguments(&builder.arguments).map_err(|err| {
        ProviderError::protocol(format!(
            "the arguments of tool call {} ({}) are not valid JSON ({err}): {}",
            builder.name,
            builder.id,
            excerpt(&builder.arguments)
        ))
    })?;
    // A few local servers omit ids; the loop needs one to pair the result,
    // unique across the session so results never pair with an older call.
    let id = if builder.id.is_empty() {
        format!("{fallback_ids}{position}")
    } else {
        builder.id
    };
    Ok(ToolCallPart::new(id, builder.name, input))
}

fn parse_chunk(data: &str) -> Result<Chunk<'_>, ProviderError> {
    codec::from_str(data).map_err(|err| {
        ProviderError::protocol(format!(
            "a stream chunk is not valid JSON ({err}): {}",
            excerpt(data)
        ))
    })
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
#[path = "stream_tests.rs"]
mod tests;
