//! Token usage as Chat Completions reports it.
//!
//! `prompt_tokens` already includes the cached ones, which is what
//! `TokenUsage::input_tokens` means too; cached and reasoning counts sit in
//! optional detail objects that compatible servers often leave out.
//! OpenRouter adds the call's `cost` (US dollars).

use agentkit_core::{CostUsage, TokenUsage, Usage};
use serde::Deserialize;

#[derive(Deserialize, Default)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    /// The call's cost in US dollars, as OpenRouter reports it.
    #[serde(default)]
    cost: Option<f64>,
    /// DeepSeek's count of prompt tokens served from its cache.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    pub(crate) fn into_usage(self) -> Usage {
        let cost = self.cost.filter(|c| c.is_finite()).map(|amount| CostUsage {
            amount,
            currency: "USD".to_owned(),
        });
        let mut usage = Usage::from_tokens(TokenUsage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
            reasoning_tokens: self
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            cache_read_tokens: self
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(self.prompt_cache_hit_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
        });
        usage.cost = cost;
        usage
    }
}
