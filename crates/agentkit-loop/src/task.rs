//! Task managers: how the calls of one tool round are scheduled.
//!
//! The driver hands each call to the task manager as a [`ToolJob`] and
//! appends results in call order whatever order they finish in. The
//! [`SimpleTaskManager`] runs one call at a time on the driver's task; the
//! [`ConcurrentTaskManager`] runs up to N at once on tokio tasks. Both turn a
//! panicking tool into an error result, and an optional deadline into
//! `ToolError::Timeout`, so one bad tool never wedges `next()`.

use crate::TaskRouting;
use crate::error::panic_message;
use agentkit_tools_core::{
    ApprovalRequest, ResolvedTool, ToolContext, ToolError, ToolExecutor, ToolRequest, ToolResult,
};
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

/// One call to run.
pub struct ToolJob {
    /// The call.
    pub request: ToolRequest,
    /// The host's approval, if the call needed one. Boxed: it is rarely
    /// set, and the job is moved into each layer that runs it.
    pub approval: Option<Box<ApprovalRequest>>,
    /// The tool the preflight found, with the spec it validated the input
    /// against ([`ToolExecutor::preflight_validated`]): running the call
    /// neither looks the tool up nor validates the input again while the
    /// catalog is unchanged.
    pub validated: Option<ResolvedTool>,
    /// The call's context.
    pub ctx: ToolContext,
    /// The executor to run it with.
    pub executor: Arc<dyn ToolExecutor>,
}

impl ToolJob {
    /// The executor's own future for this call, for a manager that
    /// [`runs_inline`](TaskManager::runs_inline). Inlined where the job is
    /// made, so its parts go to the executor without another copy of the
    /// job.
    #[inline]
    pub(crate) fn execute_shared(self) -> agentkit_tools_core::ExecuteFuture {
        self.executor
            .execute_shared(self.request, self.ctx, self.approval, self.validated)
    }

    async fn run(self) -> Result<ToolResult, ToolError> {
        match &self.approval {
            Some(approval) => {
                self.executor
                    .execute_approved(self.request, approval, self.ctx)
                    .await
            }
            None => match self.validated {
                Some(spec) => {
                    self.executor
                        .execute_validated(self.request, self.ctx, spec)
                        .await
                }
                None => self.executor.execute(self.request, self.ctx).await,
            },
        }
    }
}

/// Decides where each call runs; see [`TaskRouting`].
#[derive(Clone)]
pub struct RoutingPolicy(Arc<dyn Fn(&ToolRequest) -> TaskRouting + Send + Sync>);

impl RoutingPolicy {
    /// A policy from a function.
    pub fn new(f: impl Fn(&ToolRequest) -> TaskRouting + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    fn route(policy: &Option<Self>, request: &ToolRequest) -> TaskRouting {
        policy
            .as_ref()
            .map_or(TaskRouting::Foreground, |policy| (policy.0)(request))
    }
}

impl std::fmt::Debug for RoutingPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RoutingPolicy(..)")
    }
}

/// Schedules tool calls.
#[async_trait::async_trait]
pub trait TaskManager: Send + Sync {
    /// How many calls of a round may run at once.
    fn max_parallel(&self) -> usize {
        1
    }

    /// Where this call runs (default: in the foreground).
    fn route(&self, request: &ToolRequest) -> TaskRouting {
        let _ = request;
        TaskRouting::Foreground
    }

    /// Runs one call to completion.
    async fn run(&self, job: ToolJob) -> Result<ToolResult, ToolError>;

    /// `true` when this manager runs a foreground call on the loop's own
    /// task with nothing around it but a panic guard (no deadline, no
    /// bookkeeping of its own): the loop then polls the executor's future
    /// ([`ToolExecutor::execute_shared`]) itself instead of
    /// [`run_shared`](Self::run_shared)'s, one allocation less per call,
    /// and turns a panic into the same error result. Default: `false`;
    /// the [`SimpleTaskManager`] without a timeout says `true`.
    fn runs_inline(&self) -> bool {
        false
    }

    /// [`run`](Self::run) as one owned future: what the loop holds while
    /// the call runs. The default boxes `run`'s future inside another;
    /// a manager can return a single box (the [`SimpleTaskManager`] does:
    /// one allocation less per call).
    fn run_shared(
        self: Arc<Self>,
        job: ToolJob,
    ) -> futures::future::BoxFuture<'static, Result<ToolResult, ToolError>>
    where
        Self: 'static,
    {
        Box::pin(async move { self.run(job).await })
    }
}

