//! What OpenAI's hosted tools did, kept as parts.
//!
//! With hosted tools (web search, file search, code interpreter, remote MCP
//! servers, image generation) the Responses API runs the tool itself and
//! reports each step as an output item of its own: `web_search_call` (with
//! its sources), `file_search_call` (with its results), `code_interpreter_call`,
//! `mcp_list_tools`, `mcp_call`, `mcp_approval_request`,
//! `image_generation_call`. The adapter keeps every such item whole as a
//! [`CustomPart`] of kind `openai.<item type>`, so a host can show what
//! happened, and sends it back unchanged in the next request, where the API
//! wants it (with `store: false` it knows nothing of the previous response).
//!
//! An answer that ends with an `mcp_approval_request` waits for the host:
//! it finishes with [`FinishReason::Other`]`("mcp_approval_request")`, and
//! the host answers with [`mcp_approval_response`] in the next user item.
//!
//! [`FinishReason::Other`]: agentkit_core::FinishReason::Other

use agentkit_core::{CustomPart, MetadataMap, Part};
use serde_json::{Value, json};

/// The output item types of hosted tools, kept as custom parts.
pub(crate) const HOSTED_ITEMS: &[&str] = &[
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "mcp_list_tools",
    "mcp_call",
    "mcp_approval_request",
    "image_generation_call",
];

/// The prefix of the custom part kinds this adapter makes and reads back.
pub(crate) const KIND_PREFIX: &str = "openai.";

/// The finish reason of an answer waiting for an MCP approval.
pub(crate) const AWAITING_APPROVAL: &str = "mcp_approval_request";

/// The custom part kind for a hosted item's type, when it is one.
pub(crate) fn hosted_kind(item_type: &str) -> Option<String> {
    HOSTED_ITEMS
        .contains(&item_type)
        .then(|| format!("{KIND_PREFIX}{item_type}"))
}

/// The input item a custom part goes back as: a hosted tool's item as it
/// came (in an assistant item), or an approval answer (in any item).
pub(crate) fn input_item(part: &CustomPart, assistant: bool) -> Option<Value> {
    let item_type = part.kind.strip_prefix(KIND_PREFIX)?;
    let known = match item_type {
        "mcp_approval_response" => true,
        other => assistant && HOSTED_ITEMS.contains(&other),
    };
    (known && part.value["type"] == item_type).then(|| part.value.clone())
}

/// The answer to a hosted MCP tool's approval request (the `id` of an
/// `openai.mcp_approval_request` part), to put in the next user item.
///
/// ```
/// use agentkit_core::{Item, ItemKind, Part};
/// use agentkit_provider_openai::mcp_approval_response;
///
/// let answer = mcp_approval_response("mcpr_123", true, None);
/// let Part::Custom(custom) = &answer else { unreachable!() };
/// assert_eq!(custom.kind, "openai.mcp_approval_response");
/// assert_eq!(custom.value["approve"], true);
/// let next = Item::new(ItemKind::User, vec![answer]);
/// # let _ = next;
/// ```
pub fn mcp_approval_response(request_id: &str, approve: bool, reason: Option<&str>) -> Part {
    let mut value = json!({
        "type": "mcp_approval_response",
        "approval_request_id": request_id,
        "approve": approve,
    });
    if let Some(reason) = reason {
        value["reason"] = json!(reason);
    }
    Part::Custom(CustomPart {
        kind: format!("{KIND_PREFIX}mcp_approval_response"),
        value,
        metadata: MetadataMap::new(),
    })
}
