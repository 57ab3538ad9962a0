//! Token and cost accounting.

use serde::{Deserialize, Serialize};
use std::ops::AddAssign;

/// Token counts for one model call, or the sum of several.
///
/// Providers report different subsets; fields they do not report stay 0.
/// `input_tokens` counts every prompt token, including cached ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct TokenUsage {
    /// Prompt tokens, cached or not.
    pub input_tokens: u64,
    /// Generated tokens, reasoning included.
    pub output_tokens: u64,
    /// Generated tokens spent on reasoning.
    pub reasoning_tokens: u64,
    /// Prompt tokens served from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
}

impl TokenUsage {
    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl AddAssign for TokenUsage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.reasoning_tokens += rhs.reasoning_tokens;
        self.cache_read_tokens += rhs.cache_read_tokens;
        self.cache_write_tokens += rhs.cache_write_tokens;
    }
}

/// Money spent, as reported or estimated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostUsage {
    /// The amount, in `currency`.
    pub amount: f64,
    /// ISO 4217 currency code, such as `USD`.
    pub currency: String,
}

/// Usage reported for a model call: tokens and, when known, cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Token counts.
    #[serde(default)]
    pub tokens: TokenUsage,
    /// Cost, when the provider or a pricing table knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostUsage>,
    /// How many of the model calls counted here reported no usage at all
    /// (some compatible servers send none when streaming). Their tokens are
    /// unknown, not zero: while this is above 0, `tokens` is a lower bound.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unreported_calls: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Usage {
    /// Usage with these token counts and no cost.
    pub fn from_tokens(tokens: TokenUsage) -> Self {
        Self {
            tokens,
            cost: None,
            unreported_calls: 0,
        }
    }

    /// The usage of one model call whose provider reported none: no
    /// token counted, and marked unknown rather than zero.
    pub fn unknown() -> Self {
        Self {
            unreported_calls: 1,
            ..Self::default()
        }
    }

    /// `true` when every model call counted here reported its usage, so
    /// the token counts are measurements, not lower bounds.
    pub fn is_complete(&self) -> bool {
        self.unreported_calls == 0
    }

    /// Adds `other` to `self`. Costs add up when both use the same currency;
    /// with different currencies the sum would be meaningless, so the cost is
    /// dropped.
    pub fn accumulate(&mut self, other: &Usage) {
        self.tokens += other.tokens;
        self.unreported_calls = self.unreported_calls.saturating_add(other.unreported_calls);
        self.cost = match (self.cost.take(), &other.cost) {
            (None, other) => other.clone(),
            (Some(mine), None) => Some(mine),
            (Some(mine), Some(theirs)) if mine.currency == theirs.currency => Some(CostUsage {
                amount: mine.amount + theirs.amount,
                currency: mine.currency,
            }),
            (Some(_), Some(_)) => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd(amount: f64) -> Option<CostUsage> {
        Some(CostUsage {
            amount,
            currency: "USD".into(),
        })
    }

    #[test]
    fn accumulate_sums_tokens_and_same_currency_costs() {
        let mut total = Usage::default();
        let one = Usage {
            tokens: TokenUsage {
                input_tokens: 10,
                output_tokens: 5,
                cache_read_tokens: 4,
                ..Default::default()
            },
            cost: usd(0.5),
            ..Default::default()
        };
        total.accumulate(&one);
        total.accumulate(&one);
        assert_eq!(total.tokens.input_tokens, 20);
        assert_eq!(total.tokens.cache_read_tokens, 8);
        assert_eq!(total.tokens.total(), 30);
        assert_eq!(total.cost, usd(1.0));
    }

    #[test]
    fn mixed_currencies_drop_the_cost() {
        let mut total = Usage {
            cost: usd(1.0),
            ..Default::default()
        };
        total.accumulate(&Usage {
            cost: Some(CostUsage {
                amount: 1.0,
                currency: "EUR".into(),
            }),
            ..Default::default()
        });
        assert_eq!(total.cost, None);
    }

    #[test]
    fn unreported_usage_stays_unknown_in_sums() {
        let mut total = Usage::from_tokens(TokenUsage {
            input_tokens: 3,
            ..Default::default()
        });
        assert!(total.is_complete());
        total.accumulate(&Usage::unknown());
        assert!(!total.is_complete());
        assert_eq!(total.unreported_calls, 1);
        assert_eq!(total.tokens.input_tokens, 3);
        let json = serde_json::to_value(&total).unwrap();
        assert_eq!(json["unreported_calls"], 1);
        let complete = serde_json::to_value(Usage::default()).unwrap();
        assert!(complete.get("unreported_calls").is_none());
    }
}
