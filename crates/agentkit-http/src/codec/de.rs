//! [`from_str`]: serde's derive over the codec's private reader, so a
//! provider's stream event is a plain `#[derive(Deserialize)]` struct read
//! at the reader's speed, with serde_json deciding whenever the reader
//! does not.
//!
//! The deserializer below is one serde_json would agree with, or one that
//! gives up: every input it is not sure of (a number that is not a plain
//! `u64`, a key with an escape, an enum, bytes, nesting past the reader's
//! depth, invalid JSON) ends the attempt, and the whole document is read
//! again by serde_json, which then gives its value or its error. So the
//! fast path only has to be right about what it accepts.

use super::read::JsonReader;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// Reads `text` into a `T` exactly as `serde_json::from_str` would: the
/// same value, or the same error.
///
/// Stream events are small documents (80 to 350 bytes), where a general
/// parser's fixed cost per token dominates: this reads them with the
/// codec's own reader, borrowing every string without escapes, and hands
/// anything it does not handle exactly as serde_json would (a number that
/// is not a plain non-negative integer, a key with an escape, an enum,
/// invalid JSON) to serde_json, which then decides.
///
/// ```
/// use serde::Deserialize;
/// use std::borrow::Cow;
///
/// #[derive(Deserialize)]
/// struct Delta<'a> {
///     index: u64,
///     #[serde(borrow)]
///     text: Cow<'a, str>,
/// }
///
/// let delta: Delta<'_> = agentkit_http::codec::from_str(r#"{"index":2,"text":"plain","x":[1,{}]}"#)?;
/// assert_eq!(delta.index, 2);
/// assert!(matches!(delta.text, Cow::Borrowed("plain")));
/// // serde_json's answer when it is not a plain integer (here its error).
/// assert!(agentkit_http::codec::from_str::<Delta<'_>>(r#"{"index":-1,"text":""}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn from_str<'a, T: Deserialize<'a>>(text: &'a str) -> serde_json::Result<T> {
    match read_fast(text) {
        Some(value) => Ok(value),
        None => serde_json::from_str(text),
    }
}

/// The fast path alone: `None` wherever it leaves the document to
/// serde_json.
fn read_fast<'a, T: Deserialize<'a>>(text: &'a str) -> Option<T> {
    let mut reader = JsonReader::new(text);
    let value = T::deserialize(&mut Fast(&mut reader)).ok()?;
    reader.end()?;
    Some(value)
}

/// Why the fast path stopped; never shown, serde_json reads the document
/// again.
#[derive(Debug)]
struct GiveUp;

impl fmt::Display for GiveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to serde_json")
    }
}

impl std::error::Error for GiveUp {}

impl de::Error for GiveUp {
    fn custom<T: fmt::Display>(_: T) -> Self {
        GiveUp
    }
}

fn give_up<T>() -> Result<T, GiveUp> {
    Err(GiveUp)
}

/// A serde deserializer over the reader.
struct Fast<'r, 'a>(&'r mut JsonReader<'a>);

impl<'a> Fast<'_, 'a> {
    fn string<V: Visitor<'a>>(&mut self, visitor: V) -> Result<V::Value, GiveUp> {
        match self.0.str().ok_or(GiveUp)? {
            Cow::Borrowed(text) => visitor.visit_borrowed_str(text),
            Cow::Owned(text) => visitor.visit_string(text),
        }
    }
}

