//! Sub-agents: an agent offered to another agent as a tool.
//!
//! A [`SubAgent`] wraps a factory of [`AgentBuilder`]s (its own model,
//! instructions, tools, permissions and step limit) and is itself a
//! [`Tool`]. The parent's model calls it with `{ "task": "...", "context":
//! "..." }`; each call starts a fresh child session, drives it to the end of
//! its turn and answers with the child's final answer (or, with an
//! [output schema](SubAgent::with_output_schema), its structured result).
//!
//! What a host can rely on:
//!
//! - **Cancellation flows down.** Interrupting the parent's turn interrupts
//!   the child's; the child's turn ends cancelled with a valid transcript,
//!   the parent's call is answered as cancelled. A parent that stops waiting
//!   for the call (an urgent message skips it, a timeout) stops the child too.
//! - **Usage rolls up.** The child's token usage and cost are reported
//!   through [`ToolContext::report_usage`] and count in the parent's turn.
//! - **Events are tagged.** Every event of the child reaches the parent's
//!   observers as [`AgentEvent::SubAgent`] with the child's name and depth;
//!   a grandchild's events arrive flattened with depth 2.
//! - **Approvals surface.** A child's call that needs approval is not
//!   auto-approved: the child pauses, the parent's call pauses with
//!   [`ToolError::NeedsApproval`], and the parent's host sees an ordinary
//!   [`PendingApproval`](agentkit_loop::PendingApproval) whose summary and
//!   metadata (`agentkit.sub_agent`, `agentkit.sub_agent_path`) name the
//!   child. Approving or denying it resumes the child, which reads the
//!   decision like any agent would.
//! - **Failures are typed.** A child that hits its step limit, fails or is
//!   cut short answers the parent's call with a [`ToolError`] built from a
//!   [`SubAgentError`], and its own transcript stays valid.
//!
//! # Example
//!
//! ```
//! use agentkit_core::{FinishReason, Item};
//! use agentkit_loop::{Agent, SessionConfig};
//! use agentkit_subagent::SubAgent;
//! use agentkit_testkit::{Approvals, ScriptedModel, ScriptedTurn, run_to_finish};
//! use agentkit_tools_core::ToolRegistry;
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // The child: its own model (scripted here), instructions and step limit.
//! let child_model = ScriptedModel::new([ScriptedTurn::text("Paris has 2.1 million people.")]);
//! let researcher = SubAgent::new("researcher", "Looks facts up.", move || {
//!     Agent::builder().model(child_model.clone()).max_model_calls(5)
//! })?
//! .with_instructions("You look facts up and answer in one sentence.");
//!
//! let parent = Agent::builder()
//!     .model(ScriptedModel::new([
//!         ScriptedTurn::tool_call("call-1", "researcher", json!({ "task": "Population of Paris?" })),
//!         ScriptedTurn::text("About 2.1 million."),
//!     ]))
//!     .add_tool_source(ToolRegistry::new().with(researcher))
//!     .input(vec![Item::user("How many people live in Paris?")])
//!     .build()?;
//! let mut driver = parent.start(SessionConfig::new("demo")).await?;
//! let run = run_to_finish(&mut driver, Approvals::DenyAll).await.unwrap();
//! assert_eq!(run.result.finish_reason, FinishReason::Completed);
//! let answer = run.transcript.iter().flat_map(|i| i.tool_results()).next().unwrap();
//! assert_eq!(answer.output.to_text(), "Paris has 2.1 million people.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod run;

use agentkit_core::{CancellationController, Item, ItemKind, SessionId, ToolCallId, TurnId};
use agentkit_loop::{AgentBuilder, AgentEvent, LoopObserver, ModelAdapter, OutputSchema};
use agentkit_tools_core::{
    EventSink, InvalidToolName, Tool, ToolContext, ToolError, ToolRequest, ToolResult, ToolSpec,
};
use run::{Parked, Report};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Metadata key naming the sub-agent an approval request comes from.
pub const SUB_AGENT_KEY: &str = agentkit_core::keys::SUB_AGENT;
/// Metadata key with the chain of sub-agents an approval request went
/// through, outermost first (`["planner", "researcher"]`).
pub const SUB_AGENT_PATH_KEY: &str = agentkit_core::keys::SUB_AGENT_PATH;

type Factory<M> = dyn Fn() -> AgentBuilder<M> + Send + Sync;

/// An agent offered to another as a tool; see the [crate docs](crate).
/// Cheap to clone: clones share the factory and the parked children.
pub struct SubAgent<M: ModelAdapter> {
    name: String,
    spec: Arc<ToolSpec>,
    factory: Arc<Factory<M>>,
    instructions: Option<String>,
    output_schema: Option<Arc<OutputSchema>>,
    /// Children paused at an approval, by the parent's session and call.
    parked: Arc<Mutex<HashMap<(SessionId, ToolCallId), Parked>>>,
}

