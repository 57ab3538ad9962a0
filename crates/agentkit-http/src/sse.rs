//! Server-sent events, decoded from a byte stream.
//!
//! Every provider streams its answers as `text/event-stream`, and the bytes
//! come from peers nobody here controls: a "compatible" server may never
//! send a newline, or send one event of a hundred megabytes. The parser is
//! our own, for two reasons. It is capped: a line longer than
//! [`SseLimits::max_line_bytes`] or an event whose data grows past
//! [`SseLimits::max_event_bytes`] ends the stream with a
//! [`LimitExceeded`](ProviderErrorKind::LimitExceeded) error instead of
//! growing a buffer without bound. And it is fast: it jumps from one line
//! end to the next with `memchr`, takes lines straight out of the network
//! read when they fit in it (no copy), and never re-scans what it has seen,
//! so decoding stays linear however the body is cut into reads.
//!
//! It follows the WHATWG event-stream rules: lines end in CR, LF or CRLF (a
//! CRLF split across two reads counts once), a leading byte-order mark is
//! skipped, `:` starts a comment, one space after the field's colon is
//! dropped, `data:` lines are joined by newlines, a blank line dispatches
//! the event (none when it carried no data), the last `id:` persists, and an
//! event still open when the body ends is discarded. Lines are UTF-8; a
//! character split across two reads is fine, an invalid one is a
//! [`Protocol`](ProviderErrorKind::Protocol) error. There is no cancellation
//! token: whoever owns the stream cancels it by dropping it (or the future
//! reading from it), which closes the connection at once.

use crate::{ProviderError, ProviderErrorKind, SseLimits};
use bytes::Bytes;
use futures::{Stream, StreamExt, stream};
use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::Arc;

mod ahead;

pub use ahead::{DataAhead, DataEnd, SseSink};

/// One decoded server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` field; `message` when the server sent none.
    pub event: String,
    /// The `data:` lines, joined by newlines.
    pub data: String,
    /// The last `id:` field seen so far in the stream, empty when none.
    pub id: String,
}

impl SseEvent {
    /// The event as a borrowed [`SseEventRef`].
    pub fn as_event_ref(&self) -> SseEventRef<'_> {
        SseEventRef {
            event: &self.event,
            data: &self.data,
            id: &self.id,
        }
    }
}

/// One decoded server-sent event, borrowed from the parser and the read it
/// was decoded from: what [`SseParser::feed_with`] hands out, so that the
/// bytes of an event are neither copied nor allocated on their way to a
/// decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEventRef<'a> {
    /// The `event:` field; `message` when the server sent none.
    pub event: &'a str,
    /// The `data:` lines, joined by newlines.
    pub data: &'a str,
    /// The last `id:` field seen so far in the stream, empty when none.
    pub id: &'a str,
}

impl<'a> SseEventRef<'a> {
    /// The data without the whitespace around it, as [`str::trim`] gives
    /// it, without decoding characters when it starts and ends with
    /// visible ASCII (a JSON document always does).
    #[inline]
    pub fn trimmed_data(&self) -> &'a str {
        match self.data.as_bytes() {
            [first, .., last] if first.is_ascii_graphic() && last.is_ascii_graphic() => self.data,
            _ => self.data.trim(),
        }
    }

    /// An owned copy of the event.
    pub fn to_event(&self) -> SseEvent {
        SseEvent {
            event: self.event.to_owned(),
            data: self.data.to_owned(),
            id: self.id.to_owned(),
        }
    }
}

/// A buffer that grew past this is given back after use, so one large
/// event does not pin its memory for the rest of a long stream.
const KEEP_CAPACITY: usize = 64 * 1024;

