//! Running the calls of a tool round: the shell's half.
//!
//! The core decides which calls start (up to the task manager's
//! parallelism) and in which order answers are appended; this module turns
//! a started call into a future held by the driver (not by `next()`, so a
//! dropped `next()` loses none) and waits for the first of: a call
//! finishing, the turn being cancelled, or (with several calls at once) an
//! urgent message. With one call at a time an urgent message waits for the
//! running call: the between-tools point is *between* tools.

use super::machine::{Routed, StartCall, ToolOutcome};
use super::{CallRun, LoopDriver, Running, RunningCall};
use crate::background::AbandonOnDrop;
use crate::{BackgroundTasks, ModelSession, TaskRouting, ToolJob};
use agentkit_core::ToolCallId;
use agentkit_tools_core::{EventSink, HostAnswer, ProgressSink, ToolContext, ToolError};
use futures::FutureExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

impl<S: ModelSession> LoopDriver<S> {
    /// Hands a call of the round to the task manager and puts its future
    /// into `running`, unless it runs in the background (the core answered
    /// it already). `true` when it is a foreground call. The future goes
    /// straight into the running set rather than through a return value:
    /// it is the executor's whole future, and each hop was a copy.
    pub(super) fn start_call(&mut self, start: StartCall, running: &mut Running) -> bool {
        let StartCall {
            index,
            turn_id,
            approval,
            resume,
            request,
            validated,
            then_await: _,
        } = start;
        let questions = self.question_sink();
        let call_id = request.call_id.clone();
        // What the call reports goes to the inbox, then through the core.
        let (progress, events) = if self.wants_reports() {
            let inbox = self.inbox();
            (inbox.progress_sink(call_id.clone()), inbox.event_sink())
        } else {
            (ProgressSink::none(), EventSink::default())
        };
        let shared = self.config.shared();
        // Built whole: a chain of `with_*` moves the context once per call.
        let ctx = ToolContext {
            call_id: call_id.clone(),
            session_id: self.core.session_id.clone(),
            turn_id,
            cancellation: self
                .turn_cancellation()
                .unwrap_or_else(agentkit_core::TurnCancellation::never),
            resources: shared.resources.clone(),
            progress,
            usage: self.tool_usage.sink(),
            events,
            questions,
            resume,
        };
        let job = ToolJob {
            request,
            approval,
            validated,
            ctx,
            executor: shared.executor.clone(),
        };
        let span = tracing::info_span!(
            "execute_tool",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %job.request.tool_name,
            gen_ai.tool.call.id = %job.request.call_id,
            gen_ai.tool.call.arguments = tracing::field::Empty,
            gen_ai.tool.call.result = tracing::field::Empty,
        );
        // Content goes only where someone reads it.
        let record_content = shared.record_content && !span.is_disabled();
        if record_content {
            span.record(
                "gen_ai.tool.call.arguments",
                job.request.input.to_string().as_str(),
            );
        }
        let manager = Arc::clone(shared.task_manager);
        let routing = manager.route(&job.request);
        if !matches!(routing, TaskRouting::Foreground) {
            // A spawned task may run before this returns (on another
            // worker): the observers (a store's recorder) hear `ToolStarted`
            // first, so a kill can never leave a started call unmarked. A
            // foreground call runs only when the round awaits it, after
            // the notes went out.
            self.dispatch();
        }
        match routing {
            TaskRouting::Background => {
                // The core answers the call at once; the task runs on.
                let tasks = self.background().clone();
                let tool_name = job.request.tool_name.to_string();
                let (info, cancellation) = tasks.register(call_id, tool_name, None);
                let task_id = info.task_id.clone();
                spawn_task(tasks, manager, job, task_id.clone(), cancellation, span);
                self.core.on_routed(index, Routed::Background { task_id });
                false
            }
            TaskRouting::DetachAfter(wait) => {
                // The round waits for the outcome until the core's timer
                // fires and the core asks for the task to be detached.
                let tasks = self.background().clone();
                let tool_name = job.request.tool_name.to_string();
                let (sender, receiver) = tokio::sync::oneshot::channel();
                let (info, cancellation) = tasks.register(call_id.clone(), tool_name, Some(sender));
                let task_id = info.task_id.clone();
                spawn_task(
                    tasks.clone(),
                    manager,
                    job,
                    task_id.clone(),
                    cancellation,
                    span,
                );
                let now = self.now();
                self.core.on_routed(
                    index,
                    Routed::DetachAfter {
                        task_id: task_id.clone(),
                        wait,
                        now,
                    },
                );
                let wait = RunningCall::Other(
                    async move {
                        let _guard = AbandonOnDrop { tasks, task_id };
                        // A detached task drops its sender: the core, which
                        // answered the call already, ignores this outcome.
                        let outcome = receiver.await.unwrap_or_else(|_| {
                            Err(ToolError::Internal("the background task was lost".into()))
                        });
                        (index, call_id, outcome)
                    }
                    .boxed(),
                );
                running.push(wait, &mut self.salvage);
                false
            }
            _ => {
                let run = if manager.runs_inline() {
                    CallRun::inline(job)
                } else {
                    CallRun::Managed(manager.run_shared(job))
                };
                running.push(
                    RunningCall::Managed {
                        index,
                        call_id,
                        run: run.in_span(span),
                        record_content,
                    },
                    &mut self.salvage,
                );
                true
            }
        }
    }

