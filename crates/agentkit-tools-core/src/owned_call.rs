//! A tool call as one owned future that holds its tool: the only `unsafe`
//! in the workspace.
//!
//! [`Tool::invoke`] borrows the tool (`&self`), so its future lives no
//! longer than that borrow. An agent loop holds a running call beside other
//! work, with no lifetime to tie it to: it needs a `'static` future. Without
//! this module that takes a second box (an `async move` block owning the
//! tool's `Arc` and awaiting the tool's own box) on every call. An
//! [`OwnedCall`] instead holds the `Arc` and the tool's future side by side,
//! the future's borrow of the tool extended to `'static` (the "yoke"
//! pattern): one allocation per call, the tool's own.
//!
//! Why that is sound is the `SAFETY` comment in [`OwnedCall::poll`]; the
//! struct's shape (fields private, never replaced, the future dropped
//! before the `Arc`) is what that argument relies on. The tests in
//! `tests/owned_call.rs` run under Miri.

#![allow(unsafe_code)]

use crate::{Tool, ToolContext, ToolError, ToolRequest, ToolResult, truncate_output};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The tool's own future (its `async_trait` box), borrowing the tool.
type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolResult, ToolError>> + Send + 'static>>;

/// One call of `tool`, run on the first poll: nothing of the tool runs
/// before (like an `async` block), and a call whose turn was cancelled by
/// then never starts.
pub(crate) struct OwnedCall {
    /// Declared before `tool`, and emptied first by `Drop`: the tool's
    /// future, which borrows `*tool`, is always gone before the `Arc` is.
    state: State,
    /// Never replaced or moved out while `self` lives.
    tool: Arc<dyn Tool>,
    /// The output budget, see [`truncate_output`].
    max_output_bytes: Option<usize>,
}

enum State {
    /// Not polled yet.
    Start(ToolRequest, ToolContext),
    /// The tool runs.
    Running(ToolFuture),
    /// Finished (or panicked while starting).
    Done,
}

impl OwnedCall {
    /// The call of `tool` with this request and context; its output is cut
    /// to `max_output_bytes`.
    pub(crate) fn new(
        tool: Arc<dyn Tool>,
        request: ToolRequest,
        ctx: ToolContext,
        max_output_bytes: Option<usize>,
    ) -> Self {
        Self {
            state: State::Start(request, ctx),
            tool,
            max_output_bytes,
        }
    }
}

impl Future for OwnedCall {
    type Output = Result<ToolResult, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // `OwnedCall` is `Unpin`: the pinned parts are the tool's heap
        // future (behind its own `Pin<Box>`) and the tool (behind the `Arc`).
        let this = self.get_mut();
        if matches!(this.state, State::Start(..)) {
            let State::Start(request, ctx) = std::mem::replace(&mut this.state, State::Done) else {
                unreachable!("checked above");
            };
            if ctx.cancellation.is_cancelled() {
                return Poll::Ready(Err(ToolError::Cancelled));
            }
            // SAFETY: the reference is made from the `Arc` in `this.tool`
            // and only ever reaches the tool's future, stored in
            // `this.state`; it is valid for as long as that future lives:
            // - The pointee is alive: `this.tool` keeps a strong count
            //   until `this` is dropped, and is never replaced or moved out
            //   (private field, no `&mut` access to it anywhere). The future
            //   is dropped before it: `Drop` empties `state` first, and
            //   field order (`state` before `tool`) says the same. A
            //   forgotten `OwnedCall` leaks both, which is safe.
            // - The pointee never moves: moving `OwnedCall` moves the `Arc`
            //   (a pointer), not the heap value it points to.
            // - Only shared access: `&dyn Tool` is all `invoke` gets, and an
            //   `Arc` with another strong count alive hands out no `&mut`
            //   (`get_mut` and `try_unwrap` fail), so nothing mutates the
            //   tool except through its own interior mutability, which a
            //   shared reference permits.
            // - The borrow cannot escape the future: `invoke` is generic
            //   over the lifetime of `&self` (no impl can demand
            //   `'static`, that would be a stricter bound than the trait's),
            //   so its body cannot store the reference anywhere that
            //   outlives the returned future; the output type has no
            //   lifetime. Only this module sees the future, and only to
            //   poll and drop it.
            let tool: &'static dyn Tool = unsafe { &*Arc::as_ptr(&this.tool) };
            // `state` is `Done` here: a panic inside `invoke` leaves a
            // finished call, never a half-moved one.
            this.state = State::Running(tool.invoke(request, ctx));
        }
        let State::Running(future) = &mut this.state else {
            // Polled after it finished: what a finished future may do.
            return Poll::Ready(Err(ToolError::Internal(
                "a tool call was polled after it finished".into(),
            )));
        };
        let outcome = std::task::ready!(future.as_mut().poll(cx));
        // The tool's future ends here, borrow and all.
        this.state = State::Done;
        Poll::Ready(outcome.map(|mut result| {
            if let Some(limit) = this.max_output_bytes {
                result.output = truncate_output(result.output, limit);
            }
            result
        }))
    }
}

impl Drop for OwnedCall {
    fn drop(&mut self) {
        // The tool's future (and with it the borrow of `*self.tool`) goes
        // first, whatever the field order: see `poll`'s SAFETY comment.
        self.state = State::Done;
    }
}
