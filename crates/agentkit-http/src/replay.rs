//! Recorded traffic fed back through the decoder, cut as a network might
//! have cut it: how adapters replay real streams in their tests.

use crate::SseStream;
use bytes::Bytes;
use futures::stream;

impl SseStream {
    /// A stream over bytes already in memory, handed over in pieces of
    /// `piece` bytes (the last one shorter; `0` for one piece): recorded
    /// traffic replayed as the network might have cut it.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let mut events = agentkit_http::SseStream::from_pieces("data: café\n\n", 1);
    /// assert_eq!(events.next_event().await?.expect("one event").data, "café");
    /// # Ok::<(), agentkit_http::ProviderError>(())
    /// # }).unwrap();
    /// ```
    pub fn from_pieces(bytes: impl Into<Bytes>, piece: usize) -> Self {
        let bytes = bytes.into();
        let piece = if piece == 0 {
            bytes.len().max(1)
        } else {
            piece
        };
        let pieces: Vec<_> = (0..bytes.len())
            .step_by(piece)
            .map(|at| Ok(bytes.slice(at..(at + piece).min(bytes.len()))))
            .collect();
        Self::from_byte_stream(stream::iter(pieces))
    }
}