/// Runs calls one after another, on the driver's own task.
#[derive(Clone, Debug, Default)]
pub struct SimpleTaskManager {
    timeout: Option<Duration>,
    routing: Option<RoutingPolicy>,
}

impl SimpleTaskManager {
    /// A manager with no deadline.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fails calls that run longer than `timeout` with `ToolError::Timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Routes calls to the background by `policy` (see [`TaskRouting`]).
    pub fn with_routing(
        mut self,
        policy: impl Fn(&ToolRequest) -> TaskRouting + Send + Sync + 'static,
    ) -> Self {
        self.routing = Some(RoutingPolicy::new(policy));
        self
    }
}

#[async_trait::async_trait]
impl TaskManager for SimpleTaskManager {
    fn route(&self, request: &ToolRequest) -> TaskRouting {
        RoutingPolicy::route(&self.routing, request)
    }

    async fn run(&self, job: ToolJob) -> Result<ToolResult, ToolError> {
        run_guarded(self.timeout, job).await
    }

    fn runs_inline(&self) -> bool {
        self.timeout.is_none()
    }

    fn run_shared(
        self: Arc<Self>,
        job: ToolJob,
    ) -> futures::future::BoxFuture<'static, Result<ToolResult, ToolError>> {
        Box::pin(run_guarded(self.timeout, job))
    }
}

/// Runs `job` on the caller's task: a panic becomes an error result, and
/// `timeout` a [`ToolError::Timeout`].
async fn run_guarded(timeout: Option<Duration>, job: ToolJob) -> Result<ToolResult, ToolError> {
    let guarded = AssertUnwindSafe(job.run()).catch_unwind();
    let outcome = match timeout {
        Some(limit) => tokio::time::timeout(limit, guarded)
            .await
            .map_err(|_| ToolError::Timeout(limit))?,
        None => guarded.await,
    };
    outcome.unwrap_or_else(|panic| Err(panicked(&*panic)))
}

/// The error result of a call whose tool panicked.
pub(crate) fn panicked(panic: &(dyn std::any::Any + Send)) -> ToolError {
    ToolError::Internal(format!("tool panicked: {}", panic_message(panic)))
}

/// Runs up to `max_parallel` calls of a round at once, each on its own tokio
/// task. Needs a tokio runtime.
#[derive(Clone, Debug)]
pub struct ConcurrentTaskManager {
    max_parallel: usize,
    timeout: Option<Duration>,
    routing: Option<RoutingPolicy>,
}

impl ConcurrentTaskManager {
    /// At most `max_parallel` calls at once (at least 1).
    pub fn new(max_parallel: usize) -> Self {
        Self {
            max_parallel: max_parallel.max(1),
            timeout: None,
            routing: None,
        }
    }

    /// Fails calls that run longer than `timeout` with `ToolError::Timeout`;
    /// the call's task is aborted.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Routes calls to the background by `policy` (see [`TaskRouting`]).
    pub fn with_routing(
        mut self,
        policy: impl Fn(&ToolRequest) -> TaskRouting + Send + Sync + 'static,
    ) -> Self {
        self.routing = Some(RoutingPolicy::new(policy));
        self
    }
}

/// Aborts the task when dropped, so a dropped `next()` leaves no orphan.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[async_trait::async_trait]
impl TaskManager for ConcurrentTaskManager {
    fn max_parallel(&self) -> usize {
        self.max_parallel
    }

    fn route(&self, request: &ToolRequest) -> TaskRouting {
        RoutingPolicy::route(&self.routing, request)
    }

    async fn run(&self, job: ToolJob) -> Result<ToolResult, ToolError> {
        let mut handle = AbortOnDrop(tokio::spawn(job.run()));
        let joined = match self.timeout {
            Some(limit) => tokio::time::timeout(limit, &mut handle.0)
                .await
                .map_err(|_| ToolError::Timeout(limit))?,
            None => (&mut handle.0).await,
        };
        match joined {
            Ok(result) => result,
            Err(err) if err.is_panic() => Err(panicked(&*err.into_panic())),
            Err(err) => Err(ToolError::Internal(format!("tool task failed: {err}"))),
        }
    }
}
