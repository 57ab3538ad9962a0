//! Named presets for the servers that speak Chat Completions.
//!
//! Each preset is a base URL, the variable its key usually lives in, a
//! default model, and the server's known quirks:
//!
//! | preset | quirks handled |
//! | --- | --- |
//! | OpenRouter | cost reported in usage (`usage.include`); reasoning in `reasoning` |
//! | Groq | usage arrives in `x_groq.usage`; no `prompt_cache_key` |
//! | Mistral | refuses unknown fields (`stream_options`, `prompt_cache_key`, `max_completion_tokens`); forcing a tool is `tool_choice: "any"` |
//! | DeepSeek | `reasoning_content` streamed, and sent back beside tool calls within a tool round |
//! | xAI | `reasoning_content` streamed |
//! | Together, Fireworks | `max_tokens`; no OpenAI-only fields |
//! | Ollama, LM Studio, vLLM | local, no key; `reasoning` / `reasoning_content` streamed |
//!
//! What every compatible server needs (no `developer` role, `max_tokens`)
//! comes from [`OpenAiConfig::compatible`].

use crate::{OpenAiConfig, Quirks};
use serde_json::json;

/// A compatible server with its known quirks.
///
/// ```
/// use agentkit_provider_openai::Preset;
///
/// let preset = Preset::from_name("groq").expect("a known preset");
/// assert_eq!(preset.key_var(), Some("GROQ_API_KEY"));
/// let config = preset.config(Some("gsk-test".into()), None);
/// assert_eq!(config.endpoint(), "https://api.groq.com/openai/v1/chat/completions");
/// assert_eq!(config.model, "llama-3.3-70b-versatile");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Preset {
    /// OpenRouter, a gateway to many providers' models.
    OpenRouter,
    /// Groq.
    Groq,
    /// Mistral AI's La Plateforme.
    Mistral,
    /// DeepSeek.
    DeepSeek,
    /// xAI (Grok).
    Xai,
    /// Together AI.
    Together,
    /// Fireworks AI.
    Fireworks,
    /// Ollama on this machine.
    Ollama,
    /// LM Studio's local server.
    LmStudio,
    /// A vLLM server on this machine.
    Vllm,
}

impl Preset {
    /// Every preset.
    pub const ALL: [Preset; 10] = [
        Preset::OpenRouter,
        Preset::Groq,
        Preset::Mistral,
        Preset::DeepSeek,
        Preset::Xai,
        Preset::Together,
        Preset::Fireworks,
        Preset::Ollama,
        Preset::LmStudio,
        Preset::Vllm,
    ];

    /// The preset's name (`AGENTKIT_PROVIDER=<name>`).
    pub fn name(self) -> &'static str {
        self.spec().0
    }

    /// The preset called `name`, in any case.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// The API root, up to `/v1`.
    pub fn base_url(self) -> &'static str {
        self.spec().1
    }

    /// The environment variable the key usually lives in; `None` for local
    /// servers that need none.
    pub fn key_var(self) -> Option<&'static str> {
        self.spec().2
    }

    /// The model used when none is named; `None` where the server serves
    /// whatever was loaded (LM Studio, vLLM).
    pub fn default_model(self) -> Option<&'static str> {
        self.spec().3
    }

    /// `true` for servers on this machine.
    pub fn is_local(self) -> bool {
        matches!(self, Preset::Ollama | Preset::LmStudio | Preset::Vllm)
    }

    /// `(name, base URL, key variable, default model)`.
    fn spec(
        self,
    ) -> (
        &'static str,
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
    ) {
        match self {
            Preset::OpenRouter => (
                "openrouter",
                "https://openrouter.ai/api/v1",
                Some("OPENROUTER_API_KEY"),
                Some("openai/gpt-5-mini"),
            ),
            Preset::Groq => (
                "groq",
                "https://api.groq.com/openai/v1",
                Some("GROQ_API_KEY"),
                Some("llama-3.3-70b-versatile"),
            ),
            Preset::Mistral => (
                "mistral",
                "https://api.mistral.ai/v1",
                Some("MISTRAL_API_KEY"),
                Some("mistral-large-latest"),
            ),
            Preset::DeepSeek => (
                "deepseek",
                "https://api.deepseek.com/v1",
                Some("DEEPSEEK_API_KEY"),
                Some("deepseek-chat"),
            ),
            Preset::Xai => (
                "xai",
                "https://api.x.ai/v1",
                Some("XAI_API_KEY"),
                Some("grok-4"),
            ),
            Preset::Together => (
                "together",
                "https://api.together.xyz/v1",
                Some("TOGETHER_API_KEY"),
                Some("meta-llama/Llama-3.3-70B-Instruct-Turbo"),
            ),
            Preset::Fireworks => (
                "fireworks",
                "https://api.fireworks.ai/inference/v1",
                Some("FIREWORKS_API_KEY"),
                Some("accounts/fireworks/models/llama-v3p3-70b-instruct"),
            ),
            Preset::Ollama => (
                "ollama",
                "http://127.0.0.1:11434/v1",
                None,
                Some("llama3.2"),
            ),
            Preset::LmStudio => ("lmstudio", "http://127.0.0.1:1234/v1", None, None),
            Preset::Vllm => ("vllm", "http://127.0.0.1:8000/v1", None, None),
        }
    }

    /// The configuration for this server: its base URL and quirks, `key`
    /// when given, `model` or the preset's default (empty when it has
    /// none).
    pub fn config(self, key: Option<String>, model: Option<String>) -> OpenAiConfig {
        let model = model
            .or(self.default_model().map(str::to_owned))
            .unwrap_or_default();
        let mut config = OpenAiConfig::compatible(self.base_url(), model);
        config.api_key = key;
        // OpenAI's own fields: only OpenRouter passes them on.
        let mut quirks = Quirks {
            prompt_cache: self == Preset::OpenRouter,
            ..Quirks::default()
        };
        match self {
            Preset::OpenRouter => {
                config = config.with_body_field("usage", json!({ "include": true }));
            }
            Preset::Mistral => {
                quirks.stream_usage = false;
                quirks.required_tool_choice = "any";
            }
            Preset::DeepSeek => quirks.reasoning_content_back = true,
            Preset::Fireworks => quirks.stream_usage = false,
            _ => {}
        }
        config.quirks = quirks;
        config
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
