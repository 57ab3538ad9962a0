//! `json`: agentkit-http's `JsonReader`, against serde_json.
//!
//! The stream decoders read the events they know with `JsonReader` and ask
//! serde_json whenever it gives up, so it may give up on anything but must
//! never accept what serde_json refuses, nor read a value differently.
//! Properties: a document it skips whole serde_json accepts; a string it
//! reads is the string serde_json decodes; an integer it reads is the
//! `u64` serde_json reads; a plain string it reads is consumed whole by
//! `consume_quoted`, which consumes nothing else that serde_json does not
//! read as that string; any text `write_str` writes, and any document
//! `write_value` writes, as serde_json writes them, byte for byte (the
//! request encoders build bodies with them).

use crate::{Outcome, Target, seeds_or_tokens};
use agentkit_http::codec::{JsonReader, write_str, write_value};
use proptest::strategy::BoxedStrategy;
use serde::de::IgnoredAny;
use std::borrow::Cow;

/// The target.
pub const TARGET: Target = Target {
    name: "json",
    about: "JsonReader: accepts only what serde_json accepts, reads strings and integers as it does; write_str writes strings as it does",
    check,
    generate,
};

const SEEDS: &[&[u8]] = &[
    br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" caf\u00e9 \"x\"\n"}}"#,
    br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763780000,"choices":[{"index":0,"delta":{"content":"\ud83e\udd80 ok"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"aB3"}"#,
    br#"{"type":"response.output_text.delta","sequence_number":12,"delta":"a\\b\/c\t","logprobs":[],"n":[-0.5e-3,1E+2,true,false,{}]}"#,
    br#""a string with \u0041 escapes \\ and a long tail of plain text""#,
    b"18446744073709551615",
    b" [ 1 , [ [ ] ] , { \"k\" : null } ] ",
];

/// Pieces JSON is made of; random sequences reach the corners (escapes,
/// surrogates, number forms, control characters) far more often than
/// random bytes do.
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"\\",
    b"\\u",
    b"d83e",
    b"dc00",
    b"00e9",
    b"\\\"",
    b"\\n",
    b"0",
    b"1",
    b"9",
    b"-",
    b"+",
    b".",
    b"e",
    b"E",
    b"true",
    b"null",
    b" ",
    b"\n",
    b"a",
    b"\xC3\xA9",
    b"\x01",
    b"\x7F",
];

fn generate() -> BoxedStrategy<Vec<u8>> {
    seeds_or_tokens(SEEDS, TOKENS, 40)
}

fn check(input: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(input) else {
        // The decoders only ever see text.
        return Ok(());
    };
    let mut written = Vec::new();
    write_str(&mut written, text);
    let expected = serde_json::to_vec(text).map_err(|err| err.to_string())?;
    if written != expected {
        return Err(format!(
            "wrote {text:?} as {:?}; serde_json: {:?}",
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&expected)
        ));
    }
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        let mut written = Vec::new();
        write_value(&mut written, &value);
        let expected = serde_json::to_vec(&value).map_err(|err| err.to_string())?;
        if written != expected {
            return Err(format!(
                "wrote {value} as {:?}",
                String::from_utf8_lossy(&written)
            ));
        }
    }
    let mut reader = JsonReader::new(text);
    if reader.skip().is_some()
        && reader.end().is_some()
        && let Err(err) = serde_json::from_str::<IgnoredAny>(text)
    {
        return Err(format!("skipped {text:?}, which serde_json refuses: {err}"));
    }
    let mut reader = JsonReader::new(text);
    if let Some(read) = reader.str()
        && reader.end().is_some()
    {
        match serde_json::from_str::<String>(text) {
            Ok(expected) if expected == read => {}
            other => {
                return Err(format!(
                    "read {read:?} from {text:?}; serde_json: {other:?}"
                ));
            }
        }
    }
    // `consume_quoted` against a string read before (the decoders compare
    // a stream's repeated id so), and against a fixed one.
    let mut reader = JsonReader::new(text);
    // A string written without escapes (read borrowed) and plain, with no
    // whitespace before it (`consume_quoted` skips none).
    if text.starts_with('"')
        && let Some(Cow::Borrowed(read)) = reader.str()
        && JsonReader::is_plain(read)
    {
        let mut quoted = JsonReader::new(text);
        if !quoted.consume_quoted(read) || quoted.end().is_some() != reader.end().is_some() {
            return Err(format!(
                "consume_quoted({read:?}) disagrees with str() on {text:?}"
            ));
        }
    }
    for known in ["a", "", "chatcmpl-1"] {
        let mut quoted = JsonReader::new(text);
        if quoted.consume_quoted(known)
            && quoted.end().is_some()
            && serde_json::from_str::<String>(text).ok().as_deref() != Some(known)
        {
            return Err(format!("consume_quoted({known:?}) took {text:?}"));
        }
    }
    let mut reader = JsonReader::new(text);
    if let Some(read) = reader.u64()
        && reader.end().is_some()
    {
        match serde_json::from_str::<u64>(text) {
            Ok(expected) if expected == read => {}
            other => return Err(format!("read {read} from {text:?}; serde_json: {other:?}")),
        }
    }
    Ok(())
}
