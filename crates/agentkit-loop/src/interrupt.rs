//! What `next()` returns: a finished turn, or an interrupt the host handles.
//!
//! Each interrupt carries a small handle whose methods resolve it against the
//! driver (`pending.approve(&mut driver)`), so the host never has to match ids
//! by hand. The handles are plain data (serializable) so an interrupted
//! session can be stored and shown again after a restart.

use crate::{LoopDriver, LoopError, ModelSession};
use agentkit_core::{FinishReason, Item, MetadataMap, SessionId, ToolCallPart, TurnId, Usage};
use agentkit_tools_core::{ApprovalDecision, ApprovalRequest, HostAnswer, HostQuestion};
use serde::{Deserialize, Serialize};

/// The outcome of one [`LoopDriver::next`] call.
///
/// A host's loop matches on it: give approvals, supply input when asked,
/// and read the finished turn.
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
/// use agentkit_tools_core::{
///     PermissionRequest, ShellCommand, Tool, ToolContext, ToolError, ToolRegistry, ToolRequest,
///     ToolResult, ToolSpec,
/// };
/// use serde_json::{Value, json};
/// use std::sync::Arc;
///
/// /// Deploys the site: a side effect, so the default permissions ask first.
/// struct Deploy(Arc<ToolSpec>);
///
/// #[async_trait::async_trait]
/// impl Tool for Deploy {
///     fn spec(&self) -> Arc<ToolSpec> {
///         self.0.clone()
///     }
///     fn proposed_requests(&self, _: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
///         Ok(vec![PermissionRequest::shell(ShellCommand::new("make deploy"))])
///     }
///     async fn invoke(&self, _: ToolRequest, _: ToolContext) -> Result<ToolResult, ToolError> {
///         Ok(ToolResult::new("deployed"))
///     }
/// }
/// let deploy = Deploy(Arc::new(ToolSpec::new("deploy", "Deploys the site.", json!({ "type": "object" })).unwrap()));
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([
///         ScriptedTurn::tool_call("call-1", "deploy", json!({})),
///         ScriptedTurn::text("The site is live."),
///     ]))
///     .add_tool_source(ToolRegistry::new().with(deploy))
///     .build()?;
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
/// let mut asked = false;
/// let answer = loop {
///     match driver.next().await? {
///         LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) => {
///             request.submit(&mut driver, vec![Item::user("Deploy the site.")])?;
///         }
///         // Blocking: `next()` refuses to go on until it is resolved.
///         LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => {
///             asked = true;
///             pending.approve(&mut driver)?;
///         }
///         // Blocking for one call: a running tool asks the user (none here).
///         LoopStep::Interrupt(LoopInterrupt::Question(pending)) => pending.decline(&mut driver)?,
///         // Cooperative: the tool round is done; nothing to add.
///         LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
///         // Kinds of pause a later release adds (the enum is
///         // non-exhaustive): a blocking one makes the next `next()` fail.
///         LoopStep::Interrupt(_) => {}
///         // The turn's items: the call, its result, the answer.
///         LoopStep::Finished(turn) => break turn.items.last().unwrap().text_content(),
///     }
/// };
/// assert!(asked);
/// assert_eq!(answer, "The site is live.");
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", content = "value", rename_all = "snake_case")]
pub enum LoopStep {
    /// The loop needs (or invites) the host's attention.
    Interrupt(LoopInterrupt),
    /// The model finished a turn.
    Finished(TurnResult),
}

/// Why the loop paused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "interrupt", content = "value", rename_all = "snake_case")]
// The approval is the largest variant, and larger still when a crate in the
// build turns on serde_json's `preserve_order` (IndexMap metadata; the ACP
// SDK does). One value per `next()` call: boxing it would cost an API change
// for nothing measurable.
#[allow(clippy::large_enum_variant)]
// More kinds of pause will come (the question was one): a host's match
// needs an arm for the rest.
#[non_exhaustive]
pub enum LoopInterrupt {
    /// A tool call needs approval. Blocking: `next()` refuses to run until
    /// it is resolved.
    ApprovalRequest(PendingApproval),
    /// The loop has no input to send. Cooperative.
    AwaitingInput(InputRequest),
    /// A tool round finished and the model is about to be called again.
    /// Cooperative: the host may add a message, or just call `next()`.
    AfterToolResult(ToolRoundInfo),
    /// A running tool call asked the host a question (an MCP server's
    /// elicitation). Blocking for that call alone: the call waits, not
    /// run again, until the host answers; the round's other calls ran on
    /// before it was shown.
    Question(PendingQuestion),
}

impl LoopInterrupt {
    /// `true` for interrupts that must be resolved before the loop can go on
    /// (approvals); `false` for cooperative pauses the host may ignore.
    pub fn is_blocking(&self) -> bool {
        matches!(
            self,
            LoopInterrupt::ApprovalRequest(_) | LoopInterrupt::Question(_)
        )
    }
}

/// A running tool call waiting for the host's answer to its question.
///
/// Answer it against the driver it came from: [`accept`](Self::accept)
/// with form content (checked against the question's schema, its defaults
/// filled in; content that does not match is refused with
/// [`InvalidStateReason::InvalidAnswer`](crate::InvalidStateReason::InvalidAnswer)
/// and the question stays open), [`decline`](Self::decline) or
/// [`cancel`](Self::cancel). The answer resumes the waiting call; cancelling
/// the turn answers it with cancel.
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
/// use agentkit_tools_core::{
///     HostAnswer, HostQuestion, Tool, ToolContext, ToolError, ToolRegistry, ToolRequest,
///     ToolResult, ToolSpec,
/// };
/// use serde_json::json;
/// use std::sync::Arc;
///
/// /// Greets whoever the user names.
/// struct Greet(Arc<ToolSpec>);
///
/// #[async_trait::async_trait]
/// impl Tool for Greet {
///     fn spec(&self) -> Arc<ToolSpec> {
///         self.0.clone()
///     }
///     async fn invoke(&self, _: ToolRequest, ctx: ToolContext) -> Result<ToolResult, ToolError> {
///         let schema = json!({ "type": "object", "properties": {
///             "name": { "type": "string" },
///             "greeting": { "type": "string", "default": "Hello" }
///         }, "required": ["name"] });
///         match ctx.ask(HostQuestion::form("Whom should I greet?", schema)).await {
///             HostAnswer::Accept(form) => Ok(ToolResult::new(format!("{}, {}!", form["greeting"].as_str().unwrap(), form["name"].as_str().unwrap()))),
///             _ => Ok(ToolResult::error("nobody to greet")),
///         }
///     }
/// }
/// let greet = Greet(Arc::new(ToolSpec::new("greet", "Greets someone.", json!({ "type": "object" })).unwrap()));
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([
///         ScriptedTurn::tool_call("call-1", "greet", json!({})),
///         ScriptedTurn::text("Greeted."),
///     ]))
///     .add_tool_source(ToolRegistry::new().with(greet))
///     .input(vec![Item::user("Greet someone.")])
///     .build()?;
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
/// let LoopStep::Interrupt(LoopInterrupt::Question(pending)) = driver.next().await? else {
///     panic!("the tool asks")
/// };
/// assert_eq!(pending.question.message, "Whom should I greet?");
/// // Content the schema refuses is not sent; the question stays open.
/// let refused = pending.clone().accept(&mut driver, json!({ "name": 7 }).as_object().unwrap().clone());
/// assert!(refused.is_err());
/// pending.accept(&mut driver, json!({ "name": "Ada" }).as_object().unwrap().clone())?;
/// while !matches!(driver.next().await?, LoopStep::Finished(_)) {}
/// let transcript = driver.transcript().to_vec();
/// let result = transcript.iter().flat_map(|item| item.tool_results()).next().unwrap();
/// assert_eq!(result.output.to_text(), "Hello, Ada!");
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingQuestion {
    /// What is asked.
    pub question: HostQuestion,
    /// The call that asks (tool name and arguments), for display.
    pub call: ToolCallPart,
}

impl PendingQuestion {
    /// Answers with `content` (for a URL question: the user agreed to go;
    /// pass an empty map).
    pub fn accept<S: ModelSession>(
        self,
        driver: &mut impl AsMut<LoopDriver<S>>,
        content: serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), LoopError> {
        driver
            .as_mut()
            .answer_question_for(self.call.id, HostAnswer::Accept(content))
    }

    /// The user said no; the call goes on without the input.
    pub fn decline<S: ModelSession>(
        self,
        driver: &mut impl AsMut<LoopDriver<S>>,
    ) -> Result<(), LoopError> {
        driver
            .as_mut()
            .answer_question_for(self.call.id, HostAnswer::Decline)
    }

    /// The user dismissed the question; the call should stop what asked.
    pub fn cancel<S: ModelSession>(
        self,
        driver: &mut impl AsMut<LoopDriver<S>>,
    ) -> Result<(), LoopError> {
        driver
            .as_mut()
            .answer_question_for(self.call.id, HostAnswer::Cancel)
    }
}

/// A tool call waiting for approval.
///
/// Resolve it against the driver it came from: [`approve`](Self::approve),
/// [`deny`](Self::deny) or [`deny_with_reason`](Self::deny_with_reason).
/// Denied calls get a result saying so, which the model reads.
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
/// use agentkit_tools_core::{
///     PermissionRequest, ShellCommand, Tool, ToolContext, ToolError, ToolRegistry, ToolRequest,
///     ToolResult, ToolSpec,
/// };
/// use serde_json::{Value, json};
/// use std::sync::Arc;
///
/// /// Deploys the site: a side effect, so the default permissions ask first.
/// struct Deploy(Arc<ToolSpec>);
///
/// #[async_trait::async_trait]
/// impl Tool for Deploy {
///     fn spec(&self) -> Arc<ToolSpec> {
///         self.0.clone()
///     }
///     fn proposed_requests(&self, _: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
///         Ok(vec![PermissionRequest::shell(ShellCommand::new("make deploy"))])
///     }
///     async fn invoke(&self, _: ToolRequest, _: ToolContext) -> Result<ToolResult, ToolError> {
///         Ok(ToolResult::new("deployed"))
///     }
/// }
/// let deploy = Deploy(Arc::new(ToolSpec::new("deploy", "Deploys the site.", json!({ "type": "object" })).unwrap()));
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([
///         ScriptedTurn::tool_call("call-1", "deploy", json!({})),
///         ScriptedTurn::text("Understood, not deploying."),
///     ]))
///     .add_tool_source(ToolRegistry::new().with(deploy))
///     .input(vec![Item::user("Deploy the site.")])
///     .build()?;
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
///
/// let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await? else {
///     panic!("deploying needs approval")
/// };
/// assert_eq!(&*pending.call.name, "deploy");
/// println!("{}", pending.request.summary); // shown to the user
/// pending.deny_with_reason(&mut driver, "not on a Friday")?;
///
/// // The model is told, and answers.
/// let step = loop {
///     match driver.next().await? {
///         LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => continue,
///         step => break step,
///     }
/// };
/// assert!(matches!(step, LoopStep::Finished(_)));
/// let transcript = driver.transcript().to_vec();
/// let result = transcript.iter().flat_map(|item| item.tool_results()).next().unwrap();
/// assert!(result.output.to_text().contains("not on a Friday"));
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// What is asked, and why.
    pub request: ApprovalRequest,
    /// The call itself (tool name and arguments), for display.
    pub call: ToolCallPart,
}

// The handles take anything that holds a driver (`&mut impl
// AsMut<LoopDriver<S>>`): the driver itself, or a host's wrapper such as the
// store's saving `Session`.

impl PendingApproval {
    /// Lets the call run.
    pub fn approve<S: ModelSession>(
        self,
        driver: &mut impl AsMut<LoopDriver<S>>,
    ) -> Result<(), LoopError> {
        driver
            .as_mut()
            .resolve_approval_for(self.call.id, ApprovalDecision::Approve)
    }

    /// Refuses the call; the model is told it was denied.
    pub fn deny<S: ModelSession>(
        self,
        driver: &mut impl AsMut<LoopDriver<S>>,
    ) -> Result<(), LoopError> {
        driver
            .as_mut()
            .resolve_approval_for(self.call.id, ApprovalDecision::deny())
    }

    /// Refuses the call with a reason the model will read.
    pub fn deny_with_reason<S: ModelSession>(
        self,
        driver: &mut impl AsMut<LoopDriver<S>>,
        reason: impl Into<String>,
    ) -> Result<(), LoopError> {
        driver
            .as_mut()
            .resolve_approval_for(self.call.id, ApprovalDecision::deny_with_reason(reason))
    }
}

/// The loop is waiting for the next user turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The session.
    pub session_id: SessionId,
    /// Why input is needed, for display.
    pub reason: String,
}

impl InputRequest {
    /// Queues these items as the next input; the following `next()` sends them.
    pub fn submit<S: ModelSession>(
        self,
        driver: &mut impl AsMut<LoopDriver<S>>,
        items: Vec<Item>,
    ) -> Result<(), LoopError> {
        driver.as_mut().submit_input(items)
    }
}

/// A tool round finished; every call of it has its result in the transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolRoundInfo {
    /// The session.
    pub session_id: SessionId,
    /// The model turn whose tool calls were answered.
    pub turn_id: TurnId,
    /// The transcript's length at the pause.
    pub transcript_len: usize,
}

impl ToolRoundInfo {
    /// Adds items (typically a user message) that the next model call will
    /// see after the tool results. The handle is consumed: one submit per pause.
    pub fn submit<S: ModelSession>(
        self,
        driver: &mut impl AsMut<LoopDriver<S>>,
        items: Vec<Item>,
    ) -> Result<(), LoopError> {
        driver.as_mut().submit_input(items)
    }
}

/// A finished turn.
///
/// ```
/// use agentkit_core::{FinishReason, Item, ItemKind, TokenUsage, Usage};
/// use agentkit_loop::{Agent, SessionConfig};
/// use agentkit_testkit::{Approvals, ScriptedModel, ScriptedTurn, run_to_finish};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let used = |n| Usage::from_tokens(TokenUsage { input_tokens: n, output_tokens: 5, ..Default::default() });
/// let model = ScriptedModel::new([
///     // An unknown tool: the call is still answered, with an error result.
///     ScriptedTurn::new().call("c1", "lookup", json!({})).usage(used(100)).finish(FinishReason::ToolCall),
///     ScriptedTurn::new().say("Done.").usage(used(120)).finish(FinishReason::Completed),
/// ]);
/// let agent = Agent::builder().model(model).input(vec![Item::user("go")]).build()?;
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
/// let result = run_to_finish(&mut driver, Approvals::ApproveAll).await.unwrap().result;
///
/// assert_eq!(result.finish_reason, FinishReason::Completed);
/// // Everything the turn appended: the call, its answer, the final text.
/// let kinds: Vec<ItemKind> = result.items.iter().map(|item| item.kind).collect();
/// assert_eq!(kinds, [ItemKind::Assistant, ItemKind::Tool, ItemKind::Assistant]);
/// // Usage summed over the turn's two model calls.
/// assert_eq!(result.usage.tokens.input_tokens, 220);
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnResult {
    /// The last model call of the turn.
    pub turn_id: TurnId,
    /// Why the turn ended.
    pub finish_reason: FinishReason,
    /// Items the turn appended: the model's answers and the tool results.
    pub items: Vec<Item>,
    /// Usage summed over the turn's model calls.
    pub usage: Usage,
    /// Extra data, such as `agentkit.interrupted` after a cancellation.
    pub metadata: MetadataMap,
}
