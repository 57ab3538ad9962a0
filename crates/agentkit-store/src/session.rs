//! Leases and the stored session: a [`LoopDriver`] that saves itself.
//!
//! [`SessionLease`] is the right to drive one session. It hands out the
//! observers that append items as they happen ([`SessionLease::record`])
//! and opens a [`Session`]: a new driver, or the stored one resumed exactly
//! where it stopped. [`Session::next`] saves the driver's snapshot before and
//! after each step, so approvals and input given between steps are kept too.
//! While a session is open a background task renews its lease.

use crate::recorder::{DurableStarts, Recorder};
use crate::recover::recover;
use crate::store::{Checkpoint, LeaseToken, NewSession, SessionStore, derived_title};
use crate::{StoreError, StoreResult};
use agentkit_core::{Item, SessionId, Usage};
use agentkit_loop::{
    Agent, AgentBuilder, LoopDriver, LoopStep, ModelAdapter, ModelSession, SessionConfig,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a lease lasts without renewal, unless set otherwise. An open
/// [`Session`] renews it every third of that.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// The right to drive one stored session; see the module docs.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, LoopInterrupt, LoopStep};
/// use agentkit_store::{NewSession, SessionLease, SessionStore, SqliteStore};
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
/// use std::sync::Arc;
///
/// let store = Arc::new(SqliteStore::open_in_memory()?);
/// let lease = SessionLease::create(store.clone(), NewSession::new().with_title("demo")).await?;
/// let model = ScriptedModel::new([ScriptedTurn::text("hello")]);
/// let agent = lease.record(Agent::builder().model(model)).build()?;
/// let mut session = lease.open(&agent).await?;
/// let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = session.next().await? else {
///     unreachable!()
/// };
/// request.submit(&mut session, vec![Item::user("hi")])?;
/// let LoopStep::Finished(turn) = session.next().await? else { unreachable!() };
/// assert_eq!(turn.items[0].text_content(), "hello");
/// let id = session.session_id().clone();
/// session.close().await?;
/// // Every item is stored; any process can resume the session now.
/// assert_eq!(store.load(&id).await?.items.len(), 2);
/// # Ok(()) }
/// ```
pub struct SessionLease {
    store: Arc<dyn SessionStore>,
    token: LeaseToken,
    recorder: Arc<Recorder>,
    released: bool,
}

impl std::fmt::Debug for SessionLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLease")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl SessionLease {
    /// Creates a session and leases it.
    pub async fn create(store: Arc<dyn SessionStore>, new: NewSession) -> StoreResult<Self> {
        let info = store.create(new).await?;
        Self::acquire(store, &info.id).await
    }

    /// Leases an existing session for [`DEFAULT_LEASE_TTL`];
    /// [`StoreError::Busy`] while another worker holds it.
    pub async fn acquire(store: Arc<dyn SessionStore>, id: &SessionId) -> StoreResult<Self> {
        Self::acquire_with_ttl(store, id, DEFAULT_LEASE_TTL).await
    }

    /// Leases an existing session for `ttl`. A worker that crashes loses
    /// the session for at most `ttl`.
    pub async fn acquire_with_ttl(
        store: Arc<dyn SessionStore>,
        id: &SessionId,
        ttl: Duration,
    ) -> StoreResult<Self> {
        let token = store.acquire(id, ttl).await?;
        let recorder = Arc::new(Recorder::new(store.log_writer(&token)));
        Ok(Self {
            store,
            token,
            recorder,
            released: false,
        })
    }

    /// The session's id.
    pub fn session_id(&self) -> &SessionId {
        &self.token.session_id
    }

    /// The lease's token.
    pub fn token(&self) -> &LeaseToken {
        &self.token
    }

    /// Registers the observers that append this session's items as they
    /// happen, and a task manager layer that waits, before each call runs,
    /// until the store holds the call's start (so a kill can never let a
    /// started call run again on resume; with PostgreSQL that is one round
    /// trip per call). Build one agent per stored session: observers cannot
    /// tell sessions apart.
    pub fn record<M: ModelAdapter>(&self, builder: AgentBuilder<M>) -> AgentBuilder<M> {
        let recorder = self.recorder.clone();
        builder
            .transcript_observer_arc(self.recorder.clone())
            .observer_arc(self.recorder.clone())
            .wrap_task_manager(move |inner| Arc::new(DurableStarts { inner, recorder }))
    }

    /// Opens the session with a default [`SessionConfig`]: resumed from the
    /// store if anything was saved, started fresh otherwise.
    pub async fn open<M: ModelAdapter>(self, agent: &Agent<M>) -> StoreResult<Session<M::Session>> {
        let config = SessionConfig::new(self.session_id().clone());
        self.open_with(agent, config).await
    }

    /// Opens the session with this model-session configuration (its id is
    /// replaced by the lease's).
    pub async fn open_with<M: ModelAdapter>(
        mut self,
        agent: &Agent<M>,
        mut config: SessionConfig,
    ) -> StoreResult<Session<M::Session>> {
        let id = self.session_id().clone();
        config.session_id = id.clone();
        let stored = self.store.load(&id).await?;
        let recovered = recover(&id, stored.checkpoint, stored.items, &stored.marks)?;
        let driver = match recovered {
            Some(snapshot) => {
                self.recorder.reset(snapshot.transcript.len());
                agent.resume(config, snapshot).await?
            }
            None => agent.start(config).await?,
        };
        self.released = true; // the session takes the lease over
        let lost = Arc::new(AtomicBool::new(false));
        let heartbeat = tokio::spawn(heartbeat(
            self.store.clone(),
            self.token.clone(),
            lost.clone(),
        ));
        let mut session = Session {
            driver,
            store: self.store.clone(),
            token: self.token.clone(),
            recorder: self.recorder.clone(),
            usage: stored.info.usage,
            has_title: stored.info.title.is_some(),
            saved: None,
            inputs_saved: 0,
            lost,
            heartbeat,
        };
        // The recovered state becomes the checkpoint, so a second crash
        // resumes from here.
        session.save().await?;
        Ok(session)
    }

    /// Gives the lease up.
    pub async fn release(mut self) -> StoreResult<()> {
        self.released = true;
        self.store.release(&self.token).await
    }
}

