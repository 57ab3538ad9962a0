//! The AWS event-stream binary framing (`application/vnd.amazon.eventstream`).
//!
//! Each message is: a 12-byte prelude (total length and headers length as
//! big-endian `u32`, then a CRC32 of those 8 bytes), the headers (name
//! length `u8`, name, value type `u8`, value), the payload, and a CRC32 of
//! everything before it. Bytes arrive in pieces of any size;
//! [`FrameDecoder`] buffers until a whole message is there, checks both
//! CRCs and the lengths before trusting them, and refuses a message longer
//! than [`MAX_FRAME`] rather than buffer it. Every defect is a
//! [`FrameError`] variant, never a panic: the bytes come from the network.

/// The longest message accepted (AWS caps event-stream messages at 16 MiB).
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

const PRELUDE: usize = 12;
const MIN_FRAME: usize = PRELUDE + 4;

/// A malformed message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The prelude's CRC32 does not match its lengths.
    #[error("event-stream prelude checksum mismatch")]
    PreludeChecksum,
    /// The message's CRC32 does not match its bytes.
    #[error("event-stream message checksum mismatch")]
    MessageChecksum,
    /// The lengths cannot describe a message (shorter than the prelude and
    /// checksum, or headers longer than the message).
    #[error("event-stream lengths are inconsistent (total {total}, headers {headers})")]
    BadLength {
        /// The total length announced.
        total: u32,
        /// The headers' length announced.
        headers: u32,
    },
    /// The message is longer than [`MAX_FRAME`].
    #[error("event-stream message of {0} bytes exceeds the limit")]
    TooLong(u32),
    /// A header runs past the headers' end, has an unknown value type, or
    /// a name or string that is not UTF-8.
    #[error("malformed event-stream header")]
    BadHeader,
    /// The stream ended inside a message.
    #[error("the event stream ended inside a message ({0} bytes left over)")]
    Truncated(usize),
}

/// A header's value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderValue {
    /// A boolean (types 0 and 1).
    Bool(bool),
    /// An integer of 1, 2, 4 or 8 bytes, or a timestamp in milliseconds.
    Int(i64),
    /// Bytes (type 6) or a UUID (type 9).
    Bytes(Vec<u8>),
    /// A string (type 7).
    String(String),
}

/// One decoded message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The headers, in order.
    pub headers: Vec<(String, HeaderValue)>,
    /// The payload (JSON for Bedrock).
    pub payload: Vec<u8>,
}

impl Frame {
    /// The string value of header `name` (`:event-type`, `:message-type`).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(n, v)| match v {
            HeaderValue::String(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }
}

/// Decodes messages from bytes pushed in pieces.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
}

impl FrameDecoder {
    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next whole message, `None` until one is complete.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        if self.buffer.len() < PRELUDE {
            return Ok(None);
        }
        let total = be32(&self.buffer[0..4]);
        let headers = be32(&self.buffer[4..8]);
        if crc32(&self.buffer[0..8]) != be32(&self.buffer[8..12]) {
            return Err(FrameError::PreludeChecksum);
        }
        if total as usize > MAX_FRAME {
            return Err(FrameError::TooLong(total));
        }
        let (len, headers_len) = (total as usize, headers as usize);
        if len < MIN_FRAME || headers_len > len - MIN_FRAME {
            return Err(FrameError::BadLength { total, headers });
        }
        if self.buffer.len() < len {
            return Ok(None);
        }
        let message: Vec<u8> = self.buffer.drain(..len).collect();
        if crc32(&message[..len - 4]) != be32(&message[len - 4..]) {
            return Err(FrameError::MessageChecksum);
        }
        let headers = parse_headers(&message[PRELUDE..PRELUDE + headers_len])?;
        let payload = message[PRELUDE + headers_len..len - 4].to_vec();
        Ok(Some(Frame { headers, payload }))
    }

    /// Checks that the stream did not end inside a message.
    pub fn finish(&self) -> Result<(), FrameError> {
        match self.buffer.len() {
            0 => Ok(()),
            left => Err(FrameError::Truncated(left)),
        }
    }
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn parse_headers(mut bytes: &[u8]) -> Result<Vec<(String, HeaderValue)>, FrameError> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Result<&'a [u8], FrameError> {
        if bytes.len() < n {
            return Err(FrameError::BadHeader);
        }
        let (head, tail) = bytes.split_at(n);
        *bytes = tail;
        Ok(head)
    }
    fn int(bytes: &mut &[u8], n: usize) -> Result<i64, FrameError> {
        let raw = take(bytes, n)?;
        let mut value: i64 = if raw[0] & 0x80 != 0 { -1 } else { 0 };
        for byte in raw {
            value = (value << 8) | i64::from(*byte);
        }
        Ok(value)
    }
    let mut headers = Vec::new();
    while !bytes.is_empty() {
        let name_len = take(&mut bytes, 1)?[0] as usize;
        let name = std::str::from_utf8(take(&mut bytes, name_len)?)
            .map_err(|_| FrameError::BadHeader)?
            .to_owned();
        let value = match take(&mut bytes, 1)?[0] {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Int(int(&mut bytes, 1)?),
            3 => HeaderValue::Int(int(&mut bytes, 2)?),
            4 => HeaderValue::Int(int(&mut bytes, 4)?),
            5 | 8 => HeaderValue::Int(int(&mut bytes, 8)?),
            kind @ (6 | 7) => {
                let len = u16::from_be_bytes([take(&mut bytes, 1)?[0], take(&mut bytes, 1)?[0]]);
                let raw = take(&mut bytes, len as usize)?;
                if kind == 6 {
                    HeaderValue::Bytes(raw.to_vec())
                } else {
                    let text = std::str::from_utf8(raw).map_err(|_| FrameError::BadHeader)?;
                    HeaderValue::String(text.to_owned())
                }
            }
            9 => HeaderValue::Bytes(take(&mut bytes, 16)?.to_vec()),
            _ => return Err(FrameError::BadHeader),
        };
        headers.push((name, value));
    }
    Ok(headers)
}

