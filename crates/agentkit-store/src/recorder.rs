//! The recorder: the observers that append items as they happen.
//!
//! One [`Recorder`] belongs to one leased session. Registered on the agent
//! as both a [`TranscriptObserver`] and a [`LoopObserver`]
//! ([`crate::SessionLease::record`] does it), it hands every appended item,
//! and the few events recovery needs, to the backend's [`LogWriter`].
//!
//! When a mutator rewrites the transcript (compaction), the item rows no
//! longer match the indices the driver reports (the recorder learns it from
//! `on_transcript_rewritten` and from `MutationFinished`). It then stops
//! writing until the next checkpoint, which stores the rewritten transcript
//! whole; a crash in between resumes from the rows written before the
//! rewrite, which form a valid transcript. The items the rewrite removed
//! are held here until that checkpoint archives them.

use crate::recover::Mark;
use crate::store::{LogEntry, LogWriter};
use agentkit_core::Item;
use agentkit_loop::{
    AgentEvent, LoopObserver, TaskManager, TaskRouting, ToolJob, TranscriptObserver,
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

/// Feeds a session's appended items to its store; see the module docs.
pub struct Recorder {
    writer: Arc<dyn LogWriter>,
    state: Mutex<LogState>,
    /// Items rewrites removed, not archived yet.
    archive: Mutex<Vec<Item>>,
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
            archive: Mutex::new(Vec::new()),
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
    }

    /// `true` when items wait to be archived.
    pub(crate) fn has_archived(&self) -> bool {
        !self
            .archive
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// The items to archive with the next checkpoint.
    pub(crate) fn take_archived(&self) -> Vec<Item> {
        std::mem::take(&mut *self.archive.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Puts back items a failed checkpoint did not archive.
    pub(crate) fn restore_archived(&self, mut items: Vec<Item>) {
        let mut archive = self.archive.lock().unwrap_or_else(|e| e.into_inner());
        items.append(&mut archive);
        *archive = items;
    }

    pub(crate) fn mark_broken(&self) {
        self.lock().broken = true;
    }

    pub(crate) fn writer(&self) -> &Arc<dyn LogWriter> {
        &self.writer
    }

    fn mark(&self, mark: Mark) {
        if !self.lock().broken {
            self.writer.write(LogEntry::Mark(mark));
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
        self.writer.write(LogEntry::Item {
            index,
            item: item.clone(),
        });
    }

    fn on_transcript_rewritten(&self, _items: &[Item], archived: &[Item]) {
        // The next checkpoint stores the new transcript whole, and archives
        // what it no longer holds.
        self.archive
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(archived);
        self.mark_broken();
    }
}

impl LoopObserver for Recorder {
    fn handle_event(&self, event: AgentEvent) {
        match event {
            AgentEvent::InputAccepted { items } => {
                self.mark(Mark::InputAccepted { count: items.len() })
            }
            AgentEvent::SoftInterruptInjected { .. } => self.mark(Mark::SoftInterruptsDrained),
            AgentEvent::ModelCallStarted { .. } => self.mark(Mark::ModelCallStarted),
            AgentEvent::ToolStarted { call_id, .. } => self.mark(Mark::ToolStarted { call_id }),
            AgentEvent::MutationFinished { dirty: true, .. } => self.mark_broken(),
            _ => {}
        }
    }
}

/// The task manager layer [`crate::SessionLease::record`] adds: before a
/// call runs, the log writer is flushed, so the call's
/// [`Mark::ToolStarted`] (written when the loop reported the start, which
/// is before the call is handed to the task manager) is stored. A backend
/// that queues its writes (PostgreSQL's writer task) would otherwise let a
/// call run, and a kill then lose its mark: the call would run again after
/// resume. A write that failed fails the call instead of running it
/// unrecorded (the next checkpoint rewrites the rows).
pub(crate) struct DurableStarts {
    pub(crate) inner: Arc<dyn TaskManager>,
    pub(crate) recorder: Arc<Recorder>,
}

impl DurableStarts {
    async fn stored(recorder: &Recorder, job: &ToolJob) -> Result<(), ToolError> {
        recorder.writer.flush().await.map_err(|err| {
            recorder.mark_broken();
            ToolError::Unavailable(format!(
                "the session store could not record that call {} started, so it did not run: {err}",
                job.request.call_id
            ))
        })
    }
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
        Self::stored(&self.recorder, &job).await?;
        self.inner.run(job).await
    }

    fn run_shared(
        self: Arc<Self>,
        job: ToolJob,
    ) -> Pin<Box<dyn Future<Output = Result<ToolResult, ToolError>> + Send>> {
        Box::pin(async move {
            Self::stored(&self.recorder, &job).await?;
            self.inner.clone().run_shared(job).await
        })
    }
}
