//! Recording a session's inputs, replaying them, forking from any step.
//!
//! The driver's core is a deterministic function of what it is told (see
//! [`Input`]): host input and approvals, queued messages, cancellations,
//! each model stream event, preflight verdicts, tool outcomes, mutator
//! rewrites. A driver that records ([`LoopDriver::record_inputs`]) keeps
//! every input in an [`InputLog`], headed by the core's state when the
//! recording began. Replaying the log into a fresh core reproduces the
//! session's transcript and events exactly, with no model, no tools
//! and no clock; [`InputLog::fork_at`] stops at any step and hands back a
//! snapshot that [`Agent::resume`](crate::Agent::resume) continues with a
//! real model: try another answer, or bisect a bad run.
//!
//! ```
//! use agentkit_core::Item;
//! use agentkit_loop::replay::InputLog;
//! use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
//! use agentkit_testkit::{ScriptedModel, ScriptedTurn};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = ScriptedModel::new([ScriptedTurn::text("hello!")]);
//! let agent = Agent::builder().model(model).build()?;
//! let mut driver = agent.start(SessionConfig::new("demo")).await?;
//! driver.record_inputs();
//! let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await? else {
//!     unreachable!()
//! };
//! request.submit(&mut driver, vec![Item::user("hi")])?;
//! driver.next().await?;
//!
//! // The log is JSON lines: it can be stored and read back.
//! let log = driver.input_log().expect("recording");
//! let log = InputLog::from_json_lines(&log.to_json_lines()).unwrap();
//! let replayed = log.replay().unwrap();
//! assert_eq!(replayed.transcript, driver.transcript().to_vec());
//! assert_eq!(replayed.transcript[1].text_content(), "hello!");
//! # Ok::<(), agentkit_loop::LoopError>(())
//! # }).unwrap();
//! ```
//!
//! [`LoopDriver::record_inputs`]: crate::LoopDriver::record_inputs

use crate::driver::machine::{DriverCore, Note};
use crate::{AgentEvent, LoopSnapshot, PromptCacheRequest};
use agentkit_core::Item;
use serde::{Deserialize, Serialize};

pub use crate::driver::machine::{
    CoreSettings, Input, QueuedMessages, RecordedRewrite, Routed, ToolOutcome, Verdict,
};

/// The input-log format this version writes. Version 3: the answers to
/// the actions the shell performs without awaiting (the queue's contents,
/// a round's last preflight verdict, a detach) imply the poll after them,
/// and the poll that would only say "wait for the calls" after a call
/// starts is not made; a round is about half the polls. Version 2: each
/// poll starts at most one call of a round (version 1 started every call
/// the parallelism allowed in one poll, so its logs of parallel rounds do
/// not replay).
pub const INPUT_LOG_VERSION: u32 = 3;

/// The oldest input-log format this version reads: a version 2 log has
/// the polls version 3 implies written out, and replays as it did.
pub const OLDEST_INPUT_LOG_VERSION: u32 = 2;

/// The first line of an input log: where the recording began.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogHeader {
    /// See [`INPUT_LOG_VERSION`].
    pub version: u32,
    /// The settings of the recorded core (they shape its transitions).
    pub settings: CoreSettings,
    /// The agent's default prompt-cache request.
    #[serde(default)]
    pub default_cache: Option<PromptCacheRequest>,
    /// The core's state when the recording began, transcript included.
    pub start: LoopSnapshot,
}

/// A session's recorded inputs: a header, then one input per step.
#[derive(Clone, Debug, PartialEq)]
pub struct InputLog {
    /// Where the recording began.
    pub header: LogHeader,
    /// Every input the core took, in order; a step is an index here.
    pub inputs: Vec<Input>,
}

/// What a replay produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// The transcript at the end of the replayed steps.
    pub transcript: Vec<Item>,
    /// Every event the core emitted, in order: every event observers saw
    /// after the recording began (a tool's progress and a sub-agent's
    /// events included: they enter the core as inputs too).
    pub events: Vec<AgentEvent>,
    /// The steps (indices into [`InputLog::inputs`]) at which the core
    /// yielded to the host: an interrupt or a finished turn.
    pub yields: Vec<usize>,
    /// The core's state at the end, ready for
    /// [`Agent::resume`](crate::Agent::resume).
    pub snapshot: LoopSnapshot,
}

