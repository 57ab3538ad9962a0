//! What every soak test (`cargo xtask soak`) reads first: how long to run
//! and a seeded random source, so a failing run replays from its printed
//! seed. Hand-rolled xorshift64*: a soak needs reproducible draws, not a
//! dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// Minutes to run, from the environment variable `var`; `default` (a few
/// sessions' worth) when it is unset or not a number.
///
/// ```
/// let minutes = agentkit_testkit::soak_minutes("AGENTKIT_DOC_UNSET_MINUTES", 0.05);
/// assert_eq!(minutes, 0.05);
/// ```
pub fn soak_minutes(var: &str, default: f64) -> f64 {
    std::env::var(var)
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(default)
}

/// A seeded xorshift64* source for a soak's random faults.
///
/// ```
/// use agentkit_testkit::SoakRng;
/// let (mut a, mut b) = (SoakRng::new(7), SoakRng::new(7));
/// let draws: Vec<u64> = (0..4).map(|_| a.below(10)).collect();
/// assert!(draws.iter().all(|&n| n < 10));
/// assert_eq!(draws, (0..4).map(|_| b.below(10)).collect::<Vec<_>>());
/// ```
#[derive(Clone, Debug)]
pub struct SoakRng {
    state: u64,
    seed: u64,
}

impl SoakRng {
    /// A source starting from `seed` (zero is replaced by one: xorshift
    /// never leaves zero).
    pub fn new(seed: u64) -> Self {
        let seed = seed.max(1);
        Self { state: seed, seed }
    }

    /// Seeded from `AGENTKIT_SOAK_SEED`, else from the clock.
    pub fn from_env() -> Self {
        let seed = std::env::var("AGENTKIT_SOAK_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64 | 1)
            });
        Self::new(seed)
    }

    /// The seed to print, so the run replays.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
