//! Events as JSON Lines.

use agentkit_loop::{AgentEvent, LoopObserver};
use std::io::Write;
use std::sync::Mutex;

/// Writes each event as one line of JSON (the `AgentEvent` serde shape, with
/// an `"event"` tag). Content deltas are left out unless asked for: they are
/// many and the finished items carry the same text.
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
