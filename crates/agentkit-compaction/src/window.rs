//! Context windows and token accounting.
//!
//! The provider's usage report of the last call is a measurement: its input
//! plus output tokens are what the transcript cost up to that answer. Only
//! what was appended since needs an estimate, so the count stays close to
//! the truth in long sessions where bytes/4 alone drifts by tens of percent.

use crate::estimate_tokens;
use agentkit_core::Item;
use agentkit_loop::LastCallUsage;

/// The context window of common models, in tokens, by name prefix; `None`
/// for models this table does not know (configure the window yourself).
///
/// ```
/// assert_eq!(agentkit_compaction::context_window("gpt-4o-mini"), Some(128_000));
/// assert_eq!(agentkit_compaction::context_window("claude-sonnet-4-5"), Some(200_000));
/// assert_eq!(agentkit_compaction::context_window("my-own-model"), None);
/// ```
pub fn context_window(model: &str) -> Option<usize> {
    // Longest prefixes first: the first match wins.
    const WINDOWS: &[(&str, usize)] = &[
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("gpt-5", 400_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("claude", 200_000),
        ("gemini-1.5", 1_048_576),
        ("gemini-2", 1_048_576),
        ("llama-3", 128_000),
        ("llama3", 8_192),
        ("mistral-large", 128_000),
        ("qwen2.5", 32_768),
        ("deepseek", 128_000),
        ("smollm2", 8_192),
    ];
    let model = model.to_ascii_lowercase();
    let name = model.rsplit('/').next().unwrap_or(&model);
    WINDOWS
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|&(_, window)| window)
}

/// Tokens of `items`: the provider's measurement up to the last call's
/// answer (when it reported one and it still describes this transcript)
/// plus an estimate of what came after; the estimate alone otherwise.
pub fn count_tokens(items: &[Item], last_call: Option<&LastCallUsage>) -> usize {
    match last_call {
        Some(last) if last.transcript_len <= items.len() => {
            let measured =
                (last.usage.tokens.input_tokens + last.usage.tokens.output_tokens) as usize;
            if measured == 0 {
                return estimate_tokens(items);
            }
            measured + estimate_tokens(&items[last.transcript_len..])
        }
        _ => estimate_tokens(items),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_core::{TokenUsage, Usage};

    #[test]
    fn measured_usage_plus_an_estimate_of_the_rest() {
        let items = vec![Item::user("a".repeat(400)), Item::assistant("b".repeat(40))];
        let last = LastCallUsage {
            usage: Usage {
                tokens: TokenUsage {
                    input_tokens: 1_000,
                    output_tokens: 50,
                    ..TokenUsage::default()
                },
                ..Usage::default()
            },
            transcript_len: 1,
        };
        assert_eq!(
            count_tokens(&items, Some(&last)),
            1_050 + estimate_tokens(&items[1..])
        );
        assert_eq!(count_tokens(&items, None), estimate_tokens(&items));
        // A stale measurement (of a longer, older transcript) is ignored.
        let stale = LastCallUsage {
            transcript_len: 10,
            ..last
        };
        assert_eq!(count_tokens(&items, Some(&stale)), estimate_tokens(&items));
    }

    #[test]
    fn provider_prefixes_are_ignored() {
        assert_eq!(context_window("openai/gpt-4o"), Some(128_000));
        assert_eq!(context_window("GPT-4.1-mini"), Some(1_047_576));
    }
}
