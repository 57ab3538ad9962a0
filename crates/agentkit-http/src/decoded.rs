//! An SSE stream run through a provider's decoder.
//!
//! Every adapter turns SSE events into its own events the same way: decode
//! each event into a queue, hand the queue out one item at a time, close the
//! connection as soon as the decoder has seen the end of the answer, and on
//! the first error drop everything queued and close. [`DecodedStream`] does
//! that once; an adapter only writes the [`SseDecoder`].

use crate::{ProviderError, SseEvent, SseStream};
use agentkit_core::TurnCancellation;
use std::collections::VecDeque;

/// Turns a provider's SSE events into its own events.
pub trait SseDecoder {
    /// What one SSE event decodes into (zero or more of them).
    type Output;

    /// Decodes one SSE event, pushing what it yields onto `out`.
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<Self::Output>,
    ) -> Result<(), ProviderError>;

    /// The body ended; pushes what is still owed or fails if the answer is
    /// incomplete.
    fn on_end(&mut self, out: &mut VecDeque<Self::Output>) -> Result<(), ProviderError>;

    /// `true` once the answer is complete: the rest of the body is not read.
    fn is_finished(&self) -> bool;
}

/// An SSE stream and its decoder.
pub struct DecodedStream<D: SseDecoder> {
    events: SseStream,
    decoder: D,
    queue: VecDeque<D::Output>,
    done: bool,
}

impl<D: SseDecoder> DecodedStream<D> {
    /// Decodes `events` with `decoder`.
    pub fn new(events: SseStream, decoder: D) -> Self {
        Self {
            events,
            decoder,
            queue: VecDeque::new(),
            done: false,
        }
    }

    /// Queues items to hand out before anything decoded (such as a warning
    /// for every retried request).
    pub fn with_queued(mut self, items: impl IntoIterator<Item = D::Output>) -> Self {
        self.queue.extend(items);
        self
    }

    /// How many decoded items wait to be handed out.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// `true` once the stream has nothing more to give.
    pub fn is_done(&self) -> bool {
        self.done && self.queue.is_empty()
    }

    /// The next decoded item, `Ok(None)` at the end. After an error the
    /// stream is closed and yields nothing more.
    pub async fn next(
        &mut self,
        cancellation: Option<&TurnCancellation>,
    ) -> Result<Option<D::Output>, ProviderError> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Ok(Some(item));
            }
            if self.done {
                return Ok(None);
            }
            let decoded = match self.events.next_event(cancellation).await {
                Ok(Some(event)) => self.decoder.on_event(&event, &mut self.queue),
                Ok(None) => {
                    self.done = true;
                    self.decoder.on_end(&mut self.queue)
                }
                Err(error) => Err(error),
            };
            if let Err(error) = decoded {
                self.done = true;
                self.queue.clear();
                self.events.close();
                return Err(error);
            }
            if self.decoder.is_finished() && !self.done {
                self.done = true;
                self.events.close();
            }
        }
    }
}
