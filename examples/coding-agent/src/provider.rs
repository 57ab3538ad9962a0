//! Which model to talk to, chosen from the environment through the
//! umbrella crate's run-time provider choice ([`ProviderConfig`], a
//! [`DynModel`]): `AGENTKIT_PROVIDER`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`
//! (a compatible server such as Ollama or llama.cpp), `ANTHROPIC_API_KEY`,
//! `AGENTKIT_MODEL`. With none of them the offline demo runs. A compatible
//! server without `AGENTKIT_MODEL` gets `llama3.2`. `AGENTKIT_CONTEXT_WINDOW`
//! sets the model's context window in tokens (for compaction) when the
//! model's name does not tell it.

use crate::probe::Probe;
use agentkit::provider::{ConfigError, DynModel, ProviderConfig, ProviderKind};
use agentkit_core::Usage;

/// The model a compatible server is asked for when `AGENTKIT_MODEL` is unset.
const DEFAULT_LOCAL_MODEL: &str = "llama3.2";

/// What the status line says about the model, and how it prices tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelInfo {
    /// `openai gpt-4o-mini`, `local llama3.2 at http://...`.
    pub label: String,
    /// US dollars per million input and output tokens, when known.
    pub price: Option<(f64, f64)>,
    /// The model's name, as the provider is asked for it.
    pub model: String,
    /// The context window in tokens, when configured or the server said.
    pub window: Option<usize>,
    /// The server's base URL, when one was configured.
    pub base_url: Option<String>,
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

/// Why no provider could be built: the configuration error, which names
/// the missing or invalid variables.
pub type ProviderError = ConfigError;

/// The model the environment configures, or `None` for the demo. A
/// compatible server without `AGENTKIT_MODEL` is asked first which model
/// it serves and its context size (see [`crate::probe`]).
pub async fn from_env() -> Result<Option<(DynModel, ModelInfo)>, ProviderError> {
    let var = |name: &str| std::env::var(name).ok();
    let unnamed = var("AGENTKIT_MODEL").is_none_or(|v| v.trim().is_empty());
    let probe = match local_server(&var).filter(|_| unnamed) {
        Some(url) => Some(crate::probe::probe(&url).await),
        None => None,
    };
    from_vars_probed(var, probe.as_ref())
}

/// [`from_env`] over any variable lookup, without asking a server, for
/// tests.
#[cfg(test)]
pub fn from_vars(
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<(DynModel, ModelInfo)>, ProviderError> {
    from_vars_probed(var, None)
}

/// The base URL of a compatible server the environment picks by
/// `OPENAI_BASE_URL` alone.
fn local_server(var: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    match set("AGENTKIT_PROVIDER") {
        None => set("OPENAI_BASE_URL"),
        Some(kind) if kind.trim() == ProviderKind::Compatible.name() => set("OPENAI_BASE_URL"),
        Some(_) => None,
    }
}

/// The provider of `var`, with what `probe` learnt from a compatible
/// server: the model it serves (when `AGENTKIT_MODEL` is unset) and its
/// context size.
fn from_vars_probed(
    var: impl Fn(&str) -> Option<String>,
    probe: Option<&Probe>,
) -> Result<Option<(DynModel, ModelInfo)>, ProviderError> {
    let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    let local = set("OPENAI_BASE_URL").is_some() && set("AGENTKIT_PROVIDER").is_none();
    let served = probe.and_then(|p| p.models.first().cloned());
    let defaulted = local && set("AGENTKIT_MODEL").is_none() && served.is_none();
    let lookup = |name: &str| match name {
        "AGENTKIT_MODEL" if local => set(name)
            .or_else(|| served.clone())
            .or_else(|| Some(DEFAULT_LOCAL_MODEL.into())),
        _ => set(name),
    };
    let config = match ProviderConfig::from_lookup(lookup) {
        Ok(config) => config,
        Err(ConfigError::NoProvider) => return Ok(None),
        Err(error) => return Err(error),
    };
    let model = match set("CODING_AGENT_TOOL_CHOICE") {
        Some(choice) => forced(&config, &choice)?,
        None => config.build()?,
    };
    let label = match (config.kind, &config.base_url) {
        (ProviderKind::Compatible, Some(url)) if defaulted => format!(
            "{} at {url} (a default name: the server listed no models; set AGENTKIT_MODEL)",
            config.model
        ),
        (ProviderKind::Compatible, Some(url)) => format!("{} at {url}", config.model),
        (ProviderKind::Anthropic, _) => format!("anthropic {}", config.model),
        (kind, _) => format!("{} {}", kind.name(), config.model),
    };
    let window = match set("AGENTKIT_CONTEXT_WINDOW") {
        None => None,
        Some(text) => Some(
            text.trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 256)
                .ok_or(ConfigError::Invalid {
                    variable: "AGENTKIT_CONTEXT_WINDOW",
                    value: text,
                    reason: "a number of tokens, at least 256".into(),
                })?,
        ),
    };
    let info = ModelInfo {
        label,
        price: price_of(&config.model),
        model: config.model.clone(),
        window: window.or_else(|| probe.and_then(|p| p.n_ctx)),
        base_url: config.base_url.clone(),
    };
    Ok(Some((model, info)))
}

