//! Picking and configuring the provider from the environment, in one call.
//!
//! | variable | meaning |
//! | --- | --- |
//! | `AGENTKIT_PROVIDER` | which provider (names below); inferred when unset |
//! | `AGENTKIT_MODEL` | the model (Azure: the deployment); defaulted where the provider has a default |
//! | `AGENTKIT_MAX_TOKENS` | the output-token limit |
//! | `AGENTKIT_BASE_URL` | another API root for a preset (a local server on another port) |
//!
//! | `AGENTKIT_PROVIDER` | API | key | other variables |
//! | --- | --- | --- | --- |
//! | `openai` | OpenAI Responses | `OPENAI_API_KEY` | `OPENAI_BASE_URL` |
//! | `openai-chat` | OpenAI Chat Completions | `OPENAI_API_KEY` | `OPENAI_BASE_URL` |
//! | `compatible` | any Chat Completions server | `OPENAI_API_KEY` (optional) | `OPENAI_BASE_URL` (required) |
//! | `anthropic` | Anthropic Messages | `ANTHROPIC_API_KEY` | `ANTHROPIC_BASE_URL` |
//! | `gemini` | Google Gemini | `GEMINI_API_KEY` or `GOOGLE_API_KEY` | `GEMINI_BASE_URL` |
//! | `bedrock` | Amazon Bedrock Converse | AWS credential chain (`AWS_ACCESS_KEY_ID` ..., `AWS_PROFILE`) | `AWS_REGION` or `AWS_DEFAULT_REGION` (required), `AGENTKIT_MODEL` (required), `AGENTKIT_BASE_URL` |
//! | `azure`, `azure-chat` | Azure OpenAI Responses, Chat | `AZURE_OPENAI_API_KEY` or `AZURE_OPENAI_AD_TOKEN` (Entra ID) | `AZURE_OPENAI_ENDPOINT` (required), `AZURE_OPENAI_DEPLOYMENT`, `AZURE_OPENAI_API_VERSION` |
//! | `openrouter`, `groq`, `mistral`, `deepseek`, `xai`, `together`, `fireworks` | their Chat Completions | `<NAME>_API_KEY` (`OPENROUTER_API_KEY` ...) | |
//! | `ollama`, `lmstudio`, `vllm` | a local server | none | |
//!
//! Without `AGENTKIT_PROVIDER`: an `OPENAI_BASE_URL` that is not OpenAI's
//! means `compatible`; otherwise the first key found decides, in this
//! order: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` /
//! `GOOGLE_API_KEY`, `AZURE_OPENAI_ENDPOINT`, then the presets' keys in the
//! order above. Bedrock is never inferred (AWS credentials in the
//! environment are common for other tools): name it.

use super::DynModel;
use agentkit_loop::ModelError;
use std::fmt;

/// The default model for `openai` and `openai-chat`.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-5-mini";
/// The default model for `anthropic`.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The default model for `gemini`.
pub const DEFAULT_GEMINI_MODEL: &str = "gemini-2.5-flash";

/// How many OpenAI-compatible presets the umbrella crate knows.
#[cfg(feature = "openai")]
const PRESETS: usize = agentkit_provider_openai::Preset::ALL.len();
#[cfg(not(feature = "openai"))]
const PRESETS: usize = 0;

/// The kinds that are not presets, in the order they are inferred.
const APIS: [ProviderKind; 8] = [
    ProviderKind::OpenAi,
    ProviderKind::OpenAiChat,
    ProviderKind::Anthropic,
    ProviderKind::Compatible,
    ProviderKind::Gemini,
    ProviderKind::Bedrock,
    ProviderKind::Azure,
    ProviderKind::AzureChat,
];

