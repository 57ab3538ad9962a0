//! What running calls and background tasks report from their own tasks:
//! the shell's half of the events that do not start in the core.
//!
//! A call's progress, the events of a sub-agent a call runs, and the host
//! cancelling a background task happen on other tasks (or threads) while
//! the driver awaits something else. They land here, in arrival order, and
//! the driver hands them to the core (`on_tool_progress`,
//! `on_nested_event`, `on_task_cancelled`) at its next step, or at once
//! while it awaits a round's calls: the inbox wakes the waker those calls
//! are polled with, like a question does. From the core they leave through
//! its one outbox, so a recording keeps them and a replay reproduces them.
//!
//! A background task finishing also knocks here (its result waits in
//! [`BackgroundTasks`](crate::BackgroundTasks)), so the driver takes it as
//! soon as it can. While the host is not calling `next()` nothing is
//! taken: [`BackgroundTasks::undelivered`](crate::BackgroundTasks::undelivered)
//! resolves when something waits, for a host that wants it delivered
//! without waiting for its user.
//!
//! The inbox is made only for a session that has observers or records
//! (nobody hears the events otherwise), or that runs a background task.
//!
//! It is bounded for what can be lost without harm: a host that does not
//! call `next()` for a long time (it waits for its user) while a background
//! task reports progress would otherwise let the reports pile up without
//! end. At most [`MAX_QUEUED_PROGRESS`] progress reports wait; later ones
//! are counted, not kept, and the driver reports the count where the first
//! was dropped (`AgentEvent::ProgressDropped`, an input like the others, so
//! a replay reproduces it). Progress only: a cancellation, a sub-agent's
//! items, calls and results, and finished tasks (which wait in the task
//! list, not here) are never dropped, and they are bounded by the work
//! itself (each needs a model call or a call of its own).

use crate::{AgentEvent, BackgroundTasks};
use agentkit_core::ToolCallId;
use agentkit_tools_core::{EventSink, ProgressSink, ToolProgress};
use futures::task::AtomicWaker;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::Waker;

/// How many progress reports (a call's progress, a sub-agent's deltas and
/// progress) may wait in a driver's inbox for the host's next `next()`;
/// later ones are dropped and counted in one
/// [`AgentEvent::ProgressDropped`] where the first was dropped. Nothing
/// else that waits is ever dropped. About 100 KB of typical reports.
pub const MAX_QUEUED_PROGRESS: usize = 1_024;

/// Something reported from outside the driver's task.
#[derive(Debug)]
pub(crate) enum Report {
    /// A call's progress.
    Progress(ToolCallId, ToolProgress),
    /// An event a call forwarded from a loop it runs (a sub-agent's).
    Nested(AgentEvent),
    /// The host cancelled this background task.
    TaskCancelled(String, ToolCallId),
    /// This many progress reports were dropped here (the bound).
    ProgressDropped(u64),
}

impl Report {
    /// Progress a session can lose without harm: what it says is
    /// superseded by later reports and by the call's result.
    fn is_progress(&self) -> bool {
        match self {
            Report::Progress(..) => true,
            Report::Nested(AgentEvent::SubAgent { inner, .. }) => matches!(
                **inner,
                AgentEvent::ContentDelta { .. } | AgentEvent::ToolProgress { .. }
            ),
            _ => false,
        }
    }
}

/// The reports not taken yet, and what the bound dropped.
#[derive(Default)]
struct Queue {
    reports: Vec<Report>,
    /// Progress reports in `reports`.
    progress: usize,
    /// Where `reports` holds the count of the progress dropped since the
    /// last take.
    dropped_at: Option<usize>,
}

impl Queue {
    fn push(&mut self, report: Report) {
        if !report.is_progress() {
            self.reports.push(report);
        } else if self.progress < MAX_QUEUED_PROGRESS {
            self.progress += 1;
            self.reports.push(report);
        } else if let Some(Report::ProgressDropped(count)) =
            self.dropped_at.and_then(|at| self.reports.get_mut(at))
        {
            *count += 1;
        } else {
            self.dropped_at = Some(self.reports.len());
            self.reports.push(Report::ProgressDropped(1));
        }
    }
}

/// The reports not taken yet.
pub(crate) struct Inbox {
    /// The sink every call's context shares for a sub-agent's events
    /// (cloning it is a reference count).
    events: EventSink,
    queue: Mutex<Queue>,
    /// Something waits (a report, or a finished background task): the
    /// driver checks this flag at every step rather than take the lock.
    /// Set only under the lock.
    any: AtomicBool,
    /// The waker the driver last polled a round's calls with.
    waker: AtomicWaker,
    /// Hosts waiting for something to deliver while the driver is idle.
    waiting: tokio::sync::Notify,
    /// The session's background tasks, made on first use (they report
    /// here, and hold the inbox weakly).
    background: std::sync::OnceLock<BackgroundTasks>,
}