/// The adapter of an OpenAI-compatible server with `tool_choice` set on
/// every request (`CODING_AGENT_TOOL_CHOICE`: `required`, `none`, `auto`
/// or a tool's name). For models too small to call tools on their own
/// (SmolLM2-135M) and the tests that need a real server to call one: with
/// a forced choice every model call is a tool call, so pair it with
/// `exec --max-steps`.
fn forced(config: &ProviderConfig, choice: &str) -> Result<DynModel, ProviderError> {
    use agentkit::openai::{OpenAiAdapter, OpenAiConfig, ToolChoice};
    if config.kind != ProviderKind::Compatible {
        return Err(ConfigError::Invalid {
            variable: "CODING_AGENT_TOOL_CHOICE",
            value: choice.to_owned(),
            reason: "only for an OpenAI-compatible server (OPENAI_BASE_URL)".into(),
        });
    }
    let choice = match choice.trim() {
        "required" => ToolChoice::Required,
        "none" => ToolChoice::None,
        "auto" => ToolChoice::Auto,
        tool => ToolChoice::Tool(tool.to_owned()),
    };
    let mut openai = OpenAiConfig::compatible(
        config.base_url.clone().unwrap_or_default(),
        config.model.clone(),
    )
    .with_tool_choice(choice);
    openai.api_key = config.api_key.clone();
    if let Some(max) = config.max_tokens {
        openai = openai.with_max_tokens(max);
    }
    let adapter = OpenAiAdapter::new(openai).map_err(|source| ConfigError::Adapter {
        provider: config.kind,
        source,
    })?;
    Ok(DynModel::new(adapter))
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
        assert_eq!(
            local.label,
            "llama3.2 at http://127.0.0.1:1/v1 (a default name: the server listed no models; \
             set AGENTKIT_MODEL)"
        );
        assert_eq!(local.price, None);
        let openai = pick(&[
            ("OPENAI_API_KEY", "sk"),
            ("ANTHROPIC_API_KEY", "a"),
            ("AGENTKIT_MODEL", "gpt-4o-mini"),
        ])
        .unwrap();
        assert_eq!(openai.label, "openai gpt-4o-mini");
        assert_eq!(openai.price, Some((0.15, 0.60)));
        let chat = pick(&[
            ("AGENTKIT_PROVIDER", "openai-chat"),
            ("OPENAI_API_KEY", "sk"),
            ("AGENTKIT_MODEL", "gpt-4.1"),
        ])
        .unwrap();
        assert_eq!(chat.label, "openai-chat gpt-4.1");
        let claude = pick(&[("ANTHROPIC_API_KEY", "a")]).unwrap();
        assert_eq!(claude.label, "anthropic claude-sonnet-4-5");
    }

    #[test]
    fn a_local_server_names_its_model_and_window() {
        let probe = Probe {
            models: vec!["SmolLM2-135M-Instruct".into()],
            n_ctx: Some(2048),
        };
        let var = |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:1/v1".into());
        let (_, info) = from_vars_probed(var, Some(&probe)).unwrap().unwrap();
        assert_eq!(info.label, "SmolLM2-135M-Instruct at http://127.0.0.1:1/v1");
        assert_eq!(info.window, Some(2048));
        assert_eq!(info.base_url.as_deref(), Some("http://127.0.0.1:1/v1"));
        // AGENTKIT_MODEL still wins.
        let var = |name: &str| match name {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:1/v1".into()),
            "AGENTKIT_MODEL" => Some("mine".into()),
            _ => None,
        };
        let (_, info) = from_vars_probed(var, Some(&probe)).unwrap().unwrap();
        assert_eq!(info.model, "mine");
        assert_eq!(local_server(&var).as_deref(), Some("http://127.0.0.1:1/v1"));
    }

    #[test]
    fn the_context_window_is_configured_or_a_clear_error() {
        let with = |window: &str| {
            from_vars(|name| match name {
                "OPENAI_API_KEY" => Some("sk".into()),
                "AGENTKIT_CONTEXT_WINDOW" => Some(window.into()),
                _ => None,
            })
        };
        let (_, info) = with("32768").unwrap().unwrap();
        assert_eq!(info.window, Some(32_768));
        assert_eq!(info.model, "gpt-5-mini");
        let error = with("lots").err().unwrap();
        assert!(
            error.to_string().contains("AGENTKIT_CONTEXT_WINDOW"),
            "{error}"
        );
    }

    #[test]
    fn a_provider_missing_its_key_is_a_clear_error() {
        let error = from_vars(|name| (name == "AGENTKIT_PROVIDER").then(|| "anthropic".into()))
            .err()
            .unwrap();
        assert!(error.to_string().contains("ANTHROPIC_API_KEY"), "{error}");
    }

    #[test]
    fn cost_uses_the_price_table() {
        let info = ModelInfo {
            label: "x".into(),
            price: price_of("gpt-4o-mini-2024-07-18"),
            model: "gpt-4o-mini-2024-07-18".into(),
            window: None,
            base_url: None,
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
