//! Which model to talk to, chosen from the environment.
//!
//! `OPENAI_BASE_URL` (a compatible server such as Ollama or llama.cpp)
//! wins, then `OPENAI_API_KEY`, then `ANTHROPIC_API_KEY`; `AGENTKIT_MODEL`
//! overrides the model. With none of them the offline demo runs.
//!
//! This is the one place that knows the adapters: when the umbrella crate's
//! run-time provider choice (`DynModel` from the environment) lands, the
//! [`Provider`] enum collapses into it and `main` keeps calling one function.

use agentkit_core::Usage;
use agentkit_provider_anthropic::{AnthropicAdapter, AnthropicConfig};
use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig};

/// A configured provider, ready to build the agent with.
pub enum Provider {
    /// OpenAI Chat Completions, or a compatible server.
    OpenAi(OpenAiAdapter),
    /// Anthropic Messages.
    Anthropic(AnthropicAdapter),
}

/// What the status line says about the model, and how it prices tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelInfo {
    /// `openai gpt-4o-mini`, `local llama3.2 at http://...`.
    pub label: String,
    /// US dollars per million input and output tokens, when known.
    pub price: Option<(f64, f64)>,
}

impl ModelInfo {
    /// The cost of `usage`: the provider's own figure if it sent one, else
    /// the price table's estimate.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        if let Some(cost) = usage.cost.as_ref().filter(|c| c.currency == "USD") {
            return Some(cost.amount);
        }
        let (input, output) = self.price?;
        Some(
            (usage.tokens.input_tokens as f64 * input + usage.tokens.output_tokens as f64 * output)
                / 1_000_000.0,
        )
    }
}

/// Why no provider could be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The OpenAI adapter refused its configuration.
    #[error("OpenAI configuration: {0}")]
    OpenAi(String),
    /// The Anthropic adapter refused its configuration.
    #[error("Anthropic configuration: {0}")]
    Anthropic(String),
}

/// The provider the environment configures, or `None` for the demo.
pub fn from_env() -> Result<Option<(Provider, ModelInfo)>, ProviderError> {
    from_vars(|name| std::env::var(name).ok())
}

/// [`from_env`] over any variable lookup, for tests.
pub fn from_vars(
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<(Provider, ModelInfo)>, ProviderError> {
    let env = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    let model = env("AGENTKIT_MODEL");
    if let Some(base_url) = env("OPENAI_BASE_URL") {
        let model = model.unwrap_or_else(|| "llama3.2".into());
        let mut config = OpenAiConfig::compatible(base_url.clone(), model.clone());
        if let Some(key) = env("OPENAI_API_KEY") {
            config = config.with_api_key(key);
        }
        let adapter =
            OpenAiAdapter::new(config).map_err(|e| ProviderError::OpenAi(e.to_string()))?;
        let info = ModelInfo {
            label: format!("{model} at {base_url}"),
            price: price_of(&model),
        };
        return Ok(Some((Provider::OpenAi(adapter), info)));
    }
    if let Some(key) = env("OPENAI_API_KEY") {
        let model = model.unwrap_or_else(|| "gpt-4o-mini".into());
        let adapter = OpenAiAdapter::new(OpenAiConfig::openai(key, model.clone()))
            .map_err(|e| ProviderError::OpenAi(e.to_string()))?;
        let info = ModelInfo {
            label: format!("openai {model}"),
            price: price_of(&model),
        };
        return Ok(Some((Provider::OpenAi(adapter), info)));
    }
    if let Some(key) = env("ANTHROPIC_API_KEY") {
        let model = model.unwrap_or_else(|| "claude-sonnet-4-5".into());
        let adapter = AnthropicAdapter::new(AnthropicConfig::new(key, model.clone()))
            .map_err(|e| ProviderError::Anthropic(e.to_string()))?;
        let info = ModelInfo {
            label: format!("anthropic {model}"),
            price: price_of(&model),
        };
        return Ok(Some((Provider::Anthropic(adapter), info)));
    }
    Ok(None)
}

/// List prices (USD per million input, output tokens) of a few well-known
/// models; unknown models show tokens without a cost.
fn price_of(model: &str) -> Option<(f64, f64)> {
    const PRICES: &[(&str, f64, f64)] = &[
        ("gpt-4o-mini", 0.15, 0.60),
        ("gpt-4o", 2.50, 10.0),
        ("gpt-4.1-mini", 0.40, 1.60),
        ("gpt-4.1-nano", 0.10, 0.40),
        ("gpt-4.1", 2.00, 8.00),
        ("claude-haiku-4-5", 1.00, 5.00),
        ("claude-sonnet-4-5", 3.00, 15.0),
        ("claude-opus-4-1", 15.0, 75.0),
    ];
    PRICES
        .iter()
        .find(|(name, _, _)| model == *name || model.starts_with(&format!("{name}-")))
        .map(|(_, input, output)| (*input, *output))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_core::TokenUsage;

    fn pick(vars: &[(&str, &str)]) -> Option<ModelInfo> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        from_vars(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
            .unwrap()
            .map(|(_, info)| info)
    }

    #[test]
    fn the_environment_picks_the_provider() {
        assert_eq!(pick(&[]), None);
        assert_eq!(pick(&[("OPENAI_API_KEY", " ")]), None);
        let local = pick(&[
            ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
            ("OPENAI_API_KEY", "sk"),
        ])
        .unwrap();
        assert_eq!(local.label, "llama3.2 at http://127.0.0.1:1/v1");
        assert_eq!(local.price, None);
        let openai = pick(&[("OPENAI_API_KEY", "sk"), ("ANTHROPIC_API_KEY", "a")]).unwrap();
        assert_eq!(openai.label, "openai gpt-4o-mini");
        let claude = pick(&[("ANTHROPIC_API_KEY", "a")]).unwrap();
        assert_eq!(claude.label, "anthropic claude-sonnet-4-5");
    }

    #[test]
    fn cost_uses_the_price_table() {
        let info = ModelInfo {
            label: "x".into(),
            price: price_of("gpt-4o-mini-2024-07-18"),
        };
        let usage = Usage::from_tokens(TokenUsage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            ..TokenUsage::default()
        });
        assert_eq!(info.cost(&usage), Some(0.75));
        assert_eq!(price_of("my-local-model"), None);
    }
}
