//! What a model call cost, when the provider does not say.
//!
//! Some providers report the cost of each call (OpenRouter puts it in the
//! usage object) and the adapters copy it into `Usage::cost`. For the
//! others a host supplies a [`PriceTable`]: prices per million tokens for
//! each model, from which the adapter computes the cost of every call it
//! reports. Prices change and differ per contract, so agentkit ships none.

use agentkit_core::{CostUsage, TokenUsage, Usage};
use std::collections::HashMap;

/// The prices of one model, per million tokens, in one currency.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ModelPrice {
    /// Uncached prompt tokens.
    pub input: f64,
    /// Generated tokens (reasoning included).
    pub output: f64,
    /// Prompt tokens read from the cache; `None` charges them as input.
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the cache; `None` charges them as input.
    pub cache_write: Option<f64>,
    /// ISO 4217 currency code.
    pub currency: String,
}

impl ModelPrice {
    /// Input and output prices in US dollars per million tokens.
    pub fn usd(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cache_read: None,
            cache_write: None,
            currency: "USD".to_owned(),
        }
    }

    /// Sets the prices of cache reads and writes.
    pub fn with_cache(mut self, read: f64, write: f64) -> Self {
        self.cache_read = Some(read);
        self.cache_write = Some(write);
        self
    }

    /// The cost of these tokens. `input_tokens` counts cached tokens too,
    /// so they are taken out of it and charged at their own price.
    pub fn cost(&self, tokens: &TokenUsage) -> CostUsage {
        let cached = tokens.cache_read_tokens + tokens.cache_write_tokens;
        let uncached = tokens.input_tokens.saturating_sub(cached) as f64;
        let read = tokens.cache_read_tokens as f64 * self.cache_read.unwrap_or(self.input);
        let write = tokens.cache_write_tokens as f64 * self.cache_write.unwrap_or(self.input);
        let amount =
            (uncached * self.input + read + write + tokens.output_tokens as f64 * self.output)
                / 1_000_000.0;
        CostUsage {
            amount,
            currency: self.currency.clone(),
        }
    }
}

/// Prices per model name, supplied by the host.
///
/// ```
/// use agentkit_core::{TokenUsage, Usage};
/// use agentkit_http::{ModelPrice, PriceTable};
///
/// let prices = PriceTable::new().with("gpt-test", ModelPrice::usd(2.0, 8.0));
/// let mut usage = Usage::from_tokens(TokenUsage {
///     input_tokens: 1_000_000,
///     output_tokens: 500_000,
///     ..Default::default()
/// });
/// prices.fill_cost("gpt-test", &mut usage);
/// assert_eq!(usage.cost.unwrap().amount, 6.0);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriceTable {
    prices: HashMap<String, ModelPrice>,
}

impl PriceTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a model's price.
    pub fn with(mut self, model: impl Into<String>, price: ModelPrice) -> Self {
        self.prices.insert(model.into(), price);
        self
    }

    /// The price of a model: its exact name, or else the longest listed
    /// name it starts with (`gpt-4.1` prices `gpt-4.1-2025-04-14`).
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        self.prices.get(model).or_else(|| {
            self.prices
                .iter()
                .filter(|(name, _)| model.starts_with(name.as_str()))
                .max_by_key(|(name, _)| name.len())
                .map(|(_, price)| price)
        })
    }

    /// Sets `usage.cost` from the table when the provider reported none and
    /// the model is listed. Unknown usage gets no cost.
    pub fn fill_cost(&self, model: &str, usage: &mut Usage) {
        if usage.cost.is_some() || !usage.is_complete() {
            return;
        }
        if let Some(price) = self.price(model) {
            usage.cost = Some(price.cost(&usage.tokens));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_tokens_are_charged_at_their_own_price_and_prefixes_match() {
        let table = PriceTable::new()
            .with("claude", ModelPrice::usd(1.0, 1.0))
            .with(
                "claude-test",
                ModelPrice::usd(3.0, 15.0).with_cache(0.3, 3.75),
            );
        let tokens = TokenUsage {
            input_tokens: 2_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        };
        let price = table.price("claude-test-2025").unwrap();
        let cost = price.cost(&tokens);
        assert!((cost.amount - (3.0 + 0.3 + 1.5)).abs() < 1e-9, "{cost:?}");
        assert!(table.price("gpt").is_none());
    }

    #[test]
    fn reported_or_unknown_usage_is_left_alone() {
        let table = PriceTable::new().with("m", ModelPrice::usd(1.0, 1.0));
        let mut unknown = Usage::unknown();
        table.fill_cost("m", &mut unknown);
        assert_eq!(unknown.cost, None);
        let mut reported = Usage {
            cost: Some(CostUsage {
                amount: 0.5,
                currency: "USD".into(),
            }),
            ..Default::default()
        };
        table.fill_cost("m", &mut reported);
        assert_eq!(reported.cost.unwrap().amount, 0.5);
    }
}