    /// The time on the core's clock: since the first time it was read.
    fn now(&mut self) -> Duration {
        self.rare_mut()
            .clock
            .get_or_insert_with(Instant::now)
            .elapsed()
    }

    /// Waits until a call finishes or asks the host something, the turn is
    /// cancelled, a detach-after deadline passes, or (when the core says
    /// so: several calls run at once) an urgent message is queued; the core
    /// sorts it out. Only the waits that can end are set up: a session
    /// without a cancellation handle, a timer or parallel calls polls its
    /// calls and nothing else. What the calls report meanwhile (progress,
    /// a sub-agent's events) goes through the core to the observers at
    /// once, and the wait goes on.
    pub(super) async fn await_calls(&mut self, running: &mut Running, wake_on_urgent: bool) {
        if running.is_empty() {
            self.core.on_calls_lost();
            return;
        }
        let cancellation = self.turn_cancellation();
        // No queue yet means nobody can push to one while this waits.
        let soft = if wake_on_urgent {
            self.soft.get().cloned()
        } else {
            None
        };
        let questions = self.questions.as_ref().map(|(queue, _)| queue.clone());
        let inbox = self.inbox.get().cloned();
        loop {
            // The core's next deadline, on the clock it was given; no clock
            // read yet means no timer ever ran, and the calls are not
            // scanned.
            let deadline = self
                .rare
                .as_ref()
                .and_then(|rare| rare.clock)
                .and_then(|origin| Some(origin + self.core.poll_timeout()?));
            // A question or a report is an output of polling the calls:
            // the reporting call is polled here (or wakes this waker from
            // its own task).
            let calls = std::future::poll_fn(|cx| {
                if let Some(questions) = &questions {
                    questions.register(cx.waker());
                }
                if let Some(inbox) = &inbox {
                    inbox.register(cx.waker());
                }
                match running.poll_next(cx) {
                    std::task::Poll::Pending if questions.as_ref().is_some_and(|q| q.asked()) => {
                        std::task::Poll::Ready(Some(None))
                    }
                    std::task::Poll::Pending if inbox.as_ref().is_some_and(|i| i.pending()) => {
                        std::task::Poll::Ready(Some(Some(None)))
                    }
                    other => other.map(|done| done.map(|done| Some(Some(done)))),
                }
            });
            let woke = if cancellation.is_none() && soft.is_none() && deadline.is_none() {
                // Only the calls can end this wait (the usual session):
                // what `select!` would do with its other branches off.
                Woke::Calls(calls.await)
            } else {
                tokio::select! {
                    biased;
                    // A disabled branch's future is made but never polled.
                    () = async {
                        if let Some(token) = &cancellation {
                            token.cancelled().await;
                        }
                    }, if cancellation.is_some() => Woke::Other,
                    () = async {
                        if let Some(soft) = &soft {
                            soft.urgent_pushed().await;
                        }
                    }, if soft.is_some() => Woke::Other,
                    () = async {
                        if let Some(at) = deadline {
                            tokio::time::sleep_until(at.into()).await;
                        }
                    }, if deadline.is_some() => Woke::TimedOut,
                    Some(polled) = calls => Woke::Calls(Some(polled)),
                    else => Woke::Other,
                }
            };
            let mut timed_out = false;
            let mut reported = false;
            match woke {
                Woke::Calls(Some(Some(Some(done)))) => {
                    // What the call reported before it returned goes out
                    // before its result.
                    self.take_reports();
                    let (index, call_id, outcome) = done;
                    let outcome = ToolOutcome::of(&call_id, outcome);
                    self.core.on_tool_done(index, &call_id, outcome);
                }
                Woke::Calls(Some(Some(None))) => reported = true,
                Woke::TimedOut => timed_out = true,
                Woke::Calls(Some(None) | None) | Woke::Other => {}
            }
            self.take_reports();
            if reported {
                // Only reports: they go out, the calls run on.
                self.collect_background();
                self.dispatch();
                continue;
            }
            // Calls that finished in the same instant as a cancellation, an
            // urgent message or a deadline keep their real results.
            if !running.is_empty() {
                for (index, call_id, outcome) in running.ready() {
                    let outcome = ToolOutcome::of(&call_id, outcome);
                    self.core.on_tool_done(index, &call_id, outcome);
                }
            }
            if questions.as_ref().is_some_and(|q| q.asked()) {
                self.take_questions();
            }
            if timed_out {
                let now = self.now();
                self.core.on_timeout(now);
            }
            self.dispatch();
            return;
        }
    }

