//! The targets, one module per parser family.

mod delta;
mod json;
mod mcp;
mod providers;
mod schema;
mod shell;
mod snapshot;
mod sse;
mod store;

use crate::Target;

/// Every target, in the order `cargo xtask fuzz` runs them.
pub const ALL: &[Target] = &[
    sse::TARGET,
    providers::CHAT,
    providers::RESPONSES,
    providers::ANTHROPIC,
    json::TARGET,
    delta::TARGET,
    shell::TARGET,
    schema::TARGET,
    snapshot::TARGET,
    store::TARGET,
    mcp::TARGET,
];

/// The target called `name`.
pub fn find(name: &str) -> Option<&'static Target> {
    ALL.iter().find(|t| t.name == name)
}
