//! `json`: agentkit-http's JSON codec, against serde_json.
//!
//! The stream decoders read events with `codec::from_str` (the codec's own
//! reader, serde_json deciding whenever that reader is not sure) and with
//! `codec::Layout` (an event in the exact layout a server writes it).
//! Neither may ever read a document differently from serde_json.
//! Properties: `from_str` gives serde_json's value, or an error exactly
//! when serde_json gives one (as a `Value`, a string, a `u64`, and a
//! struct with borrowed strings); a string or integer a `Layout` hole
//! reads is what serde_json reads; a plain string read is matched whole by
//! `same_str`, which matches nothing else that serde_json does not read as
//! that string; any text `write_str` writes, and any document
//! `write_value` and `write_json_str` write, as serde_json writes them
//! (the latter as the document's text in a string), byte for byte (the
//! request encoders build bodies with them).

use crate::{Outcome, Target, seeds_or_tokens};
use agentkit_http::codec::{self, Layout, write_json_str, write_str, write_value};
use proptest::strategy::BoxedStrategy;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

/// The target.
pub const TARGET: Target = Target {
    name: "json",
    about: "codec::from_str and Layout read what serde_json reads, fail where it fails; write_str writes strings as it does",
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
        // A tool call's `arguments`: the document's text as a string,
        // escaped while it is written.
        let mut written = Vec::new();
        write_json_str(&mut written, &value);
        let expected = serde_json::to_vec(&value.to_string()).map_err(|err| err.to_string())?;
        if written != expected {
            return Err(format!(
                "wrote {value} as the string {:?}",
                String::from_utf8_lossy(&written)
            ));
        }
    }
    same_as_serde_json::<Value>(text)?;
    same_as_serde_json::<String>(text)?;
    same_as_serde_json::<u64>(text)?;
    same_as_serde_json::<Event<'_>>(text)?;
    // A layout's string hole, and `same_str` against a string read before
    // (the decoders compare a stream's repeated id so) and fixed ones.
    let mut layout = Layout::new(text);
    if let Some(read) = layout.str()
        && layout.end().is_some()
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
    // The same hole read into a delta's chunk (escapes decoded into its
    // inline room): the same text as `str()`, accepted exactly when it is.
    let (mut chunked, mut read) = (Layout::new(text), Layout::new(text));
    let (chunk, string) = (chunked.text(), read.str());
    if chunk.as_deref() != string.as_deref()
        || (chunk.is_some() && chunked.offset() != read.offset())
    {
        return Err(format!(
            "text() read {chunk:?}, str() read {string:?} from {text:?}"
        ));
    }
    let mut layout = Layout::new(text);
    // A string written without escapes (read borrowed) and plain, with no
    // whitespace before it (`same_str` skips none).
    if text.starts_with('"')
        && let Some(Cow::Borrowed(read)) = layout.str()
        && Layout::is_plain(read)
    {
        let mut quoted = Layout::new(text);
        if !quoted.same_str(read) || quoted.end().is_some() != layout.end().is_some() {
            return Err(format!(
                "same_str({read:?}) disagrees with str() on {text:?}"
            ));
        }
    }
    for known in ["a", "", "chatcmpl-1"] {
        let mut quoted = Layout::new(text);
        if quoted.same_str(known)
            && quoted.end().is_some()
            && serde_json::from_str::<String>(text).ok().as_deref() != Some(known)
        {
            return Err(format!("same_str({known:?}) took {text:?}"));
        }
    }
    let mut layout = Layout::new(text);
    if let Some(read) = layout.u64()
        && layout.end().is_some()
    {
        match serde_json::from_str::<u64>(text) {
            Ok(expected) if expected == read => {}
            other => return Err(format!("read {read} from {text:?}; serde_json: {other:?}")),
        }
    }
    Ok(())
}

/// A stream event's shape: borrowed and owned strings, optional members,
/// a nested struct, a list, an ignored member and a free value.
#[derive(Debug, PartialEq, Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    list: Vec<u32>,
    #[serde(default)]
    flag: bool,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    usage: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Delta {
    text: Option<String>,
}

/// `codec::from_str` gives what serde_json gives: the same value, or an
/// error when it errs.
fn same_as_serde_json<'a, T>(text: &'a str) -> Outcome
where
    T: Deserialize<'a> + PartialEq + std::fmt::Debug,
{
    let ours = codec::from_str::<T>(text);
    let theirs = serde_json::from_str::<T>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        (Err(_), Err(_)) => Ok(()),
        _ => Err(format!(
            "{} from {text:?}: codec {ours:?}, serde_json {theirs:?}",
            std::any::type_name::<T>()
        )),
    }
}
