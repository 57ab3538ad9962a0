//! A tool catalog that changes while the agent runs.
//!
//! MCP servers announce new tools, plugins get loaded, a feature flag turns a
//! tool off. [`dynamic_catalog`] returns a writer and a reader over one shared
//! catalog: the writer is kept by whoever learns about changes, the reader is
//! handed to the agent as a [`ToolSource`]. Every change publishes a fresh
//! snapshot with a higher revision (so a federation notices it with one
//! comparison) and a [`ToolCatalogEvent`] to every subscriber. Readers never
//! block writers for longer than an `Arc` clone.

use crate::federation::CatalogError;
use crate::{CatalogSnapshot, Tool, ToolCatalogEvent, ToolSource, validate_tool_name};
use std::sync::{Arc, RwLock};
use tokio::sync::broadcast;

/// How many events a slow subscriber may fall behind before it is told it
/// lagged (and should re-read the snapshot instead).
const EVENT_BUFFER: usize = 64;

struct Shared {
    name: String,
    snapshot: RwLock<CatalogSnapshot>,
    events: broadcast::Sender<ToolCatalogEvent>,
}

impl Shared {
    fn current(&self) -> CatalogSnapshot {
        self.snapshot
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Applies `change` to the tool list under the write lock; publishes a new
    /// revision if the list changed, then the event if it names anything.
    fn update<R>(
        &self,
        change: impl FnOnce(&mut Vec<Arc<dyn Tool>>) -> Result<R, CatalogError>,
    ) -> Result<(R, ToolCatalogEvent), CatalogError> {
        let mut guard = self
            .snapshot
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let before: Vec<Arc<dyn Tool>> = guard.tools.to_vec();
        let mut after = before.clone();
        let result = change(&mut after)?;
        let identical = before.len() == after.len()
            && before.iter().zip(&after).all(|(a, b)| Arc::ptr_eq(a, b));
        let event = diff(&self.name, &before, &after);
        if !identical {
            *guard = CatalogSnapshot::new(guard.revision + 1, after);
        }
        drop(guard);
        if !event.is_empty() {
            // No subscriber is not an error: events are a courtesy, the
            // revision is the source of truth.
            let _ = self.events.send(event.clone());
        }
        Ok((result, event))
    }
}

/// Names added, removed, or whose spec changed between two tool lists.
fn diff(source: &str, before: &[Arc<dyn Tool>], after: &[Arc<dyn Tool>]) -> ToolCatalogEvent {
    let mut event = ToolCatalogEvent {
        source: source.to_owned(),
        ..Default::default()
    };
    for tool in after {
        let spec = tool.spec();
        match before.iter().find(|old| old.spec().name == spec.name) {
            None => event.added.push(spec.name.clone()),
            Some(old) if *old.spec() != *spec => event.changed.push(spec.name.clone()),
            Some(_) => {}
        }
    }
    for tool in before {
        let name = &tool.spec().name;
        if !after.iter().any(|new| new.spec().name == *name) {
            event.removed.push(name.clone());
        }
    }
    event
}

fn position(tools: &[Arc<dyn Tool>], name: &str) -> Option<usize> {
    tools.iter().position(|tool| tool.spec().name == name)
}

/// A new, empty dynamic catalog: the writer to change it, the reader to give
/// to the agent. Both are cheap to clone and share the same catalog.
///
/// ```
/// use agentkit_tools_core::{dynamic_catalog, ToolSource};
///
/// let (writer, reader) = dynamic_catalog("plugins");
/// assert_eq!(reader.snapshot().revision, 0);
/// assert!(!writer.remove("nothing-here"));
/// assert_eq!(reader.snapshot().revision, 0, "a no-op is not a change");
/// ```
pub fn dynamic_catalog(name: impl Into<String>) -> (CatalogWriter, CatalogReader) {
    let (events, _) = broadcast::channel(EVENT_BUFFER);
    let shared = Arc::new(Shared {
        name: name.into(),
        snapshot: RwLock::new(CatalogSnapshot::new(0, Vec::new())),
        events,
    });
    (
        CatalogWriter {
            shared: shared.clone(),
        },
        CatalogReader { shared },
    )
}

/// Changes a dynamic catalog. Each method that changes the tool list raises
/// the revision by one and sends one [`ToolCatalogEvent`] naming what the
/// model will see differently. Replacing a tool by another object with an
/// identical spec raises the revision (the implementation changed) but sends
/// no event (the model's view did not).
#[derive(Clone)]
pub struct CatalogWriter {
    shared: Arc<Shared>,
}

impl CatalogWriter {
    /// Adds a tool; a name already in the catalog (or one outside the
    /// provider pattern) is an error and changes nothing.
    pub fn add(&self, tool: Arc<dyn Tool>) -> Result<(), CatalogError> {
        let name = tool.spec().name.clone();
        validate_tool_name(&name)?;
        self.shared
            .update(|tools| {
                if position(tools, &name).is_some() {
                    return Err(CatalogError::Collision {
                        name: name.clone(),
                        sources: vec![self.shared.name.clone(), self.shared.name.clone()],
                    });
                }
                tools.push(tool);
                Ok(())
            })
            .map(|_| ())
    }

