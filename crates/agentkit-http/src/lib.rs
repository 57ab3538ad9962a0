//! HTTP plumbing shared by agentkit's provider adapters.
//!
//! Every model provider is reached the same way: a JSON POST answered by a
//! stream of server-sent events. This crate does that part once, so adapters
//! only map transcripts to request bodies and events to deltas:
//!
//! - [`HttpClient`] sends a [`StreamRequest`] with a connect timeout and a
//!   stream-idle timeout, retries what may succeed later under a
//!   [`RetryPolicy`] (never after the stream has begun), honours
//!   `Retry-After`, and drops the connection the moment the turn is
//!   cancelled;
//! - [`SseStream`] decodes the body into [`SseEvent`]s, whatever the network
//!   did to the byte boundaries, with every line and event capped by
//!   [`SseLimits`];
//! - [`ModelError`] (agentkit-core's, shared with the loop; also named
//!   [`ProviderError`] here) says what went wrong and, through its
//!   [`ModelErrorKind`], whether retrying can help;
//! - [`DecodedStream`] runs an adapter's [`SseDecoder`] over the stream,
//!   and [`AdapterShared`] with [`retry_warnings`] is the rest of an
//!   adapter's shell: its configuration beside one pooled client, and a
//!   warning per retried request;
//! - [`config_builders!`] writes the `with_*` methods every provider's
//!   configuration shares (base URL, key, token limit, headers, HTTP policy,
//!   prices);
//! - [`PriceTable`] computes a call's cost from its tokens when the provider
//!   does not report it.
//!
//! No `reqwest` type appears in this API: it can be upgraded without
//! touching the adapters.
//!
//! ```
//! use agentkit_http::SseStream;
//!
//! # futures::executor::block_on(async {
//! // A UTF-8 character split across two reads, CRLF endings, a keep-alive.
//! let chunks = vec![
//!     Ok(bytes::Bytes::from_static(b": ping\r\n\r\ndata: caf\xC3")),
//!     Ok(bytes::Bytes::from_static(b"\xA9\r\n\r\n")),
//! ];
//! let mut events = SseStream::from_byte_stream(futures::stream::iter(chunks));
//! let event = events.next_event().await?.expect("one event");
//! assert_eq!(event.data, "café");
//! assert_eq!(events.next_event().await?, None);
//! # Ok::<(), agentkit_http::ProviderError>(())
//! # }).unwrap();
//! ```

mod builders;
mod client;
pub mod codec;
mod decoded;
mod error;
mod limits;

mod pricing;
mod redact;
mod replay;
mod retry;
mod shell;
mod sse;
#[cfg(feature = "test-server")]
pub mod testing;
mod tls;

#[doc(hidden)]
pub use builders::support as __builders;
pub use client::{
    ByteStream, ByteStreamResponse, HttpClient, HttpConfig, RequestSigner, StreamRequest,
    StreamResponse,
};
pub use decoded::{DecodedStream, Outputs, SseDecoder};
pub use error::{ModelError, ModelErrorKind, ProviderError, ProviderErrorKind};
pub use limits::{
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_ANSWER_PARTS, DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES, SseLimits,
};
pub use pricing::{ModelPrice, PriceTable};
pub use redact::{REDACTED, redact_secrets};
pub use retry::{RetryNotice, RetryPolicy, parse_retry_after};
pub use shell::{AdapterShared, retry_warnings};
pub use sse::{DataAhead, DataEnd, SseEvent, SseEventRef, SseParser, SseSink, SseStream};
pub use tls::install_tls_provider;

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
