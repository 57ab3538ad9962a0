//! The future of a running call, as an agent loop holds it.
//!
//! [`ToolExecutor::execute_shared`](crate::ToolExecutor::execute_shared)
//! returns one owned future per call. An executor of its own boxes its
//! steps ([`ExecuteFuture::boxed`]); the [`BasicToolExecutor`](crate::BasicToolExecutor)
//! does its checks before it returns and hands back the tool's own future
//! with the tool it borrows, so a call costs one allocation (the tool's).

use crate::owned_call::OwnedCall;
use crate::{Tool, ToolContext, ToolError, ToolRequest, ToolResult};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The future [`ToolExecutor::execute_shared`](crate::ToolExecutor::execute_shared)
/// returns: owned (`'static`), so the loop can hold it beside the call
/// while other work goes on, and `Unpin`.
///
/// ```
/// use agentkit_tools_core::{ExecuteFuture, ToolContext, ToolError, ToolResult};
/// use agentkit_tools_core::{Tool, ToolRequest, ToolSpec};
/// use std::sync::Arc;
///
/// struct Hello(Arc<ToolSpec>);
///
/// #[async_trait::async_trait]
/// impl Tool for Hello {
///     fn spec(&self) -> Arc<ToolSpec> {
///         self.0.clone()
///     }
///
///     async fn invoke(&self, _: ToolRequest, _: ToolContext) -> Result<ToolResult, ToolError> {
///         Ok(ToolResult::new(format!("hello from {}", self.0.name)))
///     }
/// }
///
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// # rt.block_on(async {
/// let spec = ToolSpec::new("hello", "Says hello.", serde_json::json!({ "type": "object" }))?;
/// let tool: Arc<dyn Tool> = Arc::new(Hello(Arc::new(spec)));
/// // The tool's own future, owning the tool it borrows; checked by the
/// // caller, started on the first poll, its output cut to 64 bytes.
/// let request = ToolRequest::new("call-1", "hello", serde_json::json!({}));
/// let call = ExecuteFuture::invoke(tool, request, ToolContext::detached(), Some(64));
/// assert_eq!(call.await?.output.to_text(), "hello from hello");
///
/// // An executor's own steps, boxed once.
/// let refused = ExecuteFuture::boxed(async { Err(ToolError::Cancelled) });
/// assert_eq!(refused.await, Err(ToolError::Cancelled));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[must_use = "a call runs only when its future is polled"]
pub struct ExecuteFuture(Inner);

enum Inner {
    /// An executor's own future, boxed.
    Boxed(Pin<Box<dyn Future<Output = Result<ToolResult, ToolError>> + Send>>),
    /// The tool's future and the tool, held together.
    Call(OwnedCall),
    /// Settled before anything ran (a refused call); taken on the poll.
    Ready(Option<Result<ToolResult, ToolError>>),
}

impl ExecuteFuture {
    /// A boxed future: an executor's own steps.
    pub fn boxed(
        future: impl Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
    ) -> Self {
        Self(Inner::Boxed(Box::pin(future)))
    }

    /// A call settled already, without running anything (a refused call).
    pub fn ready(outcome: Result<ToolResult, ToolError>) -> Self {
        Self(Inner::Ready(Some(outcome)))
    }

    /// `tool.invoke(request, ctx)` with nothing boxed around it: the
    /// tool's own future, held with the tool it borrows. `invoke` is called
    /// now (an `async_trait` method only boxes its body) and the tool's
    /// future first polled on the first poll of this one, unless `ctx` was
    /// cancelled by then: the call then fails with [`ToolError::Cancelled`]
    /// and its body never runs. The output is cut to `max_output_bytes`
    /// ([`truncate_output`](crate::truncate_output)). Checks nothing else:
    /// the caller validated the input and checked its permissions.
    pub fn invoke(
        tool: Arc<dyn Tool>,
        request: ToolRequest,
        ctx: ToolContext,
        max_output_bytes: Option<usize>,
    ) -> Self {
        Self(Inner::Call(OwnedCall::new(
            tool,
            request,
            ctx,
            max_output_bytes,
        )))
    }
}

impl From<Pin<Box<dyn Future<Output = Result<ToolResult, ToolError>> + Send>>> for ExecuteFuture {
    fn from(future: Pin<Box<dyn Future<Output = Result<ToolResult, ToolError>> + Send>>) -> Self {
        Self(Inner::Boxed(future))
    }
}

impl Future for ExecuteFuture {
    type Output = Result<ToolResult, ToolError>;

    // Inlined into the loop's poll of the call: one frame less between
    // the loop and the tool's future.
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            Inner::Boxed(future) => future.as_mut().poll(cx),
            Inner::Call(call) => Pin::new(call).poll(cx),
            Inner::Ready(outcome) => Poll::Ready(outcome.take().unwrap_or_else(|| {
                Err(ToolError::Internal(
                    "a tool call was polled after it finished".into(),
                ))
            })),
        }
    }
}

impl std::fmt::Debug for ExecuteFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Inner::Boxed(_) => "ExecuteFuture::Boxed",
            Inner::Call(_) => "ExecuteFuture::Call",
            Inner::Ready(_) => "ExecuteFuture::Ready",
        })
    }
}
