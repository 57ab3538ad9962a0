//! An SSE stream run through a provider's decoder.
//!
//! Every adapter turns SSE events into its own events the same way: decode
//! each event into a queue, hand the queue out one item at a time, close the
//! connection as soon as the decoder has seen the end of the answer, and on
//! the first error drop what the failing event produced and close.
//! [`DecodedStream`] does that once; an adapter only writes the
//! [`SseDecoder`].
//!
//! It also enforces the answer caps of [`SseLimits`](crate::SseLimits)
//! (total bytes, total parts): past either, the stream ends with a
//! `LimitExceeded` error after what was decoded within the cap, like any
//! other error, so the caller keeps a well-formed partial answer.
//!
//! It decodes a whole read at a time: the events of a read are handed to
//! the decoder borrowed, straight out of the read's bytes, so an event
//! costs no allocation or copy before the decoder sees it, and the
//! per-event cost of the async plumbing is paid per read instead.

use crate::{
    DataAhead, DataEnd, ProviderError, ProviderErrorKind, SseEventRef, SseLimits, SseSink,
    SseStream,
};
use std::ops::ControlFlow;
use std::task::{Context, Poll};

/// The most items a new list makes room for ahead (a 16 KiB read of
/// Anthropic deltas yields about 130).
const KEEP_ROOM: usize = 1024;

/// Where a decoder puts what its events yield, in order.
///
/// The items of a read are decoded together and handed out one at a
/// time; this is a plain list rather than a ring buffer because it is only
/// ever filled (by the decoder) and then drained whole (by
/// [`DecodedStream`]): a push is a store and a length, a take a pointer
/// step.
///
/// ```
/// use agentkit_http::Outputs;
///
/// let mut out = Outputs::new();
/// out.push("a");
/// out.extend(["b", "c"]);
/// assert_eq!(out.len(), 3);
/// assert_eq!(out.into_vec(), ["a", "b", "c"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outputs<T> {
    items: Vec<T>,
}

impl<T> Default for Outputs<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Outputs<T> {
    /// An empty list.
    pub const fn new() -> Self {
        Self { items: Vec::new() }
    }

    /// Appends an item.
    #[inline]
    pub fn push(&mut self, item: T) {
        self.items.push(item);
    }

    /// How many items it holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    /// The items, in order.
    pub fn into_vec(self) -> Vec<T> {
        self.items
    }

    /// Keeps the first `len` items.
    fn truncate(&mut self, len: usize) {
        self.items.truncate(len);
    }

    /// The items so far to hand out, leaving an empty list with as much
    /// room (up to a bound): one allocation per read, not one per growth.
    fn take(&mut self) -> std::vec::IntoIter<T> {
        if self.items.is_empty() {
            return Vec::new().into_iter();
        }
        let room = self.items.capacity().min(KEEP_ROOM);
        std::mem::replace(&mut self.items, Vec::with_capacity(room)).into_iter()
    }
}

impl<T> Extend<T> for Outputs<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        self.items.extend(items);
    }
}

impl<T> From<Outputs<T>> for Vec<T> {
    fn from(outputs: Outputs<T>) -> Self {
        outputs.items
    }
}

/// Turns a provider's SSE events into its own events.
pub trait SseDecoder {
    /// What one SSE event decodes into (zero or more of them).
    type Output;

