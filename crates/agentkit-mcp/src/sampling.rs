//! Sampling: a server asks the host's model for a completion
//! (`sampling/createMessage`).
//!
//! A server that wants a model's help (summarise, classify, draft) sends
//! its messages to the client instead of holding model credentials of its
//! own. That spends the host's tokens on a server's behalf, so nothing
//! happens unless the host opts in: without a [`SamplingHandler`] the
//! client does not announce the capability and refuses such requests with
//! JSON-RPC "method not found". With one, every request goes to the
//! handler, which is where the host asks for approval (show the messages,
//! let the user edit or refuse) and then runs its model. A refusal reaches
//! the server as the spec's "user rejected" error (code -1).

use agentkit_core::{DataRef, Item, Modality, Part};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// A server's request for a completion.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The server asking.
    pub server: String,
    /// The conversation to complete: user and assistant items.
    pub messages: Vec<Item>,
    /// The system prompt the server would like, if any (the host may
    /// change or drop it).
    pub system_prompt: Option<String>,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// The sampling temperature, when the server asks for one.
    pub temperature: Option<f32>,
    /// Where to stop, when the server says.
    pub stop_sequences: Vec<String>,
    /// The server's model preferences (hints, cost, speed, intelligence
    /// priorities), as MCP JSON; advice only.
    pub model_preferences: Option<Value>,
    /// The whole request as the server sent it, for what the fields above
    /// leave out.
    pub raw: Value,
}

/// The host's completion.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SamplingResponse {
    /// The model that answered.
    pub model: String,
    /// The answer: a text part, or an image or audio [`MediaPart`](agentkit_core::MediaPart).
    pub content: Part,
    /// Why generation stopped (`endTurn`, `stopSequence`, `maxTokens`), if
    /// known.
    pub stop_reason: Option<String>,
}

impl SamplingResponse {
    /// A text answer that ended its turn.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            content: Part::text(text),
            stop_reason: Some("endTurn".into()),
        }
    }
}

/// Why a sampling request got no completion.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SamplingError {
    /// The host (or its user) said no; the server gets the spec's
    /// "user rejected" error.
    #[error("sampling refused{}", .0.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Refused(Option<String>),
    /// The model failed; the server gets an internal error with this text.
    #[error("sampling failed: {0}")]
    Failed(String),
}

/// Answers servers' `sampling/createMessage`; set on the manager before
/// servers connect (the capability is announced in the handshake).
///
/// The handler is the approval point: it sees every request first.
///
/// ```
/// use agentkit_mcp::{SamplingError, SamplingHandler, SamplingRequest, SamplingResponse};
///
/// /// Answers short requests from one trusted server, refuses the rest.
/// struct Gate;
///
/// #[async_trait::async_trait]
/// impl SamplingHandler for Gate {
///     async fn create_message(
///         &self,
///         request: SamplingRequest,
///     ) -> Result<SamplingResponse, SamplingError> {
///         if request.server != "docs" || request.max_tokens > 500 {
///             return Err(SamplingError::Refused(Some("not approved".into())));
///         }
///         // A real host runs its model on `request.messages` here.
///         let last = request.messages.last().map(|m| m.text_content()).unwrap_or_default();
///         Ok(SamplingResponse::text("host-model", format!("summary of {} chars", last.len())))
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait SamplingHandler: Send + Sync {
    /// The completion for `request`, or why there is none.
    async fn create_message(
        &self,
        request: SamplingRequest,
    ) -> Result<SamplingResponse, SamplingError>;
}

