//! Background tool calls: calls that outlive their tool round.
//!
//! The task manager routes each call ([`TaskRouting`]): in the foreground
//! (the round waits for it), in the background (the call is answered at once
//! with a result naming its task id, and runs on), or in the foreground
//! first and detached after a timeout. The transcript stays valid at every
//! step because every call is answered in its round; a background call's
//! real outcome is appended later as a clearly marked notification item at
//! the next safe point (before the next model call, or when the model would
//! otherwise finish), never between a call and its answer.
//!
//! [`BackgroundTasks`] is the host's handle: list what runs, cancel a task
//! by id (through its own cancellation, so the shell tool kills the
//! command's process group).

use crate::driver::{Inbox, Report};
use agentkit_core::{CancellationController, ToolCallId, TurnCancellation};
use agentkit_tools_core::{ToolError, ToolResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::oneshot;

/// Where a call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskRouting {
    /// The round waits for the call (the default).
    Foreground,
    /// The call is answered at once with its task id and runs on; its real
    /// result reaches the model as a notification later.
    Background,
    /// The round waits up to this long, then the call becomes a background
    /// task.
    DetachAfter(Duration),
}

/// A background task the host can see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundTaskInfo {
    /// The task's id (`task-<n>`), named in the call's immediate result.
    pub task_id: String,
    /// The call it runs.
    pub call_id: ToolCallId,
    /// The tool.
    pub tool_name: String,
}

/// A finished background task whose result waits for a safe point.
#[derive(Debug)]
pub(crate) struct FinishedTask {
    pub(crate) info: BackgroundTaskInfo,
    pub(crate) outcome: Result<ToolResult, ToolError>,
}

type Outcome = Result<ToolResult, ToolError>;

enum Mode {
    /// Still waited for by its round (detach-after): the outcome goes there.
    Foreground(Option<oneshot::Sender<Outcome>>),
    /// A background task: the outcome waits for a safe point.
    Background,
}

struct Entry {
    info: BackgroundTaskInfo,
    controller: CancellationController,
    mode: Mode,
}

#[derive(Default)]
struct Inner {
    next_id: AtomicU64,
    tasks: Mutex<BTreeMap<String, Entry>>,
    finished: Mutex<Vec<FinishedTask>>,
    /// `finished` may hold something: the driver asks at every step, and
    /// almost always nothing finished, so it reads this flag instead of
    /// taking the lock. Written only under that lock.
    any_finished: AtomicBool,
    /// The driver's inbox: a cancellation is reported there, a finished
    /// task knocks (none for a list made outside a driver). Weak: the
    /// inbox holds this list.
    inbox: Option<Weak<Inbox>>,
    /// Bumped by every change a snapshot would show (a task registered,
    /// detached, abandoned, finished, its result taken): part of
    /// [`LoopDriver::generation`](crate::LoopDriver::generation).
    changes: AtomicU64,
}

/// The background tasks of one session: `Clone + Send + Sync`.
///
/// ```
/// use agentkit_loop::BackgroundTasks;
///
/// let tasks = BackgroundTasks::default();
/// assert!(tasks.list().is_empty());
/// assert!(!tasks.cancel("task-1"), "no such task");
/// ```
#[derive(Clone, Default)]
pub struct BackgroundTasks {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for BackgroundTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.list()).finish()
    }
}

