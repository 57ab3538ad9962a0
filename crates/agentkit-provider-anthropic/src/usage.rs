//! Token usage as the Messages API reports it.
//!
//! Anthropic counts cached prompt tokens apart: `input_tokens` is only the
//! uncached rest, beside `cache_read_input_tokens` and
//! `cache_creation_input_tokens`. agentkit's `input_tokens` means every
//! prompt token, so the three are added. `message_start` reports the input
//! side and `message_delta` the (cumulative) output; a later report replaces
//! the fields it carries.

use agentkit_core::{TokenUsage, Usage};
use serde::Deserialize;

#[derive(Deserialize, Default, Clone, Copy)]
pub(crate) struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    pub(crate) fn merge(&mut self, newer: WireUsage) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = newer
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = newer
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
    }

    pub(crate) fn to_usage(self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        Usage::from_tokens(TokenUsage {
            input_tokens: self.input_tokens.unwrap_or(0) + read + write,
            output_tokens: self.output_tokens.unwrap_or(0),
            reasoning_tokens: 0,
            cache_read_tokens: read,
            cache_write_tokens: write,
        })
    }
}
