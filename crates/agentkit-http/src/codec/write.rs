//! The writer half of the codec: JSON text appended to a byte buffer,
//! byte for byte what serde_json writes, for the request encoders.
//!
//! A body is mostly short strings (ids, names, keys) and prose or code
//! with a quote or newline every few dozen bytes, so the cost is per string
//! and per escape, not in the scan. The escaper therefore reads eight bytes
//! at a time and copies each word whole into the output before looking at
//! it: a word without a special byte costs one store, a word with one is
//! cut back to the byte before it (a length change, no copy), and no run
//! is ever handed to `memcpy`. The last bytes of a string are read as one
//! word too (overlapping the previous one), never one by one.

use super::{HIGHS, specials};

/// What each byte becomes inside a JSON string, as serde_json writes it:
/// `0` for itself, otherwise the letter after the backslash (`u` for the
/// `\u00xx` form).
const ESCAPE: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x0C] = b'f';
    table[b'\n' as usize] = b'n';
    table[b'\r' as usize] = b'r';
    table[b'\t' as usize] = b't';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `text` to `out` as a JSON string, escaped byte for byte as
/// serde_json escapes it (`\"`, `\\`, the short escapes of `\b`, `\f`, `\n`,
/// `\r`, `\t`, `\u00xx` for the other control characters, nothing else):
/// a request body built with it is the body serde_json would build.
///
/// ```
/// let mut out = Vec::new();
/// agentkit_http::codec::write_str(&mut out, "caf\u{e9} \"ok\"\n\u{1}");
/// let text = String::from_utf8(out.clone()).unwrap();
/// assert_eq!(text, serde_json::to_string("caf\u{e9} \"ok\"\n\u{1}").unwrap());
/// ```
#[inline]
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 10);
    out.push(b'"');
    escape_into::<false>(out, text.as_bytes());
    out.push(b'"');
}

/// Appends `value`'s compact JSON text to `out` as a JSON string: what
/// `write_str(out, &value.to_string())` writes (the APIs' tool-call
/// `arguments` are sent this way). The text is written escaped as it is
/// made, without building it first.
pub fn write_json_str(out: &mut Vec<u8>, value: &serde_json::Value) {
    out.push(b'"');
    write_any::<true>(out, value);
    out.push(b'"');
}

/// Appends `value` to `out` as compact JSON, byte for byte what
/// `serde_json::to_writer` writes (members in the map's own order), with
/// its strings escaped by [`write_str`].
pub fn write_value(out: &mut Vec<u8>, value: &serde_json::Value) {
    write_any::<false>(out, value);
}

/// `value` as compact JSON; with `IN_STR`, that text escaped again for
/// the inside of a JSON string (its quotes become `\"`, its escapes'
/// backslashes `\\`).
fn write_any<const IN_STR: bool>(out: &mut Vec<u8>, value: &serde_json::Value) {
    use serde_json::Value;
    let quote: &[u8] = if IN_STR { b"\\\"" } else { b"\"" };
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Digits and signs need no escaping in either form.
        Value::Number(number) => write_number(out, number),
        Value::String(text) => {
            out.reserve(text.len() + 12);
            out.extend_from_slice(quote);
            escape_into::<IN_STR>(out, text.as_bytes());
            out.extend_from_slice(quote);
        }
        Value::Array(values) => {
            out.push(b'[');
            for (n, value) in values.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_any::<IN_STR>(out, value);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (n, (key, value)) in members.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                out.reserve(key.len() + 12);
                out.extend_from_slice(quote);
                escape_into::<IN_STR>(out, key.as_bytes());
                out.extend_from_slice(quote);
                out.push(b':');
                write_any::<IN_STR>(out, value);
            }
            out.push(b'}');
        }
    }
}

/// A number as serde_json formats it: integers digit by digit, floats
/// through serde_json itself (shortest round-trip form).
fn write_number(out: &mut Vec<u8>, number: &serde_json::Number) {
    if let Some(n) = number.as_u64() {
        write_u64(out, n);
    } else if let Some(n) = number.as_i64() {
        out.push(b'-');
        write_u64(out, n.unsigned_abs());
    } else {
        // Writing to memory cannot fail.
        serde_json::to_writer(&mut *out, number).unwrap_or_default();
    }
}

fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The inside of a JSON string holding `bytes` (escaped twice with
/// `TWICE`: the inside of a string holding that string), appended to `out`.
#[inline(always)]
fn escape_into<const TWICE: bool>(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = bytes.len();
    let mut pos = 0;
    // Whole words.
    while let Some(chunk) = bytes.get(pos..pos + 8) {
        let mut eight = [0; 8];
        eight.copy_from_slice(chunk);
        let found = specials(u64::from_le_bytes(eight));
        let at = out.len();
        out.extend_from_slice(&eight);
        if found == 0 {
            pos += 8;
        } else {
            let first = (found.trailing_zeros() / 8) as usize;
            out.truncate(at + first);
            write_escape::<TWICE>(out, bytes[pos + first]);
            pos += first + 1;
        }
    }
    // The last one to seven bytes, as one word, escape after escape.
    while pos < len {
        let rest = len - pos;
        let word = tail_word(bytes, pos);
        // Bytes past the end of the string read as zero: not looked at.
        let found = specials(word) & (HIGHS >> ((8 - rest) * 8));
        let at = out.len();
        out.extend_from_slice(&word.to_le_bytes());
        if found == 0 {
            out.truncate(at + rest);
            return;
        }
        let first = (found.trailing_zeros() / 8) as usize;
        out.truncate(at + first);
        write_escape::<TWICE>(out, bytes[pos + first]);
        pos += first + 1;
    }
}

/// `bytes[pos..]`, fewer than eight bytes, as the low bytes of a word
/// (the rest zero), read with at most two loads.
#[inline(always)]
fn tail_word(bytes: &[u8], pos: usize) -> u64 {
    let len = bytes.len();
    let rest = len - pos;
    if len >= 8 {
        // The string's last eight bytes, the ones already read shifted out.
        let mut eight = [0; 8];
        eight.copy_from_slice(&bytes[len - 8..]);
        return u64::from_le_bytes(eight) >> ((8 - rest) * 8);
    }
    let tail = &bytes[pos..];
    if rest >= 4 {
        let mut four = [0; 4];
        four.copy_from_slice(&tail[..4]);
        let low = u64::from(u32::from_le_bytes(four));
        four.copy_from_slice(&tail[rest - 4..]);
        // The two reads overlap on equal bytes: or-ing them is exact.
        low | u64::from(u32::from_le_bytes(four)) << ((rest - 4) * 8)
    } else if rest >= 2 {
        let low = u64::from(u16::from_le_bytes([tail[0], tail[1]]));
        low | u64::from(u16::from_le_bytes([tail[rest - 2], tail[rest - 1]])) << ((rest - 2) * 8)
    } else {
        u64::from(tail[0])
    }
}

/// A quote, backslash or control character, escaped as serde_json does;
/// with `TWICE`, that escape escaped again.
#[inline(always)]
fn write_escape<const TWICE: bool>(out: &mut Vec<u8>, byte: u8) {
    let letter = ESCAPE[usize::from(byte)];
    if letter == b'u' {
        // The hex digits need no second escape, the backslash does.
        out.extend_from_slice(if TWICE { b"\\\\u00" } else { b"\\u00" });
        out.extend_from_slice(&[HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xF)]]);
    } else if !TWICE {
        out.extend_from_slice(&[b'\\', letter]);
    } else if letter == b'"' || letter == b'\\' {
        out.extend_from_slice(&[b'\\', b'\\', b'\\', letter]);
    } else {
        out.extend_from_slice(&[b'\\', b'\\', letter]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let mut every_byte = String::new();
        for code in 0u32..0x80 {
            every_byte.push(char::from_u32(code).unwrap());
        }
        for text in [
            "",
            "plain",
            "a \"quoted\" word \\ and a long tail after it",
            "\u{0}\u{1f}\u{7f}\u{8}\u{c}\n\r\t caf\u{e9} \u{1f980} \u{2014}",
            every_byte.as_str(),
        ] {
            let mut out = Vec::new();
            write_str(&mut out, text);
            assert_eq!(out, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
        // Every length and escape position around the word boundaries, and
        // strings that grow sixfold.
        let mixed = "ab\"cdefgh\\ijklmn\u{1}opq\nrstu caf\u{e9} \u{1f980} \"\"\"\"\"\"\"\"\"xyz";
        let dense = "\u{1}".repeat(300);
        let mut out = b"[".to_vec();
        for end in (0..=mixed.len()).filter(|&end| mixed.is_char_boundary(end)) {
            for start in (0..=end).filter(|&start| mixed.is_char_boundary(start)) {
                let text = &mixed[start..end];
                out.truncate(1);
                write_str(&mut out, text);
                assert_eq!(out[1..], serde_json::to_vec(text).unwrap(), "{text:?}");
                // The same text as a key and a value inside a tool call's
                // arguments: escaped twice, as it is made.
                let value = serde_json::json!({ text: [text, 0, -7] });
                out.truncate(1);
                write_json_str(&mut out, &value);
                let twice = serde_json::to_vec(&value.to_string()).unwrap();
                assert_eq!(out[1..], twice, "{text:?}");
            }
        }
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 300] {
            let mut out = Vec::new();
            write_str(&mut out, &dense[..len]);
            assert_eq!(out, serde_json::to_vec(&dense[..len]).unwrap(), "{len}");
            let value = serde_json::Value::from(&every_byte[..len.min(every_byte.len())]);
            let mut out = Vec::new();
            write_json_str(&mut out, &value);
            assert_eq!(
                out,
                serde_json::to_vec(&value.to_string()).unwrap(),
                "{len}"
            );
        }
        let value = serde_json::json!({
            "path": "src/\"x\".rs\n",
            "n": [1, null, -2.5, 1e300, 0.1, u64::MAX, i64::MIN, 0, -1, 10, 1000000007, true, false, {}, []],
            "z": { "b": "caf\u{e9}", "a": "" },
        });
        let mut out = Vec::new();
        write_json_str(&mut out, &value);
        assert_eq!(out, serde_json::to_vec(&value.to_string()).unwrap());
        let mut out = Vec::new();
        write_value(&mut out, &value);
        assert_eq!(out, serde_json::to_vec(&value).unwrap());
    }
}
