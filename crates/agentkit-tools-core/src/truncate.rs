//! Keeping tool output within a byte budget.
//!
//! A tool that prints a whole log file or a minified bundle would fill the
//! model's context and make every later turn slow and expensive. The executor
//! therefore cuts long outputs, on a UTF-8 character boundary so the text stays
//! valid, and appends a marker that tells the model how much is missing, so it
//! can ask for a narrower slice instead of believing it saw everything.

use agentkit_core::{Part, TextPart, ToolOutput};

/// The default output budget of [`BasicToolExecutor`](crate::BasicToolExecutor):
/// 64 KiB, about 16k tokens of English.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// Cuts `text` to at most `max_bytes` bytes (moving back to the previous
/// character boundary if needed) and appends a marker saying how many bytes
/// were cut. Text within the budget is returned unchanged. The marker comes on
/// top of the budget, so the result is at most `max_bytes` plus about 40 bytes.
///
/// ```
/// use agentkit_tools_core::truncate_text;
///
/// assert_eq!(truncate_text("short", 10), "short");
/// // "é" is two bytes; a cut after 2 bytes would split it, so only "a" is kept.
/// assert_eq!(truncate_text("aé-tail", 2), "a\n[output truncated: 7 more bytes cut]");
/// ```
pub fn truncate_text(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let end = floor_char_boundary(text, max_bytes);
    let cut = text.len() - end;
    let mut kept = String::with_capacity(end + 48);
    kept.push_str(&text[..end]);
    if !kept.is_empty() && !kept.ends_with('\n') {
        kept.push('\n');
    }
    kept.push_str(&marker(cut));
    kept
}

/// Bounds a whole tool output to `max_bytes` of text.
///
/// - `Text` is cut with [`truncate_text`].
/// - `Parts` share one budget: text parts are kept in order until it runs out,
///   the part that crosses it is cut, and later text parts are replaced by one
///   marker. Other parts (images, files) pass through untouched; they are not
///   text the model reads byte by byte.
/// - `Structured` JSON that serializes to more than the budget becomes `Text`
///   holding its cut serialization: half a JSON document is not JSON any more,
///   and the model reads it as text either way.
#[inline]
pub fn truncate_output(output: ToolOutput, max_bytes: usize) -> ToolOutput {
    // The usual output, text within the budget, passes without a call.
    if let ToolOutput::Text(text) = &output
        && text.len() <= max_bytes
    {
        return output;
    }
    truncate_whole(output, max_bytes)
}

/// [`truncate_output`] past its check for text within the budget.
fn truncate_whole(output: ToolOutput, max_bytes: usize) -> ToolOutput {
    match output {
        ToolOutput::Text(text) if text.len() > max_bytes => {
            ToolOutput::Text(truncate_text(&text, max_bytes))
        }
        ToolOutput::Structured(value) => {
            let serialized = value.to_string();
            if serialized.len() > max_bytes {
                ToolOutput::Text(truncate_text(&serialized, max_bytes))
            } else {
                ToolOutput::Structured(value)
            }
        }
        ToolOutput::Parts(parts) => ToolOutput::Parts(truncate_parts(parts, max_bytes)),
        other => other,
    }
}

fn truncate_parts(parts: Vec<Part>, max_bytes: usize) -> Vec<Part> {
    let mut budget = max_bytes;
    let mut dropped = 0usize;
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Part::Text(mut text) => {
                if dropped > 0 || (budget == 0 && !text.text.is_empty()) {
                    dropped += text.text.len();
                    continue;
                }
                if text.text.len() <= budget {
                    budget -= text.text.len();
                    out.push(Part::Text(text));
                } else {
                    let end = floor_char_boundary(&text.text, budget);
                    dropped += text.text.len() - end;
                    text.text.truncate(end);
                    budget = 0;
                    if !text.text.is_empty() {
                        out.push(Part::Text(text));
                    }
                }
            }
            other => out.push(other),
        }
    }
    if dropped > 0 {
        out.push(Part::Text(TextPart::new(marker(dropped))));
    }
    out
}

fn marker(cut: usize) -> String {
    format!("[output truncated: {cut} more bytes cut]")
}

/// The largest index `<= index` that starts a character.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut end = index.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_within_budget_is_untouched() {
        assert_eq!(truncate_text("", 0), "");
        assert_eq!(truncate_text("abc", 3), "abc");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        // "日" is three bytes: budgets of 3, 4 and 5 all keep exactly one.
        let text = "日本語";
        for budget in 3..6 {
            let cut = truncate_text(text, budget);
            assert!(cut.starts_with("日\n"), "{budget}: {cut}");
            assert!(cut.ends_with("[output truncated: 6 more bytes cut]"));
        }
        // Less than one character keeps nothing but the marker.
        assert_eq!(
            truncate_text(text, 2),
            "[output truncated: 9 more bytes cut]"
        );
    }

    #[test]
    fn a_cut_after_a_newline_adds_no_blank_line() {
        assert_eq!(
            truncate_text("one\ntwo", 4),
            "one\n[output truncated: 3 more bytes cut]"
        );
    }

    #[test]
    fn parts_share_one_budget_and_keep_media() {
        let image = Part::Media(agentkit_core::MediaPart::image("image/png", vec![1, 2, 3]));
        let output = ToolOutput::Parts(vec![
            Part::text("12345"),
            image.clone(),
            Part::text("67890"),
            Part::text("abc"),
        ]);
        let ToolOutput::Parts(parts) = truncate_output(output, 7) else {
            panic!("parts stay parts");
        };
        assert_eq!(
            parts,
            vec![
                Part::text("12345"),
                image,
                Part::text("67"),
                Part::text("[output truncated: 6 more bytes cut]"),
            ]
        );
    }

    #[test]
    fn big_json_becomes_cut_text_and_small_json_stays() {
        let small = ToolOutput::Structured(json!({ "a": 1 }));
        assert_eq!(truncate_output(small.clone(), 100), small);
        let big = ToolOutput::Structured(json!({ "data": "x".repeat(100) }));
        let ToolOutput::Text(text) = truncate_output(big, 20) else {
            panic!("oversized JSON becomes text");
        };
        assert!(text.starts_with("{\"data\":\"xxxxxxxxxxx\n"), "{text}");
        assert!(text.ends_with("more bytes cut]"));
    }
}
