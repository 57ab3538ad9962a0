//! A session's event log: every AG-UI event gets a sequence number, is
//! kept, and wakes the streams reading it.
//!
//! Streams never miss an event: they read the log from the last number they
//! sent (the SSE `id`, which a reconnecting client sends back as
//! `Last-Event-ID`) and wait on a watch channel for more. A slow reader
//! only falls behind; it never drops events the way a bounded broadcast
//! channel would.
//!
//! The hub also owns the run bookkeeping the AG-UI stream rules need: an
//! event outside a run opens one (`RUN_STARTED`), an open text message is
//! closed before anything else is said, and a run is closed once.

use crate::agui::{self, Outcome};
use agentkit_core::SessionId;
use agentkit_store::{EventLog, StoredEvent};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, watch};

/// One stored event.
#[derive(Clone, Debug)]
pub struct Record {
    /// Its sequence number in the session, from 1.
    pub seq: u64,
    /// The run it belongs to.
    pub run_id: String,
    /// The AG-UI event.
    pub event: Arc<Value>,
}

impl Record {
    /// `true` for `RUN_FINISHED` and `RUN_ERROR`.
    pub fn ends_run(&self) -> bool {
        matches!(
            self.event["type"].as_str(),
            Some("RUN_FINISHED" | "RUN_ERROR")
        )
    }
}

#[derive(Default)]
struct State {
    log: Vec<Record>,
    /// The open run, if any.
    run: Option<String>,
    /// The open text message, if any.
    text: Option<String>,
    /// Makes generated ids unique within the session.
    counter: u64,
}

/// The log of one session; see the module docs.
pub(crate) struct Hub {
    thread_id: String,
    state: Mutex<State>,
    latest: watch::Sender<u64>,
    /// The last event readers may see: with a store, the last one stored,
    /// so a client never holds an event id another replica would reuse.
    visible: Arc<watch::Sender<u64>>,
    /// No more events will come: the session is hosted elsewhere now.
    closed: std::sync::atomic::AtomicBool,
    /// Hands every new event to the task that stores it.
    writer: Option<mpsc::UnboundedSender<Write>>,
}

impl Hub {
    /// A hub that keeps its events in memory only.
    #[cfg(test)]
    pub(crate) fn new(thread_id: String) -> Self {
        Self {
            thread_id,
            state: Mutex::new(State::default()),
            latest: watch::channel(0).0,
            visible: Arc::new(watch::channel(0).0),
            closed: Default::default(),
            writer: None,
        }
    }

    /// A hub continuing the stored log `past` of session `id`, storing new
    /// events in `log`. A run the previous holder left open (it died
    /// mid-turn) stays open, its dangling text message and tool calls
    /// closed, so the resumed turn's events continue it.
    pub(crate) fn restore(
        thread_id: String,
        id: SessionId,
        past: Vec<StoredEvent>,
        log: Arc<dyn EventLog>,
    ) -> Self {
        let records: Vec<Record> = past
            .into_iter()
            .enumerate()
            .map(|(n, event)| Record {
                seq: n as u64 + 1,
                run_id: event.run_id,
                event: Arc::new(serde_json::from_str(&event.event).unwrap_or(Value::Null)),
            })
            .collect();
        let last = records.len() as u64;
        let visible = Arc::new(watch::channel(last).0);
        let hub = Self {
            thread_id,
            state: Mutex::new(State {
                counter: last,
                ..State::default()
            }),
            latest: watch::channel(last).0,
            writer: Some(spawn_writer(log, id, visible.clone())),
            visible,
            closed: Default::default(),
        };
        let open_run = records
            .last()
            .filter(|last| !last.ends_run())
            .map(|last| last.run_id.clone());
        let mut state = hub.lock();
        state.log = records;
        if let Some(run) = open_run {
            let dangling = dangling(&state.log, &run);
            state.run = Some(run);
            for event in dangling {
                hub.emit_locked(&mut state, event);
            }
        }
        drop(state);
        hub
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, state: &mut State, run_id: String, event: Value) {
        let seq = state.log.len() as u64 + 1;
        if let Some(writer) = &self.writer {
            let _ = writer.send(Write::Event(StoredEvent {
                seq,
                run_id: run_id.clone(),
                event: event.to_string(),
            }));
        }
        state.log.push(Record {
            seq,
            run_id,
            event: Arc::new(event),
        });
        self.latest.send_replace(seq);
        if self.writer.is_none() {
            self.visible.send_replace(seq);
        }
    }