impl Drop for SessionLease {
    fn drop(&mut self) {
        if !self.released {
            release_in_background(&self.store, &self.token);
        }
    }
}

fn release_in_background(store: &Arc<dyn SessionStore>, token: &LeaseToken) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let store = store.clone();
        let token = token.clone();
        runtime.spawn(async move {
            let _ = store.release(&token).await;
        });
    }
}

async fn heartbeat(store: Arc<dyn SessionStore>, token: LeaseToken, lost: Arc<AtomicBool>) {
    let period = (token.ttl / 3).max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(period).await;
        match store.renew(&token).await {
            Ok(()) => {}
            Err(StoreError::LeaseLost(_)) => {
                lost.store(true, Ordering::SeqCst);
                return;
            }
            Err(err) => tracing::warn!(session = %token.session_id, "lease renewal failed: {err}"),
        }
    }
}

/// A [`LoopDriver`] whose every step is saved; see the module docs.
///
/// The interrupt handles work on it directly (`pending.approve(&mut
/// session)`, `request.submit(&mut session, items)`), and the driver's
/// everyday calls are its own methods; [`driver`](Self::driver) and
/// [`driver_mut`](Self::driver_mut) reach the rest. A change made through
/// any of them is saved by the next [`next`](Self::next) or
/// [`save`](Self::save).
pub struct Session<S: ModelSession> {
    driver: LoopDriver<S>,
    store: Arc<dyn SessionStore>,
    token: LeaseToken,
    recorder: Arc<Recorder>,
    usage: Usage,
    has_title: bool,
    /// The driver's [`generation`](LoopDriver::generation) at the last
    /// checkpoint: an unchanged driver is not even serialized again (the
    /// generation moves only on a real change: an idle step keeps it).
    saved: Option<u64>,
    /// Lines of the driver's input log already in the store (the header
    /// is line 0), when recording.
    inputs_saved: usize,
    lost: Arc<AtomicBool>,
    heartbeat: tokio::task::JoinHandle<()>,
}

