//! Where Bedrock is and what to ask it for.
//!
//! The region names the endpoint (`bedrock-runtime.<region>.amazonaws.com`)
//! and the SigV4 scope; the model id is a path segment, percent-encoded
//! because ids carry `:` (`anthropic.claude-3-5-sonnet-20240620-v1:0`) and
//! ARNs `/`.

use crate::sigv4::Credentials;
use agentkit_http::HttpConfig;

/// Which tool the model may or must call (`toolChoice`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (`auto`).
    Auto,
    /// At least one tool call (`any`).
    Required,
    /// This tool (`tool`).
    Tool(String),
}

/// Configuration of a [`BedrockAdapter`](crate::BedrockAdapter). Its
/// `Debug` output hides the secret key.
///
/// ```
/// use agentkit_provider_bedrock::BedrockConfig;
///
/// let config = BedrockConfig::new("us-east-1", "anthropic.claude-3-5-haiku-20241022-v1:0");
/// assert_eq!(
///     config.endpoint(),
///     "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
/// );
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct BedrockConfig {
    /// The AWS region (`us-east-1`).
    pub region: String,
    /// The model id, inference profile id or ARN.
    pub model: String,
    /// The endpoint root; `None` for the region's public endpoint.
    pub base_url: Option<String>,
    /// The credentials; `None` to resolve the chain at each request.
    pub credentials: Option<Credentials>,
    /// `inferenceConfig.maxTokens`.
    pub max_tokens: Option<u32>,
    /// `inferenceConfig.temperature`.
    pub temperature: Option<f32>,
    /// The tool choice sent when tools are offered.
    pub tool_choice: Option<ToolChoice>,
    /// Extended thinking budget (Anthropic models only, sent as
    /// `additionalModelRequestFields.thinking`).
    pub thinking_budget: Option<u32>,
    /// Timeouts and retries.
    pub http: HttpConfig,
}

impl BedrockConfig {
    /// Bedrock in `region` with `model`, credentials from the chain.
    pub fn new(region: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            region: region.into(),
            model: model.into(),
            base_url: None,
            credentials: None,
            max_tokens: None,
            temperature: None,
            tool_choice: None,
            thinking_budget: None,
            http: HttpConfig::default(),
        }
    }

    /// Uses these credentials instead of the chain.
    pub fn with_credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Asks an Anthropic model for extended thinking with this budget.
    pub fn with_thinking(mut self, budget: u32) -> Self {
        self.thinking_budget = Some(budget);
        self
    }

    /// The model family, from the id (`anthropic`, `meta`, `amazon` ...),
    /// skipping a cross-region profile prefix (`us.`, `eu.`, `apac.`).
    pub fn family(&self) -> &str {
        let id = self.model.rsplit('/').next().unwrap_or(&self.model);
        let mut parts = id.split('.');
        let first = parts.next().unwrap_or("");
        match first {
            "us" | "eu" | "apac" | "us-gov" | "global" => parts.next().unwrap_or(""),
            _ => first,
        }
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        let base = self
            .base_url
            .clone()
            .unwrap_or_else(|| format!("https://bedrock-runtime.{}.amazonaws.com", self.region));
        format!(
            "{}/model/{}/converse-stream",
            base.trim_end_matches('/'),
            encode(&self.model)
        )
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

// The shared `with_*` methods (`with_base_url`, `with_max_tokens` ...).
agentkit_http::config_builders!(BedrockConfig: base_url, max_tokens,
    tool_choice(ToolChoice), http);

impl std::fmt::Debug for BedrockConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BedrockConfig")
            .field("region", &self.region)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("credentials", &self.credentials)
            .field("max_tokens", &self.max_tokens)
            .field("tool_choice", &self.tool_choice)
            .field("thinking_budget", &self.thinking_budget)
            .finish_non_exhaustive()
    }
}