    /// A fresh id, unique in this session (`prefix-N`).
    pub(crate) fn fresh_id(&self, prefix: &str) -> String {
        let mut state = self.lock();
        state.counter += 1;
        format!("{prefix}-{}-{}", std::process::id(), state.counter)
    }

    /// The number of the last event.
    pub(crate) fn last_seq(&self) -> u64 {
        *self.latest.borrow()
    }

    /// Opens run `run_id` (closing any run still open first).
    pub(crate) fn start_run(&self, run_id: &str) {
        let mut state = self.lock();
        self.close_run(&mut state, &Outcome::Success);
        state.run = Some(run_id.to_owned());
        let event = agui::run_started(&self.thread_id, run_id);
        self.push(&mut state, run_id.to_owned(), event);
    }

    /// `true` while a run is open (between its `RUN_STARTED` and its end).
    pub(crate) fn in_run(&self) -> bool {
        self.lock().run.is_some()
    }

    /// Records an event of the current run, opening one if none is.
    pub(crate) fn emit(&self, event: Value) {
        let mut state = self.lock();
        self.emit_locked(&mut state, event);
    }

    fn emit_locked(&self, state: &mut State, event: Value) {
        let run_id = match &state.run {
            Some(run) => run.clone(),
            None => {
                // Work the host did not ask for (a resumed turn, messages
                // typed while idle): it still gets a run of its own.
                state.counter += 1;
                let run = format!("run-{}-{}", std::process::id(), state.counter);
                state.run = Some(run.clone());
                let started = agui::run_started(&self.thread_id, &run);
                self.push(state, run.clone(), started);
                run
            }
        };
        self.push(state, run_id, event);
    }

    /// Streams a piece of assistant text, opening a message if needed.
    pub(crate) fn text(&self, chunk: &str) {
        if chunk.is_empty() {
            return;
        }
        let mut state = self.lock();
        let id = match &state.text {
            Some(id) => id.clone(),
            None => {
                state.counter += 1;
                let id = format!("msg-{}-{}", std::process::id(), state.counter);
                let start =
                    json!({ "type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant" });
                self.emit_locked(&mut state, start);
                state.text = Some(id.clone());
                id
            }
        };
        let content = json!({ "type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": chunk });
        self.emit_locked(&mut state, content);
    }

    /// Closes the open text message, if any.
    pub(crate) fn end_text(&self) {
        let mut state = self.lock();
        self.end_text_locked(&mut state);
    }

    fn end_text_locked(&self, state: &mut State) {
        if let Some(id) = state.text.take() {
            let end = json!({ "type": "TEXT_MESSAGE_END", "messageId": id });
            self.emit_locked(state, end);
        }
    }

    /// Emits events after closing the open text message (tool calls, results).
    pub(crate) fn emit_all(&self, events: impl IntoIterator<Item = Value>) {
        let mut state = self.lock();
        self.end_text_locked(&mut state);
        for event in events {
            self.emit_locked(&mut state, event);
        }
    }

    /// Ends the open run with `outcome` (a no-op when none is open).
    pub(crate) fn finish_run(&self, outcome: &Outcome) {
        let mut state = self.lock();
        self.close_run(&mut state, outcome);
    }

    fn close_run(&self, state: &mut State, outcome: &Outcome) {
        self.end_text_locked(state);
        if let Some(run) = state.run.take() {
            let event = agui::run_finished(&self.thread_id, &run, outcome);
            self.push(state, run, event);
        }
    }

    /// Ends the open run (or a new one) with `RUN_ERROR`.
    pub(crate) fn fail_run(&self, message: &str, code: &str) {
        let mut state = self.lock();
        self.end_text_locked(&mut state);
        let run = state.run.take().unwrap_or_else(|| {
            state.counter += 1;
            format!("run-{}-{}", std::process::id(), state.counter)
        });
        self.push(&mut state, run, agui::run_error(message, code));
    }

