//! The writer half of the codec: JSON text appended to a byte buffer,
//! byte for byte what serde_json writes, for the request encoders.

use super::find_special;

/// Appends `text` to `out` as a JSON string, escaped byte for byte as
/// serde_json escapes it (`\"`, `\\`, the short escapes of `\b`, `\f`, `\n`,
/// `\r`, `\t`, `\u00xx` for the other control characters, nothing else):
/// a request body built with it is the body serde_json would build. The
/// runs between escapes are copied whole, found eight bytes at a time,
/// where serde_json looks at every byte.
///
/// ```
/// let mut out = Vec::new();
/// agentkit_http::codec::write_str(&mut out, "caf\u{e9} \"ok\"\n\u{1}");
/// let text = String::from_utf8(out.clone()).unwrap();
/// assert_eq!(text, serde_json::to_string("caf\u{e9} \"ok\"\n\u{1}").unwrap());
/// ```
#[inline]
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    write_escaped(out, text.as_bytes());
}

/// Appends `value`'s compact JSON text to `out` as a JSON string: what
/// `write_str(out, &value.to_string())` writes (the APIs' tool-call
/// `arguments` are sent this way).
pub fn write_json_str(out: &mut Vec<u8>, value: &serde_json::Value) {
    let mut text = Vec::with_capacity(128);
    write_value(&mut text, value);
    write_escaped(out, &text);
}

/// Appends `value` to `out` as compact JSON, byte for byte what
/// `serde_json::to_writer` writes (members in the map's own order), with
/// its strings escaped by [`write_str`].
pub fn write_value(out: &mut Vec<u8>, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Numbers as serde_json formats them; writing to memory cannot fail.
        Value::Number(number) => serde_json::to_writer(&mut *out, number).unwrap_or_default(),
        Value::String(text) => write_str(out, text),
        Value::Array(values) => {
            out.push(b'[');
            for (n, value) in values.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_value(out, value);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (n, (key, value)) in members.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, value);
            }
            out.push(b'}');
        }
    }
}

/// `bytes` as a JSON string: the runs between special bytes, found eight
/// bytes at a time, copied whole.
fn write_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    while let Some(at) = find_special(bytes, start) {
        out.extend_from_slice(&bytes[start..at]);
        write_escape(out, bytes[at]);
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A quote, backslash or control character, escaped as serde_json does.
#[inline]
fn write_escape(out: &mut Vec<u8>, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x0C => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        _ => 0,
    };
    if short != 0 {
        out.extend_from_slice(&[b'\\', short]);
    } else {
        out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(byte >> 4)],
            HEX[usize::from(byte & 0xF)],
        ]);
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
            }
        }
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 300] {
            let mut out = Vec::new();
            write_str(&mut out, &dense[..len]);
            assert_eq!(out, serde_json::to_vec(&dense[..len]).unwrap(), "{len}");
        }
        let value = serde_json::json!({
            "path": "src/\"x\".rs\n",
            "n": [1, null, -2.5, 1e300, 0.1, u64::MAX, i64::MIN, true, false, {}, []],
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
