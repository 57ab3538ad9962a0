//! Server-sent events, decoded from a byte stream.
//!
//! Both providers stream their answers as `text/event-stream`. Decoding is
//! left to `eventsource-stream`, which copes with what networks do to a
//! stream: a UTF-8 character split across two reads, CRLF line endings,
//! comment lines and keep-alives. Two things are added here. The parser
//! re-scans its whole buffer for every line it takes, so feeding it one big
//! read would cost time quadratic in the read's size; incoming reads are
//! therefore cut at event boundaries first, which keeps decoding linear.
//! And every read can be raced against the turn's cancellation, dropping the
//! connection the moment the host interrupts.

use crate::ProviderError;
use agentkit_core::TurnCancellation;
use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt, stream};
use std::pin::Pin;

/// One decoded server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` field; `message` when the server sent none.
    pub event: String,
    /// The `data:` lines, joined by newlines.
    pub data: String,
    /// The `id:` field, empty when absent.
    pub id: String,
}

type Events = Pin<Box<dyn Stream<Item = Result<SseEvent, ProviderError>> + Send>>;

/// A stream of [`SseEvent`]s read from a response body.
///
/// Dropping it, or calling [`close`](Self::close), closes the connection.
pub struct SseStream {
    events: Option<Events>,
    received: u64,
}

impl std::fmt::Debug for SseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseStream")
            .field("open", &self.events.is_some())
            .field("received", &self.received)
            .finish()
    }
}

impl SseStream {
    /// Decodes events from a stream of byte chunks, however they are split.
    pub fn from_byte_stream<S>(bytes: S) -> Self
    where
        S: Stream<Item = Result<Bytes, ProviderError>> + Send + 'static,
    {
        let pieces = bytes.flat_map(|chunk| {
            let (pieces, error) = match chunk {
                Ok(bytes) => (Some(split_at_event_ends(bytes)), None),
                Err(err) => (None, Some(Err(err))),
            };
            stream::iter(pieces.into_iter().flatten().map(Ok).chain(error))
        });
        let events = pieces.eventsource().map(|item| match item {
            Ok(event) => Ok(SseEvent {
                event: event.event,
                data: event.data,
                id: event.id,
            }),
            Err(EventStreamError::Transport(err)) => Err(err),
            Err(EventStreamError::Utf8(err)) => Err(ProviderError::protocol(format!(
                "the event stream is not valid UTF-8: {err}"
            ))),
            Err(EventStreamError::Parser(err)) => Err(ProviderError::protocol(format!(
                "the event stream could not be parsed: {err}"
            ))),
        });
        Self {
            events: Some(Box::pin(events)),
            received: 0,
        }
    }

    /// A stream over bytes already in memory, handed over in one piece.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Self {
        Self::from_byte_stream(stream::iter([Ok(bytes.into())]))
    }

    /// How many events were read so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Closes the connection; later reads return `Ok(None)`.
    pub fn close(&mut self) {
        self.events = None;
    }

    /// The next event, `Ok(None)` at the end of the stream.
    ///
    /// With a cancellation token, the read stops as soon as the token is
    /// cancelled: the connection is closed and a `Cancelled` error returned.
    /// After an error the stream is closed.
    pub async fn next_event(
        &mut self,
        cancellation: Option<&TurnCancellation>,
    ) -> Result<Option<SseEvent>, ProviderError> {
        let Some(events) = self.events.as_mut() else {
            return Ok(None);
        };
        let next = match cancellation {
            Some(token) => {
                if token.is_cancelled() {
                    None
                } else {
                    // Events first: while data is ready the cancellation
                    // future is never polled, so no listener is registered
                    // per event; the check above still sees an interrupt
                    // at once.
                    tokio::select! {
                        biased;
                        next = events.next() => Some(next),
                        () = token.cancelled() => None,
                    }
                }
            }
            None => Some(events.next().await),
        };
        match next {
            None => {
                self.close();
                Err(ProviderError::cancelled())
            }
            Some(Some(Ok(event))) => {
                self.received += 1;
                Ok(Some(event))
            }
            Some(Some(Err(err))) => {
                self.close();
                Err(err)
            }
            Some(None) => {
                self.close();
                Ok(None)
            }
        }
    }
}

/// Cuts a chunk after every blank line (`\n\n` or `\n\r\n`), so the SSE
/// parser never holds more than about one event. Boundaries that straddle
/// two chunks are simply not cut; correctness does not depend on the cuts.
/// Pieces are produced lazily: a large read is not turned into a large list.
struct EventEnds {
    bytes: Bytes,
    start: usize,
}

impl Iterator for EventEnds {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        let data = self.bytes.as_ref();
        if self.start >= data.len() {
            return None;
        }
        let mut search = self.start;
        // Jumping from one LF to the next (SIMD) is several times faster
        // than looking at every byte; events have only a few lines each.
        while let Some(offset) = memchr::memchr(b'\n', &data[search..]) {
            let i = search + offset;
            let blank_line = i > self.start
                && (data[i - 1] == b'\n'
                    || (i >= self.start + 2 && data[i - 1] == b'\r' && data[i - 2] == b'\n'));
            if blank_line {
                let piece = self.bytes.slice(self.start..=i);
                self.start = i + 1;
                return Some(piece);
            }
            search = i + 1;
        }
        let piece = self.bytes.slice(self.start..);
        self.start = data.len();
        Some(piece)
    }
}

fn split_at_event_ends(bytes: Bytes) -> EventEnds {
    EventEnds { bytes, start: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    fn decode_in_pieces(body: &[u8], piece: usize) -> Vec<SseEvent> {
        let chunks: Vec<Result<Bytes, ProviderError>> = body
            .chunks(piece)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let mut stream = SseStream::from_byte_stream(stream::iter(chunks));
        let mut events = Vec::new();
        while let Some(event) = block_on(stream.next_event(None)).expect("decodes") {
            events.push(event);
        }
        events
    }

    #[test]
    fn any_split_decodes_the_same_events() {
        let body = ": keep-alive\r\n\r\nevent: a\r\ndata: héllo 🌍\r\n\r\ndata: {\"x\":1}\n\n: ping\n\ndata: two\ndata: lines\n\n";
        let whole = decode_in_pieces(body.as_bytes(), body.len());
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[0].event, "a");
        assert_eq!(whole[0].data, "héllo 🌍");
        assert_eq!(whole[1].event, "message");
        assert_eq!(whole[2].data, "two\nlines");
        for piece in 1..body.len() {
            assert_eq!(
                decode_in_pieces(body.as_bytes(), piece),
                whole,
                "piece size {piece}"
            );
        }
    }

    #[test]
    fn splitting_cuts_after_blank_lines_only() {
        let pieces: Vec<Bytes> =
            split_at_event_ends(Bytes::from_static(b"data: a\n\ndata: b\r\n\r\ndata: c")).collect();
        let pieces: Vec<&[u8]> = pieces.iter().map(|p| p.as_ref()).collect();
        assert_eq!(
            pieces,
            vec![&b"data: a\n\n"[..], b"data: b\r\n\r\n", b"data: c"]
        );
    }

    #[test]
    fn a_cancelled_token_closes_the_stream() {
        let controller = agentkit_core::CancellationController::new();
        let token = controller.handle().checkpoint();
        let mut stream = SseStream::from_bytes(&b"data: a\n\n"[..]);
        controller.interrupt();
        let err = block_on(stream.next_event(Some(&token))).unwrap_err();
        assert_eq!(err.kind, crate::ProviderErrorKind::Cancelled);
        assert_eq!(block_on(stream.next_event(None)), Ok(None));
    }
}
