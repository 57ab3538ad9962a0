//! A cheap token estimate.
//!
//! Exact counts need the provider's tokenizer; a budget only needs to know
//! roughly when to act, and about four bytes per token holds for English
//! text and JSON with every mainstream tokenizer.

use agentkit_core::{Item, Part, ToolOutput};

const BYTES_PER_TOKEN: usize = 4;

/// Roughly how many tokens these items take.
pub fn estimate_tokens(items: &[Item]) -> usize {
    let bytes: usize = items
        .iter()
        .flat_map(|item| &item.parts)
        .map(part_bytes)
        .sum();
    bytes.div_ceil(BYTES_PER_TOKEN) + items.len() * 4
}

fn part_bytes(part: &Part) -> usize {
    match part {
        Part::Text(text) => text.text.len(),
        Part::ToolCall(call) => call.name.len() + call.input.to_string().len(),
        Part::ToolResult(result) => match &result.output {
            ToolOutput::Text(text) => text.len(),
            ToolOutput::Structured(value) => value.to_string().len(),
            ToolOutput::Parts(parts) => parts.iter().map(part_bytes).sum(),
            _ => 0,
        },
        Part::Reasoning(reasoning) => reasoning.summary.as_ref().map_or(0, String::len),
        Part::Structured(structured) => structured.value.to_string().len(),
        // Media is priced per image by providers; count a flat amount.
        Part::Media(_) | Part::File(_) => 1_000 * BYTES_PER_TOKEN,
        _ => 0,
    }
}
