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
//! Why that is sound is the `SAFETY` comment in [`OwnedCall::new`]; the
//! struct's shape (fields private, never replaced, the future dropped
//! before the `Arc`) is what that argument relies on. The tests in
//! `tests/owned_call.rs` run under Miri.

#![allow(unsafe_code)]

use crate::{Tool, ToolContext, ToolError, ToolRequest, ToolResult, truncate_output};
use agentkit_core::TurnCancellation;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The tool's own future (its `async_trait` box), borrowing the tool.
type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolResult, ToolError>> + Send + 'static>>;

/// One call of `tool`. The tool's future is made at once (an `async_trait`
/// method only boxes its body: nothing of the tool runs) and first polled
/// by the first poll of the call, unless the call's turn was cancelled by
/// then: such a call never starts.
///
/// Small on purpose: the loop moves a call's future a few times before it
/// runs (into the task manager's slot, the span, the running set), so the
/// request and context live in the tool's box, not here.
pub(crate) struct OwnedCall {
    /// Declared before `_tool`, and emptied first by `Drop`: the tool's
    /// future, which borrows `*_tool`, is always gone before the `Arc` is.
    /// `None` once finished.
    future: Option<ToolFuture>,
    /// The call's cancellation until its first poll, `None` after.
    unstarted: Option<TurnCancellation>,
    /// The tool the future borrows, held only to keep it alive (hence
    /// never read); never replaced or moved out while `self` lives.
    _tool: Arc<dyn Tool>,
    /// The output budget, see [`truncate_output`].
    max_output_bytes: Option<usize>,
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
        let unstarted = Some(ctx.cancellation.clone());
        // SAFETY: the reference is made from the `Arc` that ends up in the
        // returned value's `_tool` field (moving an `Arc` moves a pointer,
        // not the value it points to) and only ever reaches the tool's
        // future, stored in its `future` field; it stays valid for as long
        // as that future lives:
        // - The pointee is alive: `_tool` keeps a strong count until the
        //   `OwnedCall` is dropped, and is never replaced or moved out
        //   (private field, no `&mut` access to it anywhere). The future
        //   is dropped before it: `Drop` empties `future` first, and field
        //   order (`future` before `_tool`) says the same. If `invoke`
        //   panics, no future exists and the `Arc` is dropped on the way
        //   out. A forgotten `OwnedCall` leaks both, which is safe.
        // - The pointee never moves: it is the `Arc`'s heap allocation.
        // - Only shared access: `&dyn Tool` is all `invoke` gets, and an
        //   `Arc` with another strong count alive hands out no `&mut`
        //   (`get_mut` and `try_unwrap` fail), so nothing mutates the tool
        //   except through its own interior mutability, which a shared
        //   reference permits.
        // - The borrow cannot escape the future: `invoke` is generic over
        //   the lifetime of `&self` (no impl can demand `'static`: that
        //   would be a stricter bound than the trait's), so its body cannot
        //   store the reference anywhere that outlives the returned future;
        //   the output type has no lifetime. Only this module sees the
        //   future, and only to poll and drop it.
        let borrowed: &'static dyn Tool = unsafe { &*Arc::as_ptr(&tool) };
        let future = borrowed.invoke(request, ctx);
        Self {
            future: Some(future),
            unstarted,
            _tool: tool,
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
        if let Some(cancellation) = this.unstarted.take()
            && cancellation.is_cancelled()
        {
            // Cancelled before it ran: the tool's future is never polled.
            this.future = None;
            return Poll::Ready(Err(ToolError::Cancelled));
        }
        let Some(future) = &mut this.future else {
            // Polled after it finished: what a finished future may do.
            return Poll::Ready(Err(ToolError::Internal(
                "a tool call was polled after it finished".into(),
            )));
        };
        let outcome = std::task::ready!(future.as_mut().poll(cx));
        // The tool's future ends here, borrow and all.
        this.future = None;
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
        // The tool's future (and with it the borrow of `*self._tool`) goes
        // first, whatever the field order: see `new`'s SAFETY comment.
        self.future = None;
    }
}
