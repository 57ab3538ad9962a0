//! What a tool that runs work of its own through a model (a sub-agent, a
//! summarizing tool) needs from the loop hosting the call: somewhere to
//! report the tokens it spent, somewhere to send the events of the loop it
//! runs, and the host's answer when it paused for an approval.
//!
//! These live in `tools-core`, below the agent loop, so the types are kept
//! loop-agnostic: usage is the core [`Usage`], events travel type-erased and
//! the hosting loop passes on only the events of its own event type.

use crate::{ApprovalDecision, ApprovalRequest};
use agentkit_core::Usage;
use std::any::Any;
use std::sync::Arc;

/// Receives the model usage a tool spent while it ran. The loop adds every
/// report to the usage of the turn the call belongs to, so a sub-agent's
/// tokens and cost roll up into its parent's. Cheap to clone; the default
/// drops every report.
#[derive(Clone, Default)]
pub struct UsageSink {
    inner: Option<Arc<dyn Fn(Usage) + Send + Sync>>,
}

impl UsageSink {
    /// A sink that calls `f` for every report (it must not block).
    pub fn new(f: impl Fn(Usage) + Send + Sync + 'static) -> Self {
        Self {
            inner: Some(Arc::new(f)),
        }
    }

    /// Reports usage spent by the running call.
    pub fn report(&self, usage: Usage) {
        if let Some(f) = &self.inner {
            f(usage);
        }
    }
}

impl std::fmt::Debug for UsageSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UsageSink")
            .field("connected", &self.inner.is_some())
            .finish()
    }
}

/// Receives events a tool forwards from an agent loop it runs itself (a
/// sub-agent's events). Type-erased because the event type belongs to the
/// loop crate above this one: the hosting loop passes on events of its own
/// event type to its observers and ignores anything else. Cheap to clone;
/// the default drops every event.
#[derive(Clone, Default)]
pub struct EventSink {
    inner: Option<Arc<EventFn>>,
}

/// What an [`EventSink`] calls.
type EventFn = dyn Fn(Box<dyn Any + Send>) + Send + Sync;

impl EventSink {
    /// A sink that calls `f` for every event (it must not block).
    pub fn new(f: impl Fn(Box<dyn Any + Send>) + Send + Sync + 'static) -> Self {
        Self {
            inner: Some(Arc::new(f)),
        }
    }

    /// `true` when someone listens, so a tool can skip building events.
    pub fn is_connected(&self) -> bool {
        self.inner.is_some()
    }

    /// Sends one event.
    pub fn send<E: Any + Send>(&self, event: E) {
        if let Some(f) = &self.inner {
            f(Box::new(event));
        }
    }
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("connected", &self.inner.is_some())
            .finish()
    }
}

/// The host's answer to an approval a tool asked for mid-run with
/// [`ToolError::NeedsApproval`](crate::ToolError::NeedsApproval). The loop
/// runs the call again with it in [`ToolContext::resume`](crate::ToolContext::resume).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResume {
    /// The request the tool paused with, as the host saw it.
    pub request: ApprovalRequest,
    /// What the host decided.
    pub decision: ApprovalDecision,
}