impl<S: ModelSession> Session<S> {
    /// Runs the driver to its next yield point and saves. If the host
    /// changed the driver since the last save (resolved an approval,
    /// submitted input), that is saved first.
    ///
    /// A loop failure comes back as [`StoreError::Loop`] after the state was
    /// saved; [`StoreError::LeaseLost`] means another worker owns the
    /// session now and this one must stop.
    ///
    /// The step's last items are written by its checkpoint, in the same
    /// transaction (the book's sessions chapter, "What is saved, and
    /// when"): a future of `next()` dropped before it completes leaves them
    /// to the next `next()`, [`save`](Self::save) or [`close`](Self::close).
    pub async fn next(&mut self) -> StoreResult<LoopStep> {
        if self.saved != Some(self.driver.generation()) {
            // The host changed the driver (an approval, input): keep that
            // before the step.
            self.save().await?;
        }
        let result = self.driver.next().await;
        if let Ok(LoopStep::Finished(turn)) = &result {
            self.usage.accumulate(&turn.usage);
        }
        self.save().await?;
        Ok(result?)
    }

    /// Saves the driver's snapshot now, unless it is unchanged since the
    /// last save. `next()` calls it; call it yourself to keep a decision
    /// (an approval, queued input) before the next step.
    pub async fn save(&mut self) -> StoreResult<()> {
        if self.lost.load(Ordering::SeqCst) {
            return Err(StoreError::LeaseLost(self.token.session_id.clone()));
        }
        if let Err(err) = self.recorder.flush().await {
            // Some rows may be missing: the checkpoint rewrites them.
            return Err(self.note(err));
        }
        let generation = self.driver.generation();
        let state = self.recorder.state();
        // Items held back for this checkpoint are not in the rows yet.
        let written = self.recorder.written();
        let view = self.driver.transcript();
        let len = view.len();
        let rows_current = !state.broken && written == len;
        if rows_current
            && self.saved == Some(generation)
            && !self.recorder.has_archived()
            && !self.recorder.has_held()
        {
            // Nothing happened since the last checkpoint: no snapshot is
            // built.
            return Ok(());
        }
        // The items are in the rows already, but for those the recorder has
        // not written: copy only those, so a save costs the same at any
        // transcript length.
        let snapshot = self.driver.snapshot_without_transcript();
        let snapshot_json = serde_json::to_string(&snapshot)?;
        let (first, tail, derived) = {
            let transcript = view.read();
            let first = if state.broken || state.next_index > len {
                Some(0)
            } else if written < len {
                Some(written)
            } else {
                None
            };
            let tail =
                first.map_or_else(Vec::new, |first| transcript.items().range(first..).to_vec());
            let derived = if self.has_title {
                None
            } else {
                derived_title(&transcript)
            };
            (first, tail, derived)
        };
        let items = first.map(|first| (first, &tail[..]));
        let archived = match self.archived_to_store().await {
            Ok(archived) => archived,
            Err(err) => return Err(self.note(err)),
        };
        let title = derived;
        if let Err(err) = self.save_inputs().await {
            self.recorder.restore_archived(archived);
            return Err(self.note(err));
        }
        let checkpoint = Checkpoint {
            snapshot_json,
            snapshot_version: snapshot.version,
            transcript_len: len,
            items,
            usage: &self.usage,
            title: title.clone(),
            archived: &archived,
        };
        if let Err(err) = self.store.save(&self.token, checkpoint).await {
            self.recorder.restore_archived(archived);
            return Err(self.note(err));
        }
        self.has_title |= title.is_some();
        self.recorder.reset(len);
        self.saved = Some(generation);
        Ok(())
    }

    /// The items the next checkpoint archives: those rewrites removed
    /// while the rows were broken, after those of rewrites written before a
    /// failed flush that the store's archive does not hold (the rewrite's
    /// transaction either archived all of its items or none).
    async fn archived_to_store(&mut self) -> StoreResult<Vec<Item>> {
        let (held, uncertain) = self.recorder.take_archived();
        if uncertain.is_empty() {
            return Ok(held);
        }
        let stored = match self.store.archived(&self.token.session_id).await {
            Ok(stored) => stored,
            Err(err) => {
                self.recorder.restore_uncertain(uncertain);
                self.recorder.restore_archived(held);
                return Err(err);
            }
        };
        let mut archived: Vec<Item> = uncertain
            .into_iter()
            .filter(|item| !stored.contains(item))
            .collect();
        archived.extend(held);
        Ok(archived)
    }

