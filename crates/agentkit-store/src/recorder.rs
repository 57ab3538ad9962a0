//! The recorder: the observers that append items as they happen.
//!
//! One [`Recorder`] belongs to one leased session. Registered on the agent
//! as both a [`TranscriptObserver`] and a [`LoopObserver`]
//! ([`crate::SessionLease::record`] does it), it hands every appended item,
//! and the few events recovery needs, to the backend's [`LogWriter`].
//!
//! When a mutator rewrites the transcript (compaction), the item rows no
//! longer match the indices the driver reports. If the rewrite kept the
//! items this step appended (those since the checkpoint) at its end, as a
//! compaction keeps the recent tail, the rows follow it at once
//! ([`LogEntry::Rewrite`]): the new transcript replaces them, the checkpoint
//! then covers what precedes the step's items, and appends and marks go on,
//! so a kill after a compaction loses nothing. Any other rewrite (and a
//! failed write) stops the writing until the next checkpoint, which stores
//! the rewritten transcript whole; a crash in between resumes from the rows
//! written before the rewrite, which form a valid transcript. The items
//! such a rewrite removed are held here until that checkpoint archives
//! them.
//!
//! A rewrite written to the rows archives its items in the same
//! transaction, but the writer may queue it: until a flush says every
//! write so far is stored, a copy of those items is kept. A failed flush
//! cannot say which write failed, so the copy is then *uncertain*: the
//! next checkpoint archives whichever of its items the store's archive
//! does not already hold, so a refused rewrite loses nothing and a stored
//! one is not archived twice.
//!
//! Writes are gathered into as few transactions as that allows. An item
//! appended while no call runs is held back here, with the journal marks
//! that go with it (input accepted, soft interrupts drained), until
//! something that may take long begins: a model call (its start mark is
//! written with them), a mutator, a tool call (its answer is its start),
//! a task, a pause for the host. Or the step ends first, and its
//! checkpoint writes them in its own transaction (see
//! [`Recorder::written`]). Between the append and that write the loop only
//! computes, so a kill loses what a kill while a PostgreSQL write was in
//! flight always lost. While a call runs, every item (another call's
//! result) is written at once: a kill during a long call keeps each result
//! before it. A tool round is so three transactions: the model call's
//! start mark, the answer before its call runs, the result with the
//! checkpoint.
//!
//! A call may run only once a resume would know it started
//! ([`DurableStarts`]). Recovery interrupts every open call of the items
//! written after the checkpoint, so for a call in such an item (a fresh
//! answer, run at once: the usual case) the item's row is its start, and no
//! [`Mark::ToolStarted`] is written: the call waits only for that row,
//! whose write began when the answer was appended. The mark is written for
//! a call the checkpoint already holds (approved between two steps), where
//! nothing else would tell.

use crate::recover::Mark;
use crate::store::{LogEntry, LogWriter};
use agentkit_core::{Item, ItemId, ToolCallId};
use agentkit_loop::{
    AgentEvent, LoopObserver, MutationPoint, TaskManager, TaskRouting, ToolJob, TranscriptObserver,
};
use agentkit_tools_core::{ToolError, ToolRequest, ToolResult};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// Where the append path stands.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LogState {
    /// The index the next appended item should have.
    pub(crate) next_index: usize,
    /// The rows stopped matching the transcript (a rewrite, a failed
    /// write); the next checkpoint rewrites them all.
    pub(crate) broken: bool,
}

/// The items rewrites removed, by what is known of their storing.
#[derive(Debug, Default)]
pub(crate) struct Archive {
    /// Not archived: the next checkpoint archives them.
    pub(crate) held: Vec<Item>,
    /// Archived by a rewrite written since the last successful flush.
    unconfirmed: Vec<Item>,
    /// Archived by a rewrite that was written before a failed flush: the
    /// store may or may not hold them.
    pub(crate) uncertain: Vec<Item>,
}

/// Feeds a session's appended items to its store; see the module docs.
pub struct Recorder {
    writer: Arc<dyn LogWriter>,
    state: Mutex<LogState>,
    /// Items rewrites removed, not archived yet.
    archive: Mutex<Archive>,
    /// The items appended since the checkpoint.
    appended: Mutex<Appended>,
    /// Where the mutator running now runs (its rewrite is journaled with
    /// it).
    mutating: Mutex<Option<MutationPoint>>,
    /// Entries kept back until something slow begins.
    held: Mutex<Held>,
}

