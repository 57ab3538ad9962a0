//! A model adapter chosen at run time.
//!
//! The loop's model traits have associated types (an adapter's session, a
//! session's turn), which makes them fast and precise but means a host that
//! picks OpenAI or Anthropic from its configuration would have to write an
//! enum over three traits. [`DynModel`] does that once: any
//! [`ModelAdapter`] goes in, and the driver sees one type whatever came
//! from the configuration.
//!
//! The cost is one boxed session per session, one boxed turn per model call
//! and one extra virtual call per stream event: next to a network round trip
//! it does not show (the S1 numbers are in the providers chapter of the
//! book).

use agentkit_loop::{
    ModelAdapter, ModelError, ModelSession, ModelTurn, ModelTurnEvent, SessionConfig, TurnRequest,
};
use std::sync::Arc;

/// An adapter whose session type is erased.
#[async_trait::async_trait]
trait ErasedAdapter: Send + Sync + 'static {
    async fn start_session(&self, config: SessionConfig) -> Result<DynSession, ModelError>;
}

#[async_trait::async_trait]
impl<A: ModelAdapter> ErasedAdapter for A {
    async fn start_session(&self, config: SessionConfig) -> Result<DynSession, ModelError> {
        let session = ModelAdapter::start_session(self, config).await?;
        Ok(DynSession(Box::new(session)))
    }
}

/// A session whose turn type is erased.
#[async_trait::async_trait]
trait ErasedSession: Send + 'static {
    async fn begin_turn(&mut self, request: TurnRequest) -> Result<DynTurn, ModelError>;
}

#[async_trait::async_trait]
impl<S: ModelSession> ErasedSession for S {
    async fn begin_turn(&mut self, request: TurnRequest) -> Result<DynTurn, ModelError> {
        let turn = ModelSession::begin_turn(self, request).await?;
        Ok(DynTurn(Box::new(turn)))
    }
}

/// Any [`ModelAdapter`], behind one type.
///
/// Cloning is cheap (the adapter is shared).
///
/// ```
/// use agentkit::agent::Agent;
/// use agentkit::provider::DynModel;
/// use agentkit::testkit::{ScriptedModel, ScriptedTurn};
///
/// // Whatever the configuration picked, the agent's model type is the same.
/// let model = DynModel::new(ScriptedModel::new([ScriptedTurn::text("hi")]));
/// let agent = Agent::builder().model(model).build().unwrap();
/// # drop(agent);
/// ```
#[derive(Clone)]
pub struct DynModel {
    inner: Arc<dyn ErasedAdapter>,
    name: Arc<str>,
}

impl std::fmt::Debug for DynModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynModel")
            .field("adapter", &self.name)
            .finish_non_exhaustive()
    }
}

impl DynModel {
    /// Erases this adapter's type.
    pub fn new<A: ModelAdapter>(adapter: A) -> Self {
        Self {
            inner: Arc::new(adapter),
            name: std::any::type_name::<A>().into(),
        }
    }

    /// The erased adapter's type name, for logs.
    pub fn adapter_name(&self) -> &str {
        &self.name
    }
}

#[async_trait::async_trait]
impl ModelAdapter for DynModel {
    type Session = DynSession;

    async fn start_session(&self, config: SessionConfig) -> Result<DynSession, ModelError> {
        self.inner.start_session(config).await
    }
}

/// A session of a [`DynModel`].
pub struct DynSession(Box<dyn ErasedSession>);

impl std::fmt::Debug for DynSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynSession").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl ModelSession for DynSession {
    type Turn = DynTurn;

    async fn begin_turn(&mut self, request: TurnRequest) -> Result<DynTurn, ModelError> {
        self.0.begin_turn(request).await
    }
}

/// A turn of a [`DynModel`].
pub struct DynTurn(Box<dyn ModelTurn>);

impl std::fmt::Debug for DynTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynTurn").finish_non_exhaustive()
    }
}

impl ModelTurn for DynTurn {
    fn poll_next_event(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Option<ModelTurnEvent>, ModelError>> {
        self.0.poll_next_event(cx)
    }
}