    /// Records the driver's inputs from here on into the store, as the
    /// JSON lines of an [`InputLog`](agentkit_loop::replay::InputLog)
    /// (restarting a recording in progress). They are written with each
    /// checkpoint (inputs that changed nothing, like an idle step, wait for
    /// the next one or [`close`](Self::close)); read them back with
    /// [`load_input_log`](crate::load_input_log) to replay the session or
    /// fork it at any step.
    pub fn record_inputs(&mut self) {
        self.driver.record_inputs();
        self.inputs_saved = 0;
    }

    /// Writes the recorded inputs the store does not hold yet.
    async fn save_inputs(&mut self) -> StoreResult<()> {
        let Some((header, inputs)) = self.driver.recorded_inputs() else {
            return Ok(());
        };
        let total = inputs.len() + 1;
        if self.inputs_saved >= total {
            return Ok(());
        }
        let mut lines = Vec::with_capacity(total - self.inputs_saved);
        if self.inputs_saved == 0 {
            lines.push(serde_json::to_string(header)?);
        }
        for input in &inputs[self.inputs_saved.saturating_sub(1)..] {
            lines.push(serde_json::to_string(input)?);
        }
        let from = self.inputs_saved;
        self.store.append_inputs(&self.token, from, &lines).await?;
        self.inputs_saved = total;
        Ok(())
    }

    fn note(&self, err: StoreError) -> StoreError {
        if matches!(err, StoreError::LeaseLost(_)) {
            self.lost.store(true, Ordering::SeqCst);
        }
        err
    }

    /// The session's id.
    pub fn session_id(&self) -> &SessionId {
        &self.token.session_id
    }

    /// Usage summed over every finished turn of the session.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// The transcript so far, as a cheap view.
    pub fn transcript(&self) -> agentkit_loop::TranscriptView {
        self.driver.transcript()
    }

    /// The soft-interrupt queue (see [`LoopDriver::soft_interrupts`]).
    pub fn soft_interrupts(&self) -> agentkit_loop::SoftInterruptHandle {
        self.driver.soft_interrupts()
    }

    /// The calls running in the background (see
    /// [`LoopDriver::background_tasks`]).
    pub fn background_tasks(&self) -> agentkit_loop::BackgroundTasks {
        self.driver.background_tasks()
    }

    /// Resolves the approval of a call (see
    /// [`LoopDriver::resolve_approval_for`]).
    pub fn resolve_approval_for(
        &mut self,
        call_id: agentkit_core::ToolCallId,
        decision: agentkit_tools_core::ApprovalDecision,
    ) -> Result<(), agentkit_loop::LoopError> {
        self.driver.resolve_approval_for(call_id, decision)
    }

    /// Gives up on the turn in progress (see [`LoopDriver::abandon_turn`]).
    pub fn abandon_turn(
        &mut self,
        reason: impl Into<String>,
    ) -> Result<agentkit_loop::TurnResult, agentkit_loop::LoopError> {
        self.driver.abandon_turn(reason)
    }

    /// The driver's state (see [`LoopDriver::snapshot`]).
    pub fn snapshot(&self) -> agentkit_loop::LoopSnapshot {
        self.driver.snapshot()
    }

    /// The driver.
    pub fn driver(&self) -> &LoopDriver<S> {
        &self.driver
    }

    /// The driver, to resolve approvals or submit input. Changes are saved
    /// by the next [`Session::next`] or [`Session::save`].
    pub fn driver_mut(&mut self) -> &mut LoopDriver<S> {
        &mut self.driver
    }

    /// Saves and gives the lease up.
    pub async fn close(mut self) -> StoreResult<()> {
        self.save().await?;
        if let Err(err) = self.save_inputs().await {
            return Err(self.note(err));
        }
        self.heartbeat.abort();
        let result = self.store.release(&self.token).await;
        // Dropping now must not release a second time.
        self.lost.store(true, Ordering::SeqCst);
        result
    }
}

/// The interrupt handles take the session directly:
/// `pending.approve(&mut session)`, `request.submit(&mut session, items)`.
impl<S: ModelSession> AsMut<LoopDriver<S>> for Session<S> {
    fn as_mut(&mut self) -> &mut LoopDriver<S> {
        &mut self.driver
    }
}

impl<S: ModelSession> Drop for Session<S> {
    fn drop(&mut self) {
        self.heartbeat.abort();
        if !self.lost.load(Ordering::SeqCst) {
            release_in_background(&self.store, &self.token);
        }
    }
}
