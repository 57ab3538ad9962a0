//! The error every provider call ends in: agentkit-core's [`ModelError`].
//!
//! The HTTP layer and the loop share one error type, defined in
//! agentkit-core below both, so an adapter hands the loop what this layer
//! produced without translating it. [`ProviderError`] and
//! [`ProviderErrorKind`] are the same types under this crate's older names.

pub use agentkit_core::{ModelError, ModelErrorKind};

/// The same type as [`ModelError`], under the HTTP layer's older name.
pub use agentkit_core::ModelError as ProviderError;

/// The same type as [`ModelErrorKind`], under the HTTP layer's older name.
pub use agentkit_core::ModelErrorKind as ProviderErrorKind;
