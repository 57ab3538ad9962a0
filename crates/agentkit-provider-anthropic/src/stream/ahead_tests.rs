//! The decoder's fast path (a text delta read ahead of its line end) held
//! to the general path: the same events and errors for the same bytes,
//! however they are cut, and taken only where the event really ends after
//! the match.

use super::*;
use agentkit_http::{SseLimits, SseParser, SseSink};
use std::ops::ControlFlow;

/// The decoder behind the parser, with or without its fast path; counts
/// the events the fast path took.
struct Sink {
    decoder: EventDecoder,
    out: Outputs<ModelTurnEvent>,
    ahead: bool,
    taken: usize,
    error: Option<String>,
}

impl SseSink for Sink {
    fn on_event(&mut self, event: SseEventRef<'_>) -> ControlFlow<()> {
        match self.decoder.on_event(event, &mut self.out) {
            Ok(()) => ControlFlow::Continue(()),
            Err(error) => {
                self.error = Some(error.message);
                ControlFlow::Break(())
            }
        }
    }

    fn on_data_ahead(&mut self, ahead: DataAhead<'_>) -> Option<(DataEnd, ControlFlow<()>)> {
        if !self.ahead {
            return None;
        }
        let end = self.decoder.on_data_ahead(ahead, &mut self.out)?;
        self.taken += 1;
        Some((end, ControlFlow::Continue(())))
    }
}

/// The events and error of `pieces` read in turn, and how many events the
/// fast path took.
fn decode(pieces: &[&[u8]], ahead: bool) -> (Vec<ModelTurnEvent>, Option<String>, usize) {
    decode_within(pieces, ahead, SseLimits::default())
}

/// [`decode`] within `limits`.
fn decode_within(
    pieces: &[&[u8]],
    ahead: bool,
    limits: SseLimits,
) -> (Vec<ModelTurnEvent>, Option<String>, usize) {
    let mut parser = SseParser::new(limits);
    let mut sink = Sink {
        decoder: EventDecoder::default(),
        out: Outputs::new(),
        ahead,
        taken: 0,
        error: None,
    };
    for piece in pieces {
        match parser.feed_into(piece, &mut sink) {
            Ok(ControlFlow::Continue(())) => {}
            Ok(ControlFlow::Break(())) => break,
            Err(error) => {
                sink.error = Some(error.message);
                break;
            }
        }
    }
    (sink.out.into(), sink.error, sink.taken)
}

const START: &str =
    r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
const THINKING: &str = r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}"#;

fn delta(text: &str) -> String {
    format!(
        r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{text}"}}}}"#
    )
}

/// A body of the blocks' starts and `deltas` (already framed, each with
/// its `data:` line and what ends the event), with `event:` lines or
/// without (as the recorded cassette has them).
fn body(deltas: &[String], named: bool) -> String {
    let mut body = String::new();
    for (name, data) in [
        ("content_block_start", START),
        ("content_block_start", THINKING),
    ] {
        if named {
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    for framed in deltas {
        if named {
            body.push_str("event: content_block_delta\n");
        }
        body.push_str(framed);
    }
    body
}

/// Asserts the fast path agrees with the general path on `body` read whole,
/// cut in two anywhere and read a byte at a time; gives how many events
/// the fast path took from the whole read.
fn agrees(body: &str) -> usize {
    let bytes = body.as_bytes();
    let general = decode(&[bytes], false);
    assert_eq!(general.2, 0);
    let whole = decode(&[bytes], true);
    assert_eq!((&whole.0, &whole.1), (&general.0, &general.1), "{body:?}");
    for cut in 0..=bytes.len() {
        let split = decode(&[&bytes[..cut], &bytes[cut..]], true);
        assert_eq!(
            (&split.0, &split.1),
            (&general.0, &general.1),
            "cut at {cut}: {body:?}"
        );
    }
    let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
    let bytewise = decode(&bytewise, true);
    assert_eq!(
        (&bytewise.0, &bytewise.1),
        (&general.0, &general.1),
        "bytewise: {body:?}"
    );
    whole.2
}

#[test]
fn usual_deltas_are_taken_ahead_with_any_line_ends() {
    let texts = ["Hi", r#"a \"b\"\n"#, r#"caf\u00e9 🦀"#, ""];
    for named in [true, false] {
        for end in ["\n", "\r\n", "\r"] {
            let deltas: Vec<String> = texts
                .iter()
                .map(|text| format!("data: {}{end}{end}", delta(text)))
                .collect();
            let body = body(&deltas, named).replace("\n\n", &format!("{end}{end}"));
            let thinking = format!(
                "data: {}{end}{end}",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}"#
            );
            let body = format!("{body}{thinking}");
            // Every delta (the thinking one too) is taken ahead, and gives
            // what the general path gives.
            assert_eq!(agrees(&body), texts.len() + 1, "{end:?}");
        }
    }
}

#[test]
fn what_the_layout_does_not_prove_goes_the_general_way() {
    let usual = delta("x");
    let cases = [
        // A second data line: the event goes on after the match.
        format!("data: {usual}\ndata:  \n\n"),
        format!("data: {usual}\ndata: more\n\n"),
        // Something after the match on its line.
        format!("data: {usual} \n\n"),
        format!("data: {usual}}}\n\n"),
        // A line end inside the layout's window, where a general layout
        // would skip whitespace.
        format!(
            "data: {}\n\n",
            r#"{"type":"content_block_delta","index":
0,"delta":{"type":"text_delta","text":"x"}}"#
        ),
        format!(
            "data: {}\n\n",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":
"x"}}"#
        ),
        // A line end inside the text.
        format!("data: {}\n\n", delta("a\nb")),
        // No blank line after it: the next line is a field.
        format!("data: {usual}\nid: 1\n\n"),
        // An id between the name and the data.
        format!("id: 4\ndata: {usual}x\n\n"),
        // A block that never started, and one that is not text.
        format!(
            "data: {}\n\n",
            r#"{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"x"}}"#
        ),
    ];
    for case in &cases {
        let body = body(std::slice::from_ref(case), false);
        assert_eq!(agrees(&body), 0, "{case:?}");
        let named = body.replace(
            "data: {\"type\":\"content_block_delta\"",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\"",
        );
        agrees(&named);
    }
    // An error event is reported, whatever its data looks like.
    let error = format!("{}event: error\ndata: {usual}\n\n", body(&[], true));
    assert_eq!(agrees(&error), 0);
    assert!(decode(&[error.as_bytes()], true).1.is_some());
}

#[test]
fn the_caps_are_the_general_paths() {
    let usual = delta("some text");
    assert!(
        usual.len() > START.len() + 6,
        "only the deltas meet the caps"
    );
    let body = format!("data: {START}\n\ndata: {usual}\n\ndata: {usual}\r\n\r\n");
    let run = |limits, ahead| decode_within(&[body.as_bytes()], ahead, limits);
    // Just past, at and just within each cap (the line holds `data: `).
    for room in [usual.len() - 1, usual.len(), usual.len() + 1] {
        for limits in [
            SseLimits::default().with_max_line_bytes(room + 6),
            SseLimits::default().with_max_event_bytes(room + 1),
        ] {
            let (fast, general) = (run(limits, true), run(limits, false));
            assert_eq!((&fast.0, &fast.1), (&general.0, &general.1), "{limits:?}");
            // Within the caps both deltas are taken ahead; past them none.
            let within = room >= usual.len();
            assert_eq!(fast.2, if within { 2 } else { 0 }, "{limits:?}");
            assert_eq!(general.1.is_none(), within, "{limits:?}");
        }
    }
}
