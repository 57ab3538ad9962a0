//! The agentkit book as doc-tests: each chapter is included as the doc
//! comment of a module, so `cargo test --doc -p agentkit-book` compiles and
//! runs every Rust block in it. Build the readable book with `mdbook build docs`.

#[doc = include_str!("src/introduction.md")]
pub mod introduction {}
#[doc = include_str!("src/transcript.md")]
pub mod transcript {}
#[doc = include_str!("src/deltas.md")]
pub mod deltas {}
#[doc = include_str!("src/cancellation.md")]
pub mod cancellation {}
#[doc = include_str!("src/mcp.md")]
pub mod mcp {}
