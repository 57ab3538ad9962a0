//! The calls of the open round that are running, as the driver holds
//! them: one call without a collection around it (the common case), the
//! task manager's future without a box around it, and a salvage for the
//! outcomes of calls that finished when a `next()` was dropped.

use crate::task::panicked;
use agentkit_core::ToolCallId;
use agentkit_tools_core::{ExecuteFuture, ToolError, ToolResult};
use futures::FutureExt;
use futures::StreamExt;
use futures::future::{BoxFuture, CatchUnwind};
use futures::stream::FuturesUnordered;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tracing::Instrument;
use tracing::instrument::Instrumented;

/// What a call resolves to: its index in the round, its id and outcome.
pub(crate) type CallOutcome = (usize, ToolCallId, Result<ToolResult, ToolError>);

/// A running call: the task manager's future (or the executor's, when
/// the manager runs calls inline), with the call's place in the round
/// beside it rather than in a future boxed around it.
// The common variant is the large one (the executor's future held inline,
// not boxed: boxing it is the allocation this layout saves).
#[allow(clippy::large_enum_variant)]
pub(crate) enum RunningCall {
    /// A foreground call.
    Managed {
        index: usize,
        call_id: ToolCallId,
        run: CallRun,
        /// Record the result in the call's span (then `run` is
        /// [`CallRun::Traced`]).
        record_content: bool,
    },
    /// Any other wait (a detach-after call's outcome).
    Other(BoxFuture<'static, CallOutcome>),
}

/// How a foreground call runs.
// `Inline`, the default task manager's case, is the large variant: the
// executor's future (a call's request and context until its first poll,
// then the tool's own future and the tool) held without a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum CallRun {
    /// The task manager's future.
    Managed(BoxFuture<'static, Result<ToolResult, ToolError>>),
    /// The executor's future, polled here with a panic guard: the task
    /// manager [runs calls inline](crate::TaskManager::runs_inline).
    Inline(CatchUnwind<AssertUnwindSafe<ExecuteFuture>>),
    /// Either of the above in the call's `execute_tool` span, entered at
    /// each poll and while the call is dropped. Made only while a
    /// subscriber listens ([`in_span`](Self::in_span)); boxed, so the
    /// usual call's future stays small.
    Traced(Box<Instrumented<CallRun>>),
}

impl CallRun {
    /// The executor's future for `job`, guarded (making it too: an
    /// executor's own `execute_shared` may panic before it returns).
    /// Inlined where the job is made, so it is not copied on the way in.
    #[inline]
    pub(crate) fn inline(job: crate::ToolJob) -> Self {
        match std::panic::catch_unwind(AssertUnwindSafe(|| job.execute_shared())) {
            Ok(run) => Self::Inline(AssertUnwindSafe(run).catch_unwind()),
            Err(panic) => Self::Managed(futures::future::ready(Err(panicked(&*panic))).boxed()),
        }
    }

    /// The call in `span`; as it is when nobody listens to the span (a
    /// disabled span is neither wrapped around the future, which would
    /// move it, nor entered at each poll).
    #[inline]
    pub(crate) fn in_span(self, span: tracing::Span) -> Self {
        if span.is_disabled() {
            self
        } else {
            self.traced(span)
        }
    }

    /// The call wrapped in `span`, a listened-to one.
    #[inline(never)]
    fn traced(self, span: tracing::Span) -> Self {
        Self::Traced(Box::new(self.instrument(span)))
    }

    /// The call's span, when it runs in one.
    fn span(&self) -> Option<&tracing::Span> {
        match self {
            Self::Traced(run) => Some(run.span()),
            Self::Managed(_) | Self::Inline(_) => None,
        }
    }
}

impl std::future::Future for CallRun {
    type Output = Result<ToolResult, ToolError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match &mut *self {
            Self::Managed(run) => run.poll_unpin(cx),
            Self::Inline(run) => run
                .poll_unpin(cx)
                .map(|outcome| outcome.unwrap_or_else(|panic| Err(panicked(&*panic)))),
            Self::Traced(run) => run.poll_unpin(cx),
        }
    }
}