    /// Decodes one SSE event, pushing what it yields onto `out`.
    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Outputs<Self::Output>,
    ) -> Result<(), ProviderError>;

    /// The fast path for an event in a layout the decoder knows, offered
    /// before the parser has looked for the end of its data line (see
    /// [`SseSink::on_data_ahead`]): the decoder matches the data with
    /// [`DataAhead::layout`] and, only once [`DataAhead::end`] has confirmed
    /// where the event ends, decodes it (pushing what it yields onto `out`)
    /// and returns that end. It must decode it exactly as
    /// [`on_event`](Self::on_event) would the event of `ahead`'s name and id
    /// with the data matched. `None`, having changed nothing and pushed
    /// nothing, hands the event to `on_event`; that is the default, and
    /// the right answer for anything unusual (an error to report, a
    /// finished answer, another layout).
    #[inline]
    fn on_data_ahead(
        &mut self,
        ahead: DataAhead<'_>,
        out: &mut Outputs<Self::Output>,
    ) -> Option<DataEnd> {
        let _ = (ahead, out);
        None
    }

    /// The body ended; pushes what is still owed or fails if the answer is
    /// incomplete.
    fn on_end(&mut self, out: &mut Outputs<Self::Output>) -> Result<(), ProviderError>;

    /// `true` once the answer is complete: the rest of the body is not read.
    fn is_finished(&self) -> bool;
}

/// An SSE stream and its decoder.
pub struct DecodedStream<D: SseDecoder> {
    events: SseStream,
    decoder: D,
    /// What the last read decoded, handed out in order.
    ready: std::vec::IntoIter<D::Output>,
    /// What the read being decoded yields.
    queue: Outputs<D::Output>,
    /// The error that ends the stream, handed out after what was decoded
    /// before it.
    failed: Option<ProviderError>,
    done: bool,
    /// Event data bytes and decoded parts of this answer so far.
    bytes: u64,
    parts: u64,
}

impl<D: SseDecoder> DecodedStream<D> {
    /// Decodes `events` with `decoder`.
    pub fn new(events: SseStream, decoder: D) -> Self {
        Self {
            events,
            decoder,
            ready: Vec::new().into_iter(),
            queue: Outputs::new(),
            failed: None,
            done: false,
            bytes: 0,
            parts: 0,
        }
    }

    /// Queues items to hand out before anything decoded (such as a warning
    /// for every retried request).
    pub fn with_queued(mut self, items: impl IntoIterator<Item = D::Output>) -> Self {
        let mut ready: Vec<D::Output> = std::mem::take(&mut self.ready).collect();
        ready.extend(items);
        self.ready = ready.into_iter();
        self
    }

    /// How many decoded items wait to be handed out.
    pub fn queued(&self) -> usize {
        self.ready.len() + self.queue.len()
    }

    /// `true` once the stream has nothing more to give.
    pub fn is_done(&self) -> bool {
        self.done && self.queued() == 0 && self.failed.is_none()
    }

    /// The next decoded item, `Ok(None)` at the end. After an error the
    /// stream is closed and yields nothing more.
    pub async fn next(&mut self) -> Result<Option<D::Output>, ProviderError> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// Polls for the next decoded item: `Ready(Ok(None))` at the end. After
    /// an error the stream is closed and yields nothing more. Cancelling is
    /// dropping the stream (the connection closes with it).
    #[inline(always)]
    pub fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<D::Output>, ProviderError>> {
        // Nearly every poll takes an item the last read decoded: that is
        // done inline, so it does not pay for the registers and the
        // stack the read below needs (about 20 instructions an item).
        if let Some(item) = self.next_ready() {
            return Poll::Ready(Ok(Some(item)));
        }
        self.poll_more(cx)
    }

    /// The next item the last read decoded, if one is left, without
    /// polling for more: what [`poll_next`](Self::poll_next) hands out
    /// first.
    #[inline(always)]
    pub fn next_ready(&mut self) -> Option<D::Output> {
        self.ready.next()
    }

    /// [`poll_next`](Self::poll_next), with `failed` told of the error
    /// that ends the stream before it is handed out (an adapter logs it).
    /// A decoded item is returned inline, so it goes straight into the
    /// caller's slot: wrapping `poll_next` in a `map_err` instead would
    /// copy every item through the wrapping (two 80-byte copies per
    /// event, about 20 instructions).
    #[inline(always)]
    pub fn poll_next_reporting(
        &mut self,
        cx: &mut Context<'_>,
        failed: fn(&ProviderError),
    ) -> Poll<Result<Option<D::Output>, ProviderError>> {
        if let Some(item) = self.next_ready() {
            return Poll::Ready(Ok(Some(item)));
        }
        self.poll_more_reporting(cx, failed)
    }