    /// Events after `seq`, in order.
    pub(crate) fn after(&self, seq: u64) -> Vec<Record> {
        let visible = *self.visible.borrow() as usize;
        let state = self.lock();
        let to = visible.min(state.log.len());
        let from = (seq as usize).min(to);
        state.log[from..to].to_vec()
    }

    /// Ends the streams reading this hub once they have read everything.
    pub(crate) fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.visible.send_modify(|_| {});
    }

    /// `true` once [`Hub::close`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until every event so far is stored.
    pub(crate) async fn flush(&self) {
        if let Some(writer) = &self.writer {
            let (done, stored) = tokio::sync::oneshot::channel();
            if writer.send(Write::Flush(done)).is_ok() {
                let _ = stored.await;
            }
        }
    }

    /// A receiver that changes whenever an event is added.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.visible.subscribe()
    }
}

/// The end events of the text messages and tool calls run `run` opened
/// and did not close.
fn dangling(log: &[Record], run: &str) -> Vec<Value> {
    let mut texts: Vec<&str> = Vec::new();
    let mut calls: Vec<&str> = Vec::new();
    for record in log.iter().filter(|r| r.run_id == run) {
        let event = &record.event;
        let (kind, message, call) = (
            event["type"].as_str().unwrap_or(""),
            event["messageId"].as_str().unwrap_or(""),
            event["toolCallId"].as_str().unwrap_or(""),
        );
        match kind {
            "TEXT_MESSAGE_START" => texts.push(message),
            "TEXT_MESSAGE_END" => texts.retain(|m| *m != message),
            "TOOL_CALL_START" => calls.push(call),
            "TOOL_CALL_END" => calls.retain(|c| *c != call),
            _ => {}
        }
    }
    texts
        .into_iter()
        .map(|id| json!({ "type": "TEXT_MESSAGE_END", "messageId": id }))
        .chain(
            calls
                .into_iter()
                .map(|id| json!({ "type": "TOOL_CALL_END", "toolCallId": id })),
        )
        .collect()
}

/// What the writer task is handed.
enum Write {
    Event(StoredEvent),
    /// Answered once everything before it is stored.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Stores a batch, retrying a few times: readers wait for it.
async fn store(log: &dyn EventLog, id: &SessionId, batch: &[StoredEvent]) {
    for attempt in 1..=5u64 {
        match log.append_events(id, batch).await {
            Ok(()) => return,
            Err(err) => {
                tracing::warn!(session = %id, attempt, "storing events failed: {err}");
                tokio::time::sleep(std::time::Duration::from_millis(100 * attempt)).await;
            }
        }
    }
}

/// The task that stores a session's events in order, in batches.
fn spawn_writer(
    log: Arc<dyn EventLog>,
    id: SessionId,
    visible: Arc<watch::Sender<u64>>,
) -> mpsc::UnboundedSender<Write> {
    let (sender, mut receiver) = mpsc::unbounded_channel::<Write>();
    tokio::spawn(async move {
        let mut received = Vec::new();
        while receiver.recv_many(&mut received, 256).await > 0 {
            let mut batch = Vec::new();
            let mut flushes = Vec::new();
            for write in received.drain(..) {
                match write {
                    Write::Event(event) => batch.push(event),
                    Write::Flush(done) => flushes.push(done),
                }
            }
            store(log.as_ref(), &id, &batch).await;
            if let Some(last) = batch.last() {
                visible.send_replace(last.seq);
            }
            for done in flushes {
                let _ = done.send(());
            }
        }
    });
    sender
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(hub: &Hub) -> Vec<String> {
        hub.after(0)
            .iter()
            .map(|r| r.event["type"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn events_outside_a_run_open_one_and_text_is_closed_before_the_end() {
        let hub = Hub::new("t".into());
        hub.text("Hel");
        hub.text("lo");
        hub.finish_run(&Outcome::Success);
        hub.finish_run(&Outcome::Success);
        assert_eq!(
            types(&hub),
            [
                "RUN_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "RUN_FINISHED"
            ]
        );
        let records = hub.after(0);
        assert!(records.iter().all(|r| r.run_id == records[0].run_id));
        assert_eq!(hub.after(4).len(), 2);
        assert_eq!(hub.last_seq(), 6);
    }
}