    /// The sink for a call's questions, made with the first call and
    /// shared by every later one.
    fn question_sink(&mut self) -> agentkit_tools_core::QuestionSink {
        self.questions
            .get_or_insert_with(|| {
                let queue = Arc::<super::questions::Questions>::default();
                let sink = queue.sink();
                (queue, sink)
            })
            .1
            .clone()
    }

    /// Hands the questions running calls asked to the core; one it does
    /// not take (no running call of the round asks it: a background task)
    /// is declined at once.
    fn take_questions(&mut self) {
        let Some((questions, _)) = &self.questions else {
            return;
        };
        for (call_id, question, reply) in questions.take() {
            if self.core.on_tool_question(&call_id, question) {
                self.rare_mut().replies.push((call_id, reply));
            } else {
                let _ = reply.send(HostAnswer::Decline);
            }
        }
    }

    /// Sends the host's answer to the call waiting for it.
    pub(super) fn reply(&mut self, call_id: &ToolCallId, answer: HostAnswer) {
        let Some(rare) = &mut self.rare else {
            return;
        };
        if let Some(at) = rare.replies.iter().position(|(id, _)| id == call_id) {
            let (_, reply) = rare.replies.swap_remove(at);
            let _ = reply.send(answer);
        }
    }
}

/// Runs a call as a background task with its own cancellation.
fn spawn_task(
    tasks: BackgroundTasks,
    manager: Arc<dyn crate::TaskManager>,
    mut job: ToolJob,
    task_id: String,
    cancellation: agentkit_core::TurnCancellation,
    span: tracing::Span,
) {
    job.ctx.cancellation = cancellation;
    tokio::spawn(async move {
        let outcome = manager.run(job).instrument(span).await;
        tasks.finish(&task_id, outcome);
    });
}

/// What ended one wait of [`await_calls`](LoopDriver::await_calls).
enum Woke<T> {
    /// The calls' poll: `None` when none runs, else `None` for a question,
    /// `Some(None)` for reports only, `Some(Some(done))` for a finished call.
    Calls(Option<Option<Option<T>>>),
    /// The detach-after deadline passed.
    TimedOut,
    /// A cancellation or an urgent message (the core sees which), or
    /// nothing left to wait for.
    Other,
}
