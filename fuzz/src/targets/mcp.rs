//! `mcp`: converting an MCP `tools/call` result into a tool result.
//!
//! A server may send anything in a result: unknown block types, base64
//! that is not, text blocks that repeat `structuredContent` or almost do,
//! `isError` of the wrong type, deep values. Properties: conversion never
//! panics; `isError: true` and only that makes an error result; every text
//! block reaches the model unless it repeats the structured value exactly
//! (then `mcp.deduplicated_text` counts it); valid base64 media decodes to
//! its bytes; the structured value is kept.

use crate::{Outcome, Target, mutated};
use agentkit_core::{DataRef, Part, ToolOutput};
use agentkit_mcp::convert_tool_result;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde_json::{Value, json};

/// The target.
pub const TARGET: Target = Target {
    name: "mcp",
    about: "MCP tool-result conversion: error flag, texts kept, base64, structured content",
    check,
    generate,
};

const SEEDS: &[&[u8]] = &[
    br#"{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1}}"#,
    br#"{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"resource","resource":{"uri":"file:///x","blob":"!!"}}],"isError":"yes","_meta":{"k":1}}"#,
    br#"{"content":[{"type":"resource_link","uri":"u"},{"type":"weird","x":[[[[1]]]]},{"text":"no type"}],"structuredContent":null}"#,
];

fn block() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z é{}\":0-9]{0,12}".prop_map(|t| json!({"type": "text", "text": t})),
        Just(json!({"type": "text", "text": "{\"n\": 1}"})),
        Just(json!({"type": "text", "text": 5})),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(|bytes| {
            json!({"type": "image", "mimeType": "image/png", "data": STANDARD_B64.encode(&bytes)})
        }),
        "[A-Za-z0-9+/=!]{0,12}".prop_map(|d| json!({"type": "audio", "data": d})),
        "[a-z:/]{0,10}"
            .prop_map(|u| json!({"type": "resource", "resource": {"uri": u, "text": "t"}})),
        Just(json!({"type": "resource", "resource": null})),
        Just(json!({"type": "resource_link", "uri": "file:///a", "name": 3})),
        Just(json!({"type": null})),
        Just(json!([1, 2])),
    ]
}

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as STANDARD_B64;

fn generate() -> BoxedStrategy<Vec<u8>> {
    let structured = prop_oneof![
        Just(Value::Null),
        Just(json!({"n": 1})),
        Just(json!([true])),
        Just(json!("s")),
    ];
    let is_error = prop_oneof![
        Just(json!(true)),
        Just(json!(false)),
        Just(json!("true")),
        Just(Value::Null)
    ];
    let generated = (
        proptest::collection::vec(block(), 0..5),
        structured,
        is_error,
    )
        .prop_map(|(content, structured, is_error)| {
            let mut result = json!({"content": content});
            if !structured.is_null() {
                result["structuredContent"] = structured;
            }
            if !is_error.is_null() {
                result["isError"] = is_error;
            }
            serde_json::to_vec(&result).unwrap_or_default()
        });
    prop_oneof![3 => generated, 1 => mutated(SEEDS)].boxed()
}

fn texts(output: &ToolOutput) -> Vec<String> {
    match output {
        ToolOutput::Text(text) => vec![text.clone()],
        ToolOutput::Parts(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn check(input: &[u8]) -> Outcome {
    let Ok(result) = serde_json::from_slice::<Value>(input) else {
        return Ok(());
    };
    let converted = convert_tool_result("srv", "tool", &result);
    if converted.is_error != (result.get("isError") == Some(&json!(true))) {
        return Err(format!(
            "is_error {} for {:?}",
            converted.is_error,
            result.get("isError")
        ));
    }
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let repeats = |text: &str| {
        structured.is_some_and(|s| serde_json::from_str::<Value>(text).ok().as_ref() == Some(s))
    };
    let mut expected_texts = Vec::new();
    let mut dropped = 0u64;
    for block in &blocks {
        if block.get("type").and_then(Value::as_str) == Some("text") {
            let text = block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if repeats(text) {
                dropped += 1;
            } else if !text.starts_with("[resource ") {
                expected_texts.push(text.to_owned());
            }
        }
    }
    let got: Vec<String> = texts(&converted.output)
        .into_iter()
        .filter(|t| !t.starts_with("[resource "))
        .collect();
    if got != expected_texts && !(expected_texts.is_empty() && got == [String::new()]) {
        return Err(format!("texts {got:?}, expected {expected_texts:?}"));
    }
    let counted = converted
        .metadata
        .get("mcp.deduplicated_text")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if counted != dropped {
        return Err(format!(
            "{dropped} texts deduplicated, metadata says {counted}"
        ));
    }
    if let Some(value) = structured {
        let kept = match &converted.output {
            ToolOutput::Structured(v) => v == value,
            ToolOutput::Parts(parts) => parts
                .iter()
                .any(|p| matches!(p, Part::Structured(s) if &s.value == value)),
            _ => false,
        };
        if !kept {
            return Err("the structured value was lost".into());
        }
    }
    if let ToolOutput::Parts(parts) = &converted.output {
        let media: Vec<&DataRef> = parts
            .iter()
            .filter_map(|p| match p {
                Part::Media(m) => Some(&m.data),
                _ => None,
            })
            .collect();
        let sent: Vec<&Value> = blocks
            .iter()
            .filter(|b| {
                matches!(
                    b.get("type").and_then(Value::as_str),
                    Some("image" | "audio")
                )
            })
            .collect();
        if media.len() != sent.len() {
            return Err(format!(
                "{} media blocks became {} parts",
                sent.len(),
                media.len()
            ));
        }
        for (data, block) in media.iter().zip(sent) {
            let text = block
                .get("data")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Ok(bytes) = STANDARD_B64.decode(text)
                && **data != DataRef::bytes(bytes)
            {
                return Err(format!("base64 {text:?} decoded wrongly"));
            }
        }
    }
    Ok(())
}
