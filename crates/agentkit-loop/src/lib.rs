//! The agentkit agent loop.
//!
//! An [`Agent`] is immutable configuration: a model adapter, tool sources,
//! permissions, observers. [`Agent::start`] opens a session and returns a
//! [`LoopDriver`], the mutable runtime that owns the transcript. The host
//! pulls the loop forward with [`LoopDriver::next`], which returns either
//! [`LoopStep::Finished`] or [`LoopStep::Interrupt`]: an approval to give
//! (blocking), or a cooperative pause where the host may add input.
//!
//! # Example
//!
//! The README's example (it runs as a doc-test here and in the README):
//!
//! ```
//! use agentkit_core::Item;
//! use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
//! use agentkit_testkit::{ScriptedModel, ScriptedTurn};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([ScriptedTurn::text("Hi there.")]))
//!     .transcript(vec![Item::system("Be brief.")])
//!     .build()?;
//! let mut driver = agent.start(SessionConfig::new("demo")).await?;
//! loop {
//!     match driver.next().await? {
//!         LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) => {
//!             if driver.transcript().len() > 1 { break; }
//!             request.submit(&mut driver, vec![Item::user("hello")])?;
//!         }
//!         LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => pending.approve(&mut driver)?,
//!         LoopStep::Interrupt(LoopInterrupt::Question(pending)) => pending.decline(&mut driver)?,
//!         LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
//!         // Later kinds of pause (the enum is non-exhaustive).
//!         LoopStep::Interrupt(_) => {}
//!         LoopStep::Finished(result) => println!("{}", result.items[0].text_content()),
//!     }
//! }
//! # Ok::<(), agentkit_loop::LoopError>(())
//! # }).unwrap();
//! ```

mod agent;
mod background;
mod cache;
mod driver;
mod encoded;
mod error;
mod event;
mod interrupt;
mod model;
mod mutator;
pub mod replay;
mod snapshot;
mod soft;
mod task;
mod transcript;

pub use agent::{Agent, AgentBuilder};
pub use background::{BackgroundTaskInfo, BackgroundTasks, TaskRouting};
pub use driver::machine::DEFAULT_MAX_MODEL_CALLS;
pub use driver::{LoopDriver, MAX_QUEUED_PROGRESS};
pub use encoded::{BlockWriter, EncodedTranscript};
pub use error::{InvalidStateReason, LoopError, MutatorError};
pub use event::{AgentEvent, LoopObserver, TranscriptObserver};
pub use interrupt::{
    InputRequest, LoopInterrupt, LoopStep, PendingApproval, PendingQuestion, ToolRoundInfo,
    TurnResult,
};
pub use mutator::{
    CompactionReport, LastCallUsage, LoopMutator, MutateError, MutationContext, MutationPoint,
    Rewrite,
};
pub use snapshot::{
    DueModelCall, LoopSnapshot, SNAPSHOT_VERSION, SnapshotBackgroundTask, SnapshotCall,
    SnapshotCallState, SnapshotPhase, SnapshotTurn, arguments_hash,
};
pub use soft::{
    DeliveryMode, InjectedMessage, SoftInterruptHandle, SoftInterruptMessage, SoftInterruptPoint,
};
pub use task::{ConcurrentTaskManager, RoutingPolicy, SimpleTaskManager, TaskManager, ToolJob};

pub use cache::{
    CacheBreakpoint, PromptCacheMode, PromptCacheRequest, PromptCacheRetention, PromptCacheStrategy,
};
pub use model::{
    ModelAdapter, ModelError, ModelErrorKind, ModelSession, ModelTurn, ModelTurnEvent,
    ModelTurnResult, NextEvent, OutputSchema, SessionConfig, TurnRequest,
};
pub use transcript::{TranscriptGuard, TranscriptItems, TranscriptIter, TranscriptView};

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