/// Which API a [`ProviderConfig`] talks to.
///
/// The named Chat Completions servers (Groq, Mistral, Ollama ...) are one
/// variant holding the OpenAI adapter's `Preset` (`agentkit::openai::Preset`):
/// a preset added there is selectable by name here with no change to this
/// type.
///
/// ```
/// # #[cfg(feature = "openai")] {
/// use agentkit::openai::Preset;
/// use agentkit::provider::ProviderKind;
///
/// let groq = ProviderKind::ALL.into_iter().find(|k| k.name() == "groq");
/// assert_eq!(groq, Some(ProviderKind::Preset(Preset::Groq)));
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderKind {
    /// OpenAI's Responses API.
    OpenAi,
    /// OpenAI's Chat Completions API.
    OpenAiChat,
    /// Anthropic's Messages API.
    Anthropic,
    /// A Chat Completions server at `OPENAI_BASE_URL`.
    Compatible,
    /// Google Gemini.
    Gemini,
    /// Amazon Bedrock (Converse).
    Bedrock,
    /// Azure OpenAI, Responses API.
    Azure,
    /// Azure OpenAI, Chat Completions.
    AzureChat,
    /// A named Chat Completions server (OpenRouter, Groq, Ollama ...): its
    /// URL, key variable, default model and quirks come from the preset.
    #[cfg(feature = "openai")]
    Preset(agentkit_provider_openai::Preset),
}

impl ProviderKind {
    /// Every provider, in the order they are inferred: the APIs, then the
    /// presets in `Preset::ALL`'s order (with the `openai` feature).
    pub const ALL: [ProviderKind; APIS.len() + PRESETS] = {
        let mut all = [Self::OpenAi; APIS.len() + PRESETS];
        let mut i = 0;
        while i < APIS.len() {
            all[i] = APIS[i];
            i += 1;
        }
        #[cfg(feature = "openai")]
        while i < all.len() {
            all[i] = Self::Preset(agentkit_provider_openai::Preset::ALL[i - APIS.len()]);
            i += 1;
        }
        all
    };

    /// The value of `AGENTKIT_PROVIDER` that selects it.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::OpenAiChat => "openai-chat",
            Self::Anthropic => "anthropic",
            Self::Compatible => "compatible",
            Self::Gemini => "gemini",
            Self::Bedrock => "bedrock",
            Self::Azure => "azure",
            Self::AzureChat => "azure-chat",
            #[cfg(feature = "openai")]
            Self::Preset(preset) => preset.name(),
        }
    }

    fn parse(value: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(value.trim()))
    }

    /// The umbrella crate's feature that compiles it in.
    pub fn feature(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Bedrock => "bedrock",
            _ => "openai",
        }
    }

    /// The variables holding the key (the first one is named when it is
    /// missing), and whether a key is required.
    fn key_vars(self) -> (Vec<&'static str>, bool) {
        match self {
            Self::OpenAi | Self::OpenAiChat => (vec!["OPENAI_API_KEY"], true),
            Self::Compatible => (vec!["OPENAI_API_KEY"], false),
            Self::Anthropic => (vec!["ANTHROPIC_API_KEY"], true),
            Self::Gemini => (vec!["GEMINI_API_KEY", "GOOGLE_API_KEY"], true),
            // A key or a token; checked apart.
            Self::Azure | Self::AzureChat => (vec!["AZURE_OPENAI_API_KEY"], false),
            // Local servers need none.
            #[cfg(feature = "openai")]
            Self::Preset(preset) => (preset.key_var().into_iter().collect(), !preset.is_local()),
            // The AWS credential chain, read when a request is signed.
            Self::Bedrock => (Vec::new(), false),
        }
    }

    /// The variable naming another API root.
    fn url_var(self) -> &'static str {
        match self {
            Self::OpenAi | Self::OpenAiChat | Self::Compatible => "OPENAI_BASE_URL",
            Self::Anthropic => "ANTHROPIC_BASE_URL",
            Self::Gemini => "GEMINI_BASE_URL",
            Self::Azure | Self::AzureChat => "AZURE_OPENAI_ENDPOINT",
            _ => "AGENTKIT_BASE_URL",
        }
    }

    /// The model used when `AGENTKIT_MODEL` is unset.
    fn default_model(self) -> Option<&'static str> {
        match self {
            Self::OpenAi | Self::OpenAiChat => Some(DEFAULT_OPENAI_MODEL),
            Self::Anthropic => Some(DEFAULT_ANTHROPIC_MODEL),
            Self::Gemini => Some(DEFAULT_GEMINI_MODEL),
            Self::Compatible | Self::Azure | Self::AzureChat | Self::Bedrock => None,
            #[cfg(feature = "openai")]
            Self::Preset(preset) => preset.default_model(),
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why no model could be configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Nothing in the environment names a provider.
    #[error(
        "no model provider configured: set OPENAI_API_KEY (OpenAI), ANTHROPIC_API_KEY \
         (Anthropic), GEMINI_API_KEY (Gemini), AZURE_OPENAI_ENDPOINT (Azure), a preset's key \
         (GROQ_API_KEY, MISTRAL_API_KEY ...), or OPENAI_BASE_URL and AGENTKIT_MODEL (a \
         compatible server such as Ollama or llama.cpp); AGENTKIT_PROVIDER picks one explicitly"
    )]
    NoProvider,
    /// The chosen provider lacks these variables.
    #[error("the {provider} provider needs {}", missing.join(" and "))]
    Missing {
        /// The provider.
        provider: ProviderKind,
        /// The variables to set.
        missing: Vec<&'static str>,
    },
    /// A variable has a value that cannot be used.
    #[error("{variable}={value:?} is not valid: {reason}")]
    Invalid {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The provider's adapter is not compiled in.
    #[error("the {provider} provider is not compiled in: enable agentkit's `{feature}` feature")]
    NotCompiled {
        /// The provider.
        provider: ProviderKind,
        /// The feature that compiles it in.
        feature: &'static str,
    },
    /// The adapter refused the configuration.
    #[error("could not build the {provider} adapter: {source}")]
    Adapter {
        /// The provider.
        provider: ProviderKind,
        /// The adapter's error.
        source: ModelError,
    },
}

