//! Amazon Bedrock for agentkit, in progress: [`eventstream`] decodes the
//! AWS event-stream framing `ConverseStream` answers in, and [`sigv4`]
//! signs requests with AWS Signature Version 4 using the credentials
//! [`credentials`] finds (environment, then the shared credentials file).
//! The Converse request and stream mapping are still to come.

pub mod credentials;
pub mod eventstream;
pub mod sigv4;

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