    /// [`poll_next_reporting`](Self::poll_next_reporting) past the items
    /// already decoded.
    #[inline(never)]
    fn poll_more_reporting(
        &mut self,
        cx: &mut Context<'_>,
        failed: fn(&ProviderError),
    ) -> Poll<Result<Option<D::Output>, ProviderError>> {
        let polled = self.poll_more(cx);
        if let Poll::Ready(Err(error)) = &polled {
            failed(error);
        }
        polled
    }

    /// [`poll_next`](Self::poll_next) once the last read's items are
    /// handed out: the error, the end, or the next read.
    #[inline(never)]
    fn poll_more(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<D::Output>, ProviderError>> {
        loop {
            if let Some(item) = self.ready.next() {
                return Poll::Ready(Ok(Some(item)));
            }
            if let Some(mut error) = self.failed.take() {
                // An error event may quote the key the request carried.
                crate::redact_secrets(&mut error.message, self.events.secrets());
                return Poll::Ready(Err(error));
            }
            if self.done {
                return Poll::Ready(Ok(None));
            }
            if self.poll_read(cx).is_pending() {
                return Poll::Pending;
            }
            self.ready = self.queue.take();
        }
    }

    /// Reads and decodes the next piece of the body.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let mut sink = Decoding {
            decoder: &mut self.decoder,
            queue: &mut self.queue,
            bytes: &mut self.bytes,
            parts: &mut self.parts,
            limits: self.events.limits(),
            failed: None,
        };
        let read = match self.events.poll_read_into(cx, &mut sink) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(read) => read,
        };
        let outcome = match (read, sink.failed) {
            (_, Some(error)) | (Err(error), None) => Err(error),
            (Ok(_), None) if self.decoder.is_finished() => {
                // The answer is complete: the rest of the body is not read.
                self.done = true;
                self.events.close();
                Ok(())
            }
            (Ok(true), None) => Ok(()),
            (Ok(false), None) => {
                self.done = true;
                let before = self.queue.len();
                self.decoder.on_end(&mut self.queue).inspect_err(|_| {
                    self.queue.truncate(before);
                })
            }
        };
        if let Err(error) = outcome {
            // What was decoded before the error is handed out first.
            self.done = true;
            self.events.close();
            self.failed = Some(error);
        }
        Poll::Ready(())
    }
}

/// A read's events going through the decoder, within the answer caps.
struct Decoding<'s, D: SseDecoder> {
    decoder: &'s mut D,
    queue: &'s mut Outputs<D::Output>,
    /// Event data bytes and decoded parts of this answer so far.
    bytes: &'s mut u64,
    parts: &'s mut u64,
    limits: SseLimits,
    /// The error that stopped the read.
    failed: Option<ProviderError>,
}

impl<D: SseDecoder> Decoding<'_, D> {
    /// After an event was decoded (its items from `before` on): the part
    /// cap, and whether the read goes on.
    #[inline(always)]
    fn decoded(&mut self, before: usize, decoded: Result<(), ProviderError>) -> ControlFlow<()> {
        *self.parts += (self.queue.len() - before) as u64;
        if decoded.is_ok() && *self.parts > self.limits.max_answer_parts {
            self.queue.truncate(before);
            self.failed = Some(answer_too_large(
                "parts",
                self.limits.max_answer_parts,
                "max_answer_parts",
            ));
            return ControlFlow::Break(());
        }
        match decoded {
            Ok(()) if self.decoder.is_finished() => ControlFlow::Break(()),
            Ok(()) => ControlFlow::Continue(()),
            Err(error) => {
                // What the failing event produced is dropped.
                self.queue.truncate(before);
                self.failed = Some(error);
                ControlFlow::Break(())
            }
        }
    }
}