/// The event-stream parser, fed with byte chunks as they arrive.
///
/// [`SseStream`] drives it over a network body; it is public so that bytes
/// already in memory (a recorded stream, a fuzz input) can be decoded
/// without an executor.
///
/// ```
/// use agentkit_http::{SseLimits, SseParser};
///
/// let mut parser = SseParser::new(SseLimits::default());
/// let mut events = Vec::new();
/// parser.feed(b"event: a\r\ndata: x\r", &mut events)?;
/// parser.feed(b"\ndata: y\r\n\r\n: comment\n", &mut events)?;
/// parser.finish(&mut events)?;
/// assert_eq!(events.len(), 1);
/// assert_eq!((events[0].event.as_str(), events[0].data.as_str()), ("a", "x\ny"));
/// # Ok::<(), agentkit_http::ProviderError>(())
/// ```
#[derive(Debug)]
pub struct SseParser {
    limits: SseLimits,
    line_ends: LineEnds,
    /// The start of a line whose end has not arrived yet.
    line: Vec<u8>,
    /// The previous chunk ended in CR: an LF starting this one belongs to it.
    after_cr: bool,
    /// The first line was seen (its byte-order mark, if any, dropped).
    started: bool,
    event: String,
    /// The event's data, when it could not be borrowed from the read: it
    /// has several lines, or began in an earlier read.
    data: String,
    data_lines: usize,
    id: String,
    /// The last `event:` line taken whole, with its LF: a stream names
    /// most of its events alike, so the next one is compared with it
    /// rather than searched for its end. Its name is `known_name`.
    known_event: String,
    known_name: String,
}

/// The longest `event:` line remembered as [`SseParser::known_event`].
const KNOWN_EVENT_MAX: usize = 64;

impl SseParser {
    /// A parser enforcing `limits`.
    pub fn new(limits: SseLimits) -> Self {
        Self {
            limits,
            line_ends: LineEnds::new(),
            line: Vec::new(),
            after_cr: false,
            started: false,
            event: String::new(),
            data: String::new(),
            data_lines: 0,
            id: String::new(),
            known_event: String::new(),
            known_name: String::new(),
        }
    }

    /// The limits it enforces.
    pub fn limits(&self) -> SseLimits {
        self.limits
    }