/// A provider, model and credentials, as read from the environment.
///
/// Its `Debug` output hides the key.
///
/// ```
/// use agentkit::provider::{ConfigError, ProviderConfig, ProviderKind};
///
/// let vars = [("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")];
/// let lookup = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string());
/// // A compatible server needs a model name, and the error says so.
/// let err = ProviderConfig::from_lookup(lookup).unwrap_err();
/// assert!(matches!(&err, ConfigError::Missing { missing, .. } if missing == &["AGENTKIT_MODEL"]));
/// assert_eq!(err.to_string(), "the compatible provider needs AGENTKIT_MODEL");
///
/// // A preset by name: its key variable and default model.
/// let vars = [("AGENTKIT_PROVIDER", "groq"), ("GROQ_API_KEY", "gsk-test")];
/// let lookup = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string());
/// let groq = ProviderConfig::from_lookup(lookup)?;
/// let kind = ProviderKind::Preset(agentkit::openai::Preset::Groq);
/// assert_eq!((groq.kind, groq.model.as_str()), (kind, "llama-3.3-70b-versatile"));
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderConfig {
    /// Which API.
    pub kind: ProviderKind,
    /// The model name (Azure: the deployment).
    pub model: String,
    /// The key, when one is needed or given (Azure: the Entra ID token
    /// when [`bearer_token`](Self::bearer_token) is set).
    pub api_key: Option<String>,
    /// The API root, when not the provider's own (Azure: the endpoint).
    pub base_url: Option<String>,
    /// The output-token limit.
    pub max_tokens: Option<u32>,
    /// Azure's `api-version`, when set.
    pub api_version: Option<String>,
    /// `true` when `api_key` is a bearer token rather than the provider's
    /// key (Azure with Microsoft Entra ID).
    pub bearer_token: bool,
    /// The AWS region (Bedrock: `AWS_REGION` or `AWS_DEFAULT_REGION`).
    pub region: Option<String>,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
            .field("api_version", &self.api_version)
            .field("bearer_token", &self.bearer_token)
            .field("region", &self.region)
            .finish()
    }
}

