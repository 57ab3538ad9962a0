//! What the Responses adapter asks for beyond a Chat Completions setup.
//!
//! The endpoint, key, model, headers, extra body fields, prices and HTTP
//! policy are the same as for Chat Completions, so [`ResponsesConfig`]
//! wraps an [`OpenAiConfig`]. What is new: whether OpenAI stores the
//! response (`store`), and whether a turn continues the stored previous
//! response (`previous_response_id`) instead of re-sending the transcript.

use crate::OpenAiConfig;

/// Configuration of a [`ResponsesAdapter`](crate::ResponsesAdapter).
///
/// Built like an [`OpenAiConfig`] (which it wraps, so any Chat Completions
/// configuration converts with `.into()`), plus what only the Responses API
/// has. Here an agent runs one turn against a local server standing in for
/// OpenAI; in a program, drop the `base_url` line and pass a real key.
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_http::testing::{ScriptedResponse, TestServer};
/// use agentkit_loop::{Agent, LoopStep, SessionConfig};
/// use agentkit_provider_openai::{ResponsesAdapter, ResponsesConfig};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let server = TestServer::start([ScriptedResponse::sse(concat!(
///     "data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"Bonjour\"}\n\n",
///     "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\"}}\n\n",
/// ))])
/// .await?;
/// let mut config = ResponsesConfig::openai("sk-...", "gpt-5-mini").with_reasoning_summary("auto");
/// config.openai.base_url = format!("{}/v1", server.url()); // the stand-in
/// assert_eq!(config.endpoint(), format!("{}/v1/responses", server.url()));
///
/// let agent = Agent::builder()
///     .model(ResponsesAdapter::new(config)?)
///     .input(vec![Item::user("Hello in French?")])
///     .build()?;
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
/// let LoopStep::Finished(result) = driver.next().await? else { unreachable!() };
/// assert_eq!(result.items[0].text_content(), "Bonjour");
///
/// // `store: false` by default: OpenAI keeps nothing, reasoning travels encrypted.
/// let sent = server.requests()[0].json();
/// assert_eq!(sent["store"], false);
/// assert_eq!(sent["reasoning"]["summary"], "auto");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ResponsesConfig {
    /// Endpoint, key, model, limits, extra fields and HTTP policy;
    /// `/responses` is appended to its `base_url`.
    pub openai: OpenAiConfig,
    /// `store`: `false` (the default) keeps nothing on OpenAI's side; the
    /// reasoning then travels encrypted (`include:
    /// ["reasoning.encrypted_content"]`) and is re-sent with every turn.
    pub store: bool,
    /// With `store`, continue from the last stored response
    /// (`previous_response_id`) and send only the items after it.
    pub previous_response_id: bool,
    /// `reasoning.summary` (`auto`, `concise`, `detailed`) for reasoning
    /// models; `None` leaves it out.
    pub reasoning_summary: Option<String>,
}

impl ResponsesConfig {
    /// OpenAI's Responses API with this key and model, `store: false`.
    pub fn openai(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        Self::from(OpenAiConfig::openai(api_key, model))
    }

    /// Sets `store` (and, with it, whether turns chain on
    /// `previous_response_id`).
    pub fn with_store(mut self, store: bool, previous_response_id: bool) -> Self {
        self.store = store;
        self.previous_response_id = store && previous_response_id;
        self
    }

    /// Sets `reasoning.summary`.
    pub fn with_reasoning_summary(mut self, summary: impl Into<String>) -> Self {
        self.reasoning_summary = Some(summary.into());
        self
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        format!(
            "{}/responses{}",
            self.openai.base_url.trim_end_matches('/'),
            self.openai.query
        )
    }
}

impl From<OpenAiConfig> for ResponsesConfig {
    fn from(openai: OpenAiConfig) -> Self {
        Self {
            openai,
            store: false,
            previous_response_id: false,
            reasoning_summary: None,
        }
    }
}