/// CRC-32 (IEEE 802.3, reflected, the one event-stream uses), bit by bit:
/// messages are small and few, a table would buy nothing measurable.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A message with string headers and this payload, framed: for tests and
/// local servers speaking ConverseStream.
pub fn encode_frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut encoded_headers = Vec::new();
    for (name, value) in headers {
        encoded_headers.push(name.len() as u8);
        encoded_headers.extend_from_slice(name.as_bytes());
        encoded_headers.push(7);
        encoded_headers.extend_from_slice(&(value.len() as u16).to_be_bytes());
        encoded_headers.extend_from_slice(value.as_bytes());
    }
    let total = (MIN_FRAME + encoded_headers.len() + payload.len()) as u32;
    let mut frame = Vec::with_capacity(total as usize);
    frame.extend_from_slice(&total.to_be_bytes());
    frame.extend_from_slice(&(encoded_headers.len() as u32).to_be_bytes());
    let prelude_crc = crc32(&frame);
    frame.extend_from_slice(&prelude_crc.to_be_bytes());
    frame.extend_from_slice(&encoded_headers);
    frame.extend_from_slice(payload);
    let crc = crc32(&frame);
    frame.extend_from_slice(&crc.to_be_bytes());
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        // The CRC-32/ISO-HDLC check value.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn frames_decode_whatever_the_piece_size() {
        let mut stream = encode_frame(
            &[(":event-type", "messageStart"), (":message-type", "event")],
            br#"{"role":"assistant"}"#,
        );
        stream.extend(encode_frame(
            &[(":event-type", "messageStop")],
            br#"{"stopReason":"end_turn"}"#,
        ));
        for piece in [1, 7, 4096] {
            let mut decoder = FrameDecoder::default();
            let mut frames = Vec::new();
            for chunk in stream.chunks(piece) {
                decoder.push(chunk);
                while let Some(frame) = decoder.next_frame().unwrap() {
                    frames.push(frame);
                }
            }
            decoder.finish().unwrap();
            assert_eq!(frames.len(), 2, "piece {piece}");
            assert_eq!(frames[0].header(":event-type"), Some("messageStart"));
            assert_eq!(frames[0].header(":message-type"), Some("event"));
            assert_eq!(frames[1].payload, br#"{"stopReason":"end_turn"}"#);
        }
    }

    /// One row per way a frame can lie.
    #[test]
    fn malformed_frames_are_typed_errors() {
        let good = encode_frame(&[(":event-type", "x")], b"{}");
        let with = |at: usize, byte: u8| {
            let mut frame = good.clone();
            frame[at] ^= byte;
            frame
        };
        // A prelude announcing a length with its CRC recomputed.
        let relabelled = |total: u32, headers: u32| {
            let mut frame = Vec::new();
            frame.extend_from_slice(&total.to_be_bytes());
            frame.extend_from_slice(&headers.to_be_bytes());
            let crc = crc32(&frame);
            frame.extend_from_slice(&crc.to_be_bytes());
            frame.extend_from_slice(&[0; 32]);
            frame
        };
        let cases: Vec<(Vec<u8>, FrameError)> = vec![
            (with(2, 1), FrameError::PreludeChecksum),
            (with(good.len() - 6, 1), FrameError::MessageChecksum),
            (
                relabelled(8, 0),
                FrameError::BadLength {
                    total: 8,
                    headers: 0,
                },
            ),
            (
                relabelled(20, 10),
                FrameError::BadLength {
                    total: 20,
                    headers: 10,
                },
            ),
            (relabelled(u32::MAX, 0), FrameError::TooLong(u32::MAX)),
            (
                {
                    // A header of an unknown type, checksums right.
                    let mut frame = encode_frame(&[(":a", "b")], b"");
                    frame[12 + 1 + 2] = 42;
                    let len = frame.len();
                    let crc = crc32(&frame[..len - 4]);
                    frame[len - 4..].copy_from_slice(&crc.to_be_bytes());
                    frame
                },
                FrameError::BadHeader,
            ),
        ];
        for (bytes, expected) in cases {
            let mut decoder = FrameDecoder::default();
            decoder.push(&bytes);
            assert_eq!(decoder.next_frame(), Err(expected));
        }
        let mut decoder = FrameDecoder::default();
        decoder.push(&good[..good.len() - 1]);
        assert_eq!(decoder.next_frame(), Ok(None));
        assert_eq!(decoder.finish(), Err(FrameError::Truncated(good.len() - 1)));
    }
}