    /// Adds a tool, or replaces the one of the same name in place (keeping its
    /// position). Returns the event that was sent, which is empty if the spec
    /// did not change.
    pub fn upsert(&self, tool: Arc<dyn Tool>) -> Result<ToolCatalogEvent, CatalogError> {
        let name = tool.spec().name.clone();
        validate_tool_name(&name)?;
        self.shared
            .update(|tools| {
                match position(tools, &name) {
                    Some(index) => tools[index] = tool,
                    None => tools.push(tool),
                }
                Ok(())
            })
            .map(|((), event)| event)
    }

    /// Removes the tool of this name; `false` if there was none.
    pub fn remove(&self, name: &str) -> bool {
        self.shared
            .update(|tools| {
                Ok(position(tools, name)
                    .map(|index| tools.remove(index))
                    .is_some())
            })
            .map(|(removed, _)| removed)
            .unwrap_or(false)
    }

    /// Replaces the whole tool list at once, as after an MCP `list_changed`
    /// notification; one revision and one event cover the whole change.
    /// Duplicate or invalid names are an error and change nothing.
    pub fn replace_all(&self, tools: Vec<Arc<dyn Tool>>) -> Result<ToolCatalogEvent, CatalogError> {
        for (index, tool) in tools.iter().enumerate() {
            let name = &tool.spec().name;
            validate_tool_name(name)?;
            if position(&tools[..index], name).is_some() {
                return Err(CatalogError::Collision {
                    name: name.clone(),
                    sources: vec![self.shared.name.clone(), self.shared.name.clone()],
                });
            }
        }
        self.shared
            .update(|current| {
                *current = tools;
                Ok(())
            })
            .map(|((), event)| event)
    }

    /// Removes every tool.
    pub fn clear(&self) -> ToolCatalogEvent {
        self.shared
            .update(|tools| {
                tools.clear();
                Ok(())
            })
            .map(|((), event)| event)
            .unwrap_or_default()
    }

    /// Another reader of this catalog.
    pub fn reader(&self) -> CatalogReader {
        CatalogReader {
            shared: self.shared.clone(),
        }
    }

    /// Events for every later change, see [`CatalogReader::subscribe`].
    pub fn subscribe(&self) -> broadcast::Receiver<ToolCatalogEvent> {
        self.shared.events.subscribe()
    }
}

impl std::fmt::Debug for CatalogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogWriter")
            .field("name", &self.shared.name)
            .finish_non_exhaustive()
    }
}

/// Reads a dynamic catalog; this is the [`ToolSource`] an agent is given.
#[derive(Clone)]
pub struct CatalogReader {
    shared: Arc<Shared>,
}

impl CatalogReader {
    /// The current revision; it rises by one with every change.
    pub fn revision(&self) -> u64 {
        self.shared.current().revision
    }

    /// The tool of this name, if the catalog has one now.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let snapshot = self.shared.current();
        position(&snapshot.tools, name).map(|index| snapshot.tools[index].clone())
    }

    /// A receiver of one [`ToolCatalogEvent`] per later change. Events from
    /// before the call are not replayed; read [`ToolSource::snapshot`] for the
    /// current state. A receiver that falls more than 64 events behind gets
    /// `RecvError::Lagged` and should re-read the snapshot.
    pub fn subscribe(&self) -> broadcast::Receiver<ToolCatalogEvent> {
        self.shared.events.subscribe()
    }
}

impl ToolSource for CatalogReader {
    fn name(&self) -> &str {
        &self.shared.name
    }

    fn snapshot(&self) -> CatalogSnapshot {
        self.shared.current()
    }

    fn revision(&self) -> u64 {
        self.shared
            .snapshot
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .revision
    }
}

impl std::fmt::Debug for CatalogReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogReader")
            .field("name", &self.shared.name)
            .field("snapshot", &self.shared.current())
            .finish()
    }
}
