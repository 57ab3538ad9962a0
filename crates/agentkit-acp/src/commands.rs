//! Slash commands offered to the editor, and plans from a todo tool.
//!
//! Editors show an agent's commands in their prompt box (`/compact`,
//! `/clear`…) from an `available_commands_update`, and send a chosen one as
//! an ordinary prompt. [`AcpServer::slash_commands`](crate::AcpServer::slash_commands)
//! advertises the host's [`SlashCommand`]s when a session opens and runs a
//! prompt that names one through the host's handler instead of the model:
//! its answer is shown as the agent's message and the turn ends at once.
//!
//! Editors also show the agent's plan (`plan` updates): with
//! [`AcpServer::plan_tool`](crate::AcpServer::plan_tool), every call of the
//! host's todo tool is sent as the session's whole plan.

use crate::BoxError;
use agent_client_protocol::v1::schema as acp;
use serde_json::Value;
use std::sync::Arc;

/// A command the editor offers in its prompt box, typed as `/name args`.
///
/// ```
/// use agentkit_acp::SlashCommand;
///
/// let compact = SlashCommand::new("compact", "Summarize the conversation so far");
/// let review = SlashCommand::new("review", "Review a file").with_hint("path to review");
/// assert_eq!(review.hint.as_deref(), Some("path to review"));
/// assert_eq!(compact.name, "compact");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlashCommand {
    /// The name, without the slash.
    pub name: String,
    /// What it does, as the editor shows it.
    pub description: String,
    /// What to type after the name, when it takes text.
    pub hint: Option<String>,
}

impl SlashCommand {
    /// A command without input.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            hint: None,
        }
    }

    /// The command takes the text after its name; `hint` says what.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    fn to_acp(&self) -> acp::AvailableCommand {
        let command = acp::AvailableCommand::new(self.name.clone(), self.description.clone());
        match &self.hint {
            Some(hint) => command.input(acp::AvailableCommandInput::Unstructured(
                acp::UnstructuredCommandInput::new(hint.clone()),
            )),
            None => command,
        }
    }
}

/// A slash command the editor sent as a prompt, as the host's handler gets
/// it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandCall {
    /// The session it was sent in.
    pub session_id: String,
    /// The command's name, without the slash.
    pub name: String,
    /// The text after the name, trimmed (empty when none).
    pub args: String,
}

/// Runs a command; its text is the agent's answer.
pub(crate) type CommandFn = Arc<dyn Fn(&CommandCall) -> Result<String, BoxError> + Send + Sync>;

/// The server's commands and their handler.
#[derive(Clone)]
pub(crate) struct Commands {
    pub(crate) list: Vec<SlashCommand>,
    pub(crate) run: CommandFn,
}

impl Commands {
    /// The update that advertises them.
    pub(crate) fn update(&self) -> acp::SessionUpdate {
        acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(
            self.list.iter().map(SlashCommand::to_acp).collect(),
        ))
    }

    /// The call a prompt makes, when its text is `/name [args]` for one of
    /// these commands; any other prompt goes to the model.
    pub(crate) fn parse(
        &self,
        session_id: &str,
        prompt: &[acp::ContentBlock],
    ) -> Option<CommandCall> {
        let [acp::ContentBlock::Text(text)] = prompt else {
            return None;
        };
        let rest = text.text.trim().strip_prefix('/')?;
        let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        self.list
            .iter()
            .any(|c| c.name == name)
            .then(|| CommandCall {
                session_id: session_id.to_owned(),
                name: name.to_owned(),
                args: args.trim().to_owned(),
            })
    }
}

/// The plan a todo tool's input states: `{"todos": [{"content": "…",
/// "status": "pending" | "in_progress" | "completed", "priority": "high" |
/// "medium" | "low"}]}` (priority optional, `medium` when absent). `None`
/// when the input has no such list; entries that do not fit are left out.
pub(crate) fn plan_of(input: &Value) -> Option<acp::Plan> {
    let todos = input.get("todos")?.as_array()?;
    let entries = todos
        .iter()
        .filter_map(|todo| {
            let content = todo.get("content")?.as_str()?;
            let status = match todo.get("status")?.as_str()? {
                "pending" => acp::PlanEntryStatus::Pending,
                "in_progress" => acp::PlanEntryStatus::InProgress,
                "completed" => acp::PlanEntryStatus::Completed,
                _ => return None,
            };
            let priority = match todo.get("priority").and_then(Value::as_str) {
                Some("high") => acp::PlanEntryPriority::High,
                Some("low") => acp::PlanEntryPriority::Low,
                _ => acp::PlanEntryPriority::Medium,
            };
            Some(acp::PlanEntry::new(content, priority, status))
        })
        .collect();
    Some(acp::Plan::new(entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn commands() -> Commands {
        Commands {
            list: vec![
                SlashCommand::new("compact", "summarize"),
                SlashCommand::new("review", "review").with_hint("path"),
            ],
            run: Arc::new(|call| Ok(call.name.clone())),
        }
    }

    fn text(text: &str) -> Vec<acp::ContentBlock> {
        vec![acp::ContentBlock::Text(acp::TextContent::new(text))]
    }

    #[test]
    fn a_prompt_naming_a_command_is_a_call_and_anything_else_goes_to_the_model() {
        let commands = commands();
        let call = commands
            .parse("s", &text("  /review src/lib.rs  "))
            .unwrap();
        assert_eq!(
            (call.name.as_str(), call.args.as_str()),
            ("review", "src/lib.rs")
        );
        let call = commands.parse("s", &text("/compact")).unwrap();
        assert_eq!((call.name.as_str(), call.args.as_str()), ("compact", ""));
        for other in ["/unknown", "compact", "say /compact", "/compactly"] {
            assert_eq!(commands.parse("s", &text(other)), None, "{other}");
        }
        let two = [text("/compact"), text("more")].concat();
        assert_eq!(
            commands.parse("s", &two),
            None,
            "a command is a prompt of its own"
        );
    }

    #[test]
    fn todo_lists_become_plans() {
        let plan = plan_of(&json!({ "todos": [
            { "content": "read the test", "status": "completed", "priority": "high" },
            { "content": "fix it", "status": "in_progress" },
            { "content": "no status" },
            { "content": "run it", "status": "pending", "priority": "low" },
        ]}))
        .unwrap();
        let entries: Vec<_> = plan
            .entries
            .iter()
            .map(|e| (e.content.as_str(), e.status.clone(), e.priority.clone()))
            .collect();
        assert_eq!(
            entries,
            [
                (
                    "read the test",
                    acp::PlanEntryStatus::Completed,
                    acp::PlanEntryPriority::High
                ),
                (
                    "fix it",
                    acp::PlanEntryStatus::InProgress,
                    acp::PlanEntryPriority::Medium
                ),
                (
                    "run it",
                    acp::PlanEntryStatus::Pending,
                    acp::PlanEntryPriority::Low
                ),
            ]
        );
        assert_eq!(plan_of(&json!({ "path": "x" })), None);
    }
}
