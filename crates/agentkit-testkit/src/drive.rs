//! Driving a driver to the end of a turn, the way most tests (ours and
//! yours) need: approve or deny on the way, count the pauses, and check the
//! transcript before handing it back.
//!
//! ```
//! use agentkit_core::Item;
//! use agentkit_loop::{Agent, SessionConfig};
//! use agentkit_testkit::{Approvals, ScriptedModel, ScriptedTurn, run_to_finish};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = ScriptedModel::new([ScriptedTurn::text("hi there")]);
//! let agent = Agent::builder().model(model).input(vec![Item::user("hi")]).build().unwrap();
//! let mut driver = agent.start(SessionConfig::new("t")).await.unwrap();
//! let run = run_to_finish(&mut driver, Approvals::ApproveAll).await.unwrap();
//! assert_eq!(run.result.items[0].text_content(), "hi there");
//! assert_eq!(run.pauses, 0);
//! # });
//! ```

use agentkit_core::{Item, Part, ToolResultPart, TranscriptError, validate_transcript};
use agentkit_loop::{
    LoopDriver, LoopError, LoopInterrupt, LoopStep, ModelSession, PendingApproval, PendingQuestion,
    TurnResult,
};
use std::collections::HashMap;

/// How [`run_to_finish`] answers approvals.
#[non_exhaustive]
pub enum Approvals {
    /// Approve every call.
    ApproveAll,
    /// Deny every call.
    DenyAll,
    /// Ask this function: `true` approves.
    Decide(Box<dyn FnMut(&PendingApproval) -> bool + Send>),
}

impl Approvals {
    /// Decide with a function (`true` approves).
    pub fn decide(f: impl FnMut(&PendingApproval) -> bool + Send + 'static) -> Self {
        Self::Decide(Box::new(f))
    }

    fn approves(&mut self, pending: &PendingApproval) -> bool {
        match self {
            Approvals::ApproveAll => true,
            Approvals::DenyAll => false,
            Approvals::Decide(f) => f(pending),
        }
    }
}

/// What [`run_to_finish`] saw.
#[derive(Debug)]
#[non_exhaustive]
pub struct Run {
    /// The finished turn.
    pub result: TurnResult,
    /// How many `AfterToolResult` pauses it passed.
    pub pauses: usize,
    /// The approvals it was asked, in order.
    pub approvals: Vec<PendingApproval>,
    /// The questions running calls asked, in order (each declined).
    pub questions: Vec<PendingQuestion>,
    /// The whole transcript at the end, already validated.
    pub transcript: Vec<Item>,
}

/// Why [`run_to_finish`] stopped before a turn finished.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriveError {
    /// `next()` failed.
    #[error(transparent)]
    Loop(#[from] LoopError),
    /// The loop asked for input before any turn finished.
    #[error("the loop asked for input before a turn finished")]
    AwaitingInput,
    /// The transcript at the end is not valid.
    #[error("the transcript is not valid: {0}")]
    InvalidTranscript(#[from] TranscriptError),
    /// A kind of pause this helper does not answer (the loop's interrupts
    /// grow; `run_to_finish` knows those of its release), as debug text.
    #[error("the loop paused with an interrupt run_to_finish does not know: {0}")]
    UnknownInterrupt(String),
    /// More steps than the limit (a loop that never ends).
    #[error("no turn finished within {0} steps")]
    TooManySteps(usize),
}

/// The most steps [`run_to_finish`] takes.
pub const MAX_STEPS: usize = 10_000;

/// Calls `next()` until a turn finishes, answering approvals with
/// `approvals`, declining the questions running calls ask and passing
/// `AfterToolResult` pauses, then validates the transcript.
pub async fn run_to_finish<S: ModelSession>(
    driver: &mut LoopDriver<S>,
    mut approvals: Approvals,
) -> Result<Run, DriveError> {
    let mut pauses = 0;
    let mut asked = Vec::new();
    let mut questions = Vec::new();
    for _ in 0..MAX_STEPS {
        match driver.next().await? {
            LoopStep::Finished(result) => {
                let transcript = driver.transcript().to_vec();
                validate_transcript(&transcript)?;
                return Ok(Run {
                    result,
                    pauses,
                    approvals: asked,
                    questions,
                    transcript,
                });
            }
            LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => {
                asked.push(pending.clone());
                if approvals.approves(&pending) {
                    pending.approve(driver)?;
                } else {
                    pending.deny(driver)?;
                }
            }
            LoopStep::Interrupt(LoopInterrupt::Question(pending)) => {
                questions.push(pending.clone());
                pending.decline(driver)?;
            }
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => pauses += 1,
            LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_)) => {
                return Err(DriveError::AwaitingInput);
            }
            LoopStep::Interrupt(other) => {
                return Err(DriveError::UnknownInterrupt(format!("{other:?}")));
            }
        }
    }
    Err(DriveError::TooManySteps(MAX_STEPS))
}

/// Every tool result of a transcript, by call id.
pub fn results_by_call(items: &[Item]) -> HashMap<String, ToolResultPart> {
    items
        .iter()
        .flat_map(|item| item.parts.iter())
        .filter_map(|part| match part {
            Part::ToolResult(result) => Some((result.call_id.to_string(), result.clone())),
            _ => None,
        })
        .collect()
}

/// The `agentkit.error_kind` of a result (`skipped`, `cancelled`,
/// `permission_denied`, ...), if it has one.
pub fn error_kind(result: &ToolResultPart) -> Option<&str> {
    result
        .metadata
        .get(agentkit_core::keys::ERROR_KIND)
        .and_then(serde_json::Value::as_str)
}
