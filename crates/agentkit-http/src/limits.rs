//! How much one provider answer may grow before decoding stops.
//!
//! A peer decides how much it sends; a hostile or broken one sends without
//! end. Every cap here turns "more than this" into a
//! [`LimitExceeded`](crate::ProviderErrorKind::LimitExceeded) error instead
//! of a buffer, a transcript or a context that grows without bound: a line
//! and an event are capped by the event-stream parser, a whole answer (all
//! its events together) by [`DecodedStream`](crate::DecodedStream), which
//! every provider adapter decodes through.

/// How large a server-sent line, event or whole answer may grow before
/// decoding stops.
///
/// The line and event caps bound the memory one stream can take, whatever
/// the peer sends: a line is buffered until its end arrives, an event's data
/// until its blank line. The answer caps bound what one answer adds to the
/// transcript: its bytes (the data of all its events) and its parts (the
/// pieces its events decode into: text deltas, tool-call pieces, usage).
/// The defaults leave room for the largest answers providers really send (a
/// finished Responses answer with generated images inlined as base64 is a
/// few megabytes).
///
/// ```
/// use agentkit_http::{HttpConfig, SseLimits};
///
/// let limits = SseLimits::default()
///     .with_max_answer_bytes(4 * 1024 * 1024)
///     .with_max_answer_parts(100_000);
/// let config = HttpConfig::default().with_sse_limits(limits);
/// assert_eq!(config.sse_limits.max_answer_bytes, 4 * 1024 * 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseLimits {
    /// The longest line, in bytes, without its line end.
    pub max_line_bytes: usize,
    /// The most bytes of data (the `data:` lines joined) and event name one
    /// event may carry.
    pub max_event_bytes: usize,
    /// The most bytes of event data one answer may carry in all.
    pub max_answer_bytes: u64,
    /// The most parts one answer may decode into.
    pub max_answer_parts: u64,
}

/// The default [`SseLimits::max_line_bytes`]: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// The default [`SseLimits::max_event_bytes`]: 32 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 32 * 1024 * 1024;
/// The default [`SseLimits::max_answer_bytes`]: 64 MiB, two of the largest
/// events.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 = 64 * 1024 * 1024;
/// The default [`SseLimits::max_answer_parts`]: one million (a long answer
/// streamed a token at a time is tens of thousands).
pub const DEFAULT_MAX_ANSWER_PARTS: u64 = 1_000_000;

impl Default for SseLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            max_answer_parts: DEFAULT_MAX_ANSWER_PARTS,
        }
    }
}

impl SseLimits {
    /// Sets the longest line.
    pub fn with_max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// Sets the largest event.
    pub fn with_max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    /// Sets the most bytes of event data one answer may carry.
    pub fn with_max_answer_bytes(mut self, bytes: u64) -> Self {
        self.max_answer_bytes = bytes;
        self
    }

    /// Sets the most parts one answer may decode into.
    pub fn with_max_answer_parts(mut self, parts: u64) -> Self {
        self.max_answer_parts = parts;
        self
    }
}
