//! Events as JSON Lines.

use agentkit_loop::{AgentEvent, LoopObserver};
use std::io::Write;
use std::sync::Mutex;

/// Writes each event as one line of JSON (the `AgentEvent` serde shape, with
/// an `"event"` tag). Content deltas are left out unless asked for: they are
/// many and the finished items carry the same text.
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, LoopStep, SessionConfig};
/// use agentkit_reporting::JsonlReporter;
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
/// use std::sync::Arc;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let log = Arc::new(JsonlReporter::new(Vec::new()));
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([ScriptedTurn::text("hi")]))
///     .observer_arc(log.clone())
///     .input(vec![Item::user("hello")])
///     .build()?;
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
/// assert!(matches!(driver.next().await?, LoopStep::Finished(_)));
///
/// drop((driver, agent));
/// let bytes = Arc::into_inner(log).unwrap().into_inner();
/// let events: Vec<serde_json::Value> = String::from_utf8(bytes)
///     .unwrap()
///     .lines()
///     .map(|line| serde_json::from_str(line).unwrap())
///     .collect();
/// // Every line is one event, named by its "event" tag.
/// assert!(events.len() >= 2);
/// assert!(events.iter().all(|event| event["event"].is_string()));
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
pub struct JsonlReporter<W: Write + Send> {
    out: Mutex<W>,
    include_deltas: bool,
}

impl<W: Write + Send> JsonlReporter<W> {
    /// A reporter writing to `out`, without content deltas.
    pub fn new(out: W) -> Self {
        Self {
            out: Mutex::new(out),
            include_deltas: false,
        }
    }

    /// Also writes every content delta.
    pub fn with_deltas(mut self, include: bool) -> Self {
        self.include_deltas = include;
        self
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl<W: Write + Send> LoopObserver for JsonlReporter<W> {
    fn handle_event(&self, event: AgentEvent) {
        if !self.include_deltas && matches!(event, AgentEvent::ContentDelta { .. }) {
            return;
        }
        let Ok(mut line) = serde_json::to_vec(&event) else {
            return;
        };
        line.push(b'\n');
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(&line);
    }
}