    /// Parses the next chunk of the body, appending every event it completes
    /// to `out`.
    ///
    /// On an error (a cap exceeded, invalid UTF-8) the events completed
    /// before it are in `out`; the parser must not be fed again.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        out: &mut impl Extend<SseEvent>,
    ) -> Result<(), ProviderError> {
        self.feed_with(chunk, |event| {
            out.extend(Some(event.to_event()));
            ControlFlow::Continue(())
        })
        .map(drop)
    }

    /// Parses the next chunk of the body, handing every event it completes
    /// to `on_event` as it is completed, borrowed: an event whose data is
    /// one line inside `chunk` (nearly all of them) is neither copied nor
    /// allocated.
    ///
    /// `on_event` may stop the parse with [`ControlFlow::Break`] (the
    /// consumer has seen the end of what it wants); `feed_with` then returns
    /// `Ok(ControlFlow::Break(()))` and the parser must not be fed again, nor
    /// after an error (a cap exceeded, invalid UTF-8), which comes after the
    /// events completed before it.
    ///
    /// ```
    /// use agentkit_http::{SseLimits, SseParser};
    /// use std::ops::ControlFlow;
    ///
    /// let mut parser = SseParser::new(SseLimits::default());
    /// let mut seen = Vec::new();
    /// parser.feed_with(b"data: a\n\ndata: b\n\n", |event| {
    ///     seen.push(event.data.to_owned());
    ///     ControlFlow::Continue(())
    /// })?;
    /// assert_eq!(seen, ["a", "b"]);
    /// # Ok::<(), agentkit_http::ProviderError>(())
    /// ```
    pub fn feed_with<F>(
        &mut self,
        chunk: &[u8],
        on_event: F,
    ) -> Result<ControlFlow<()>, ProviderError>
    where
        F: FnMut(SseEventRef<'_>) -> ControlFlow<()>,
    {
        self.feed_into(chunk, &mut ahead::Closure(on_event))
    }

    /// Parses the next chunk of the body like [`feed_with`](Self::feed_with),
    /// handing every event it completes to `sink`, whose
    /// [`on_data_ahead`](SseSink::on_data_ahead) may take an event from the
    /// start of its data (before the parser has looked for the line's end)
    /// when the data is in a layout it knows.
    pub fn feed_into<S: SseSink>(
        &mut self,
        chunk: &[u8],
        sink: &mut S,
    ) -> Result<ControlFlow<()>, ProviderError> {
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        if !self.line.is_empty() {
            // The line begun in an earlier read: it ends in this one, or
            // grows.
            let Some(end) = self.line_ends.find(rest) else {
                self.check_line(self.line.len() + rest.len())?;
                self.line.extend_from_slice(rest);
                return Ok(ControlFlow::Continue(()));
            };
            self.check_line(self.line.len() + end)?;
            let mut line = std::mem::take(&mut self.line);
            line.extend_from_slice(&rest[..end]);
            let flow = match checked_utf8(&line) {
                Ok(text) => self.line_done(text, &mut Pending::default(), false, sink),
                Err(_) => Err(self.invalid_line(&line)),
            };
            line.clear();
            if line.capacity() > KEEP_CAPACITY {
                line = Vec::new();
            }
            self.line = line;
            if rest[end] == b'\r' && end + 1 == rest.len() {
                self.after_cr = true;
            }
            rest = &rest[end + terminator(rest, end)..];
            if flow?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        // The complete lines of this read, checked as UTF-8 at once; what
        // follows the last line end waits for the next read.
        let (region, tail) = match memchr::memrchr2(b'\n', b'\r', rest) {
            Some(last) => rest.split_at(last + 1),
            None => (&b""[..], rest),
        };
        if region.last() == Some(&b'\r') && tail.is_empty() {
            self.after_cr = true;
        }
        let (text, invalid) = match checked_utf8(region) {
            Ok(text) => (text, false),
            Err(err) => {
                // The lines before the broken one are decoded; the error
                // comes when it is reached.
                let valid = &region[..err.valid_up_to()];
                (std::str::from_utf8(valid).unwrap_or_default(), true)
            }
        };
        let bytes = text.as_bytes();
        let mut start = 0;
        // The open event's fields while they are lines of this read.
        let mut pending = Pending::default();
        loop {
            // Between events, an event that is all in this read (nearly
            // every one) is taken whole.
            if self.started
                && self.data_lines == 0
                && pending.event.is_none()
                && self.event.is_empty()
                && let Some((next, flow)) = self.whole_event(text, start, sink)
            {
                start = next;
                if flow.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
                continue;
            }
            // The blank line that ends an event needs no search.
            let end = match bytes.get(start) {
                Some(b'\n' | b'\r') => start,
                Some(_) => match self.line_ends.find(&bytes[start..]) {
                    Some(at) => start + at,
                    None => break,
                },
                None => break,
            };
            self.check_line(end - start)?;
            let flow = self.line_done(&text[start..end], &mut pending, true, sink)?;
            start = end + terminator(bytes, end);
            if flow.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        if invalid {
            let line = &region[start..];
            let len = memchr::memchr2(b'\n', b'\r', line).unwrap_or(line.len());
            self.check_line(len)?;
            return Err(self.invalid_line(&line[..len]));
        }
        // The event goes on in the next read: its fields are kept.
        if let Some(data) = pending.data {
            self.data.push_str(data);
        }
        if let Some(event) = pending.event {
            event.clone_into(&mut self.event);
        }
        if !tail.is_empty() {
            self.check_line(tail.len())?;
            self.line.extend_from_slice(tail);
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Hands the event at `start` of `text` to `sink` when it is laid out
    /// as nearly every event is, and all of it is in `text`: an optional
    /// `event:` line, one `data:` line and the blank line, within the
    /// limits. Gives where the next line starts and the sink's answer. The
    /// sink may take the event from the start of its data
    /// ([`SseSink::on_data_ahead`]); otherwise the data line's end is
    /// searched, and the event handed to [`SseSink::on_event`] as the
    /// line-by-line path would dispatch it, with no state. `None` (nothing
    /// handed out) for anything else, which the line-by-line path takes
    /// (and reports, if it breaks a rule).
    #[inline]
    fn whole_event<S: SseSink>(
        &mut self,
        text: &str,
        start: usize,
        sink: &mut S,
    ) -> Option<(usize, ControlFlow<()>)> {
        let bytes = text.as_bytes();
        let mut line = start;
        let mut event = "";
        let mut known = false;
        if bytes[line..].starts_with(b"event:") {
            let seen = self.known_event.as_bytes();
            if bytes
                .get(line..line + seen.len())
                .is_some_and(|next| !seen.is_empty() && crate::codec::same_bytes(next, seen))
            {
                // The line the last event began with, its LF included.
                known = true;
                line += seen.len();
            } else {
                let end = line + self.line_ends.find(&bytes[line..])?;
                if end - line > self.limits.max_line_bytes {
                    return None;
                }
                let value = &text[line + 6..end];
                event = value.strip_prefix(' ').unwrap_or(value);
                if bytes[end] == b'\n' && end - line < KNOWN_EVENT_MAX {
                    self.known_event.clear();
                    self.known_event.push_str(&text[line..=end]);
                    self.known_name.clear();
                    self.known_name.push_str(event);
                }
                line = end + terminator(bytes, end);
            }
        }
        let event = if known { &self.known_name } else { event };
        if !bytes.get(line..)?.starts_with(b"data:") {
            return None;
        }
        let name = if event.is_empty() { "message" } else { event };
        // The data's first byte, after the one space.
        let at = line + 5 + usize::from(bytes.get(line + 5) == Some(&b' '));
        // The line and event caps leave this much room for the data.
        if let (Some(line_room), Some(event_room)) = (
            self.limits.max_line_bytes.checked_sub(at - line),
            self.limits.max_event_bytes.checked_sub(event.len() + 1),
        ) {
            let ahead = DataAhead::new(name, &self.id, &text[at..], line_room.min(event_room));
            if let Some((end, flow)) = sink.on_data_ahead(ahead) {
                return Some((at + end.next(), flow));
            }
        }
        let end = line + self.line_ends.find(&bytes[line..])?;
        if end - line > self.limits.max_line_bytes {
            return None;
        }
        let data = &text[at.min(end)..end];
        let blank = end + terminator(bytes, end);
        // The blank line that dispatches it.
        if !matches!(bytes.get(blank), Some(b'\n' | b'\r'))
            || event.len() + data.len() + 1 > self.limits.max_event_bytes
        {
            return None;
        }
        let flow = sink.on_event(SseEventRef {
            event: name,
            data,
            id: &self.id,
        });
        Some((blank + terminator(bytes, blank), flow))
    }

    /// The body ended. An unfinished line or event is discarded, as the
    /// event-stream rules say: a stream cut mid-event must not yield half of
    /// it.
    pub fn finish(&mut self, _out: &mut impl Extend<SseEvent>) -> Result<(), ProviderError> {
        self.line = Vec::new();
        self.after_cr = false;
        self.event.clear();
        self.data = String::new();
        self.data_lines = 0;
        Ok(())
    }

    #[inline]
    fn check_line(&self, len: usize) -> Result<(), ProviderError> {
        if len > self.limits.max_line_bytes {
            return Err(ProviderError::new(
                ProviderErrorKind::LimitExceeded,
                format!(
                    "an event-stream line is longer than {} bytes (SseLimits::max_line_bytes)",
                    self.limits.max_line_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Applies one line. `pending` holds the open event's data while it is
    /// a single line borrowed from the read, and its name while that is
    /// (`borrow`: `line` is from the read, not from the parser's own
    /// buffer).
    fn line_done<'c, S: SseSink>(
        &mut self,
        mut line: &'c str,
        pending: &mut Pending<'c>,
        borrow: bool,
        sink: &mut S,
    ) -> Result<ControlFlow<()>, ProviderError> {
        if !self.started {
            self.started = true;
            line = line.strip_prefix('\u{FEFF}').unwrap_or(line);
        }
        if line.is_empty() {
            return Ok(self.dispatch(pending, sink));
        }
        if line.as_bytes()[0] == b':' {
            // A comment (keep-alive).
            return Ok(ControlFlow::Continue(()));
        }
        // The two fields of nearly every line, then any other.
        let (field, value) = if let Some(value) = line.strip_prefix("data:") {
            (Field::Data, value)
        } else if let Some(value) = line.strip_prefix("event:") {
            (Field::Event, value)
        } else {
            let (name, value) = match memchr::memchr(b':', line.as_bytes()) {
                Some(colon) => (&line[..colon], &line[colon + 1..]),
                None => (line, ""),
            };
            let field = match name {
                "data" => Field::Data,
                "event" => Field::Event,
                "id" => Field::Id,
                _ => Field::Other,
            };
            (field, value)
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        let data_len = pending.data.map_or(self.data.len(), str::len);
        match field {
            Field::Data => {
                let event_len = pending.event.map_or(self.event.len(), str::len);
                let grown = event_len + data_len + value.len() + 1;
                if grown > self.limits.max_event_bytes {
                    return Err(self.event_too_large());
                }
                if self.data_lines == 0 && borrow {
                    pending.data = Some(value);
                } else {
                    if let Some(first) = pending.data.take() {
                        self.data.push_str(first);
                    }
                    if self.data_lines > 0 {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                }
                self.data_lines += 1;
            }
            Field::Event => {
                if data_len + value.len() > self.limits.max_event_bytes {
                    return Err(self.event_too_large());
                }
                if borrow {
                    pending.event = Some(value);
                } else {
                    pending.event = None;
                    value.clone_into(&mut self.event);
                }
            }
            Field::Id if !value.contains('\0') => value.clone_into(&mut self.id),
            // `retry` (reconnection delay) and unknown fields: nothing to do
            // for a one-shot POST stream.
            Field::Id | Field::Other => {}
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The error for a line that is not UTF-8, the same wherever the reads
    /// were cut: the position it names is within the field's value (or
    /// name, or the comment) where the character is broken.
    fn invalid_line(&self, mut line: &[u8]) -> ProviderError {
        if !self.started {
            line = line.strip_prefix("\u{FEFF}".as_bytes()).unwrap_or(line);
        }
        let checked = match memchr::memchr(b':', line) {
            Some(colon) if colon > 0 => {
                let value = &line[colon + 1..];
                utf8(value.strip_prefix(b" ").unwrap_or(value)).and_then(|_| utf8(&line[..colon]))
            }
            _ => utf8(line),
        };
        match checked {
            Err(error) => error,
            Ok(_) => ProviderError::protocol("the event stream is not valid UTF-8"),
        }
    }

    fn event_too_large(&self) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::LimitExceeded,
            format!(
                "an event-stream event is larger than {} bytes (SseLimits::max_event_bytes)",
                self.limits.max_event_bytes
            ),
        )
    }

    fn dispatch<S: SseSink>(&mut self, pending: &mut Pending<'_>, sink: &mut S) -> ControlFlow<()> {
        let event = pending.event.take().unwrap_or(&self.event);
        if self.data_lines == 0 {
            self.event.clear();
            return ControlFlow::Continue(());
        }
        self.data_lines = 0;
        let flow = sink.on_event(SseEventRef {
            event: if event.is_empty() { "message" } else { event },
            data: pending.data.take().unwrap_or(&self.data),
            id: &self.id,
        });
        self.event.clear();
        self.data.clear();
        if self.data.capacity() > KEEP_CAPACITY {
            self.data = String::new();
        }
        flow
    }
}

/// The length of the line end at `bytes[end]`: CRLF is one.
#[inline]
fn terminator(bytes: &[u8], end: usize) -> usize {
    if bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n') {
        2
    } else {
        1
    }
}

/// Finds line ends: memchr's AVX2 searcher where the CPU has one, checked
/// for once per parser (`memchr2` checks on every call, a few dozen
/// instructions per line).
#[derive(Clone, Copy, Debug)]
struct LineEnds {
    #[cfg(target_arch = "x86_64")]
    avx2: Option<memchr::arch::x86_64::avx2::memchr::Two>,
}

impl LineEnds {
    fn new() -> Self {
        Self {
            #[cfg(target_arch = "x86_64")]
            avx2: memchr::arch::x86_64::avx2::memchr::Two::new(b'\n', b'\r'),
        }
    }

    #[inline]
    fn find(&self, haystack: &[u8]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if let Some(two) = self.avx2 {
            return two.find(haystack);
        }
        memchr::memchr2(b'\n', b'\r', haystack)
    }
}

/// The fields a line may set.
#[derive(Clone, Copy)]
enum Field {
    Data,
    Event,
    Id,
    Other,
}

/// The open event's fields while they are lines of the read being parsed,
/// borrowed from it; kept by the parser only if the event goes on in the
/// next read.
#[derive(Default)]
struct Pending<'c> {
    data: Option<&'c str>,
    event: Option<&'c str>,
}

/// `bytes` as UTF-8, checked 32 bytes at a time where the CPU can
/// (simdutf8); std's check says where a broken one goes wrong.
#[inline]
fn checked_utf8(bytes: &[u8]) -> Result<&str, std::str::Utf8Error> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(_) => std::str::from_utf8(bytes),
    }
}

fn utf8(bytes: &[u8]) -> Result<&str, ProviderError> {
    std::str::from_utf8(bytes).map_err(|err| {
        ProviderError::protocol(format!("the event stream is not valid UTF-8: {err}"))
    })
}

/// A sink that counts the events it passes on.
struct Counted<'s, S> {
    sink: &'s mut S,
    received: &'s mut u64,
}

impl<S: SseSink> SseSink for Counted<'_, S> {
    #[inline]
    fn on_event(&mut self, event: SseEventRef<'_>) -> ControlFlow<()> {
        *self.received += 1;
        self.sink.on_event(event)
    }

    #[inline]
    fn on_data_ahead(&mut self, ahead: DataAhead<'_>) -> Option<(DataEnd, ControlFlow<()>)> {
        let taken = self.sink.on_data_ahead(ahead);
        *self.received += u64::from(taken.is_some());
        taken
    }
}

type Chunks = Pin<Box<dyn Stream<Item = Result<Bytes, ProviderError>> + Send>>;

/// A stream of [`SseEvent`]s read from a response body.
///
/// Dropping it, or calling [`close`](Self::close), closes the connection.
pub struct SseStream {
    body: Option<Chunks>,
    parser: SseParser,
    /// Events decoded from the last read and not handed out yet.
    ready: VecDeque<SseEvent>,
    /// An error met after the events in `ready`: reported once they are out.
    failed: Option<ProviderError>,
    received: u64,
    /// The credentials the request carried, removed from the errors a
    /// decoder makes of this stream's events.
    secrets: Arc<[String]>,
}

impl std::fmt::Debug for SseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseStream")
            .field("open", &self.body.is_some())
            .field("ready", &self.ready.len())
            .field("received", &self.received)
            .finish()
    }
}

impl SseStream {
    /// Decodes events from a stream of byte chunks, however they are split,
    /// with the default [`SseLimits`].
    pub fn from_byte_stream<S>(bytes: S) -> Self
    where
        S: Stream<Item = Result<Bytes, ProviderError>> + Send + 'static,
    {
        Self::with_limits(bytes, SseLimits::default())
    }

    /// Decodes events from a stream of byte chunks, enforcing `limits`.
    pub fn with_limits<S>(bytes: S, limits: SseLimits) -> Self
    where
        S: Stream<Item = Result<Bytes, ProviderError>> + Send + 'static,
    {
        Self {
            body: Some(Box::pin(bytes)),
            parser: SseParser::new(limits),
            ready: VecDeque::new(),
            failed: None,
            received: 0,
            secrets: Arc::new([]),
        }
    }

    /// The credentials the request carried: [`DecodedStream`](crate::DecodedStream)
    /// removes them (with [`redact_secrets`](crate::redact_secrets)) from
    /// every error it hands out, such as a stream's error event quoting the
    /// key. [`HttpClient`](crate::HttpClient) sets them from the request's
    /// credential headers.
    pub fn with_secrets(mut self, secrets: impl IntoIterator<Item = String>) -> Self {
        self.secrets = secrets.into_iter().collect();
        self
    }

    /// The credentials set with [`with_secrets`](Self::with_secrets).
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// A stream over bytes already in memory, handed over in one piece.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Self {
        Self::from_byte_stream(stream::iter([Ok(bytes.into())]))
    }

    /// The limits its parser enforces.
    pub fn limits(&self) -> SseLimits {
        self.parser.limits()
    }

    /// How many events were read so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Closes the connection; later reads return `Ok(None)`.
    pub fn close(&mut self) {
        self.body = None;
        self.ready.clear();
        self.failed = None;
    }

    /// Polls for the next piece of the body and hands every event it
    /// completes to `sink`, borrowed (events an earlier
    /// [`next_event`](Self::next_event) decoded and did not hand out go
    /// first, and alone: the body is polled on the next call).
    /// `Ready(Ok(false))` once the body is over. The sink may stop the
    /// read with [`ControlFlow::Break`]; the rest of the piece is then not
    /// decoded, and the stream must be closed.
    ///
    /// There is no cancellation token: whoever owns the stream cancels it
    /// by dropping it, which closes the connection.
    pub(crate) fn poll_read_into<S: SseSink>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        sink: &mut S,
    ) -> std::task::Poll<Result<bool, ProviderError>> {
        use std::task::Poll;
        if !self.ready.is_empty() {
            while let Some(event) = self.ready.pop_front() {
                self.received += 1;
                if sink.on_event(event.as_event_ref()).is_break() {
                    break;
                }
            }
            return Poll::Ready(Ok(true));
        }
        if let Some(error) = self.failed.take() {
            self.close();
            return Poll::Ready(Err(error));
        }
        let Some(body) = self.body.as_mut() else {
            return Poll::Ready(Ok(false));
        };
        let next = match body.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(next) => next,
        };
        let parsed = match next {
            Some(Ok(chunk)) => self.parser.feed_into(
                &chunk,
                &mut Counted {
                    sink,
                    received: &mut self.received,
                },
            ),
            Some(Err(error)) => Err(error),
            None => {
                self.body = None;
                return Poll::Ready(self.parser.finish(&mut self.ready).map(|()| false));
            }
        };
        if parsed.is_err() {
            self.body = None;
        }
        Poll::Ready(parsed.map(|_| true))
    }

    /// The next event, `Ok(None)` at the end of the stream. After an error
    /// the stream is closed.
    ///
    /// Cancelling is dropping: dropping the stream, or the future of a
    /// read waiting for bytes and then the stream, closes the connection.
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, ProviderError> {
        loop {
            if self.body.is_none() && self.ready.is_empty() && self.failed.is_none() {
                return Ok(None);
            }
            if let Some(event) = self.ready.pop_front() {
                self.received += 1;
                return Ok(Some(event));
            }
            if let Some(error) = self.failed.take() {
                self.close();
                return Err(error);
            }
            let Some(body) = self.body.as_mut() else {
                continue;
            };
            let parsed = match body.next().await {
                Some(Ok(chunk)) => self.parser.feed(&chunk, &mut self.ready),
                Some(Err(error)) => Err(error),
                None => {
                    self.body = None;
                    self.parser.finish(&mut self.ready)
                }
            };
            if let Err(error) = parsed {
                // The connection goes now; what was decoded before the
                // error is still handed out first.
                self.body = None;
                self.failed = Some(error);
            }
        }
    }
}

#[cfg(test)]
mod tests;