impl BackgroundTasks {
    fn lock_tasks(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.inner.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn changed(&self) {
        self.inner.changes.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times the tasks changed.
    pub(crate) fn changes(&self) -> u64 {
        self.inner.changes.load(Ordering::Relaxed)
    }

    /// The driver's inbox, while the driver lives.
    fn inbox(&self) -> Option<Arc<Inbox>> {
        self.inner.inbox.as_ref()?.upgrade()
    }

    /// The tasks of a driver, reporting to its inbox.
    pub(crate) fn with_inbox(inbox: Weak<Inbox>) -> Self {
        Self {
            inner: Arc::new(Inner {
                inbox: Some(inbox),
                ..Inner::default()
            }),
        }
    }

    /// Resolves when something of the background tasks waits for the
    /// driver: a task finished (its `TaskFinished` event and its result),
    /// the host cancelled one, or a task reported progress or a
    /// sub-agent's events. The driver takes them at its next step: while
    /// it is idle (the host waits for its user), call
    /// [`next`](crate::LoopDriver::next) when this resolves; an idle
    /// session delivers the events to the observers and asks for input
    /// again at once. A task's result still reaches the model only at the
    /// next safe point of a turn.
    ///
    /// ```
    /// use agentkit_core::Item;
    /// use agentkit_loop::{Agent, LoopStep, SessionConfig, SimpleTaskManager, TaskRouting};
    /// use agentkit_testkit::{GuardedTool, ScriptedModel, ScriptedTurn};
    /// use agentkit_tools_core::{AllowAllPermissions, ToolRegistry};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new([
    ///     ScriptedTurn::tool_call("c1", "build", serde_json::json!({})),
    ///     ScriptedTurn::text("the build runs"),
    /// ]);
    /// let agent = Agent::builder()
    ///     .model(model)
    ///     // A call that runs until it is cancelled, in the background.
    ///     .add_tool_source(ToolRegistry::new().with(GuardedTool::holding("build")))
    ///     .permissions(AllowAllPermissions)
    ///     .task_manager(SimpleTaskManager::new().with_routing(|_| TaskRouting::Background))
    ///     .input(vec![Item::user("go")])
    ///     .build()?;
    /// let mut driver = agent.start(SessionConfig::new("demo")).await?;
    /// while !matches!(driver.next().await?, LoopStep::Finished(_)) {}
    /// let tasks = driver.background_tasks();
    /// assert!(tasks.cancel("task-1"));
    /// // The host waits for its user and for the tasks at once.
    /// tokio::select! {
    ///     () = tasks.undelivered() => {
    ///         // `TaskCancelled` (and later `TaskFinished`) go out now.
    ///         driver.next().await?;
    ///     }
    ///     () = std::future::pending::<()>() => unreachable!("no user here"),
    /// }
    /// # Ok::<(), agentkit_loop::LoopError>(())
    /// # }).unwrap();
    /// ```
    ///
    /// A list made outside a driver (`BackgroundTasks::default()`), or
    /// whose driver is gone, has nothing to deliver: its future never
    /// resolves.
    pub async fn undelivered(&self) {
        match self.inbox() {
            Some(inbox) => inbox.wait().await,
            None => std::future::pending().await,
        }
    }

    /// The tasks running in the background now (not the ones still waited
    /// for by their round), by id.
    pub fn list(&self) -> Vec<BackgroundTaskInfo> {
        self.lock_tasks()
            .values()
            .filter(|e| matches!(e.mode, Mode::Background))
            .map(|e| e.info.clone())
            .collect()
    }

    /// Cancels a running task through its cancellation (a shell command's
    /// process group is killed). Its outcome, usually a cancellation error,
    /// still reaches the model. `false` if no such task runs.
    pub fn cancel(&self, task_id: &str) -> bool {
        let found = self
            .lock_tasks()
            .get(task_id)
            .map(|entry| (entry.controller.clone(), entry.info.clone()));
        match found {
            Some((controller, info)) => {
                controller.interrupt();
                if let Some(inbox) = self.inbox() {
                    inbox.push(Report::TaskCancelled(info.task_id, info.call_id));
                }
                true
            }
            None => false,
        }
    }

    /// Registers a task; returns its info and the cancellation its call
    /// must run with. `foreground` receives the outcome while the round
    /// still waits (detach-after).
    pub(crate) fn register(
        &self,
        call_id: ToolCallId,
        tool_name: String,
        foreground: Option<oneshot::Sender<Outcome>>,
    ) -> (BackgroundTaskInfo, TurnCancellation) {
        let n = self.inner.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let info = BackgroundTaskInfo {
            task_id: format!("task-{n}"),
            call_id,
            tool_name,
        };
        let controller = CancellationController::new();
        let cancellation = controller.handle().checkpoint();
        let mode = match foreground {
            Some(sender) => Mode::Foreground(Some(sender)),
            None => Mode::Background,
        };
        self.lock_tasks().insert(
            info.task_id.clone(),
            Entry {
                info: info.clone(),
                controller,
                mode,
            },
        );
        self.changed();
        (info, cancellation)
    }

    /// A detach-after call's round stops waiting: the task becomes a
    /// background task. `false` if its outcome was already handed to the
    /// round.
    pub(crate) fn detach(&self, task_id: &str) -> bool {
        let mut tasks = self.lock_tasks();
        let Some(entry) = tasks.get_mut(task_id) else {
            return false;
        };
        match &entry.mode {
            Mode::Foreground(Some(_)) => {
                entry.mode = Mode::Background;
                self.changed();
                true
            }
            _ => false,
        }
    }

    /// The round that waited for a detach-after call gave up on it
    /// (cancelled, skipped, dropped): the task is cancelled and forgotten.
    pub(crate) fn abandon(&self, task_id: &str) {
        let mut tasks = self.lock_tasks();
        if let Some(entry) = tasks.get(task_id)
            && matches!(entry.mode, Mode::Foreground(_))
        {
            entry.controller.interrupt();
            tasks.remove(task_id);
            self.changed();
        }
    }

    /// The task's call returned.
    pub(crate) fn finish(&self, task_id: &str, outcome: Outcome) {
        let Some(mut entry) = self.lock_tasks().remove(task_id) else {
            return;
        };
        self.changed();
        match &mut entry.mode {
            Mode::Foreground(sender) => {
                if let Some(sender) = sender.take() {
                    let _ = sender.send(outcome);
                }
            }
            Mode::Background => {
                {
                    let mut finished = self
                        .inner
                        .finished
                        .lock()
                        .unwrap_or_else(|e| e.into_inner());
                    finished.push(FinishedTask {
                        info: entry.info,
                        outcome,
                    });
                    self.inner.any_finished.store(true, Ordering::Release);
                }
                // The driver takes it at its next step, or at once while
                // it awaits a round's calls.
                if let Some(inbox) = self.inbox() {
                    inbox.knock();
                }
            }
        }
    }

    /// Finished tasks not taken yet, without taking them (snapshots).
    pub(crate) fn peek_finished(&self) -> Vec<(BackgroundTaskInfo, Outcome)> {
        self.inner
            .finished
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|f| (f.info.clone(), f.outcome.clone()))
            .collect()
    }

    /// Finished tasks whose results wait for a safe point.
    pub(crate) fn take_finished(&self) -> Vec<FinishedTask> {
        // A task finishing right after this read is taken at the next step,
        // as it would be had it finished a moment later.
        if !self.inner.any_finished.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut finished = self
            .inner
            .finished
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.inner.any_finished.store(false, Ordering::Relaxed);
        self.changed();
        std::mem::take(&mut *finished)
    }
}

/// Cancels a detach-after task if its round stops waiting before it was
/// detached or finished.
pub(crate) struct AbandonOnDrop {
    pub(crate) tasks: BackgroundTasks,
    pub(crate) task_id: String,
}

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.tasks.abandon(&self.task_id);
    }
}
