//! `todo_write`: the agent's todo list for a multi-step task.
//!
//! The model keeps its plan here (the whole list on every call); the tool
//! changes nothing outside the conversation, so it runs unasked. In an
//! editor the ACP server shows each call as the session's plan
//! (`AcpServer::plan_tool`); in the terminal the call line shows it.

use agentkit_tools_core::{ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

/// The tool's name.
pub const TODO_TOOL: &str = "todo_write";

/// The whole todo list, as it stands now.
#[derive(Deserialize, JsonSchema)]
struct TodoArgs {
    /// Every item of the list, in order (the list replaces the previous one).
    todos: Vec<Todo>,
}

/// One item.
#[derive(Deserialize, JsonSchema)]
struct Todo {
    /// What to do, as one short sentence.
    content: String,
    /// Where it stands.
    status: Status,
    /// How much it matters (default medium).
    #[serde(default)]
    #[allow(dead_code)] // read by the editor from the call's input
    priority: Option<Priority>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    InProgress,
    Completed,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Priority {
    High,
    Medium,
    Low,
}

/// The `todo_write` tool.
pub fn todo_tool() -> TypedTool {
    TypedTool::new(
        TODO_TOOL,
        "Keeps your todo list for a task of several steps: send the whole list each time \
         (content and status pending, in_progress or completed; one item in_progress at a time).",
        |args: TodoArgs, _ctx| async move {
            let done = args
                .todos
                .iter()
                .filter(|t| t.status == Status::Completed)
                .count();
            let current = args
                .todos
                .iter()
                .find(|t| t.status == Status::InProgress)
                .map(|t| format!("; now: {}", t.content))
                .unwrap_or_default();
            Ok::<_, ToolError>(format!(
                "todo list updated: {done} of {} done{current}",
                args.todos.len()
            ))
        },
    )
}
