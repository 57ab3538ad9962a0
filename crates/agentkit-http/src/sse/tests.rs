//! The parser against the event-stream rules, however the body is cut.

use super::*;
use futures::executor::block_on;

fn decode_in_pieces(body: &[u8], piece: usize) -> Vec<SseEvent> {
    let chunks: Vec<Result<Bytes, ProviderError>> = body
        .chunks(piece)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let mut stream = SseStream::from_byte_stream(stream::iter(chunks));
    let mut events = Vec::new();
    while let Some(event) = block_on(stream.next_event()).expect("decodes") {
        events.push(event);
    }
    events
}

fn parse(body: &[u8], limits: SseLimits) -> (Vec<SseEvent>, Result<(), ProviderError>) {
    let mut parser = SseParser::new(limits);
    let mut events = Vec::new();
    let result = parser
        .feed(body, &mut events)
        .and_then(|()| parser.finish(&mut events));
    (events, result)
}

#[test]
fn any_split_decodes_the_same_events() {
    let body = "\u{FEFF}: keep-alive\r\n\r\nevent: a\r\ndata: héllo 🌍\r\n\r\ndata: {\"x\":1}\n\n: ping\n\ndata: two\ndata: lines\r\rdata:x\rid: 7\r\n\r\n";
    let whole = decode_in_pieces(body.as_bytes(), body.len());
    assert_eq!(whole.len(), 4);
    assert_eq!(whole[0].event, "a");
    assert_eq!(whole[0].data, "héllo 🌍");
    assert_eq!(whole[1].event, "message");
    assert_eq!(whole[2].data, "two\nlines");
    assert_eq!((whole[3].data.as_str(), whole[3].id.as_str()), ("x", "7"));
    for piece in 1..body.len() {
        assert_eq!(
            decode_in_pieces(body.as_bytes(), piece),
            whole,
            "piece size {piece}"
        );
    }
}

#[test]
fn fields_follow_the_event_stream_rules() {
    let (events, result) = parse(
        b"data\n\nid: 1\ndata:  two spaces\nretry: 10\nother: x\n\nevent: only\n\ndata: z\n\nid: a\0b\ndata: n\n\ndata: cut",
        SseLimits::default(),
    );
    result.unwrap();
    let shown: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| (e.event.as_str(), e.data.as_str(), e.id.as_str()))
        .collect();
    // A field without a colon has an empty value; one space is dropped;
    // an event without data is not dispatched (and its type is reset);
    // ids persist, one with NUL is ignored; the unfinished event is not
    // dispatched.
    assert_eq!(
        shown,
        [
            ("message", "", ""),
            ("message", " two spaces", "1"),
            ("message", "z", "1"),
            ("message", "n", "1"),
        ]
    );
}

#[test]
fn a_line_longer_than_the_cap_is_a_limit_error() {
    let limits = SseLimits::default().with_max_line_bytes(8);
    let (events, result) = parse(b"data: 1\n\ndata: 123456789", limits);
    assert_eq!(events.len(), 1, "events before the error are kept");
    assert_eq!(result.unwrap_err().kind, ProviderErrorKind::LimitExceeded);
    // Exactly at the cap is fine, across reads too.
    let mut parser = SseParser::new(limits);
    let mut events = Vec::new();
    parser.feed(b"data", &mut events).unwrap();
    parser.feed(b":123\n\n", &mut events).unwrap();
    assert_eq!(events[0].data, "123");
    let err = parser
        .feed(b"data: 12", &mut events)
        .and_then(|()| parser.feed(b"34", &mut events));
    assert_eq!(err.unwrap_err().kind, ProviderErrorKind::LimitExceeded);
}

#[test]
fn an_event_larger_than_the_cap_is_a_limit_error() {
    let limits = SseLimits::default().with_max_event_bytes(10);
    let (events, result) = parse(b"data: 12345\ndata: 1234\n\n", limits);
    assert_eq!(events[0].data, "12345\n1234");
    result.unwrap();
    let (_, result) = parse(b"data: 12345\ndata: 12345\n\n", limits);
    let err = result.unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::LimitExceeded);
    assert!(err.message.contains("max_event_bytes"), "{err}");
    assert!(!err.is_retryable());
}

#[test]
fn invalid_utf8_is_a_protocol_error_after_the_good_events() {
    let chunks = vec![
        Ok(Bytes::from_static(b"data: ok\n\ndata: caf")),
        Ok(Bytes::from_static(b"\xC3\x28\n\n")),
    ];
    let mut stream = SseStream::from_byte_stream(stream::iter(chunks));
    assert_eq!(block_on(stream.next_event()).unwrap().unwrap().data, "ok");
    let err = block_on(stream.next_event()).unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Protocol);
    assert_eq!(block_on(stream.next_event()), Ok(None));
}

#[test]
fn a_large_line_does_not_keep_its_buffer() {
    let mut parser = SseParser::new(SseLimits::default());
    let mut events = Vec::new();
    let big = vec![b'x'; 1 << 20];
    parser.feed(b"data: ", &mut events).unwrap();
    parser.feed(&big, &mut events).unwrap();
    parser.feed(b"\n\n", &mut events).unwrap();
    assert_eq!(events[0].data.len(), 1 << 20);
    assert_eq!(parser.line.capacity(), 0);
}

/// Events as [`SseParser::feed`] gives them, with a fast path that takes
/// data in the layout `{"t":STRING}` or a bare integer ahead of its line
/// end; counts what it took.
#[derive(Default)]
struct Ahead {
    events: Vec<SseEvent>,
    taken: usize,
}

impl SseSink for Ahead {
    fn on_event(&mut self, event: SseEventRef<'_>) -> ControlFlow<()> {
        self.events.push(event.to_event());
        ControlFlow::Continue(())
    }