/// The request as the host sees it, from the MCP JSON of
/// `sampling/createMessage`'s params.
pub(crate) fn request_from(server: &str, params: Value) -> SamplingRequest {
    let strings = |key: &str| -> Vec<String> {
        params
            .get(key)
            .and_then(Value::as_array)
            .map(|values| {
                values
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    SamplingRequest {
        server: server.to_owned(),
        messages: crate::convert::prompt_items(&params),
        system_prompt: params
            .get("systemPrompt")
            .and_then(Value::as_str)
            .map(str::to_owned),
        max_tokens: params
            .get("maxTokens")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(u32::MAX),
        temperature: params
            .get("temperature")
            .and_then(Value::as_f64)
            .map(|t| t as f32),
        stop_sequences: strings("stopSequences"),
        model_preferences: params
            .get("modelPreferences")
            .filter(|v| !v.is_null())
            .cloned(),
        raw: params,
    }
}

/// The result to send (MCP JSON), or why the answer cannot be sent.
pub(crate) fn result_for(response: &SamplingResponse) -> Result<Value, String> {
    let content = match &response.content {
        Part::Text(text) => json!({ "type": "text", "text": text.text }),
        Part::Media(media) if media.modality != Modality::Video => {
            let data = match &media.data {
                DataRef::Bytes { data } => STANDARD.encode(data),
                _ => return Err("media in a sampling answer must be inline bytes".into()),
            };
            let kind = if media.modality == Modality::Image {
                "image"
            } else {
                "audio"
            };
            json!({ "type": kind, "data": data, "mimeType": media.mime_type })
        }
        other => {
            return Err(format!(
                "a sampling answer must be text, image or audio, not {other:?}"
            ));
        }
    };
    let mut result = json!({
        "role": "assistant",
        "content": content,
        "model": response.model,
    });
    if let Some(reason) = &response.stop_reason {
        result["stopReason"] = reason.clone().into();
    }
    Ok(result)
}

/// Answers one `sampling/createMessage` with the host's handler; without
/// one (the capability was not announced), "method not found".
pub(crate) async fn answer(
    server: &str,
    handler: Option<&dyn SamplingHandler>,
    params: rmcp::model::CreateMessageRequestParams,
) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
    use rmcp::model::ErrorCode;
    let Some(handler) = handler else {
        tracing::debug!(
            server,
            "sampling/createMessage refused: no sampling handler"
        );
        return Err(rmcp::ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "this client does not offer sampling",
            None,
        ));
    };
    let params = serde_json::to_value(&params).unwrap_or(Value::Null);
    tracing::debug!(server, "sampling/createMessage");
    match handler.create_message(request_from(server, params)).await {
        Ok(response) => {
            let result = result_for(&response).map_err(|why| {
                tracing::warn!(server, %why, "sampling answer cannot be sent");
                rmcp::ErrorData::internal_error(why, None)
            })?;
            serde_json::from_value(result)
                .map_err(|err| rmcp::ErrorData::internal_error(err.to_string(), None))
        }
        Err(SamplingError::Refused(reason)) => Err(rmcp::ErrorData::new(
            // The spec's code for a user who rejected the request.
            ErrorCode(-1),
            match reason {
                Some(reason) => format!("User rejected sampling request: {reason}"),
                None => "User rejected sampling request".to_owned(),
            },
            None,
        )),
        Err(SamplingError::Failed(why)) => Err(rmcp::ErrorData::internal_error(why, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_core::{ItemKind, MediaPart, MetadataMap};

    #[test]
    fn requests_read_mcp_json_and_answers_write_it() {
        let request = request_from(
            "s",
            json!({
                "messages": [
                    { "role": "user", "content": { "type": "text", "text": "hi" } },
                    { "role": "assistant", "content": [{ "type": "text", "text": "yes?" }] }
                ],
                "systemPrompt": "be brief", "maxTokens": 50, "temperature": 0.5,
                "stopSequences": ["END"]
            }),
        );
        assert_eq!(request.messages.len(), 2);
        assert_eq!(request.messages[1].kind, ItemKind::Assistant);
        assert_eq!(request.messages[0].text_content(), "hi");
        assert_eq!(request.system_prompt.as_deref(), Some("be brief"));
        assert_eq!((request.max_tokens, request.temperature), (50, Some(0.5)));
        assert_eq!(request.stop_sequences, ["END"]);

        assert_eq!(
            result_for(&SamplingResponse::text("m", "ok")).unwrap(),
            json!({ "role": "assistant", "content": { "type": "text", "text": "ok" }, "model": "m", "stopReason": "endTurn" })
        );
        let image = SamplingResponse {
            model: "m".into(),
            content: Part::Media(MediaPart {
                modality: Modality::Image,
                mime_type: "image/png".into(),
                data: DataRef::bytes(vec![1, 2, 3]),
                metadata: MetadataMap::new(),
            }),
            stop_reason: None,
        };
        assert_eq!(
            result_for(&image).unwrap()["content"],
            json!({ "type": "image", "data": "AQID", "mimeType": "image/png" })
        );
        let structured = SamplingResponse {
            content: Part::Structured(agentkit_core::StructuredPart {
                value: json!(1),
                schema: None,
                metadata: MetadataMap::new(),
            }),
            ..image
        };
        assert!(result_for(&structured).is_err());
    }
}