impl<'a> de::Deserializer<'a> for &mut Fast<'_, 'a> {
    type Error = GiveUp;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        match self.0.peek_byte().ok_or(GiveUp)? {
            b'{' => self.deserialize_map(visitor),
            b'[' => self.deserialize_seq(visitor),
            b'"' => self.string(visitor),
            b'n' => self.deserialize_unit(visitor),
            b't' | b'f' => self.deserialize_bool(visitor),
            // Only plain non-negative integers: serde_json's float parsing
            // and its choice between i64 and f64 are its own.
            b'0'..=b'9' => visitor.visit_u64(self.0.u64().ok_or(GiveUp)?),
            _ => give_up(),
        }
    }

    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        visitor.visit_bool(self.0.bool().ok_or(GiveUp)?)
    }

    fn deserialize_str<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.string(visitor)
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.string(visitor)
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.string(visitor)
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        if self.0.null().ok_or(GiveUp)? {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        if self.0.null().ok_or(GiveUp)? {
            visitor.visit_unit()
        } else {
            give_up()
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, GiveUp> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, GiveUp> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        let mut elements = Items::open(&mut *self.0, b'[', b']')?;
        let value = visitor.visit_seq(&mut elements)?;
        elements.finish(value)
    }

    fn deserialize_tuple<V: Visitor<'a>>(
        self,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, GiveUp> {
        give_up()
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, GiveUp> {
        give_up()
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        let mut members = Items::open(&mut *self.0, b'{', b'}')?;
        let value = visitor.visit_map(&mut members)?;
        members.finish(value)
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, GiveUp> {
        // serde_json also reads a struct from an array; that is left to it.
        self.deserialize_map(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.0.skip().ok_or(GiveUp)?;
        visitor.visit_unit()
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, GiveUp> {
        give_up()
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, _visitor: V) -> Result<V::Value, GiveUp> {
        give_up()
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, _visitor: V) -> Result<V::Value, GiveUp> {
        give_up()
    }

    fn deserialize_char<V: Visitor<'a>>(self, _visitor: V) -> Result<V::Value, GiveUp> {
        give_up()
    }

    // Numbers: what `deserialize_any` reads (a plain `u64`), the visitor
    // checking the range as it does for serde_json.
    serde::forward_to_deserialize_any! {
        <W: Visitor<'a>>
        i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64
    }
}

/// A container's items: an array's elements or an object's members.
struct Items<'r, 'a> {
    reader: &'r mut JsonReader<'a>,
    /// `}` for an object, `]` for an array.
    close: u8,
    first: bool,
    /// The closing bracket was consumed.
    done: bool,
}

impl<'r, 'a> Items<'r, 'a> {
    /// Consumes the opening bracket `open` (and `close` if it is empty).
    fn open(reader: &'r mut JsonReader<'a>, open: u8, close: u8) -> Result<Self, GiveUp> {
        let empty = reader.open(open, close).ok_or(GiveUp)?;
        Ok(Self {
            reader,
            close,
            first: true,
            done: empty,
        })
    }

    /// `value`, read by a visitor that took every item; one that stopped
    /// before the end gives up (serde_json refuses the rest as trailing
    /// items).
    fn finish<T>(self, value: T) -> Result<T, GiveUp> {
        if self.done { Ok(value) } else { give_up() }
    }

    /// Whether another item follows (its comma consumed).
    fn another(&mut self) -> Result<bool, GiveUp> {
        if self.done {
            return Ok(false);
        }
        if !self.first && !self.reader.more(self.close).ok_or(GiveUp)? {
            self.done = true;
            return Ok(false);
        }
        self.first = false;
        Ok(true)
    }
}

impl<'a> SeqAccess<'a> for &mut Items<'_, 'a> {
    type Error = GiveUp;

    fn next_element_seed<T: DeserializeSeed<'a>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, GiveUp> {
        if !self.another()? {
            return Ok(None);
        }
        seed.deserialize(&mut Fast(&mut *self.reader)).map(Some)
    }
}

impl<'a> MapAccess<'a> for &mut Items<'_, 'a> {
    type Error = GiveUp;

    fn next_key_seed<K: DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, GiveUp> {
        if !self.another()? {
            return Ok(None);
        }
        let key = self.reader.key().ok_or(GiveUp)?;
        seed.deserialize(Key(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Result<V::Value, GiveUp> {
        seed.deserialize(&mut Fast(&mut *self.reader))
    }
}

/// A member's key: a string without escapes, borrowed.
struct Key<'a>(&'a str);

impl<'a> de::Deserializer<'a> for Key<'a> {
    type Error = GiveUp;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, GiveUp> {
        // A unit variant named by the key, as serde_json reads it.
        visitor.visit_enum(self.0.into_deserializer())
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, GiveUp> {
        visitor.visit_newtype_struct(self)
    }

    // Anything else reads the key as a string, which a visitor wanting a
    // number, an option or the like refuses: serde_json then decides.
    serde::forward_to_deserialize_any! {
        <W: Visitor<'a>>
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct seq tuple tuple_struct map
        struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[derive(Debug, PartialEq, Deserialize)]
    struct Event<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
        index: Option<u32>,
        #[serde(default)]
        list: Vec<u64>,
        #[serde(default)]
        item: Option<Value>,
    }

    #[test]
    fn the_fast_path_reads_what_serde_json_reads_or_leaves_it() {
        let documents = [
            r#"{"type":"a","index":3,"list":[1,2],"item":{"x":[true,false,null,"s\n"]},"more":{}}"#,
            r#" { "type" : "caf\u00e9" , "index" : null } "#,
            r#"{"type":"a","type":"b"}"#,
            r#"{"type":"a","index":-1}"#,
            r#"{"type":"a","index":4294967296}"#,
            r#"{"type":"a","index":1.5}"#,
            r#"{"type":"a","item":{"n":-2.5e3}}"#,
            r#"{"type":"a","list":[1,]}"#,
            r#"{"type":"a",}"#,
            r#"{"t\u0079pe":"a"}"#,
            r#"{"type":"a"} x"#,
            r#"["a",1,null]"#,
            r#"{"type":"\ud800"}"#,
        ];
        let mut fast = 0;
        for text in documents {
            let theirs = serde_json::from_str::<Event<'_>>(text).ok();
            if let Some(ours) = read_fast::<Event<'_>>(text) {
                fast += 1;
                assert_eq!(Some(&ours), theirs.as_ref(), "{text}");
            }
            assert_eq!(from_str::<Event<'_>>(text).ok(), theirs, "{text}");
            let value = serde_json::from_str::<Value>(text).ok();
            if let Some(ours) = read_fast::<Value>(text) {
                assert_eq!(Some(ours), value, "{text}");
            }
        }
        assert_eq!(fast, 2, "the two plain documents take the fast path");
        let borrowed = read_fast::<Event<'_>>(r#"{"type":"plain"}"#).expect("read");
        assert!(matches!(borrowed.kind, Cow::Borrowed("plain")));
    }
}