impl<D: SseDecoder> SseSink for Decoding<'_, D> {
    #[inline]
    fn on_event(&mut self, event: SseEventRef<'_>) -> ControlFlow<()> {
        *self.bytes += event.data.len() as u64;
        if *self.bytes > self.limits.max_answer_bytes {
            self.failed = Some(answer_too_large(
                "bytes of event data",
                self.limits.max_answer_bytes,
                "max_answer_bytes",
            ));
            return ControlFlow::Break(());
        }
        let before = self.queue.len();
        let decoded = self.decoder.on_event(event, self.queue);
        self.decoded(before, decoded)
    }

    #[inline(always)]
    fn on_data_ahead(&mut self, ahead: DataAhead<'_>) -> Option<(DataEnd, ControlFlow<()>)> {
        // The data is at most the rest of the read: an event that might
        // cross the byte cap goes the general way, which reports it.
        if *self.bytes + ahead.rest().len() as u64 > self.limits.max_answer_bytes {
            return None;
        }
        let before = self.queue.len();
        let end = self.decoder.on_data_ahead(ahead, self.queue)?;
        *self.bytes += end.data_len() as u64;
        Some((end, self.decoded(before, Ok(()))))
    }
}

/// The error that ends an answer past one of its caps.
fn answer_too_large(what: &str, cap: u64, field: &str) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::LimitExceeded,
        format!("the answer is larger than {cap} {what} (SseLimits::{field}); decoding stopped"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProviderErrorKind;
    use bytes::Bytes;
    use futures::executor::block_on;

    /// Hands out each event's data; `fail` pushes a partial item then
    /// fails, `end` finishes the answer.
    #[derive(Default)]
    struct Echo {
        finished: bool,
    }

    impl SseDecoder for Echo {
        type Output = String;

        fn on_event(
            &mut self,
            event: SseEventRef<'_>,
            out: &mut Outputs<String>,
        ) -> Result<(), ProviderError> {
            match event.data {
                "fail" => {
                    out.push("partial".into());
                    Err(ProviderError::protocol("bad event"))
                }
                "end" => {
                    self.finished = true;
                    Ok(())
                }
                data => {
                    out.push(data.into());
                    Ok(())
                }
            }
        }

        fn on_end(&mut self, _out: &mut Outputs<String>) -> Result<(), ProviderError> {
            Err(ProviderError::protocol("cut"))
        }

        fn is_finished(&self) -> bool {
            self.finished
        }
    }

    fn drain(body: &'static [u8]) -> (Vec<String>, Option<ProviderErrorKind>) {
        let events = SseStream::from_bytes(Bytes::from_static(body));
        let mut stream = DecodedStream::new(events, Echo::default());
        let mut items = Vec::new();
        loop {
            match block_on(stream.next()) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => return (items, None),
                Err(error) => {
                    assert_eq!(block_on(stream.next()), Ok(None), "nothing after an error");
                    assert!(stream.is_done());
                    return (items, Some(error.kind));
                }
            }
        }
    }

    #[test]
    fn next_ready_hands_out_what_a_read_decoded_and_never_reads() {
        let events =
            SseStream::from_bytes(Bytes::from_static(b"data: a\n\ndata: b\n\ndata: fail\n\n"));
        let mut stream = DecodedStream::new(events, Echo::default());
        assert_eq!(stream.next_ready(), None, "nothing is read by it");
        assert_eq!(block_on(stream.next()), Ok(Some("a".to_owned())));
        // The rest of the read, in order, then nothing until a poll.
        assert_eq!(stream.next_ready().as_deref(), Some("b"));
        assert_eq!(stream.next_ready(), None);
        let error = block_on(stream.next()).unwrap_err();
        assert_eq!(error.kind, ProviderErrorKind::Protocol);
        assert_eq!(
            stream.next_ready(),
            None,
            "the failing event's item is dropped"
        );
        assert_eq!(block_on(stream.next()), Ok(None));
    }

    #[test]
    fn poll_next_reporting_tells_of_the_error_once_after_the_items() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static FAILED: AtomicUsize = AtomicUsize::new(0);
        let events =
            SseStream::from_bytes(Bytes::from_static(b"data: a\n\ndata: b\n\ndata: fail\n\n"));
        let mut stream = DecodedStream::new(events, Echo::default());
        let report = |error: &ProviderError| {
            assert_eq!(error.kind, ProviderErrorKind::Protocol);
            FAILED.fetch_add(1, Ordering::SeqCst);
        };
        let mut next = || {
            block_on(std::future::poll_fn(|cx| {
                stream.poll_next_reporting(cx, report)
            }))
        };
        assert_eq!(next(), Ok(Some("a".to_owned())));
        assert_eq!(next(), Ok(Some("b".to_owned())));
        assert_eq!(FAILED.load(Ordering::SeqCst), 0, "not before the items");
        assert_eq!(next().unwrap_err().kind, ProviderErrorKind::Protocol);
        assert_eq!(FAILED.load(Ordering::SeqCst), 1);
        assert_eq!(next(), Ok(None));
        assert_eq!(FAILED.load(Ordering::SeqCst), 1, "told once");
    }

    #[test]
    fn a_failing_event_comes_after_the_events_of_its_read_and_drops_its_own_items() {
        let (items, error) = drain(b"data: a\n\ndata: b\n\ndata: fail\n\ndata: c\n\n");
        assert_eq!(items, ["a", "b"]);
        assert_eq!(error, Some(ProviderErrorKind::Protocol));
    }

    #[test]
    fn the_rest_of_a_read_is_not_decoded_once_the_answer_is_complete() {
        // Invalid UTF-8 after the end would be a protocol error if read.
        let (items, error) = drain(b"data: a\n\ndata: end\n\ndata: \xFF\n\n");
        assert_eq!(items, ["a"]);
        assert_eq!(error, None);
    }

    #[test]
    fn a_body_that_ends_early_fails_after_what_it_carried() {
        let (items, error) = drain(b"data: a\n\ndata: b\n\n");
        assert_eq!(items, ["a", "b"]);
        assert_eq!(error, Some(ProviderErrorKind::Protocol));
    }

    /// An endless answer against the caps: it stops, typed, with what fit.
    fn endless(limits: crate::SseLimits) -> (u64, ProviderError) {
        let body = futures::stream::iter(std::iter::repeat_with(|| {
            Ok(Bytes::from_static(b"data: abcd\n\ndata: efgh\n\n"))
        }));
        let events = SseStream::with_limits(body, limits);
        let mut stream = DecodedStream::new(events, Echo::default());
        let mut parts = 0;
        loop {
            match block_on(stream.next()) {
                Ok(Some(_)) => parts += 1,
                Ok(None) => panic!("an endless body ended"),
                Err(error) => {
                    assert_eq!(block_on(stream.next()), Ok(None));
                    return (parts, error);
                }
            }
        }
    }

    #[test]
    fn an_endless_answer_stops_at_its_byte_cap() {
        let (parts, error) = endless(crate::SseLimits::default().with_max_answer_bytes(4000));
        assert_eq!(error.kind, ProviderErrorKind::LimitExceeded);
        assert!(error.message.contains("max_answer_bytes"), "{error}");
        // Every part handed out fits the cap; the one that crossed it is not.
        assert_eq!(parts, 1000);
    }

    #[test]
    fn an_endless_answer_stops_at_its_part_cap() {
        let (parts, error) = endless(crate::SseLimits::default().with_max_answer_parts(777));
        assert_eq!(error.kind, ProviderErrorKind::LimitExceeded);
        assert!(error.message.contains("max_answer_parts"), "{error}");
        assert_eq!(parts, 777);
    }
}