/// The entries written with the next write, the next call's start, or the
/// checkpoint (see the module docs), and the calls that run meanwhile.
#[derive(Debug, Default)]
struct Held {
    /// Items and marks, in order.
    entries: Vec<LogEntry>,
    /// How many of `entries` are items: the last ones appended.
    items: usize,
    /// Calls started and not answered yet: while one runs, an appended
    /// item (another call's result) is written at once.
    running: Vec<ToolCallId>,
}

impl Held {
    /// Empties it, handing out what it held.
    fn take(&mut self) -> Vec<LogEntry> {
        self.items = 0;
        std::mem::take(&mut self.entries)
    }
}

/// What the items appended since the checkpoint hold.
#[derive(Debug, Default)]
struct Appended {
    /// Their ids, in order.
    ids: Vec<Option<ItemId>>,
    /// The calls they ask for: recovery interrupts these if they are still
    /// open, so their start needs no mark.
    calls: Vec<ToolCallId>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl Recorder {
    pub(crate) fn new(writer: Arc<dyn LogWriter>) -> Self {
        Self {
            writer,
            state: Mutex::new(LogState::default()),
            archive: Mutex::new(Archive::default()),
            appended: Mutex::new(Appended::default()),
            mutating: Mutex::new(None),
            held: Mutex::new(Held::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn state(&self) -> LogState {
        *self.lock()
    }

    /// The rows match a transcript of `len` items again.
    pub(crate) fn reset(&self, len: usize) {
        *self.lock() = LogState {
            next_index: len,
            broken: false,
        };
        let mut appended = self.appended();
        appended.ids.clear();
        appended.calls.clear();
        drop(appended);
        // The checkpoint stored the held items and superseded the marks.
        self.held().take();
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many items of the transcript the rows hold or will hold (the
    /// writer may still queue some): those after it are held back for the
    /// checkpoint, which writes them in its own transaction.
    pub(crate) fn written(&self) -> usize {
        let state = self.state();
        state.next_index - self.held().items.min(state.next_index)
    }

    /// `true` while entries are held back.
    pub(crate) fn has_held(&self) -> bool {
        !self.held().entries.is_empty()
    }

    /// Writes the held entries, then `next`, as one batch. The writer is
    /// called under the lock, so entries reach it in order whichever task
    /// releases them.
    fn release(&self, next: Option<LogEntry>) {
        // Written while still held, so a release from elsewhere cannot
        // overtake these entries.
        let mut held = self.held();
        let mut entries = held.take();
        entries.extend(next);
        match entries.len() {
            0 => {}
            1 => self.writer.write(entries.pop().expect("one entry")),
            _ => self.writer.write_all(entries),
        }
    }

    /// Writes what is held, before a call starts (its start may be the
    /// answer held here).
    pub(crate) fn release_held(&self) {
        if !self.lock().broken {
            self.release(None);
        }
    }

    fn appended(&self) -> std::sync::MutexGuard<'_, Appended> {
        self.appended.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn archive(&self) -> std::sync::MutexGuard<'_, Archive> {
        self.archive.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `true` when items wait to be archived.
    pub(crate) fn has_archived(&self) -> bool {
        let archive = self.archive();
        !archive.held.is_empty() || !archive.uncertain.is_empty()
    }

    /// The items to archive with the next checkpoint, and those the store
    /// may hold already (archive the ones it does not).
    pub(crate) fn take_archived(&self) -> (Vec<Item>, Vec<Item>) {
        let mut archive = self.archive();
        (
            std::mem::take(&mut archive.held),
            std::mem::take(&mut archive.uncertain),
        )
    }

    /// Puts back items a failed checkpoint did not archive.
    pub(crate) fn restore_archived(&self, mut items: Vec<Item>) {
        let mut archive = self.archive();
        items.append(&mut archive.held);
        archive.held = items;
    }

    /// Puts back uncertain items a checkpoint could not sort out.
    pub(crate) fn restore_uncertain(&self, mut items: Vec<Item>) {
        let mut archive = self.archive();
        items.append(&mut archive.uncertain);
        archive.uncertain = items;
    }

    /// Waits until every write so far is stored ([`LogWriter::flush`]). On
    /// success the rewrites written so far are known to be archived; on
    /// failure the rows are broken (the next checkpoint rewrites them) and
    /// those rewrites' items uncertain.
    pub(crate) async fn flush(&self) -> crate::StoreResult<()> {
        let flushed = self.writer.flush().await;
        self.flushed(flushed)
    }

    /// [`flush`](Self::flush) without waiting, when the writer says every
    /// write so far is stored already ([`LogWriter::stored`]).
    pub(crate) fn stored(&self) -> Option<crate::StoreResult<()>> {
        let stored = self.writer.stored()?;
        Some(self.flushed(stored))
    }

    /// Takes what a flush found in.
    fn flushed(&self, flushed: crate::StoreResult<()>) -> crate::StoreResult<()> {
        let mut archive = self.archive();
        match flushed {
            Ok(()) => archive.unconfirmed.clear(),
            Err(_) => {
                let unconfirmed = std::mem::take(&mut archive.unconfirmed);
                archive.uncertain.extend(unconfirmed);
                drop(archive);
                self.mark_broken();
            }
        }
        flushed
    }

    /// Whether a call may start, given what the flush before it found: the
    /// store holds every write so far, and the rows still follow the
    /// transcript. While they do not (a refused write, a rewrite they could
    /// not follow), the answer asking for the call may be missing from
    /// them and nothing the recorder writes would tell a resume that the
    /// call started, until the next checkpoint stores the transcript whole:
    /// the call is refused rather than run unrecorded.
    pub(crate) fn start_known(&self, flushed: crate::StoreResult<()>) -> Result<(), String> {
        flushed.map_err(|err| err.to_string())?;
        if self.lock().broken {
            return Err(
                "the item rows stopped following the transcript (a refused write or a rewrite) \
                 and are stored again at the next checkpoint"
                    .into(),
            );
        }
        Ok(())
    }

    pub(crate) fn mark_broken(&self) {
        self.lock().broken = true;
        // The next checkpoint stores the transcript whole.
        self.held().take();
    }

    /// Writes `mark` now, with what is held: something slow begins (a
    /// model call, a tool call).
    fn mark(&self, mark: Mark) {
        if !self.lock().broken {
            self.release(Some(LogEntry::Mark(mark)));
        }
    }

    /// Holds `mark` back with the items it goes with (the input it
    /// accepted): written with the next write, or superseded by the
    /// checkpoint.
    fn hold_mark(&self, mark: Mark) {
        if !self.lock().broken {
            self.held().entries.push(LogEntry::Mark(mark));
        }
    }
}

impl TranscriptObserver for Recorder {
    fn on_item_appended(&self, index: usize, item: &Item) {
        let mut state = self.lock();
        if state.broken {
            return;
        }
        if index != state.next_index {
            // The transcript was replaced under us: wait for the checkpoint.
            state.broken = true;
            return;
        }
        state.next_index += 1;
        let mut appended = self.appended();
        appended.ids.push(item.id.clone());
        appended
            .calls
            .extend(item.tool_calls().map(|call| call.id.clone()));
        drop(appended);
        let entry = LogEntry::Item {
            index,
            item: item.clone(),
        };
        let mut held = self.held();
        for result in item.tool_results() {
            held.running.retain(|call| *call != result.call_id);
        }
        if held.running.is_empty() {
            // Nothing runs: what comes next starts with a release (a call,
            // a model call, a mutator) or is the step's checkpoint.
            held.entries.push(entry);
            held.items += 1;
            return;
        }
        // Another call still runs, maybe for long: this result is written
        // now.
        drop(held);
        self.release(Some(entry));
    }

    fn on_transcript_rewritten(&self, items: &[Item], archived: &[Item]) {
        let mut state = self.lock();
        let guard = self.appended();
        let appended = &guard.ids;
        // The step's own items, unchanged in identity, end the new
        // transcript: the rows can follow the rewrite now.
        let kept = !state.broken
            && appended.len() <= items.len()
            && appended.iter().all(Option::is_some)
            && items[items.len() - appended.len()..]
                .iter()
                .map(|item| &item.id)
                .eq(appended.iter());
        if kept {
            let new_ids: std::collections::HashSet<&ItemId> =
                items.iter().filter_map(|item| item.id.as_ref()).collect();
            let removed = archived
                .iter()
                .filter(|item| item.id.as_ref().is_none_or(|id| !new_ids.contains(id)))
                .count();
            let fresh_ids = (items.len() + removed).saturating_sub(state.next_index) as u64;
            self.archive().unconfirmed.extend_from_slice(archived);
            self.release(None);
            self.writer.write(LogEntry::Rewrite {
                items: items.to_vec(),
                archived: archived.to_vec(),
                checkpoint_len: items.len() - appended.len(),
                fresh_ids,
                point: *self.mutating.lock().unwrap_or_else(|e| e.into_inner()),
            });
            state.next_index = items.len();
            return;
        }
        drop(guard);
        drop(state);
        // The next checkpoint stores the new transcript whole, and archives
        // what it no longer holds.
        self.archive().held.extend_from_slice(archived);
        self.mark_broken();
    }
}

impl LoopObserver for Recorder {
    fn handle_event(&self, event: AgentEvent) {
        match event {
            AgentEvent::InputAccepted { items } => {
                self.hold_mark(Mark::InputAccepted { count: items.len() })
            }
            AgentEvent::SoftInterruptInjected { .. } => self.hold_mark(Mark::SoftInterruptsDrained),
            AgentEvent::ModelCallStarted { .. } => self.mark(Mark::ModelCallStarted),
            AgentEvent::MutationStarted { point, .. } => {
                *self.mutating.lock().unwrap_or_else(|e| e.into_inner()) = Some(point);
                // A mutator may take long (a compaction calls a model).
                self.release_held();
            }
            AgentEvent::ToolStarted { call_id, .. } => {
                self.held().running.push(call_id.clone());
                // A call of an item written since the checkpoint is
                // interrupted on resume by that row alone.
                if self.appended().calls.contains(&call_id) {
                    self.release_held();
                } else {
                    self.mark(Mark::ToolStarted { call_id });
                }
            }
            // The step is about to pause for the host, or a task starts.
            AgentEvent::ApprovalRequired { .. }
            | AgentEvent::QuestionAsked { .. }
            | AgentEvent::TaskStarted { .. } => self.release_held(),
            _ => {}
        }
    }
}

/// The task manager layer [`crate::SessionLease::record`] adds: before a
/// call runs, the log writer is flushed, so what tells a resume that the
/// call started is stored: the row of the answer that asked for it, or its
/// [`Mark::ToolStarted`] (see the module docs), both written before the
/// call is handed to the task manager. A backend that queues its writes
/// (PostgreSQL's writer task) would otherwise let a call run, and a kill
/// then lose its start: the call would run again after resume. A store
/// that writes synchronously (SQLite) says so ([`LogWriter::stored`]): the
/// call then runs at once, with no flush future and no allocation of this
/// layer's own. A write that failed, or rows that stopped following the
/// transcript, fail the call instead of running it unrecorded (the next
/// checkpoint rewrites the rows; see [`Recorder::start_known`]).
pub(crate) struct DurableStarts {
    pub(crate) inner: Arc<dyn TaskManager>,
    pub(crate) recorder: Arc<Recorder>,
}

impl DurableStarts {
    /// Writes what the recorder held back (the call's answer may be among
    /// it), then says whether `job` may start: `Some` when the store
    /// already knows (it writes synchronously), `None` when only a flush
    /// can tell ([`stored`](Self::stored)).
    fn known_now(&self, job: &ToolJob) -> Option<Result<(), ToolError>> {
        self.recorder.release_held();
        self.recorder.stored().map(|stored| {
            self.recorder
                .start_known(stored)
                .map_err(|why| not_recorded(job, why))
        })
    }

    async fn stored(recorder: &Recorder, job: &ToolJob) -> Result<(), ToolError> {
        let flushed = recorder.flush().await;
        recorder
            .start_known(flushed)
            .map_err(|why| not_recorded(job, why))
    }
}

/// The error a call gets instead of running unrecorded.
fn not_recorded(job: &ToolJob, why: String) -> ToolError {
    ToolError::Unavailable(format!(
        "the session store could not record that call {} started, so it did not run: {why}",
        job.request.call_id
    ))
}

#[async_trait::async_trait]
impl TaskManager for DurableStarts {
    fn max_parallel(&self) -> usize {
        self.inner.max_parallel()
    }

    fn route(&self, request: &ToolRequest) -> TaskRouting {
        self.inner.route(request)
    }

    async fn run(&self, job: ToolJob) -> Result<ToolResult, ToolError> {
        match self.known_now(&job) {
            Some(known) => known?,
            None => Self::stored(&self.recorder, &job).await?,
        }
        self.inner.run(job).await
    }

    fn run_shared(
        self: Arc<Self>,
        job: ToolJob,
    ) -> Pin<Box<dyn Future<Output = Result<ToolResult, ToolError>> + Send>> {
        match self.known_now(&job) {
            Some(Ok(())) => self.inner.clone().run_shared(job),
            Some(Err(refused)) => Box::pin(std::future::ready(Err(refused))),
            None => Box::pin(async move {
                Self::stored(&self.recorder, &job).await?;
                self.inner.clone().run_shared(job).await
            }),
        }
    }
}
