//! The metadata keys agentkit itself writes, in one place.
//!
//! Every key starts with `agentkit.`; a host reading a transcript or an
//! event matches on these constants instead of spelling the strings, and a
//! key's meaning is documented once, here.
//!
//! ```
//! use agentkit_core::{Item, keys};
//!
//! let item = Item::user("hi").with_metadata(keys::NOTIFICATION, "background_task");
//! assert_eq!(item.metadata[keys::NOTIFICATION], "background_task");
//! ```

/// On an error tool result: what kind of error (`permission_denied`,
/// `skipped`, `cancelled`, `interrupted`, `abandoned`, `rejected`, a tool
/// error's kind).
pub const ERROR_KIND: &str = "agentkit.error_kind";
/// On an error tool result: the MCP auth request to resolve out of band.
pub const AUTH_REQUEST: &str = "agentkit.auth_request";
/// On a tool call whose id the model repeated: the model's original id.
pub const ORIGINAL_CALL_ID: &str = "agentkit.original_call_id";
/// On an assistant item saved by an older version: why the model's answer
/// ended. The reason is now the item's own field (see
/// [`Item::finish_reason`](crate::Item::finish_reason)); an item read with
/// this entry has it moved into the field.
pub const FINISH_REASON: &str = "agentkit.finish_reason";
/// On a turn result: the turn was cancelled by the host.
pub const INTERRUPTED: &str = "agentkit.interrupted";
/// On a turn result: why it was interrupted (`user_cancelled`).
pub const INTERRUPT_REASON: &str = "agentkit.interrupt_reason";
/// On a turn result: why the host abandoned it.
pub const ABANDON_REASON: &str = "agentkit.abandon_reason";
/// On a turn result ended by the step limit: the limit.
pub const MAX_MODEL_CALLS: &str = "agentkit.max_model_calls";
/// On a user item merged from queued soft-interrupt messages: their ids.
pub const SOFT_INTERRUPT_IDS: &str = "agentkit.soft_interrupt_ids";
/// On a tool result of a background task: the task's id.
pub const BACKGROUND_TASK: &str = "agentkit.background_task";
/// On a notification item: what it notifies of (`background_task`).
pub const NOTIFICATION: &str = "agentkit.notification";
/// On a background-task notification: the task's id.
pub const TASK_ID: &str = "agentkit.task_id";
/// On a background-task notification: the call the task ran.
pub const CALL_ID: &str = "agentkit.call_id";
/// On a background-task notification: the task failed.
pub const IS_ERROR: &str = "agentkit.is_error";

/// On an assistant item or turn result: the adapter that produced it (its
/// provider name, such as `openai` or `anthropic`). An adapter re-sends
/// provider-specific parts (reasoning, signatures) only to the provider
/// that wrote them.
pub const PROVIDER: &str = "agentkit.provider";
/// On a turn result: the provider's id for the response (OpenAI
/// Responses chains the next request to it with `previous_response_id`).
pub const RESPONSE_ID: &str = "agentkit.response_id";
/// On a turn result: the model the provider says answered.
pub const MODEL: &str = "agentkit.model";
/// On a text part cut short (the stream ended inside it): `true`.
pub const INCOMPLETE: &str = "agentkit.incomplete";
/// On a tool result or item a compaction rewrote: `true`.
pub const COMPACTED: &str = "agentkit.compacted";
/// On the summary item a summarizing compaction wrote: `true`.
pub const SUMMARY: &str = "agentkit.summary";
/// On a compaction summary: how many items it stands for.
pub const SUMMARIZED_ITEMS: &str = "agentkit.summarized_items";
/// On an approval request forwarded from a sub-agent: the sub-agent's name.
pub const SUB_AGENT: &str = "agentkit.sub_agent";
/// On an approval request forwarded from a sub-agent: the chain of
/// sub-agents it went through, outermost first (`["planner", "researcher"]`).
pub const SUB_AGENT_PATH: &str = "agentkit.sub_agent_path";
/// On a sub-agent's forwarded approval: the parent's call that runs it.
pub const SUB_AGENT_CALL_ID: &str = "agentkit.sub_agent_call_id";
/// On a sub-agent's forwarded approval: the parent's tool name.
pub const SUB_AGENT_TOOL: &str = "agentkit.sub_agent_tool";
/// On a sub-agent's forwarded approval: the parent call's input.
pub const SUB_AGENT_INPUT: &str = "agentkit.sub_agent_input";
