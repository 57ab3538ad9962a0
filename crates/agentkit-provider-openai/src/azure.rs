//! Azure OpenAI: the same wire formats at different URLs, with a different
//! key header.
//!
//! Azure serves a model through a deployment named by the customer. Chat
//! Completions lives at
//! `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...`,
//! the Responses API at `{endpoint}/openai/responses?api-version=...` with
//! the deployment as the model. A key goes in the `api-key` header; a
//! Microsoft Entra ID token goes in `Authorization: Bearer` instead.
//! OpenAI-only request fields Azure refuses (`prompt_cache_key`) are not
//! sent.

use crate::{OpenAiConfig, Quirks, ResponsesConfig};

/// The `api-version` used for Chat Completions when none is given.
pub const AZURE_CHAT_API_VERSION: &str = "2024-10-21";
/// The `api-version` used for the Responses API when none is given.
pub const AZURE_RESPONSES_API_VERSION: &str = "2025-04-01-preview";

/// How requests to Azure are authenticated.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AzureCredential {
    /// A resource key, sent as `api-key`.
    ApiKey(String),
    /// A Microsoft Entra ID access token, sent as a bearer token.
    EntraToken(String),
}

impl std::fmt::Debug for AzureCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ApiKey(_) => "ApiKey(<redacted>)",
            Self::EntraToken(_) => "EntraToken(<redacted>)",
        })
    }
}

/// An Azure OpenAI deployment, turned into a Chat Completions or
/// Responses configuration.
///
/// ```
/// use agentkit_provider_openai::{AzureCredential, AzureOpenAi};
///
/// let azure = AzureOpenAi::new(
///     "https://my-resource.openai.azure.com/",
///     "gpt-4o-prod",
///     AzureCredential::ApiKey("azure-key".into()),
/// );
/// let chat = azure.chat_config();
/// assert_eq!(
///     chat.endpoint(),
///     "https://my-resource.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"
/// );
/// assert_eq!(chat.extra_headers, vec![("api-key".to_owned(), "azure-key".to_owned())]);
/// let responses = azure.with_api_version("2025-04-01-preview").responses_config();
/// assert_eq!(
///     responses.endpoint(),
///     "https://my-resource.openai.azure.com/openai/responses?api-version=2025-04-01-preview"
/// );
/// assert_eq!(responses.openai.model, "gpt-4o-prod");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AzureOpenAi {
    /// The resource's endpoint, `https://<resource>.openai.azure.com`.
    pub endpoint: String,
    /// The deployment's name.
    pub deployment: String,
    /// The `api-version`; each API's default when `None`.
    pub api_version: Option<String>,
    /// The key or token.
    pub credential: AzureCredential,
}

impl AzureOpenAi {
    /// A deployment at `endpoint`.
    pub fn new(
        endpoint: impl Into<String>,
        deployment: impl Into<String>,
        credential: AzureCredential,
    ) -> Self {
        Self {
            endpoint: endpoint.into(),
            deployment: deployment.into(),
            api_version: None,
            credential,
        }
    }

    /// Sets the `api-version`.
    pub fn with_api_version(mut self, version: impl Into<String>) -> Self {
        self.api_version = Some(version.into());
        self
    }

    /// Chat Completions on this deployment.
    pub fn chat_config(&self) -> OpenAiConfig {
        let base = format!(
            "{}/openai/deployments/{}",
            self.endpoint.trim_end_matches('/'),
            self.deployment
        );
        self.config(base, AZURE_CHAT_API_VERSION)
    }

    /// The Responses API with this deployment as the model.
    pub fn responses_config(&self) -> ResponsesConfig {
        let base = format!("{}/openai", self.endpoint.trim_end_matches('/'));
        ResponsesConfig::from(self.config(base, AZURE_RESPONSES_API_VERSION))
    }

    fn config(&self, base_url: String, default_version: &str) -> OpenAiConfig {
        let mut config = OpenAiConfig::openai(String::new(), self.deployment.clone());
        config.base_url = base_url;
        let version = self.api_version.as_deref().unwrap_or(default_version);
        config.query = format!("?api-version={version}");
        config.api_key = None;
        match &self.credential {
            AzureCredential::ApiKey(key) => config = config.with_header("api-key", key.clone()),
            AzureCredential::EntraToken(token) => config.api_key = Some(token.clone()),
        }
        config.quirks = Quirks {
            prompt_cache: false,
            ..Quirks::default()
        };
        config
    }
}