impl Inbox {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new_cyclic(|inbox: &Weak<Self>| {
            let inbox = inbox.clone();
            Self {
                events: EventSink::new(move |event| {
                    if let (Ok(event), Some(inbox)) =
                        (event.downcast::<AgentEvent>(), Weak::upgrade(&inbox))
                    {
                        inbox.push(Report::Nested(*event));
                    }
                }),
                queue: Mutex::default(),
                any: AtomicBool::new(false),
                waker: AtomicWaker::new(),
                waiting: tokio::sync::Notify::new(),
                background: std::sync::OnceLock::new(),
            }
        })
    }

    /// The background tasks, made on first use.
    pub(crate) fn background(self: &Arc<Self>) -> &BackgroundTasks {
        self.background
            .get_or_init(|| BackgroundTasks::with_inbox(Arc::downgrade(self)))
    }

    /// The background tasks, if any were ever made.
    pub(crate) fn background_if_any(&self) -> Option<&BackgroundTasks> {
        self.background.get()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a report and wakes whoever waits.
    pub(crate) fn push(&self, report: Report) {
        {
            let mut queue = self.lock();
            queue.push(report);
            self.any.store(true, Ordering::Release);
        }
        self.wake();
    }

    /// Something outside the queue waits for the driver (a finished
    /// background task).
    pub(crate) fn knock(&self) {
        {
            let _queue = self.lock();
            self.any.store(true, Ordering::Release);
        }
        self.wake();
    }

    fn wake(&self) {
        self.waker.wake();
        self.waiting.notify_waiters();
    }

    /// `true` when something waits to be taken.
    #[inline]
    pub(crate) fn pending(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Every report since the last call, in arrival order (with the count
    /// of progress the bound dropped where it dropped the first); clears
    /// the knock too (the caller then takes finished background tasks).
    pub(crate) fn take(&self) -> Vec<Report> {
        let mut queue = self.lock();
        self.any.store(false, Ordering::Relaxed);
        std::mem::take(&mut *queue).reports
    }

    /// Wakes `waker` at the next report; call before polling the calls.
    pub(crate) fn register(&self, waker: &Waker) {
        self.waker.register(waker);
    }

    /// Resolves when something waits to be taken.
    pub(crate) async fn wait(&self) {
        loop {
            let notified = self.waiting.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the check: a report pushed in between
            // still wakes this waiter.
            notified.as_mut().enable();
            if self.pending() {
                return;
            }
            notified.await;
        }
    }

    /// The progress sink of one call. Held weakly: a call outliving its
    /// session reports into nothing.
    pub(crate) fn progress_sink(self: &Arc<Self>, call_id: ToolCallId) -> ProgressSink {
        let inbox = Arc::downgrade(self);
        ProgressSink::new(move |progress| {
            if let Some(inbox) = Weak::upgrade(&inbox) {
                inbox.push(Report::Progress(call_id.clone(), progress));
            }
        })
    }

    /// The sink for the events a call forwards from a loop it runs,
    /// shared by every call (a sub-agent's events are already tagged with
    /// its call). Events of another loop type are dropped.
    pub(crate) fn event_sink(&self) -> EventSink {
        self.events.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_core::{Delta, ToolResultPart};

    fn nested(inner: AgentEvent) -> Report {
        Report::Nested(AgentEvent::SubAgent {
            agent: "helper".into(),
            depth: 1,
            call_id: "c1".into(),
            inner: Box::new(inner),
        })
    }

    fn progress() -> Report {
        Report::Progress("c1".into(), ToolProgress::new("tick"))
    }

    /// Past the bound only progress is dropped, counted once where the
    /// first was; a sub-agent's deltas count as progress, its results and a
    /// cancellation never do.
    #[test]
    fn the_bound_drops_only_progress_and_counts_it_in_place() {
        let mut queue = Queue::default();
        for _ in 0..MAX_QUEUED_PROGRESS {
            queue.push(progress());
        }
        queue.push(nested(AgentEvent::ContentDelta {
            delta: Delta::AppendText {
                part_id: "p".into(),
                chunk: "dropped".into(),
            },
        }));
        queue.push(Report::TaskCancelled("task-1".into(), "c1".into()));
        queue.push(progress());
        queue.push(nested(AgentEvent::ToolResultReceived {
            result: ToolResultPart::success("inner", "kept"),
        }));
        queue.push(nested(AgentEvent::ToolProgress {
            call_id: "inner".into(),
            progress: ToolProgress::new("dropped"),
        }));
        let reports = std::mem::take(&mut queue).reports;
        let tail: Vec<String> = reports[MAX_QUEUED_PROGRESS..]
            .iter()
            .map(|report| match report {
                Report::ProgressDropped(count) => format!("dropped {count}"),
                Report::TaskCancelled(..) => "cancelled".into(),
                Report::Nested(AgentEvent::SubAgent { inner, .. }) => match **inner {
                    AgentEvent::ToolResultReceived { .. } => "nested result".into(),
                    _ => "nested other".into(),
                },
                _ => "other".into(),
            })
            .collect();
        assert_eq!(tail, ["dropped 3", "cancelled", "nested result"]);
    }
}
