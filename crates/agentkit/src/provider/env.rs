//! Picking and configuring the provider from the environment, in one call.
//!
//! | variable | meaning |
//! | --- | --- |
//! | `AGENTKIT_PROVIDER` | `openai` (Responses API), `openai-chat` (Chat Completions), `anthropic`, or `compatible` (any Chat Completions server at `OPENAI_BASE_URL`); inferred when unset |
//! | `AGENTKIT_MODEL` | the model name; required for `compatible`, defaulted otherwise |
//! | `AGENTKIT_MAX_TOKENS` | the output-token limit |
//! | `OPENAI_API_KEY` | OpenAI's key (optional for `compatible`) |
//! | `OPENAI_BASE_URL` | the API root up to `/v1`: OpenAI by default, or a compatible server (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter) |
//! | `ANTHROPIC_API_KEY` | Anthropic's key |
//! | `ANTHROPIC_BASE_URL` | Anthropic's API root up to `/v1` (a gateway) |
//!
//! Without `AGENTKIT_PROVIDER`: an `OPENAI_BASE_URL` that is not OpenAI's
//! means `compatible`; otherwise an `OPENAI_API_KEY` means `openai`; otherwise
//! an `ANTHROPIC_API_KEY` means `anthropic`.
//!
//! Every Chat Completions request has one shape that OpenAI, llama.cpp,
//! vLLM, Ollama, LM Studio and OpenRouter all accept (an assistant message
//! with tool calls carries `"content": ""`), so no per-server switch is
//! needed; what differs (the token-limit field, the `developer` role) is
//! set by the `compatible` choice.

use super::DynModel;
use agentkit_loop::ModelError;
use std::fmt;

/// The default model for `openai` and `openai-chat`.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-5-mini";
/// The default model for `anthropic`.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// Which API a [`ProviderConfig`] talks to.
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
}

impl ProviderKind {
    /// The value of `AGENTKIT_PROVIDER` that selects it.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::OpenAiChat => "openai-chat",
            Self::Anthropic => "anthropic",
            Self::Compatible => "compatible",
        }
    }

    fn parse(value: &str) -> Option<Self> {
        [
            Self::OpenAi,
            Self::OpenAiChat,
            Self::Anthropic,
            Self::Compatible,
        ]
        .into_iter()
        .find(|kind| kind.name().eq_ignore_ascii_case(value.trim()))
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
         (Anthropic), or OPENAI_BASE_URL and AGENTKIT_MODEL (a compatible server such as \
         Ollama or llama.cpp); AGENTKIT_PROVIDER picks one explicitly"
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
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderConfig {
    /// Which API.
    pub kind: ProviderKind,
    /// The model name.
    pub model: String,
    /// The key, when one is needed or given.
    pub api_key: Option<String>,
    /// The API root, when not the provider's own.
    pub base_url: Option<String>,
    /// The output-token limit.
    pub max_tokens: Option<u32>,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
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
        let openai_url = get("OPENAI_BASE_URL");
        let kind = match get("AGENTKIT_PROVIDER") {
            Some(value) => ProviderKind::parse(&value).ok_or_else(|| ConfigError::Invalid {
                variable: "AGENTKIT_PROVIDER",
                value,
                reason: "expected openai, openai-chat, anthropic or compatible".into(),
            })?,
            None if openai_url.as_deref().is_some_and(|url| !is_openai(url)) => {
                ProviderKind::Compatible
            }
            None if get("OPENAI_API_KEY").is_some() => ProviderKind::OpenAi,
            None if get("ANTHROPIC_API_KEY").is_some() => ProviderKind::Anthropic,
            None => return Err(ConfigError::NoProvider),
        };
        let (key_var, url_var, default_model) = match kind {
            ProviderKind::Anthropic => (
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL",
                Some(DEFAULT_ANTHROPIC_MODEL),
            ),
            ProviderKind::Compatible => ("OPENAI_API_KEY", "OPENAI_BASE_URL", None),
            _ => (
                "OPENAI_API_KEY",
                "OPENAI_BASE_URL",
                Some(DEFAULT_OPENAI_MODEL),
            ),
        };
        let api_key = get(key_var);
        let base_url = get(url_var);
        let model = get("AGENTKIT_MODEL").or(default_model.map(str::to_owned));
        let mut missing = Vec::new();
        if kind == ProviderKind::Compatible {
            if base_url.is_none() {
                missing.push("OPENAI_BASE_URL");
            }
        } else if api_key.is_none() {
            missing.push(key_var);
        }
        if model.is_none() {
            missing.push("AGENTKIT_MODEL");
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
            ProviderKind::OpenAi => {
                let adapter = agentkit_provider_openai::ResponsesAdapter::new(self.openai_config())
                    .map_err(adapter_error)?;
                Ok(DynModel::new(adapter))
            }
            #[cfg(feature = "openai")]
            ProviderKind::OpenAiChat | ProviderKind::Compatible => {
                let adapter = agentkit_provider_openai::OpenAiAdapter::new(self.openai_config())
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
            #[allow(unreachable_patterns)]
            kind => {
                let _ = adapter_error;
                Err(ConfigError::NotCompiled {
                    provider: kind,
                    feature: if kind == ProviderKind::Anthropic {
                        "anthropic"
                    } else {
                        "openai"
                    },
                })
            }
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
        if let Some(max) = self.max_tokens {
            config = config.with_max_tokens(max);
        }
        config
    }
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
        let err = config(&[("AGENTKIT_PROVIDER", "gemini")]).unwrap_err();
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