/// Why an input log could not be read or replayed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The log is empty: no header.
    #[error("the input log is empty: it has no header")]
    MissingHeader,
    /// A line is not valid JSON of the expected shape.
    #[error("line {line} of the input log is malformed: {message}")]
    Malformed {
        /// The line, counting from 1.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// The log was written by a format this build does not read.
    #[error(
        "input log version {found} is not supported (this build reads {OLDEST_INPUT_LOG_VERSION} to {INPUT_LOG_VERSION})"
    )]
    Version {
        /// The log's version.
        found: u32,
    },
    /// The step asked for is past the end of the log.
    #[error("step {step} is past the end of the log ({len} inputs)")]
    StepOutOfRange {
        /// The step asked for.
        step: usize,
        /// The log's length.
        len: usize,
    },
}

impl InputLog {
    /// The log as JSON lines: the header, then one input per line.
    pub fn to_json_lines(&self) -> String {
        let mut out = String::new();
        let lines = std::iter::once(serde_json::to_string(&self.header))
            .chain(self.inputs.iter().map(serde_json::to_string));
        for line in lines {
            // Plain data with string keys: serializing cannot fail.
            out.push_str(&line.unwrap_or_default());
            out.push('\n');
        }
        out
    }

    /// Reads a log written by [`to_json_lines`](Self::to_json_lines).
    pub fn from_json_lines(text: &str) -> Result<Self, ReplayError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty());
        let (_, first) = lines.next().ok_or(ReplayError::MissingHeader)?;
        let malformed = |line: usize, err: serde_json::Error| ReplayError::Malformed {
            line: line + 1,
            message: err.to_string(),
        };
        let header: LogHeader = serde_json::from_str(first).map_err(|e| malformed(0, e))?;
        if !(OLDEST_INPUT_LOG_VERSION..=INPUT_LOG_VERSION).contains(&header.version) {
            return Err(ReplayError::Version {
                found: header.version,
            });
        }
        let inputs = lines
            .map(|(n, line)| serde_json::from_str(line).map_err(|e| malformed(n, e)))
            .collect::<Result<_, _>>()?;
        Ok(Self { header, inputs })
    }

    /// The number of recorded steps.
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// `true` when nothing was recorded after the header.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// Replays every step into a fresh core.
    pub fn replay(&self) -> Result<Replay, ReplayError> {
        self.replay_to(self.inputs.len())
    }

    /// Replays the first `step` inputs into a fresh core.
    pub fn replay_to(&self, step: usize) -> Result<Replay, ReplayError> {
        let Some(inputs) = self.inputs.get(..step) else {
            return Err(ReplayError::StepOutOfRange {
                step,
                len: self.inputs.len(),
            });
        };
        let mut core = self.fresh_core();
        let mut events = Vec::new();
        let mut yields = Vec::new();
        for (index, input) in inputs.iter().enumerate() {
            let action = core.apply(input.clone(), self.header.version);
            if let Some(crate::driver::machine::Action::Yield(_)) = action {
                yields.push(index);
            }
            while let Some(note) = core.take_note() {
                if let Note::Event(event) = note {
                    events.push(event);
                }
            }
        }
        Ok(Replay {
            transcript: core.log.to_vec(),
            events,
            yields,
            snapshot: core_snapshot(&core),
        })
    }

    /// A new session continuing from step `step` of this one: resume the
    /// snapshot with [`Agent::resume`](crate::Agent::resume) (give it a
    /// new `session_id` first if both sessions are stored side by side).
    /// A model call the log was streaming at that step is made again; a
    /// call it was running is answered as interrupted.
    pub fn fork_at(&self, step: usize) -> Result<LoopSnapshot, ReplayError> {
        Ok(self.replay_to(step)?.snapshot)
    }

    fn fresh_core(&self) -> DriverCore {
        let settings = CoreSettings {
            observe_events: true,
            observe_items: false,
            ..self.header.settings
        };
        let mut start = self.header.start.clone();
        let background = std::mem::take(&mut start.background);
        let mut core =
            DriverCore::from_snapshot(start, settings, self.header.default_cache.clone());
        core.notifications = background
            .into_iter()
            .filter_map(|saved| Some((saved.task, saved.result?)))
            .collect();
        core
    }
}

/// The core's whole state as a snapshot: transcript and waiting
/// background results included (the header of a log, the end of a replay).
pub(crate) fn core_snapshot(core: &DriverCore) -> LoopSnapshot {
    let mut snapshot = core.snapshot();
    snapshot.transcript = core.log.to_vec();
    snapshot.background = core
        .notifications
        .iter()
        .map(|(task, result)| crate::SnapshotBackgroundTask {
            task: task.clone(),
            result: Some(result.clone()),
        })
        .collect();
    snapshot
}
