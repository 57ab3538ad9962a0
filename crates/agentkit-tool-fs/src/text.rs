//! Telling text from binary, and cutting long lines.
//!
//! A model cannot use the bytes of an image or an object file, and dumping
//! them would waste its context, so the tools refuse binary files up front.
//! "Binary" means what `git` and `grep` take it to mean: a NUL byte near the
//! start, or bytes that are not UTF-8.

/// How much of the start of a file is scanned for NUL bytes.
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// `true` when `head` (the first bytes of a file) holds a NUL byte.
pub(crate) fn has_nul(head: &[u8]) -> bool {
    head[..head.len().min(SNIFF_BYTES)].contains(&0)
}

/// Cuts `line` to at most `max_bytes` bytes on a character boundary, with a
/// marker saying how much is missing.
pub(crate) fn cut_line(line: &str, max_bytes: usize) -> String {
    if line.len() <= max_bytes {
        return line.to_owned();
    }
    let mut end = max_bytes;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… [line cut: {} more bytes]",
        &line[..end],
        line.len() - end
    )
}

/// A line without its line ending (`\n` or `\r\n`).
pub(crate) fn strip_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        assert_eq!(cut_line("short", 10), "short");
        // "é" is two bytes; cutting after 2 would split it.
        assert_eq!(cut_line("aéb", 2), "a… [line cut: 3 more bytes]");
    }

    #[test]
    fn nul_bytes_mark_binary_and_endings_are_stripped() {
        assert!(has_nul(b"PK\x03\x04\x00"));
        assert!(!has_nul("plain text, ünïcode".as_bytes()));
        assert_eq!(strip_newline(b"a\r\n"), b"a");
        assert_eq!(strip_newline(b"a\n"), b"a");
        assert_eq!(strip_newline(b"a"), b"a");
    }
}
