//! Running a tool round once every approval is resolved.
//!
//! Calls are handed to the task manager (one at a time, or up to its
//! parallelism) and their results appended strictly in the order the model
//! emitted the calls. Denied and rejected calls are answered in place.
//! Cancellation answers every unfinished call with a stub; so does an urgent
//! soft interrupt (point C). Each call is marked `Running` before its future
//! is polled, so if `next()` is dropped mid-round the next call can answer
//! it with a stub instead of losing it or running it twice.

use super::LoopDriver;
use super::state::{CallState, Phase};
use crate::{
    AgentEvent, LoopError, LoopInterrupt, LoopStep, ModelSession, MutationPoint,
    SoftInterruptPoint, ToolJob, ToolRoundInfo,
};
use agentkit_core::{ToolCallId, ToolResultPart};
use agentkit_tools_core::{ToolContext, ToolError, ToolRequest, ToolResult};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::collections::HashMap;
use tracing::Instrument;

const DROPPED: &str =
    "the tool call was interrupted before it finished (the loop stopped waiting for it)";
const SKIPPED: &str = "the tool call was skipped because the user interrupted with a new message";

enum RoundEnd {
    Completed,
    Cancelled,
    Urgent { skipped: usize },
}

impl<S: ModelSession> LoopDriver<S> {
    pub(super) async fn tool_round(&mut self) -> Result<LoopStep, LoopError> {
        // A previous `next()` was dropped while these ran: answer them.
        let interrupted: Vec<ToolCallId> = self
            .round
            .iter()
            .filter(|c| matches!(c.state, CallState::Running))
            .map(|c| c.call.id.clone())
            .collect();
        for call_id in interrupted {
            self.append_answer(
                &call_id,
                ToolResultPart::error(call_id.clone(), DROPPED)
                    .with_metadata("agentkit.error_kind", "interrupted"),
            );
        }

        match self.execute_round().await {
            RoundEnd::Cancelled => return self.finish_cancelled(Vec::new()).await,
            RoundEnd::Urgent { skipped } => {
                self.round.clear();
                if let Some(item) = self.soft.drain_merged() {
                    self.inject_soft(SoftInterruptPoint::BetweenTools, item, skipped);
                }
            }
            RoundEnd::Completed => self.round.clear(),
        }
        self.phase = Phase::ModelCallDue;
        self.run_mutators(MutationPoint::AfterToolResult).await?;
        // Point D: everything typed during the round, after all results.
        if let Some(item) = self.soft.drain_merged() {
            self.inject_soft(SoftInterruptPoint::AfterTools, item, 0);
        }
        Ok(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(
            ToolRoundInfo {
                session_id: self.session_id.clone(),
                turn_id: self.current_turn_id(),
                transcript_len: self.log.len(),
            },
        )))
    }

    fn append_answer(&mut self, call_id: &ToolCallId, result: ToolResultPart) {
        debug_assert_eq!(&result.call_id, call_id);
        self.append_result(result);
    }

    fn answer_from(&mut self, index: usize, outcome: Result<ToolResult, ToolError>) {
        let call_id = self.round[index].call.id.clone();
        let part = match outcome {
            Ok(result) => {
                let mut part = ToolResultPart::success(call_id.clone(), result.output);
                part.is_error = result.is_error;
                part.metadata = result.metadata;
                part
            }
            Err(err) => {
                self.emit(AgentEvent::Warning {
                    message: format!("tool call {call_id} failed: {err}"),
                });
                Self::tool_error_result(&call_id, &err)
            }
        };
        self.append_answer(&call_id, part);
    }

    fn job(&self, index: usize) -> ToolJob {
        let shared = self.config.shared();
        let entry = &self.round[index];
        let approval = match &entry.state {
            CallState::Approved(request) => Some(request.clone()),
            _ => None,
        };
        ToolJob {
            request: ToolRequest {
                call_id: entry.call.id.clone(),
                tool_name: entry.call.name.clone(),
                input: entry.call.input.clone(),
                metadata: entry.call.metadata.clone(),
            },
            approval,
            ctx: ToolContext {
                call_id: entry.call.id.clone(),
                session_id: self.session_id.clone(),
                turn_id: self.current_turn_id(),
                cancellation: self
                    .turn
                    .as_ref()
                    .and_then(|t| t.cancellation.clone())
                    .unwrap_or_else(agentkit_core::TurnCancellation::never),
                resources: shared.resources.clone(),
                progress: agentkit_tools_core::ProgressSink::none(),
            },
            executor: shared.executor.clone(),
        }
    }

    async fn execute_round(&mut self) -> RoundEnd {
        let manager = self.config.shared().task_manager.clone();
        let parallel = manager.max_parallel().max(1);
        let cancellation = self.turn.as_ref().and_then(|t| t.cancellation.clone());
        let soft = self.soft.clone();
        let mut in_flight = FuturesUnordered::new();
        let mut finished: HashMap<usize, Result<ToolResult, ToolError>> = HashMap::new();
        let mut next_start = 0;
        let mut next_append = 0;
        loop {
            // Append, in call order, every answer that is ready.
            while next_append < self.round.len() {
                let state = self.round[next_append].state.clone();
                match state {
                    CallState::Answered => {}
                    CallState::Denied(reason) => {
                        let call_id = self.round[next_append].call.id.clone();
                        let message = match reason {
                            Some(reason) => format!("permission denied by the user: {reason}"),
                            None => "permission denied by the user".to_owned(),
                        };
                        let part = ToolResultPart::error(call_id.clone(), message)
                            .with_metadata("agentkit.error_kind", "permission_denied");
                        self.append_answer(&call_id, part);
                    }
                    CallState::Rejected(err) => {
                        let call_id = self.round[next_append].call.id.clone();
                        self.append_answer(&call_id, Self::tool_error_result(&call_id, &err));
                    }
                    _ => match finished.remove(&next_append) {
                        Some(outcome) => self.answer_from(next_append, outcome),
                        None => break,
                    },
                }
                next_append += 1;
            }
            if next_append == self.round.len() {
                return RoundEnd::Completed;
            }
            // Point C, between tools: an urgent message skips what is left.
            if soft.has_urgent() {
                let skipped = self.stub_open_calls(SKIPPED, "skipped");
                return RoundEnd::Urgent { skipped };
            }
            while in_flight.len() < parallel && next_start < self.round.len() {
                let index = next_start;
                next_start += 1;
                if !self.round[index].state.is_runnable() {
                    continue;
                }
                let job = self.job(index);
                let span = tracing::info_span!(
                    "execute_tool",
                    gen_ai.operation.name = "execute_tool",
                    gen_ai.tool.name = %job.request.tool_name,
                    gen_ai.tool.call.id = %job.request.call_id,
                    gen_ai.tool.call.arguments = tracing::field::Empty,
                    gen_ai.tool.call.result = tracing::field::Empty,
                );
                let record_content = self.config.shared().record_content;
                if record_content {
                    span.record(
                        "gen_ai.tool.call.arguments",
                        job.request.input.to_string().as_str(),
                    );
                }
                self.round[index].state = CallState::Running;
                let manager = manager.clone();
                in_flight.push(async move {
                    let outcome = manager.run(job).instrument(span.clone()).await;
                    if record_content && let Ok(result) = &outcome {
                        span.record("gen_ai.tool.call.result", result.output.to_text().as_str());
                    }
                    (index, outcome)
                });
            }
            let cancelled = async {
                match &cancellation {
                    Some(token) => token.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            // With one call at a time, an urgent message waits for the
            // running call (point C is *between* tools); with several, the
            // running ones are dropped, which aborts their tasks.
            let urgent = async {
                if parallel > 1 {
                    soft.urgent_pushed().await
                } else {
                    std::future::pending().await
                }
            };
            tokio::select! {
                biased;
                _ = cancelled => return RoundEnd::Cancelled,
                _ = urgent => {
                    drop(in_flight);
                    let skipped = self.stub_open_calls(SKIPPED, "skipped");
                    return RoundEnd::Urgent { skipped };
                }
                Some((index, outcome)) = in_flight.next() => {
                    finished.insert(index, outcome);
                }
            }
        }
    }
}
