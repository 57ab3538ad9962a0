//! The transcript as a `generateContent` request body.
//!
//! Gemini takes `contents`: turns of role `user` or `model`, each a list of
//! parts (`text`, `inlineData`, `fileData`, `functionCall`,
//! `functionResponse`). System and developer items go to
//! `systemInstruction`. Consecutive items of one role are merged into one
//! turn, which puts the answers to parallel calls together as the API
//! wants.
//!
//! Thought signatures go back on the part they came with: a function call
//! carries its signature in the tool call's metadata, text in the text
//! part's metadata, and a signature that came alone in a reasoning part.
//! Thought summaries themselves are not sent back (the API ignores them);
//! reasoning from another provider has no signature and is left out.
//!
//! A function response names its function: the name is looked up from the
//! call with the same id earlier in the transcript.

use crate::GeminiConfig;
use crate::config::ToolChoice;
use crate::stream::{CALL_ID, PROVIDER, SIGNATURE};
use agentkit_core::keys;
use agentkit_core::{DataRef, Item, ItemKind, MediaPart, Part, ToolOutput, ToolResultPart};
use agentkit_loop::TurnRequest;
use agentkit_tools_core::{SchemaDialect, normalize_for};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Builds the JSON body for one streamed turn.
pub(crate) fn request_body(config: &GeminiConfig, request: &TurnRequest) -> Vec<u8> {
    let items = request.transcript.read();
    let mut names = HashMap::new();
    for item in items.iter() {
        for call in item.tool_calls() {
            names.insert(call.id.as_str().to_owned(), call.name.clone());
        }
    }
    let mut system: Vec<Value> = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    for item in items.iter() {
        let role = match item.kind {
            ItemKind::System | ItemKind::Developer => {
                system.extend(item.parts.iter().filter_map(|p| p.as_text()).map(text));
                continue;
            }
            ItemKind::Assistant => "model",
            _ => "user",
        };
        let parts = item_parts(item, role == "model", &names);
        if parts.is_empty() {
            continue;
        }
        match contents.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(existing) = last["parts"].as_array_mut() {
                    existing.extend(parts);
                }
            }
            _ => contents.push(json!({ "role": role, "parts": parts })),
        }
    }
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents));
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({ "parts": system }));
    }
    if !request.available_tools.is_empty() {
        let declarations: Vec<Value> = request
            .available_tools
            .iter()
            .map(|spec| {
                json!({
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": normalize_for(SchemaDialect::Gemini, &spec.input_schema),
                })
            })
            .collect();
        body.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
        if let Some(choice) = &config.tool_choice {
            body.insert(
                "toolConfig".into(),
                json!({ "functionCallingConfig": tool_choice(choice) }),
            );
        }
    }
    let mut generation = Map::new();
    if let Some(max) = config.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(budget) = config.thinking {
        let mut thinking = json!({ "includeThoughts": true });
        if let Some(budget) = budget {
            thinking["thinkingBudget"] = json!(budget);
        }
        generation.insert("thinkingConfig".into(), thinking);
    }
    if let Some(schema) = &request.output_schema {
        generation.insert("responseMimeType".into(), json!("application/json"));
        generation.insert(
            "responseSchema".into(),
            normalize_for(SchemaDialect::Gemini, &schema.schema),
        );
    }
    for (name, value) in &config.generation_config {
        generation.insert(name.clone(), value.clone());
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

fn text(text: &str) -> Value {
    json!({ "text": text })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::None => json!({ "mode": "NONE" }),
        ToolChoice::Required => json!({ "mode": "ANY" }),
        ToolChoice::Tool(name) => json!({ "mode": "ANY", "allowedFunctionNames": [name] }),
        _ => json!({ "mode": "AUTO" }),
    }
}

/// The signature a part of ours carries in its metadata, if any.
fn signature(metadata: &agentkit_core::MetadataMap) -> Option<&str> {
    metadata.get(SIGNATURE).and_then(Value::as_str)
}

fn item_parts(item: &Item, model: bool, names: &HashMap<String, Arc<str>>) -> Vec<Value> {
    let mut parts = Vec::new();
    for part in &item.parts {
        let value = match part {
            Part::Text(t) if t.text.is_empty() && signature(&t.metadata).is_none() => None,
            Part::Text(t) => {
                let mut value = text(&t.text);
                if let Some(sig) = signature(&t.metadata).filter(|_| model) {
                    value["thoughtSignature"] = json!(sig);
                }
                Some(value)
            }
            Part::Structured(s) => Some(text(&s.value.to_string())),
            Part::Media(media) => media_part(media),
            Part::File(file) => {
                let mime = file
                    .mime_type
                    .as_deref()
                    .unwrap_or("application/octet-stream");
                match &file.data {
                    DataRef::Text { text: body } => Some(text(&format!(
                        "<file name=\"{}\">\n{body}\n</file>",
                        file.name.as_deref().unwrap_or("file")
                    ))),
                    data => data_part(mime, data),
                }
            }
            // Only a signature from Gemini can be verified by Gemini.
            Part::Reasoning(r)
                if model && r.metadata.get(keys::PROVIDER) == Some(&json!(PROVIDER)) =>
            {
                r.signature
                    .as_ref()
                    .map(|sig| json!({ "text": "", "thoughtSignature": sig }))
            }
            Part::ToolCall(call) if model => {
                let mut function = json!({ "name": call.name, "args": call.input.to_value() });
                if let Some(id) = call.metadata.get(CALL_ID) {
                    function["id"] = id.clone();
                }
                let mut value = json!({ "functionCall": function });
                if let Some(sig) = signature(&call.metadata) {
                    value["thoughtSignature"] = json!(sig);
                }
                Some(value)
            }
            Part::ToolResult(result) => Some(function_response(result, names)),
            _ => None,
        };
        parts.extend(value);
    }
    parts
}

fn function_response(result: &ToolResultPart, names: &HashMap<String, Arc<str>>) -> Value {
    let name = names
        .get(result.call_id.as_str())
        .map_or_else(|| result.call_id.as_str(), |name| &**name);
    let response = match &result.output {
        ToolOutput::Structured(value @ Value::Object(_)) if !result.is_error => value.clone(),
        output if result.is_error => json!({ "error": output.to_text() }),
        output => json!({ "output": output.to_text() }),
    };
    json!({ "functionResponse": { "name": name, "response": response } })
}

fn media_part(media: &MediaPart) -> Option<Value> {
    data_part(&media.mime_type, &media.data)
}

fn data_part(mime_type: &str, data: &DataRef) -> Option<Value> {
    match data {
        DataRef::Url { url } => {
            Some(json!({ "fileData": { "mimeType": mime_type, "fileUri": url } }))
        }
        DataRef::ProviderFile { file_id } => {
            Some(json!({ "fileData": { "mimeType": mime_type, "fileUri": file_id } }))
        }
        DataRef::Bytes { .. } => Some(json!({
            "inlineData": { "mimeType": mime_type, "data": data.to_base64().unwrap_or_default() }
        })),
        _ => None,
    }
}
