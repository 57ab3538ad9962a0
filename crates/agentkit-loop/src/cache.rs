//! Prompt-cache requests: how the provider should cache the prompt prefix.
//!
//! Providers differ (OpenAI caches automatically and takes a key; Anthropic
//! wants explicit breakpoints), so the request says what the host wants and
//! each adapter maps what it can.

use serde::{Deserialize, Serialize};

/// Whether to cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PromptCacheMode {
    /// Ask the provider not to cache (where it lets us).
    Disabled,
    /// Cache where the provider supports it.
    #[default]
    BestEffort,
    /// Caching is required; adapters that cannot cache say so.
    Required,
}

/// Where the cached prefix ends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PromptCacheStrategy {
    /// Let the adapter choose (tools, system prompt, last message).
    #[default]
    Automatic,
    /// These breakpoints, in order.
    Explicit {
        /// The breakpoints.
        breakpoints: Vec<CacheBreakpoint>,
    },
}

/// A point after which the prompt prefix is cached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "after", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CacheBreakpoint {
    /// After the tool definitions.
    Tools,
    /// After the system prompt.
    System,
    /// After the transcript item at this index.
    Item {
        /// The item's index in the transcript.
        index: usize,
    },
    /// After the last transcript item.
    LastItem,
}

/// How long the provider should keep the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PromptCacheRetention {
    /// The provider's short default (about five minutes).
    Short,
    /// The provider's longer option (an hour or a day).
    Long,
}

/// A prompt-cache request for a session or a turn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptCacheRequest {
    /// Whether to cache.
    pub mode: PromptCacheMode,
    /// Where the cached prefix ends.
    pub strategy: PromptCacheStrategy,
    /// How long to keep it.
    pub retention: Option<PromptCacheRetention>,
    /// A key that groups requests sharing a prefix (OpenAI `prompt_cache_key`).
    pub key: Option<String>,
}

impl PromptCacheRequest {
    /// Best-effort caching with automatic breakpoints.
    pub fn automatic() -> Self {
        Self::default()
    }

    /// Caching disabled.
    pub fn disabled() -> Self {
        Self {
            mode: PromptCacheMode::Disabled,
            ..Self::default()
        }
    }

    /// Explicit breakpoints.
    pub fn explicit(breakpoints: Vec<CacheBreakpoint>) -> Self {
        Self {
            strategy: PromptCacheStrategy::Explicit { breakpoints },
            ..Self::default()
        }
    }

    /// Sets the retention.
    pub fn with_retention(mut self, retention: PromptCacheRetention) -> Self {
        self.retention = Some(retention);
        self
    }

    /// Sets the cache key.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}