impl<M: ModelAdapter> Clone for SubAgent<M> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            spec: self.spec.clone(),
            factory: self.factory.clone(),
            instructions: self.instructions.clone(),
            output_schema: self.output_schema.clone(),
            parked: self.parked.clone(),
        }
    }
}

/// Why a sub-agent's call did not produce an answer. The parent's model
/// reads it as the call's error result (`ToolError::ExecutionFailed`, or
/// `ToolError::Cancelled` when the turn was interrupted).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SubAgentError {
    /// The child used all the model calls its step limit allows.
    #[error(
        "sub-agent {agent} reached its step limit ({limit} model calls) before answering{}",
        last_words(.partial)
    )]
    StepLimit {
        /// The sub-agent.
        agent: String,
        /// Its step limit.
        limit: u64,
        /// The last thing it said, if anything.
        partial: Option<String>,
    },
    /// The child's loop failed (its model failed for good, say); its turn
    /// was abandoned.
    #[error("sub-agent {agent} failed: {message}")]
    Failed {
        /// The sub-agent.
        agent: String,
        /// What went wrong.
        message: String,
    },
    /// The child stopped for another reason (token limit, refusal).
    #[error("sub-agent {agent} stopped without a final answer ({reason}){}", last_words(.partial))]
    Stopped {
        /// The sub-agent.
        agent: String,
        /// The finish reason, as words.
        reason: String,
        /// The last thing it said, if anything.
        partial: Option<String>,
    },
    /// The child has an output schema and its answer is not valid JSON.
    #[error("sub-agent {agent} answered with invalid JSON: {message}")]
    InvalidStructuredAnswer {
        /// The sub-agent.
        agent: String,
        /// The parser's message.
        message: String,
    },
    /// The parent's call was resumed after an approval, but the child that
    /// asked is gone (the parent was resumed from a snapshot in another
    /// process, or the child was ended in between).
    #[error("sub-agent {agent} is no longer waiting for this approval")]
    Lost {
        /// The sub-agent.
        agent: String,
    },
}

fn last_words(partial: &Option<String>) -> String {
    match partial {
        Some(text) if !text.is_empty() => format!("; its last words: {text}"),
        _ => String::new(),
    }
}

impl From<SubAgentError> for ToolError {
    fn from(err: SubAgentError) -> Self {
        match err {
            SubAgentError::Lost { .. } => ToolError::Unavailable(err.to_string()),
            _ => ToolError::ExecutionFailed(err.to_string()),
        }
    }
}

impl<M: ModelAdapter> SubAgent<M> {
    /// A sub-agent offered as the tool `name`. `factory` builds the child's
    /// agent for every call: model, tools, permissions, step limit,
    /// mutators, observers of its own. The sub-agent adds its input, a
    /// cancellation handle and an observer forwarding to the parent, so the
    /// factory must not set those. Fails if `name` is not a valid tool name.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        factory: impl Fn() -> AgentBuilder<M> + Send + Sync + 'static,
    ) -> Result<Self, InvalidToolName> {
        let name = name.into();
        let spec = ToolSpec::new(name.clone(), description, input_schema())?;
        Ok(Self {
            name,
            spec: Arc::new(spec),
            factory: Arc::new(factory),
            instructions: None,
            output_schema: None,
            parked: Arc::default(),
        })
    }

    /// The child's instructions: every child session starts from one
    /// system item with this text (replacing the factory's transcript).
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Asks the child for a structured answer matching `schema`; the
    /// parent's call then gets the parsed JSON as a structured result.
    pub fn with_output_schema(mut self, schema: impl Into<Arc<OutputSchema>>) -> Self {
        self.output_schema = Some(schema.into());
        self
    }

    /// The tool's name, which is also the sub-agent's name in events and
    /// approval requests.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many children are paused at an approval their parent's host has
    /// not answered yet.
    pub fn parked(&self) -> usize {
        self.lock_parked()
            .values()
            .filter(|parked| !parked.decide.is_closed())
            .count()
    }
}

/// `{ "task": string, "context"?: string }`.
fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "What the sub-agent should do, stated completely: it sees nothing else of this conversation."
            },
            "context": {
                "type": "string",
                "description": "Optional background the sub-agent needs (facts, file names, constraints)."
            }
        },
        "required": ["task"],
        "additionalProperties": false
    })
}