impl std::future::Future for RunningCall {
    type Output = CallOutcome;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<CallOutcome> {
        match &mut *self {
            Self::Managed {
                index,
                call_id,
                run,
                record_content,
            } => {
                let outcome = std::task::ready!(run.poll_unpin(cx));
                if *record_content
                    && let Ok(result) = &outcome
                    && let Some(span) = run.span()
                {
                    span.record("gen_ai.tool.call.result", result.output.to_text().as_str());
                }
                std::task::Poll::Ready((*index, call_id.clone(), outcome))
            }
            Self::Other(wait) => wait.poll_unpin(cx),
        }
    }
}

/// The calls of the open round that are running, owned by one `next()`.
///
/// If that `next()` is dropped mid-round, the calls that already finished
/// are salvaged for the next `next()` (their real results are kept) and the
/// rest are dropped at once, which cancels them (an MCP call sends its
/// cancellation, a concurrent task is aborted): a host that gave up waiting
/// does not keep work running, and nothing runs twice.
///
/// One call at a time is the common case (the default task manager): it is
/// held as is, and a `FuturesUnordered` (two allocations to make, one per
/// call pushed) is made only when a second call runs beside it.
pub(crate) struct Running {
    one: Option<RunningCall>,
    many: Option<FuturesUnordered<RunningCall>>,
    /// The driver's salvage, shared once a call runs.
    salvage: Option<Salvage>,
}

/// Where a dropped `next()` leaves the outcomes of calls that finished.
pub(crate) type Salvage = Arc<std::sync::Mutex<Vec<CallOutcome>>>;

impl Running {
    pub(crate) fn new() -> Self {
        Self {
            one: None,
            many: None,
            salvage: None,
        }
    }

    /// `true` when no call runs.
    pub(crate) fn is_empty(&self) -> bool {
        self.one.is_none() && self.many.as_ref().is_none_or(FuturesUnordered::is_empty)
    }

    /// Runs `call` beside the others; a dropped `next()` leaves what
    /// finished in `salvage` (the driver's, made with its first call).
    /// Inlined where the call is made, so it is not copied on the way in.
    #[inline]
    pub(crate) fn push(&mut self, call: RunningCall, salvage: &mut Option<Salvage>) {
        if self.salvage.is_none() {
            self.salvage = Some(salvage.get_or_insert_with(Arc::default).clone());
        }
        if self.is_empty() {
            self.one = Some(call);
        } else {
            self.many
                .get_or_insert_with(FuturesUnordered::new)
                .push(call);
        }
    }

    /// Drops every running call, which cancels it.
    pub(crate) fn clear(&mut self) {
        self.one = None;
        self.many = None;
    }

    /// The next call to finish; `None` when none runs.
    pub(crate) fn poll_next(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<CallOutcome>> {
        use std::task::Poll;
        if let Some(call) = self.one.as_mut()
            && let Poll::Ready(outcome) = call.poll_unpin(cx)
        {
            self.one = None;
            return Poll::Ready(Some(outcome));
        }
        if let Some(many) = self.many.as_mut()
            && let Poll::Ready(Some(outcome)) = many.poll_next_unpin(cx)
        {
            return Poll::Ready(Some(outcome));
        }
        if self.is_empty() {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }

    /// Every call that already finished, without waiting.
    pub(crate) fn ready(&mut self) -> Vec<CallOutcome> {
        let mut ready = Vec::new();
        let waker = futures::task::noop_waker_ref();
        let mut cx = std::task::Context::from_waker(waker);
        while let std::task::Poll::Ready(Some(outcome)) = self.poll_next(&mut cx) {
            ready.push(outcome);
        }
        ready
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.is_empty() {
            return;
        }
        let ready = self.ready();
        if let Some(salvage) = &self.salvage {
            salvage
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(ready);
        }
    }
}
