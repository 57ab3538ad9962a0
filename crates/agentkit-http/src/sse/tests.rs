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
