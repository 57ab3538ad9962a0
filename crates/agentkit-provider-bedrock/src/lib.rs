//! Amazon Bedrock for agentkit, in progress: [`eventstream`] decodes the
//! AWS event-stream framing `ConverseStream` answers in.

pub mod eventstream;

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
