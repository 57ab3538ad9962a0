//! A realistic Chat Completions event stream, for the test server to send.
//!
//! Load tests and benchmarks need a model answer that looks like today's
//! OpenAI stream (every chunk repeating the id, model and fingerprint, a
//! varying `obfuscation` field, prose with quotes and non-ASCII text, a call
//! whose arguments arrive in fragments) without a recording per answer.
//! Tests that check exact wire details replay recorded traffic instead.

/// The part every chunk repeats, up to its `delta`.
const HEAD: &str = r#"{"id":"chatcmpl-CXk7RvO2mNcP1hT0qzYbWfA3LuEd","object":"chat.completion.chunk","created":1763780000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[{"index":0,"delta":"#;

/// What the `obfuscation` values are cut from (1 to 13 characters, varying
/// with the chunk).
const NOISE: &str = "Qv3xZp0aLm9TeW";

/// Builds the body of one streamed Chat Completions answer: the role chunk
/// first, then text and tool-call chunks in the order they are added, then
/// the finish chunk, usage and `[DONE]`.
///
/// ```
/// use agentkit_http::testing::{ChatStream, ScriptedResponse};
///
/// let body = ChatStream::new()
///     .text("Let me check the café's \"menu\".")
///     .tool_call("call_1", "lookup", &[r#"{"q":"#, r#""menu"}"#])
///     .finish("tool_calls", 120, 30);
/// let text = String::from_utf8(body.clone()).unwrap();
/// assert!(text.starts_with("data: {\"id\":\"chatcmpl-"));
/// assert!(text.contains(r#""content":"Let me check the café's \"menu\".""#));
/// assert!(text.contains(r#""arguments":"\"menu\"}""#));
/// assert!(text.ends_with("data: [DONE]\n\n"));
/// // Every event is JSON but the last.
/// let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
/// for event in &events[..events.len() - 1] {
///     serde_json::from_str::<serde_json::Value>(&event["data: ".len()..]).unwrap();
/// }
/// let answer = ScriptedResponse::sse(body);
/// assert_eq!(answer.status, 200);
/// ```
#[derive(Clone, Debug)]
pub struct ChatStream {
    out: String,
    chunks: usize,
    calls: usize,
}

impl Default for ChatStream {
    fn default() -> Self {
        Self::new()
    }
}

impl ChatStream {
    /// A stream opened with the assistant's role chunk.
    pub fn new() -> Self {
        let mut stream = Self {
            out: String::new(),
            chunks: 0,
            calls: 0,
        };
        stream.chunk(
            r#"{"role":"assistant","content":"","refusal":null}"#,
            "null",
        );
        stream
    }

    /// Adds one content chunk carrying `text` (escaped as JSON).
    pub fn text(mut self, text: &str) -> Self {
        let delta = format!("{{\"content\":{}}}", json_string(text));
        self.chunk(&delta, "null");
        self
    }

    /// Adds a call of `name` with this id: one chunk opening it, then one
    /// chunk per fragment of its arguments (each escaped as a JSON string;
    /// together they should form a JSON object). Calls are numbered by the
    /// order they are added.
    pub fn tool_call(mut self, id: &str, name: &str, arguments: &[&str]) -> Self {
        let index = self.calls;
        self.calls += 1;
        let open = format!(
            r#"{{"tool_calls":[{{"index":{index},"id":{},"type":"function","function":{{"name":{},"arguments":""}}}}]}}"#,
            json_string(id),
            json_string(name)
        );
        self.chunk(&open, "null");
        for fragment in arguments {
            let delta = format!(
                r#"{{"tool_calls":[{{"index":{index},"function":{{"arguments":{}}}}}]}}"#,
                json_string(fragment)
            );
            self.chunk(&delta, "null");
        }
        self
    }

    /// Ends the answer with `finish_reason` (`stop`, `tool_calls`,
    /// `length`), a usage chunk with these token counts and `[DONE]`, and
    /// returns the body.
    pub fn finish(mut self, reason: &str, prompt_tokens: u32, completion_tokens: u32) -> Vec<u8> {
        self.chunk("{}", &json_string(reason));
        let total = prompt_tokens + completion_tokens;
        self.out.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-CXk7RvO2mNcP1hT0qzYbWfA3LuEd\",\"object\":\"chat.completion.chunk\",\"created\":1763780000,\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":{completion_tokens},\"total_tokens\":{total}}}}}\n\ndata: [DONE]\n\n"
        ));
        self.out.into_bytes()
    }

    fn chunk(&mut self, delta: &str, finish: &str) {
        self.chunks += 1;
        let noise = &NOISE[..1 + self.chunks % 13];
        self.out.push_str(&format!(
            "data: {HEAD}{delta},\"logprobs\":null,\"finish_reason\":{finish}}}],\"usage\":null,\"obfuscation\":\"{noise}\"}}\n\n"
        ));
    }
}

fn json_string(text: &str) -> String {
    // Serializing a string cannot fail.
    serde_json::to_string(text).unwrap_or_default()
}
