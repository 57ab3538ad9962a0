//! Keeping a bounded amount of a stream's output.
//!
//! A command can print gigabytes; the model needs a few kilobytes, and the
//! useful ones are usually at the start (what ran) and at the end (the error,
//! the summary). So a stream keeps its first half-budget and a rolling last
//! half-budget, and everything in between is counted and dropped. The pipe
//! is read to the end all the same, so a chatty child never blocks on a full
//! pipe. Cuts move to UTF-8 character boundaries, so the kept text never
//! starts or ends inside a character.

use std::collections::VecDeque;

/// The kept part of one output stream.
#[derive(Debug)]
pub(crate) struct CappedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: usize,
}

impl CappedOutput {
    /// An empty capture keeping at most `cap` bytes (at least 2).
    pub(crate) fn new(cap: usize) -> Self {
        let cap = cap.max(2);
        let head_cap = cap.div_ceil(2);
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    /// Takes in the next chunk of the stream.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len();
        let into_head = (self.head_cap - self.head.len()).min(chunk.len());
        self.head.extend_from_slice(&chunk[..into_head]);
        let rest = &chunk[into_head..];
        // Only the last `tail_cap` bytes of the rest can survive.
        let rest = &rest[rest.len().saturating_sub(self.tail_cap)..];
        self.tail.extend(rest);
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        self.tail.drain(..excess);
    }

    /// How many bytes the stream produced in all.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// The kept text. Bytes that are not UTF-8 become U+FFFD.
    pub(crate) fn render(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if self.total == self.head.len() + tail.len() {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = &self.head[..char_floor(&self.head)];
        let tail = &tail[char_ceil(&tail)..];
        let omitted = self.total - head.len() - tail.len();
        let mut text = String::from_utf8_lossy(head).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[... {omitted} bytes omitted ...]\n"));
        text.push_str(&String::from_utf8_lossy(tail));
        text
    }
}

/// The length of `bytes` without a character cut off at its end.
fn char_floor(bytes: &[u8]) -> usize {
    // A character is at most 4 bytes: its lead byte is among the last 4.
    for back in 1..=bytes.len().min(4) {
        let index = bytes.len() - back;
        let byte = bytes[index];
        if is_continuation(byte) {
            continue;
        }
        let width = match byte {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            _ => 4,
        };
        return if index + width > bytes.len() {
            index
        } else {
            bytes.len()
        };
    }
    bytes.len()
}

/// Where the first whole character of `bytes` starts.
fn char_ceil(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(4)
        .position(|&b| !is_continuation(b))
        .unwrap_or(0)
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xc0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut out = CappedOutput::new(16);
        out.push(b"hello ");
        out.push(b"world");
        assert_eq!(out.render(), "hello world");
        assert_eq!(out.total(), 11);
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let mut out = CappedOutput::new(8);
        for chunk in [b"aaaa".as_slice(), b"bbbbbbbb", b"cccc"] {
            out.push(chunk);
        }
        assert_eq!(out.render(), "aaaa\n[... 8 bytes omitted ...]\ncccc");
        assert_eq!(out.total(), 16);
    }

    #[test]
    fn cuts_never_split_a_character() {
        // "é" is two bytes; a 5-byte budget keeps 3 + 2 bytes, which would
        // split the head's second "é" and the tail's first.
        let text = "é".repeat(10);
        let mut out = CappedOutput::new(5);
        out.push(text.as_bytes());
        let rendered = out.render();
        assert_eq!(rendered, "é\n[... 16 bytes omitted ...]\né");
        assert!(!rendered.contains('\u{fffd}'));
        // Three-byte characters arriving one byte at a time.
        let mut out = CappedOutput::new(7);
        for byte in "日本語日本語".as_bytes() {
            out.push(&[*byte]);
        }
        assert_eq!(out.render(), "日\n[... 12 bytes omitted ...]\n語");
    }
}
