//! MCP's wire shapes to agentkit's, and back.
//!
//! The conversions read MCP's JSON (the spec's field names: `inputSchema`,
//! `mimeType`, `structuredContent`, `isError`) rather than rmcp's Rust
//! types. rmcp serializes exactly what travelled on the wire, and reading
//! that keeps this module, and everything that depends on it, unchanged
//! when rmcp reshuffles its model types between major versions.

use agentkit_core::{
    CustomPart, DataRef, FilePart, Item, ItemKind, MediaPart, MetadataMap, Modality, Part,
    StructuredPart, TextPart, ToolOutput,
};
use agentkit_tools_core::{ToolAnnotations, ToolResult, ToolSpec};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// A tool as the server listed it: its own name plus its JSON definition.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RemoteTool {
    pub(crate) name: String,
    pub(crate) definition: Value,
    /// `Some` for a host request offered as a tool (see
    /// `resource_tools.rs`), `None` for the server's own tools.
    pub(crate) host: Option<crate::resource_tools::HostRequest>,
}

impl RemoteTool {
    pub(crate) fn from_json(definition: Value) -> Option<Self> {
        let name = definition.get("name")?.as_str()?.to_owned();
        Some(Self {
            name,
            definition,
            host: None,
        })
    }

    /// A host request as a tool, with the definition we wrote for it.
    pub(crate) fn host(definition: Value, request: crate::resource_tools::HostRequest) -> Self {
        Self {
            name: request.name().to_owned(),
            definition,
            host: Some(request),
        }
    }
}

