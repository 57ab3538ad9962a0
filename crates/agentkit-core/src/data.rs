//! Where the bytes of a media or file part live.
//!
//! Inline bytes serialize as standard base64, the encoding every provider
//! expects for inline images and documents, so a transcript saved as JSON can
//! be sent again without re-encoding.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The payload of a [`MediaPart`](crate::MediaPart) or [`FilePart`](crate::FilePart).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DataRef {
    /// The bytes themselves; serialized as base64.
    Bytes {
        /// Raw bytes.
        #[serde(serialize_with = "to_base64", deserialize_with = "from_base64")]
        data: Vec<u8>,
    },
    /// Inline text content (a text file, an SVG).
    Text {
        /// The text.
        text: String,
    },
    /// A URL the provider can fetch (`https:` or `data:`).
    Url {
        /// The URL.
        url: String,
    },
    /// A file id in the provider's own file store.
    ProviderFile {
        /// The provider's id for the file.
        file_id: String,
    },
}

impl DataRef {
    /// Inline bytes.
    pub fn bytes(data: impl Into<Vec<u8>>) -> Self {
        DataRef::Bytes { data: data.into() }
    }

    /// A URL.
    pub fn url(url: impl Into<String>) -> Self {
        DataRef::Url { url: url.into() }
    }

    /// The inline bytes as base64, if this holds bytes.
    pub fn to_base64(&self) -> Option<String> {
        match self {
            DataRef::Bytes { data } => Some(STANDARD.encode(data)),
            _ => None,
        }
    }
}

fn to_base64<S: Serializer>(data: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&STANDARD.encode(data))
}

fn from_base64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    let text = String::deserialize(deserializer)?;
    STANDARD
        .decode(text.as_bytes())
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_as_base64() {
        let data = DataRef::bytes(vec![0u8, 159, 146, 150]);
        let json = serde_json::to_value(&data).unwrap();
        assert_eq!(
            json,
            serde_json::json!({ "source": "bytes", "data": "AJ+Slg==" })
        );
        assert_eq!(serde_json::from_value::<DataRef>(json).unwrap(), data);
    }

    #[test]
    fn invalid_base64_is_an_error() {
        let err = serde_json::from_value::<DataRef>(
            serde_json::json!({ "source": "bytes", "data": "%%" }),
        );
        assert!(err.is_err());
    }
}