impl ProviderConfig {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (a variable's value, or
    /// `None`); empty values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let kind = match get("AGENTKIT_PROVIDER") {
            Some(value) => ProviderKind::parse(&value).ok_or_else(|| ConfigError::Invalid {
                variable: "AGENTKIT_PROVIDER",
                value,
                reason: format!(
                    "expected one of {}",
                    ProviderKind::ALL.map(ProviderKind::name).join(", ")
                ),
            })?,
            None => infer(&get)?,
        };
        #[cfg(not(feature = "openai"))]
        if kind.feature() == "openai" {
            return Err(ConfigError::NotCompiled {
                provider: kind,
                feature: "openai",
            });
        }
        let (key_vars, key_required) = kind.key_vars();
        let url_var = kind.url_var();
        let mut api_key = key_vars.iter().find_map(|var| get(var));
        let base_url = get(url_var);
        let azure = matches!(kind, ProviderKind::Azure | ProviderKind::AzureChat);
        let mut bearer_token = false;
        if azure && api_key.is_none() {
            api_key = get("AZURE_OPENAI_AD_TOKEN");
            bearer_token = api_key.is_some();
        }
        let mut model = get("AGENTKIT_MODEL");
        if azure {
            model = model.or_else(|| get("AZURE_OPENAI_DEPLOYMENT"));
        }
        let model = model.or(kind.default_model().map(str::to_owned));
        let mut missing = Vec::new();
        if (matches!(kind, ProviderKind::Compatible) || azure) && base_url.is_none() {
            missing.push(url_var);
        }
        if key_required && api_key.is_none() {
            missing.push(match kind {
                ProviderKind::Gemini => "GEMINI_API_KEY (or GOOGLE_API_KEY)",
                _ => key_vars[0],
            });
        }
        let bedrock = kind == ProviderKind::Bedrock;
        let region = get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION"));
        if bedrock && region.is_none() {
            missing.push("AWS_REGION (or AWS_DEFAULT_REGION)");
        }
        if azure && api_key.is_none() {
            missing.push("AZURE_OPENAI_API_KEY (or AZURE_OPENAI_AD_TOKEN)");
        }
        if model.is_none() {
            missing.push(if azure {
                "AGENTKIT_MODEL (or AZURE_OPENAI_DEPLOYMENT)"
            } else {
                "AGENTKIT_MODEL"
            });
        }
        if !missing.is_empty() {
            return Err(ConfigError::Missing {
                provider: kind,
                missing,
            });
        }
        if let Some(url) = &base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(ConfigError::Invalid {
                variable: url_var,
                value: url.clone(),
                reason: "expected an http:// or https:// URL".into(),
            });
        }
        let max_tokens = match get("AGENTKIT_MAX_TOKENS") {
            Some(value) => {
                Some(
                    value
                        .trim()
                        .parse::<u32>()
                        .map_err(|err| ConfigError::Invalid {
                            variable: "AGENTKIT_MAX_TOKENS",
                            value,
                            reason: err.to_string(),
                        })?,
                )
            }
            None => None,
        };
        Ok(Self {
            kind,
            model: model.unwrap_or_default(),
            api_key,
            base_url,
            max_tokens,
            api_version: get("AZURE_OPENAI_API_VERSION").filter(|_| azure),
            bearer_token,
            region: region.filter(|_| bedrock),
        })
    }

    /// Builds the adapter this configuration names.
    pub fn build(&self) -> Result<DynModel, ConfigError> {
        let adapter_error = |source| ConfigError::Adapter {
            provider: self.kind,
            source,
        };
        match self.kind {
            #[cfg(feature = "openai")]
            ProviderKind::OpenAi | ProviderKind::Azure => {
                let config = match self.azure() {
                    Some(azure) => azure.responses_config(),
                    None => self.openai_config().into(),
                };
                let adapter = agentkit_provider_openai::ResponsesAdapter::new(config)
                    .map_err(adapter_error)?;
                Ok(DynModel::new(adapter))
            }
            #[cfg(feature = "openai")]
            ProviderKind::OpenAiChat | ProviderKind::Compatible | ProviderKind::AzureChat => {
                let config = match self.azure() {
                    Some(azure) => azure.chat_config(),
                    None => self.openai_config(),
                };
                let config = self.limited(config);
                let adapter =
                    agentkit_provider_openai::OpenAiAdapter::new(config).map_err(adapter_error)?;
                Ok(DynModel::new(adapter))
            }
            #[cfg(feature = "openai")]
            ProviderKind::Preset(preset) => {
                let mut config = preset.config(self.api_key.clone(), Some(self.model.clone()));
                if let Some(url) = &self.base_url {
                    config.base_url = url.clone();
                }
                let adapter = agentkit_provider_openai::OpenAiAdapter::new(self.limited(config))
                    .map_err(adapter_error)?;
                Ok(DynModel::new(adapter))
            }
            #[cfg(feature = "anthropic")]
            ProviderKind::Anthropic => {
                let mut config = agentkit_provider_anthropic::AnthropicConfig::new(
                    self.api_key.clone().unwrap_or_default(),
                    self.model.clone(),
                );
                if let Some(url) = &self.base_url {
                    config = config.with_base_url(url.clone());
                }
                if let Some(max) = self.max_tokens {
                    config = config.with_max_tokens(max);
                }
                let adapter = agentkit_provider_anthropic::AnthropicAdapter::new(config)
                    .map_err(adapter_error)?;
                Ok(DynModel::new(adapter))
            }
            #[cfg(feature = "gemini")]
            ProviderKind::Gemini => {
                let mut config = agentkit_provider_gemini::GeminiConfig::new(
                    self.api_key.clone().unwrap_or_default(),
                    self.model.clone(),
                );
                if let Some(url) = &self.base_url {
                    config = config.with_base_url(url.clone());
                }
                if let Some(max) = self.max_tokens {
                    config = config.with_max_tokens(max);
                }
                let adapter =
                    agentkit_provider_gemini::GeminiAdapter::new(config).map_err(adapter_error)?;
                Ok(DynModel::new(adapter))
            }
            #[cfg(feature = "bedrock")]
            ProviderKind::Bedrock => {
                use agentkit_provider_bedrock::{BedrockAdapter, BedrockConfig};
                let region = self.region.clone().unwrap_or_default();
                let mut config = BedrockConfig::new(region, self.model.clone());
                if let Some(url) = &self.base_url {
                    config = config.with_base_url(url.clone());
                }
                if let Some(max) = self.max_tokens {
                    config = config.with_max_tokens(max);
                }
                Ok(DynModel::new(
                    BedrockAdapter::new(config).map_err(adapter_error)?,
                ))
            }
            #[allow(unreachable_patterns)]
            kind => {
                let _ = adapter_error;
                Err(ConfigError::NotCompiled {
                    provider: kind,
                    feature: kind.feature(),
                })
            }
        }
    }

    /// The Azure deployment this configuration names, for the Azure kinds.
    #[cfg(feature = "openai")]
    fn azure(&self) -> Option<agentkit_provider_openai::AzureOpenAi> {
        use agentkit_provider_openai::{AzureCredential, AzureOpenAi};
        if !matches!(self.kind, ProviderKind::Azure | ProviderKind::AzureChat) {
            return None;
        }
        let secret = self.api_key.clone().unwrap_or_default();
        let credential = match self.bearer_token {
            true => AzureCredential::EntraToken(secret),
            false => AzureCredential::ApiKey(secret),
        };
        let endpoint = self.base_url.clone().unwrap_or_default();
        let mut azure = AzureOpenAi::new(endpoint, self.model.clone(), credential);
        if let Some(version) = &self.api_version {
            azure = azure.with_api_version(version.clone());
        }
        Some(azure)
    }

    #[cfg(feature = "openai")]
    fn limited(
        &self,
        config: agentkit_provider_openai::OpenAiConfig,
    ) -> agentkit_provider_openai::OpenAiConfig {
        match self.max_tokens {
            Some(max) => config.with_max_tokens(max),
            None => config,
        }
    }

    #[cfg(feature = "openai")]
    fn openai_config(&self) -> agentkit_provider_openai::OpenAiConfig {
        use agentkit_provider_openai::OpenAiConfig;
        let mut config = match (self.kind, &self.base_url) {
            (ProviderKind::Compatible, url) => {
                OpenAiConfig::compatible(url.clone().unwrap_or_default(), self.model.clone())
            }
            (_, url) => {
                let mut config = OpenAiConfig::openai(String::new(), self.model.clone());
                if let Some(url) = url {
                    config.base_url = url.clone();
                }
                config
            }
        };
        config.api_key = self.api_key.clone();
        self.limited(config)
    }
}

