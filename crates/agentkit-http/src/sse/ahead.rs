//! The parser's fast path: an event's data matched before its line end is
//! known.
//!
//! Nearly every event of a streamed answer is one `data:` line holding a
//! JSON document its decoder reads in a fixed [`Layout`]. Searching for
//! that line's end first costs a scan of the whole line, and the layout
//! match then reads the same bytes again. A match in a line layout cannot
//! cross a line end, so it proves where the data ends: the parser only
//! checks that the line ends right after the match and that the blank line
//! follows. A sink that does not take the data (it is not in its layout,
//! the line ends elsewhere, anything unusual) leaves the event to the
//! general path, which decides exactly as before.

use super::terminator;
use crate::SseEventRef;
use crate::codec::Layout;
use std::ops::ControlFlow;

/// Where [`SseParser::feed_into`](super::SseParser::feed_into) hands the
/// events it completes.
///
/// [`on_event`](Self::on_event) takes every event, as
/// [`SseParser::feed_with`](super::SseParser::feed_with)'s closure does.
/// [`on_data_ahead`](Self::on_data_ahead) is an optional fast path: the
/// parser offers it the start of an event's data before it has looked for
/// the data line's end, and a sink that matches the data in a line
/// [`Layout`] takes the event whole (see [`DataAhead`]). By default it
/// takes nothing.
///
/// ```
/// use agentkit_http::{DataAhead, DataEnd, SseEventRef, SseLimits, SseParser, SseSink};
/// use std::ops::ControlFlow;
///
/// /// Integers, the usual ones read ahead.
/// #[derive(Default)]
/// struct Numbers(Vec<u64>);
///
/// impl SseSink for Numbers {
///     fn on_event(&mut self, event: SseEventRef<'_>) -> ControlFlow<()> {
///         self.0.extend(event.data.trim().parse::<u64>().ok());
///         ControlFlow::Continue(())
///     }
///
///     fn on_data_ahead(&mut self, ahead: DataAhead<'_>) -> Option<(DataEnd, ControlFlow<()>)> {
///         let mut layout = ahead.layout();
///         let number = layout.u64()?;
///         let end = ahead.end(&layout)?;
///         self.0.push(number);
///         Some((end, ControlFlow::Continue(())))
///     }
/// }
///
/// let mut parser = SseParser::new(SseLimits::default());
/// let mut numbers = Numbers::default();
/// parser.feed_into(b"data: 7\n\ndata: 8 \r\n\r\ndata: 9\n\n", &mut numbers)?;
/// assert_eq!(numbers.0, [7, 8, 9]);
/// # Ok::<(), agentkit_http::ProviderError>(())
/// ```
pub trait SseSink {
    /// Takes one event, borrowed from the read; [`ControlFlow::Break`]
    /// stops the parse.
    fn on_event(&mut self, event: SseEventRef<'_>) -> ControlFlow<()>;

    /// Takes the event whose data starts [`ahead`](DataAhead) if its data
    /// is in a layout the sink knows: the sink matches it with
    /// [`DataAhead::layout`], and only once [`DataAhead::end`] has
    /// confirmed where the event ends does it act on it, returning that
    /// end. `None`, having changed nothing, leaves the event to
    /// [`on_event`](Self::on_event). The event it takes is the one
    /// `on_event` would have been given: the name and id of `ahead`, the
    /// data the layout matched.
    #[inline]
    fn on_data_ahead(&mut self, ahead: DataAhead<'_>) -> Option<(DataEnd, ControlFlow<()>)> {
        let _ = ahead;
        None
    }
}

/// A closure as a sink (no fast path).
pub(super) struct Closure<F>(pub(super) F);

impl<F> SseSink for Closure<F>
where
    F: FnMut(SseEventRef<'_>) -> ControlFlow<()>,
{
    #[inline]
    fn on_event(&mut self, event: SseEventRef<'_>) -> ControlFlow<()> {
        (self.0)(event)
    }
}

/// The start of an event's data, handed to
/// [`SseSink::on_data_ahead`] before the parser has looked for the end of
/// its line: the event's name and id are known, its data is the start of
/// [`rest`](Self::rest).
#[derive(Clone, Copy, Debug)]
pub struct DataAhead<'a> {
    event: &'a str,
    id: &'a str,
    rest: &'a str,
    /// The longest data the line and event caps allow.
    max_data: usize,
}

impl<'a> DataAhead<'a> {
    pub(super) fn new(event: &'a str, id: &'a str, rest: &'a str, max_data: usize) -> Self {
        Self {
            event,
            id,
            rest,
            max_data,
        }
    }

    /// The `event:` field; `message` when the server sent none.
    #[inline]
    pub fn event(&self) -> &'a str {
        self.event
    }

    /// The last `id:` field seen so far in the stream, empty when none.
    #[inline]
    pub fn id(&self) -> &'a str {
        self.id
    }

    /// The read from the data's first byte (after `data:` and its one
    /// space) to the last line end the read holds: the data, its line end,
    /// and whatever follows. Its length bounds the data's.
    #[inline]
    pub fn rest(&self) -> &'a str {
        self.rest
    }

    /// A [`Layout`] at the data's first byte whose match stays in the data
    /// line.
    #[inline]
    pub fn layout(&self) -> Layout<'a, true> {
        Layout::in_line(self.rest)
    }

    /// Where the event ends if its data is exactly what `layout` (made by
    /// [`layout`](Self::layout)) matched so far: the line ends right after
    /// it, a blank line follows, and the caps hold. `None` otherwise (the
    /// line goes on, the event has more lines, or a cap is crossed), and the
    /// sink must leave the event to the general path.
    #[inline]
    pub fn end(&self, layout: &Layout<'a, true>) -> Option<DataEnd> {
        let len = layout.offset();
        if len > self.max_data {
            return None;
        }
        let bytes = self.rest.as_bytes();
        // The usual LF framing first, then any other line ends.
        let next = if bytes.get(len..len + 2) == Some(b"\n\n") {
            len + 2
        } else {
            if !matches!(bytes.get(len), Some(b'\n' | b'\r')) {
                return None;
            }
            let blank = len + terminator(bytes, len);
            if !matches!(bytes.get(blank), Some(b'\n' | b'\r')) {
                return None;
            }
            blank + terminator(bytes, blank)
        };
        Some(DataEnd { len, next })
    }
}

/// Where an event taken by [`SseSink::on_data_ahead`] ends, as confirmed by
/// [`DataAhead::end`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataEnd {
    /// The data's length.
    len: usize,
    /// Where the next line starts, from the data's first byte.
    next: usize,
}

impl DataEnd {
    /// The length of the event's data.
    #[inline]
    pub fn data_len(&self) -> usize {
        self.len
    }

    /// Where the line after the event's blank line starts, counted from
    /// the data's first byte.
    #[inline]
    pub(super) fn next(&self) -> usize {
        self.next
    }
}