impl<M: ModelAdapter> SubAgent<M> {
    fn lock_parked(&self) -> std::sync::MutexGuard<'_, HashMap<(SessionId, ToolCallId), Parked>> {
        self.parked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a child session for a fresh call and waits for its first report.
    async fn start(
        &self,
        request: ToolRequest,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let task = request.input["task"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut input = Vec::new();
        if let Some(context) = request.input["context"].as_str() {
            input.push(Item::text(ItemKind::Context, context));
        }
        input.push(Item::user(task));
        self.sweep(&ctx.session_id, &ctx.turn_id);

        let controller = CancellationController::new();
        let mut builder = (self.factory)()
            .cancellation(controller.handle())
            .input(input);
        if let Some(instructions) = &self.instructions {
            builder = builder.transcript(vec![Item::system(instructions.clone())]);
        }
        if let Some(schema) = &self.output_schema {
            builder = builder.output_schema(schema.clone());
        }
        if ctx.events.is_connected() {
            builder = builder.observer(Forward {
                agent: self.name.clone(),
                call_id: ctx.call_id.clone(),
                sink: ctx.events.clone(),
            });
        }
        let failed = |message: String| {
            ToolError::from(SubAgentError::Failed {
                agent: self.name.clone(),
                message,
            })
        };
        let agent = builder.build().map_err(|err| failed(err.to_string()))?;
        let session = SessionId::new(format!("{}/{}/{}", ctx.session_id, self.name, ctx.call_id));
        let driver = agent
            .start(agentkit_loop::SessionConfig::new(session))
            .await
            .map_err(|err| failed(err.to_string()))?;
        let reports = run::spawn(
            driver,
            run::Child {
                agent: self.name.clone(),
                controller: controller.clone(),
                parent: ctx.cancellation.clone(),
                usage: ctx.usage.clone(),
                structured: self.output_schema.is_some(),
                asks: (ctx.call_id.clone(), ctx.questions.clone()),
            },
        );
        self.wait(reports, controller, ctx).await
    }

    /// Hands the host's answer to the child paused for this call, and
    /// waits for its next report.
    async fn resume(
        &self,
        decision: agentkit_tools_core::ApprovalDecision,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let key = (ctx.session_id.clone(), ctx.call_id.clone());
        let Some(parked) = self.lock_parked().remove(&key) else {
            return Err(SubAgentError::Lost {
                agent: self.name.clone(),
            }
            .into());
        };
        // If the child is gone meanwhile, its report channel says so.
        let _ = parked.decide.send(decision);
        self.wait(parked.reports, parked.controller, ctx).await
    }

    /// Waits for the child's next report: its answer, or an approval the
    /// parent's host must give (the child is parked until then).
    async fn wait(
        &self,
        mut reports: tokio::sync::mpsc::UnboundedReceiver<Report>,
        controller: CancellationController,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        // Dropped before a report arrives (the parent stopped waiting): the
        // child is interrupted and ends its turn cancelled.
        let guard = run::InterruptOnDrop(Some(controller.clone()));
        let report = reports.recv().await;
        guard.disarm();
        match report {
            Some(Report::Done(outcome)) => outcome,
            Some(Report::Approval(pending, decide)) => {
                let request = run::surfaced(&self.name, &ctx.call_id, pending);
                self.lock_parked().insert(
                    (ctx.session_id.clone(), ctx.call_id.clone()),
                    Parked {
                        reports,
                        decide,
                        controller,
                        turn_id: ctx.turn_id.clone(),
                    },
                );
                Err(ToolError::NeedsApproval(Box::new(request)))
            }
            None => Err(ToolError::Internal(format!(
                "sub-agent {} stopped without reporting",
                self.name
            ))),
        }
    }

    /// Ends children of this session parked in an earlier model turn: their
    /// parent's call was answered some other way (skipped, abandoned) and
    /// will not be resumed. Dropping the entry interrupts the child. Entries
    /// of children that already ended (their parent was cancelled) go too.
    fn sweep(&self, session: &SessionId, turn: &TurnId) {
        self.lock_parked().retain(|(parked_session, _), parked| {
            !parked.decide.is_closed() && (parked_session != session || parked.turn_id == *turn)
        });
    }
}

#[async_trait::async_trait]
impl<M: ModelAdapter> Tool for SubAgent<M> {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        match ctx.resume.clone() {
            Some(resume) => self.resume(resume.decision, &ctx).await,
            None => self.start(request, &ctx).await,
        }
    }
}

/// Forwards a child's events to the parent's loop, tagged. A grandchild's
/// events arrive already tagged: they pass on one level deeper, so the
/// parent's observers see them flattened.
struct Forward {
    agent: String,
    call_id: ToolCallId,
    sink: EventSink,
}

impl LoopObserver for Forward {
    fn handle_event(&self, event: AgentEvent) {
        let tagged = match event {
            AgentEvent::SubAgent {
                agent,
                depth,
                call_id,
                inner,
            } => AgentEvent::SubAgent {
                agent,
                depth: depth + 1,
                call_id,
                inner,
            },
            inner => AgentEvent::SubAgent {
                agent: self.agent.clone(),
                depth: 1,
                call_id: self.call_id.clone(),
                inner: Box::new(inner),
            },
        };
        self.sink.send(tagged);
    }
}