/// The provider the environment implies when `AGENTKIT_PROVIDER` is unset.
fn infer(get: &impl Fn(&str) -> Option<String>) -> Result<ProviderKind, ConfigError> {
    if get("OPENAI_BASE_URL").is_some_and(|url| !is_openai(&url)) {
        return Ok(ProviderKind::Compatible);
    }
    ProviderKind::ALL
        .into_iter()
        .filter(|kind| !matches!(kind, ProviderKind::OpenAiChat | ProviderKind::AzureChat))
        .find(|kind| match kind {
            ProviderKind::Azure => get("AZURE_OPENAI_ENDPOINT").is_some(),
            kind => kind.key_vars().0.iter().any(|var| get(var).is_some()) && kind.key_vars().1,
        })
        .ok_or(ConfigError::NoProvider)
}

/// `true` for OpenAI's own API root.
fn is_openai(url: &str) -> bool {
    url.trim_end_matches('/')
        .trim_start_matches("https://")
        .starts_with("api.openai.com")
}

/// Reads the environment and builds the model it names, in one call.
///
/// Building the model sends nothing, so this runs anywhere; with nothing
/// configured it says what to set.
///
/// ```
/// use agentkit::agent::Agent;
/// use agentkit::provider::{ConfigError, model_from_env};
///
/// match model_from_env() {
///     Ok(model) => {
///         let agent = Agent::builder().model(model).build()?;
///         # drop(agent);
///     }
///     Err(ConfigError::NoProvider) => {
///         eprintln!("set OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENAI_BASE_URL")
///     }
///     Err(err) => eprintln!("{err}"), // names the variable that is wrong
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn model_from_env() -> Result<DynModel, ConfigError> {
    ProviderConfig::from_env()?.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_provider_openai::Preset;

    fn config(vars: &[(&str, &str)]) -> Result<ProviderConfig, ConfigError> {
        ProviderConfig::from_lookup(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_provider_is_inferred_in_the_documented_order() {
        let cases: &[(&[(&str, &str)], ProviderKind)] = &[
            (&[("OPENAI_API_KEY", "sk")], ProviderKind::OpenAi),
            (&[("ANTHROPIC_API_KEY", "sk-ant")], ProviderKind::Anthropic),
            (
                &[("OPENAI_API_KEY", "sk"), ("ANTHROPIC_API_KEY", "sk-ant")],
                ProviderKind::OpenAi,
            ),
            (
                &[
                    ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
                    ("AGENTKIT_MODEL", "llama3.2"),
                ],
                ProviderKind::Compatible,
            ),
            (
                &[
                    ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
                    ("OPENAI_API_KEY", "sk"),
                ],
                ProviderKind::OpenAi,
            ),
            (
                &[
                    ("AGENTKIT_PROVIDER", "openai-chat"),
                    ("OPENAI_API_KEY", "sk"),
                ],
                ProviderKind::OpenAiChat,
            ),
        ];
        for (vars, kind) in cases {
            assert_eq!(config(vars).unwrap().kind, *kind, "{vars:?}");
        }
        let chosen = config(&[("ANTHROPIC_API_KEY", "k")]).unwrap();
        assert_eq!(chosen.model, DEFAULT_ANTHROPIC_MODEL);
        assert!(!format!("{chosen:?}").contains("\"k\""));
    }

    #[test]
    fn every_provider_is_known_by_name_with_its_key_and_model() {
        // (vars, kind, model, key)
        type Case<'a> = (
            &'a [(&'a str, &'a str)],
            ProviderKind,
            &'a str,
            Option<&'a str>,
        );
        let cases: &[Case<'_>] = &[
            (
                &[("GEMINI_API_KEY", "g")],
                ProviderKind::Gemini,
                DEFAULT_GEMINI_MODEL,
                Some("g"),
            ),
            (
                &[("GOOGLE_API_KEY", "g2")],
                ProviderKind::Gemini,
                DEFAULT_GEMINI_MODEL,
                Some("g2"),
            ),
            (
                &[
                    ("AZURE_OPENAI_ENDPOINT", "https://r.openai.azure.com"),
                    ("AZURE_OPENAI_API_KEY", "az"),
                    ("AZURE_OPENAI_DEPLOYMENT", "dep"),
                ],
                ProviderKind::Azure,
                "dep",
                Some("az"),
            ),
            (
                &[("GROQ_API_KEY", "gsk")],
                ProviderKind::Preset(Preset::Groq),
                "llama-3.3-70b-versatile",
                Some("gsk"),
            ),
            (
                &[("MISTRAL_API_KEY", "m")],
                ProviderKind::Preset(Preset::Mistral),
                "mistral-large-latest",
                Some("m"),
            ),
            (
                &[("DEEPSEEK_API_KEY", "d")],
                ProviderKind::Preset(Preset::DeepSeek),
                "deepseek-chat",
                Some("d"),
            ),
            (
                &[("AGENTKIT_PROVIDER", "ollama")],
                ProviderKind::Preset(Preset::Ollama),
                "llama3.2",
                None,
            ),
            (
                &[("AGENTKIT_PROVIDER", "vllm"), ("AGENTKIT_MODEL", "qwen")],
                ProviderKind::Preset(Preset::Vllm),
                "qwen",
                None,
            ),
            (
                &[("AGENTKIT_PROVIDER", "XAI"), ("XAI_API_KEY", "x")],
                ProviderKind::Preset(Preset::Xai),
                "grok-4",
                Some("x"),
            ),
        ];
        for (vars, kind, model, key) in cases {
            let chosen = config(vars).unwrap();
            assert_eq!(
                (
                    chosen.kind,
                    chosen.model.as_str(),
                    chosen.api_key.as_deref()
                ),
                (*kind, *model, *key),
                "{vars:?}"
            );
            // Every one of them builds.
            chosen.build().unwrap();
        }
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::parse(kind.name()), Some(kind));
        }
        // Azure with an Entra ID token instead of a key.
        let azure = config(&[
            ("AGENTKIT_PROVIDER", "azure-chat"),
            ("AZURE_OPENAI_ENDPOINT", "https://r.openai.azure.com"),
            ("AZURE_OPENAI_AD_TOKEN", "eyJ"),
            ("AGENTKIT_MODEL", "dep"),
            ("AZURE_OPENAI_API_VERSION", "2025-01-01-preview"),
        ])
        .unwrap();
        assert!(azure.bearer_token);
        assert_eq!(azure.api_version.as_deref(), Some("2025-01-01-preview"));
        let err = config(&[("AGENTKIT_PROVIDER", "azure")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the azure provider needs AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY (or \
             AZURE_OPENAI_AD_TOKEN) and AGENTKIT_MODEL (or AZURE_OPENAI_DEPLOYMENT)"
        );
        let err = config(&[("AGENTKIT_PROVIDER", "gemini")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the gemini provider needs GEMINI_API_KEY (or GOOGLE_API_KEY)"
        );
        let err = config(&[("AGENTKIT_PROVIDER", "bedrock")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the bedrock provider needs AWS_REGION (or AWS_DEFAULT_REGION) and AGENTKIT_MODEL"
        );
        let model = "amazon.nova-pro-v1:0";
        let vars = [("AGENTKIT_PROVIDER", "bedrock"), ("AGENTKIT_MODEL", model)];
        let bedrock = config(&[vars[0], vars[1], ("AWS_DEFAULT_REGION", "eu-west-3")]).unwrap();
        assert_eq!(bedrock.region.as_deref(), Some("eu-west-3"));
        let both = [
            vars[0],
            vars[1],
            ("AWS_REGION", "us-west-2"),
            ("AWS_DEFAULT_REGION", "x"),
        ];
        assert_eq!(config(&both).unwrap().region.as_deref(), Some("us-west-2"));
        // AWS credentials alone never pick Bedrock.
        let aws = [
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
        ];
        assert!(matches!(config(&aws), Err(ConfigError::NoProvider)));
        let err = config(&[("AGENTKIT_PROVIDER", "lmstudio")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the lmstudio provider needs AGENTKIT_MODEL"
        );
    }

    #[test]
    fn errors_list_what_is_missing_or_wrong() {
        assert!(matches!(config(&[]), Err(ConfigError::NoProvider)));
        assert!(matches!(
            config(&[("OPENAI_API_KEY", "  ")]),
            Err(ConfigError::NoProvider)
        ));
        let err = config(&[("AGENTKIT_PROVIDER", "compatible")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the compatible provider needs OPENAI_BASE_URL and AGENTKIT_MODEL"
        );
        let err =
            config(&[("AGENTKIT_PROVIDER", "anthropic"), ("OPENAI_API_KEY", "sk")]).unwrap_err();
        assert!(
            matches!(&err, ConfigError::Missing { provider: ProviderKind::Anthropic, missing } if missing == &["ANTHROPIC_API_KEY"]),
            "{err}"
        );
        let err = config(&[("AGENTKIT_PROVIDER", "palm")]).unwrap_err();
        assert!(matches!(
            err,
            ConfigError::Invalid {
                variable: "AGENTKIT_PROVIDER",
                ..
            }
        ));
        let err = config(&[("OPENAI_API_KEY", "sk"), ("AGENTKIT_MAX_TOKENS", "lots")]).unwrap_err();
        assert!(matches!(
            err,
            ConfigError::Invalid {
                variable: "AGENTKIT_MAX_TOKENS",
                ..
            }
        ));
        let err = config(&[
            ("OPENAI_BASE_URL", "localhost:8080"),
            ("AGENTKIT_MODEL", "m"),
        ])
        .unwrap_err();
        assert!(matches!(
            err,
            ConfigError::Invalid {
                variable: "OPENAI_BASE_URL",
                ..
            }
        ));
    }
}
