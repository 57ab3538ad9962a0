//! Amazon Bedrock for agentkit, in progress: [`eventstream`] decodes the
//! AWS event-stream framing `ConverseStream` answers in, and [`sigv4`]
//! signs requests with AWS Signature Version 4. The credential chain and
//! the Converse request and stream mapping are still to come.

pub mod eventstream;
pub mod sigv4;

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