    fn on_data_ahead(&mut self, ahead: DataAhead<'_>) -> Option<(DataEnd, ControlFlow<()>)> {
        let mut layout = ahead.layout();
        if layout.optional(r#"{"t":"#) {
            layout.str()?;
            layout.fixed("}")?;
        } else {
            layout.u64()?;
        }
        let end = ahead.end(&layout)?;
        self.events.push(SseEvent {
            event: ahead.event().to_owned(),
            data: ahead.rest()[..end.data_len()].to_owned(),
            id: ahead.id().to_owned(),
        });
        self.taken += 1;
        Some((end, ControlFlow::Continue(())))
    }
}

/// `body` in reads of `piece` bytes through the fast path: its events, its
/// error and how many events were taken ahead.
fn ahead_in_pieces(
    body: &[u8],
    piece: usize,
    limits: SseLimits,
) -> (Vec<SseEvent>, Result<(), ProviderError>, usize) {
    let mut parser = SseParser::new(limits);
    let mut sink = Ahead::default();
    let result = body
        .chunks(piece)
        .try_for_each(|chunk| parser.feed_into(chunk, &mut sink).map(drop))
        .and_then(|()| parser.finish(&mut sink.events));
    (sink.events, result, sink.taken)
}

#[test]
fn data_taken_ahead_is_what_the_general_path_dispatches_however_cut() {
    let long = format!("event: {}\ndata: 8\n\n", "n".repeat(70));
    let names = format!(
        "event: ab\ndata: 1\n\nevent: ab\ndata: 2\n\nevent: abc\ndata: 3\n\nevent: ab\r\ndata: 4\n\nevent: ab\ndata: 5\n\nevent:ab\ndata: 6\n\n{long}{long}event: ab\ndata: 9\n\n"
    );
    let bodies: [(&str, usize); 13] = [
        // Names repeated (the last `event:` line is compared, not
        // searched), changed, longer, CRLF-ended, without the space, long.
        (&names, 9),
        // Taken ahead: LF, CRLF and CR-only ends, named or not, with an id.
        ("event: a\ndata: {\"t\":\"x\"}\n\ndata: 42\n\n", 2),
        ("event: a\r\ndata: {\"t\":\"x y\"}\r\n\r\ndata:7\r\n\r\n", 2),
        (
            "data: {\"t\":\"\\u00e9\"}\r\rid: 9\ndata: {\"t\":\"z\"}\n\r\n",
            2,
        ),
        // A second data line, a field or text after the match, no blank line.
        ("data: {\"t\":\"x\"}\ndata: 1\n\n", 0),
        ("data: {\"t\":\"x\"}\nid: 3\n\ndata: 5 \n\n", 0),
        ("data: 12}\n\ndata: {\"t\":\"x\"}x\n\n", 0),
        // A line end inside the layout's window, where whitespace would be
        // skipped (the second line is a field named `"x"}`), or in a string.
        ("data: {\"t\":\n\"x\"}\n\n", 0),
        ("data: {\"t\":\r\n\"x\"}\n\n", 0),
        ("data: {\"t\":\"a\nb\"}\n\n", 0),
        // Comments, a byte-order mark, spaces: the general path.
        ("\u{FEFF}data: 1\n\n: c\ndata: 2\n\ndata:  3\n\n", 1),
        // An event whose blank line is the last byte: CR, then LF next read.
        ("data: 1\r\r", 1),
        ("data: 1\n\ndata: 2\r\n\r", 2),
    ];
    for (body, expected_taken) in bodies {
        // The first line of a stream goes the general way (a byte-order
        // mark may start it): a comment first, unless the body has a mark.
        let body = &if body.starts_with('\u{FEFF}') {
            body.to_owned()
        } else {
            format!(":\n{body}")
        };
        let (general, result) = parse(body.as_bytes(), SseLimits::default());
        result.unwrap();
        let (whole, whole_result, taken) =
            ahead_in_pieces(body.as_bytes(), body.len(), SseLimits::default());
        whole_result.unwrap();
        assert_eq!(whole, general, "{body:?}");
        assert_eq!(taken, expected_taken, "{body:?}");
        for piece in 1..body.len() {
            let (split, split_result, _) =
                ahead_in_pieces(body.as_bytes(), piece, SseLimits::default());
            split_result.unwrap();
            assert_eq!(split, general, "pieces of {piece}: {body:?}");
        }
        // Cut in two at every byte.
        for cut in 0..=body.len() {
            let mut parser = SseParser::new(SseLimits::default());
            let mut sink = Ahead::default();
            for part in [&body.as_bytes()[..cut], &body.as_bytes()[cut..]] {
                assert!(parser.feed_into(part, &mut sink).unwrap().is_continue());
            }
            assert_eq!(sink.events, general, "cut at {cut}: {body:?}");
        }
    }
}

#[test]
fn data_taken_ahead_keeps_the_caps() {
    let body = b":\nevent: ev\ndata: {\"t\":\"abcdef\"}\n\n";
    // The data is 14 bytes, its line 20, the event 2 + 14 + 1.
    for limits in [
        SseLimits::default().with_max_line_bytes(19),
        SseLimits::default().with_max_line_bytes(20),
        SseLimits::default().with_max_event_bytes(16),
        SseLimits::default().with_max_event_bytes(17),
    ] {
        let (general, result) = parse(body, limits);
        let (ahead, ahead_result, taken) = ahead_in_pieces(body, body.len(), limits);
        assert_eq!(ahead, general, "{limits:?}");
        assert_eq!(
            ahead_result.map_err(|e| e.kind),
            result.map_err(|e| e.kind),
            "{limits:?}"
        );
        assert_eq!(taken, usize::from(general.len() == 1), "{limits:?}");
    }
}
