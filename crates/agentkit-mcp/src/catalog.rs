//! The merged tool catalog of all servers, its revisions and change events.
//!
//! The agent loop reads the catalog at every model call, so reading must be
//! cheap: the current [`CatalogSnapshot`] is rebuilt only when some
//! server's tool list changes (connect, `list_changed`, disconnect) and is
//! handed out as a clone of `Arc`s. Each rebuild that changes anything
//! raises the revision by one and publishes a [`ToolCatalogEvent`] naming
//! the exposed tools that appeared, disappeared or changed.

use crate::convert::{RemoteTool, tool_spec};
use crate::manager::Inner;
use crate::naming::NameAllocator;
use crate::resource_tools::HostTool;
use crate::tool::McpTool;
use agentkit_tools_core::{CatalogSnapshot, Tool, ToolCatalogEvent, ToolSource, ToolSpec};
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use tokio::sync::broadcast;

/// The name of the manager's tool source, in catalog events and logs.
pub const SOURCE_NAME: &str = "mcp";

/// How many catalog events a slow subscriber may fall behind.
const EVENT_BUFFER: usize = 64;

pub(crate) struct CatalogState {
    snapshot: CatalogSnapshot,
    specs: BTreeMap<String, Arc<ToolSpec>>,
    events: broadcast::Sender<ToolCatalogEvent>,
}

impl CatalogState {
    pub(crate) fn new() -> Self {
        Self {
            snapshot: CatalogSnapshot::new(0, Vec::new()),
            specs: BTreeMap::new(),
            events: broadcast::channel(EVENT_BUFFER).0,
        }
    }

    pub(crate) fn snapshot(&self) -> CatalogSnapshot {
        self.snapshot.clone()
    }

    pub(crate) fn subscribe(&self) -> CatalogEvents {
        CatalogEvents {
            receiver: self.events.subscribe(),
        }
    }

    /// Rebuilds from every server's tools (in registration order); bumps the
    /// revision and publishes an event when anything changed.
    pub(crate) fn rebuild(&mut self, servers: &[(String, Vec<RemoteTool>)], manager: &Weak<Inner>) {
        let mut names = NameAllocator::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut specs = BTreeMap::new();
        for (server, remote_tools) in servers {
            for remote in remote_tools {
                let exposed = names.allocate(server, &remote.name);
                let spec = Arc::new(tool_spec(server, &exposed, remote));
                specs.insert(exposed, spec.clone());
                tools.push(match remote.host {
                    Some(request) => Arc::new(HostTool {
                        spec,
                        server: server.clone(),
                        request,
                        manager: manager.clone(),
                    }),
                    None => Arc::new(McpTool {
                        spec,
                        server: server.clone(),
                        tool: remote.name.clone(),
                        manager: manager.clone(),
                    }),
                });
            }
        }
        let mut event = ToolCatalogEvent {
            source: SOURCE_NAME.to_owned(),
            ..ToolCatalogEvent::default()
        };
        for (name, spec) in &specs {
            match self.specs.get(name) {
                None => event.added.push(name.clone()),
                Some(old) if old != spec => event.changed.push(name.clone()),
                Some(_) => {}
            }
        }
        event.removed = self
            .specs
            .keys()
            .filter(|name| !specs.contains_key(*name))
            .cloned()
            .collect();
        if event.is_empty() {
            return;
        }
        let revision = self.snapshot.revision + 1;
        tracing::info!(
            revision,
            added = ?event.added,
            removed = ?event.removed,
            changed = ?event.changed,
            "MCP tool catalog changed"
        );
        self.snapshot = CatalogSnapshot::new(revision, tools);
        self.specs = specs;
        // Nobody listening is fine: the snapshot is the source of truth.
        let _ = self.events.send(event);
    }
}

/// A stream of catalog changes, from [`McpServerManager::subscribe`].
///
/// [`McpServerManager::subscribe`]: crate::McpServerManager::subscribe
pub struct CatalogEvents {
    receiver: broadcast::Receiver<ToolCatalogEvent>,
}

impl CatalogEvents {
    /// The next change; `None` once the manager is gone. A subscriber that
    /// falls more than 64 events behind skips the oldest ones; the source's
    /// snapshot is always current, whatever was skipped.
    pub async fn recv(&mut self) -> Option<ToolCatalogEvent> {
        crate::events::next_event(&mut self.receiver).await
    }

    /// The next change if one is already waiting.
    pub fn try_recv(&mut self) -> Option<ToolCatalogEvent> {
        crate::events::waiting_event(&mut self.receiver)
    }
}

impl std::fmt::Debug for CatalogEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogEvents").finish_non_exhaustive()
    }
}

/// The tools of every connected server, as one agentkit [`ToolSource`].
///
/// It keeps the manager (and so the server connections) alive: servers are
/// shut down when the last manager handle and the last source are dropped.
#[derive(Clone)]
pub struct McpToolSource {
    pub(crate) manager: Arc<Inner>,
}

impl ToolSource for McpToolSource {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    fn snapshot(&self) -> CatalogSnapshot {
        self.manager.snapshot()
    }
}

impl std::fmt::Debug for McpToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolSource")
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools(list: &[(&str, &str)]) -> Vec<RemoteTool> {
        list.iter()
            .map(|(name, description)| {
                RemoteTool::from_json(json!({ "name": name, "description": description })).unwrap()
            })
            .collect()
    }

    #[test]
    fn revisions_move_only_when_the_tools_change() {
        let mut catalog = CatalogState::new();
        let mut events = catalog.subscribe();
        let nobody = Weak::new();

        catalog.rebuild(&[("s".into(), tools(&[("a", "A"), ("b", "B")]))], &nobody);
        assert_eq!(catalog.snapshot().revision, 1);
        let event = events.try_recv().unwrap();
        assert_eq!(event.added, ["mcp_s_a", "mcp_s_b"]);

        catalog.rebuild(&[("s".into(), tools(&[("a", "A"), ("b", "B")]))], &nobody);
        assert_eq!(catalog.snapshot().revision, 1, "same tools, same revision");
        assert!(events.try_recv().is_none());

        catalog.rebuild(
            &[("s".into(), tools(&[("a", "A, better"), ("c", "C")]))],
            &nobody,
        );
        assert_eq!(catalog.snapshot().revision, 2);
        let event = events.try_recv().unwrap();
        assert_eq!(event.source, SOURCE_NAME);
        assert_eq!(event.added, ["mcp_s_c"]);
        assert_eq!(event.removed, ["mcp_s_b"]);
        assert_eq!(event.changed, ["mcp_s_a"]);
        assert_eq!(catalog.snapshot().names(), ["mcp_s_a", "mcp_s_c"]);
    }

    #[test]
    fn servers_keep_their_order_and_names_stay_unique() {
        let mut catalog = CatalogState::new();
        catalog.rebuild(
            &[
                ("one".into(), tools(&[("x.y", "")])),
                ("one".into(), tools(&[("x_y", "")])),
            ],
            &Weak::new(),
        );
        let names = catalog.snapshot().names();
        assert_eq!(names[0], "mcp_one_x_y");
        assert_ne!(names[0], names[1]);
    }
}