/// The spec the model sees for a server's tool, under its exposed name.
pub(crate) fn tool_spec(server: &str, exposed_name: &str, tool: &RemoteTool) -> ToolSpec {
    let def = &tool.definition;
    let description = def
        .get("description")
        .and_then(Value::as_str)
        .or_else(|| def.get("title").and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned();
    let input_schema = match def.get("inputSchema") {
        Some(schema @ Value::Object(_)) => schema.clone(),
        _ => json!({ "type": "object" }),
    };
    let hints = def.get("annotations");
    let hint = |key: &str| hints.and_then(|h| h.get(key)).and_then(Value::as_bool);
    let read_only = hint("readOnlyHint").unwrap_or(false);
    let annotations = ToolAnnotations {
        read_only,
        // MCP's defaults: a tool that is not read-only may destroy things
        // unless it says otherwise.
        destructive: !read_only && hint("destructiveHint").unwrap_or(true),
        idempotent: hint("idempotentHint").unwrap_or(false),
        // Reading tools do not step on each other; anything else might.
        parallel_safe: read_only,
    };
    let mut metadata = MetadataMap::new();
    metadata.insert("mcp.server".into(), server.into());
    metadata.insert("mcp.tool".into(), tool.name.clone().into());
    for (key, field) in [
        ("mcp.title", "title"),
        ("mcp.output_schema", "outputSchema"),
        ("mcp.annotations", "annotations"),
    ] {
        if let Some(value) = def.get(field) {
            metadata.insert(key.into(), value.clone());
        }
    }
    ToolSpec {
        name: exposed_name.to_owned(),
        description,
        input_schema,
        annotations,
        metadata,
    }
}

/// A `tools/call` result as an agentkit tool result. `isError` results
/// become error results the model reads; they are not `ToolError`s, since
/// the tool ran and reported its own failure.
///
/// Servers are told to repeat `structuredContent` as serialized JSON in a
/// text block for older clients, and the Python and TypeScript SDKs do.
/// The model would read the same value twice, so a text block that parses
/// to exactly the structured value is dropped (and the result's metadata
/// says so under `mcp.deduplicated_text`).
pub fn tool_result(server: &str, tool: &str, result: &Value) -> ToolResult {
    let structured = result
        .get("structuredContent")
        .filter(|value| !value.is_null());
    let blocks: &[Value] = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut deduplicated = 0usize;
    let mut parts: Vec<Part> = blocks
        .iter()
        .filter(|block| {
            let repeats = structured.is_some_and(|value| repeats_structured(block, value));
            deduplicated += usize::from(repeats);
            !repeats
        })
        .map(content_part)
        .collect();
    let output = match (parts.len(), structured) {
        (0, Some(value)) => ToolOutput::Structured(value.clone()),
        (0, None) => ToolOutput::Text(String::new()),
        (1, None) if matches!(parts[0], Part::Text(_)) => match parts.remove(0) {
            Part::Text(text) => ToolOutput::Text(text.text),
            _ => unreachable!("checked to be text"),
        },
        (_, structured) => {
            if let Some(value) = structured {
                parts.push(Part::Structured(StructuredPart {
                    value: value.clone(),
                    schema: None,
                    metadata: MetadataMap::from([(
                        "mcp.structured_content".to_owned(),
                        true.into(),
                    )]),
                }));
            }
            ToolOutput::Parts(parts)
        }
    };
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut converted = if is_error {
        ToolResult::error(output)
    } else {
        ToolResult::new(output)
    };
    converted
        .metadata
        .insert("mcp.server".into(), server.into());
    converted.metadata.insert("mcp.tool".into(), tool.into());
    if let Some(meta) = result.get("_meta") {
        converted.metadata.insert("mcp.meta".into(), meta.clone());
    }
    if deduplicated > 0 {
        converted
            .metadata
            .insert("mcp.deduplicated_text".into(), deduplicated.into());
    }
    converted
}

/// `true` when `block` is a text block holding `structured` as JSON
/// (whatever its formatting).
fn repeats_structured(block: &Value, structured: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("text")
        && block
            .get("text")
            .and_then(Value::as_str)
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .is_some_and(|parsed| parsed == *structured)
}

fn content_part(block: &Value) -> Part {
    let text = |key: &str| block.get(key).and_then(Value::as_str);
    match text("type").unwrap_or_default() {
        "text" => Part::Text(TextPart::new(text("text").unwrap_or_default())),
        kind @ ("image" | "audio") => {
            let modality = if kind == "image" {
                Modality::Image
            } else {
                Modality::Audio
            };
            let mime_type = text("mimeType").unwrap_or("application/octet-stream");
            let data = text("data").unwrap_or_default();
            Part::Media(MediaPart {
                modality,
                mime_type: mime_type.to_owned(),
                data: decode_base64(data, mime_type),
                metadata: MetadataMap::new(),
            })
        }
        "resource" => resource_part(block.get("resource").unwrap_or(&Value::Null)),
        "resource_link" => {
            // Models cannot follow a link they are not shown; say what it is.
            let uri = text("uri").unwrap_or_default();
            let name = text("name").unwrap_or(uri);
            let mut line = format!("[resource {name}: {uri}]");
            if let Some(description) = text("description") {
                line.push(' ');
                line.push_str(description);
            }
            let mut part = TextPart::new(line);
            part.metadata
                .insert("mcp.resource_link".into(), block.clone());
            Part::Text(part)
        }
        other => Part::Custom(CustomPart {
            kind: format!("mcp.{other}"),
            value: block.clone(),
            metadata: MetadataMap::new(),
        }),
    }
}

/// One resource's contents (`uri`, `mimeType`, `text` or `blob`) as a file
/// part named by its URI.
fn resource_part(resource: &Value) -> Part {
    let field = |key: &str| resource.get(key).and_then(Value::as_str);
    let mime_type = field("mimeType").map(str::to_owned);
    let data = match (field("text"), field("blob")) {
        (Some(text), _) => DataRef::Text {
            text: text.to_owned(),
        },
        (None, Some(blob)) => decode_base64(
            blob,
            mime_type.as_deref().unwrap_or("application/octet-stream"),
        ),
        (None, None) => DataRef::Text {
            text: String::new(),
        },
    };
    let mut metadata = MetadataMap::new();
    if let Some(uri) = field("uri") {
        metadata.insert("mcp.uri".into(), uri.into());
    }
    Part::File(FilePart {
        name: field("uri").map(str::to_owned),
        mime_type,
        data,
        metadata,
    })
}

/// A `resources/read` result: one file part per content entry.
pub(crate) fn resource_contents(result: &Value) -> Vec<Part> {
    result
        .get("contents")
        .and_then(Value::as_array)
        .map(|contents| contents.iter().map(resource_part).collect())
        .unwrap_or_default()
}

/// A `prompts/get` result: one item per message, user or assistant.
pub(crate) fn prompt_items(result: &Value) -> Vec<Item> {
    result
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .map(|message| {
                    let kind = match message.get("role").and_then(Value::as_str) {
                        Some("assistant") => ItemKind::Assistant,
                        _ => ItemKind::User,
                    };
                    let parts = match message.get("content") {
                        Some(Value::Array(blocks)) => blocks.iter().map(content_part).collect(),
                        Some(block) => vec![content_part(block)],
                        None => Vec::new(),
                    };
                    Item::new(kind, parts)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Base64 from the server; a payload that is not valid base64 is kept as a
/// `data:` URL rather than dropped, so nothing the server sent is lost.
fn decode_base64(data: &str, mime_type: &str) -> DataRef {
    match STANDARD.decode(data.as_bytes()) {
        Ok(bytes) => DataRef::bytes(bytes),
        Err(_) => DataRef::url(format!("data:{mime_type};base64,{data}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_keep_schema_hints_and_origin() {
        let tool = RemoteTool::from_json(json!({
            "name": "read.file",
            "title": "Read a file",
            "inputSchema": { "type": "object", "properties": { "path": { "type": "string" } } },
            "annotations": { "readOnlyHint": true }
        }))
        .unwrap();
        let spec = tool_spec("fs", "mcp_fs_read_file", &tool);
        assert_eq!(spec.name, "mcp_fs_read_file");
        assert_eq!(spec.description, "Read a file");
        assert_eq!(spec.input_schema["properties"]["path"]["type"], "string");
        assert!(spec.annotations.read_only && !spec.annotations.destructive);
        assert_eq!(spec.metadata["mcp.tool"], "read.file");
        assert_eq!(spec.metadata["mcp.server"], "fs");

        let bare = RemoteTool::from_json(json!({ "name": "x", "inputSchema": null })).unwrap();
        let spec = tool_spec("s", "mcp_s_x", &bare);
        assert_eq!(spec.input_schema, json!({ "type": "object" }));
        assert!(spec.annotations.destructive, "MCP's default");
    }

    #[test]
    fn a_single_text_block_is_plain_text() {
        let result = tool_result(
            "s",
            "echo",
            &json!({ "content": [{ "type": "text", "text": "Echo: hi" }] }),
        );
        assert_eq!(result.output, ToolOutput::Text("Echo: hi".into()));
        assert!(!result.is_error);
        assert_eq!(result.metadata["mcp.tool"], "echo");
    }

    #[test]
    fn is_error_results_are_error_results() {
        let result = tool_result(
            "s",
            "t",
            &json!({ "content": [{ "type": "text", "text": "no such file" }], "isError": true }),
        );
        assert!(result.is_error);
        assert_eq!(result.output.to_text(), "no such file");
    }

    #[test]
    fn mixed_content_maps_every_block() {
        let result = tool_result(
            "s",
            "t",
            &json!({
                "content": [
                    { "type": "text", "text": "here" },
                    { "type": "image", "mimeType": "image/png", "data": "AJ+Slg==" },
                    { "type": "resource", "resource": { "uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello" } },
                    { "type": "resource", "resource": { "uri": "file:///b.bin", "blob": "AAE=" } },
                    { "type": "resource_link", "uri": "file:///c", "name": "c" },
                    { "type": "hologram", "shape": "cube" }
                ],
                "structuredContent": { "sum": 3 }
            }),
        );
        let ToolOutput::Parts(parts) = result.output else {
            panic!("parts expected")
        };
        assert_eq!(parts.len(), 7);
        let Part::Media(image) = &parts[1] else {
            panic!()
        };
        assert_eq!(image.data, DataRef::bytes(vec![0u8, 159, 146, 150]));
        let Part::File(text_file) = &parts[2] else {
            panic!()
        };
        assert_eq!(text_file.name.as_deref(), Some("file:///a.txt"));
        assert_eq!(
            text_file.data,
            DataRef::Text {
                text: "hello".into()
            }
        );
        let Part::File(blob) = &parts[3] else {
            panic!()
        };
        assert_eq!(blob.data, DataRef::bytes(vec![0u8, 1]));
        assert_eq!(parts[4].as_text(), Some("[resource c: file:///c]"));
        assert!(matches!(&parts[5], Part::Custom(c) if c.kind == "mcp.hologram"));
        let Part::Structured(structured) = &parts[6] else {
            panic!()
        };
        assert_eq!(structured.value, json!({ "sum": 3 }));
    }

    #[test]
    fn prompts_become_items_and_resources_file_parts() {
        let items = prompt_items(&json!({ "messages": [
            { "role": "user", "content": { "type": "text", "text": "Summarize" } },
            { "role": "assistant", "content": { "type": "text", "text": "Sure" } }
        ] }));
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].kind, ItemKind::User);
        assert_eq!(items[1].text_content(), "Sure");
        let parts = resource_contents(&json!({ "contents": [
            { "uri": "demo://a", "mimeType": "text/plain", "text": "alpha" }
        ] }));
        let Part::File(file) = &parts[0] else {
            panic!()
        };
        assert_eq!(file.name.as_deref(), Some("demo://a"));
        assert_eq!(
            file.data,
            DataRef::Text {
                text: "alpha".into()
            }
        );
    }

    #[test]
    fn text_repeating_the_structured_content_is_not_sent_twice() {
        // What the Python and TypeScript SDKs send: the value twice.
        let result = tool_result(
            "s",
            "weather",
            &json!({
                "content": [{ "type": "text", "text": "{\n  \"temp\": 21,\n  \"sky\": \"clear\"\n}" }],
                "structuredContent": { "sky": "clear", "temp": 21 }
            }),
        );
        assert_eq!(
            result.output,
            ToolOutput::Structured(json!({ "sky": "clear", "temp": 21 }))
        );
        assert_eq!(result.metadata["mcp.deduplicated_text"], 1);

        // Other text stays; only the repetition goes.
        let result = tool_result(
            "s",
            "weather",
            &json!({
                "content": [
                    { "type": "text", "text": "Sunny in Chicago" },
                    { "type": "text", "text": "{\"temp\":21}" }
                ],
                "structuredContent": { "temp": 21 }
            }),
        );
        let ToolOutput::Parts(parts) = &result.output else {
            panic!("parts expected, got {:?}", result.output)
        };
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].as_text(), Some("Sunny in Chicago"));
        assert!(matches!(&parts[1], Part::Structured(s) if s.value == json!({ "temp": 21 })));

        // A different value is not a repetition.
        let result = tool_result(
            "s",
            "t",
            &json!({
                "content": [{ "type": "text", "text": "{\"temp\":20}" }],
                "structuredContent": { "temp": 21 }
            }),
        );
        assert!(matches!(result.output, ToolOutput::Parts(ref p) if p.len() == 2));
        assert!(!result.metadata.contains_key("mcp.deduplicated_text"));
    }

    #[test]
    fn structured_only_results_are_structured_output() {
        let result = tool_result(
            "s",
            "t",
            &json!({ "content": [], "structuredContent": { "a": 1 } }),
        );
        assert_eq!(result.output, ToolOutput::Structured(json!({ "a": 1 })));
    }

    #[test]
    fn invalid_base64_is_kept_as_a_data_url() {
        let result = tool_result(
            "s",
            "t",
            &json!({ "content": [
                { "type": "image", "mimeType": "image/png", "data": "%%%" },
                { "type": "text", "text": "x" }
            ] }),
        );
        let ToolOutput::Parts(parts) = result.output else {
            panic!()
        };
        let Part::Media(media) = &parts[0] else {
            panic!()
        };
        assert_eq!(media.data, DataRef::url("data:image/png;base64,%%%"));
    }
}
