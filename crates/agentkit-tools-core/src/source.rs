//! Tool sources: where the tools of an agent come from.
//!
//! A source is a catalog read as a cheap snapshot. Frozen sources (a
//! [`ToolRegistry`]) keep one snapshot forever; sources that change (an MCP
//! server announcing new tools, a plugin folder being watched) publish a new
//! snapshot with a higher revision. Readers compare revisions to notice
//! changes without diffing tool lists every time.

use crate::Tool;
use crate::federation::CatalogError;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A source's tools at one moment.
#[derive(Clone)]
pub struct CatalogSnapshot {
    /// Increases whenever the source's tool list changes.
    pub revision: u64,
    /// The tools, in the source's order.
    pub tools: Arc<[Arc<dyn Tool>]>,
}

impl CatalogSnapshot {
    /// A snapshot of these tools at this revision.
    pub fn new(revision: u64, tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            revision,
            tools: tools.into(),
        }
    }

    /// The tools' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|tool| tool.spec().name.clone())
            .collect()
    }
}

impl std::fmt::Debug for CatalogSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogSnapshot")
            .field("revision", &self.revision)
            .field("tools", &self.names())
            .finish()
    }
}

/// How a catalog changed; the loop reports it as `ToolCatalogChanged`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCatalogEvent {
    /// The source's name (or the federation's, for a merged view).
    pub source: String,
    /// Tools that appeared.
    pub added: Vec<String>,
    /// Tools that disappeared.
    pub removed: Vec<String>,
    /// Tools whose spec changed.
    pub changed: Vec<String>,
}

impl ToolCatalogEvent {
    /// `true` when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// A catalog of tools that an agent reads at every model call.
pub trait ToolSource: Send + Sync {
    /// A name for logs and catalog events.
    fn name(&self) -> &str;

    /// The current tools. Called at every model call: keep it cheap (clone an
    /// `Arc`).
    fn snapshot(&self) -> CatalogSnapshot;

    /// The revision [`snapshot`](Self::snapshot) would report. A federation
    /// asks at every model call and tool call whether its sources changed;
    /// override this when the revision is cheaper to read than a snapshot
    /// is to make.
    fn revision(&self) -> u64 {
        self.snapshot().revision
    }

    /// `true` when this source's tools never change once it is handed to
    /// a federation (its revision stays what it is): a federation whose
    /// sources are all frozen builds its catalog once and then neither
    /// locks nor asks for revisions, so checking at a call's start that
    /// its catalog is still current is a comparison. Default: `false`; a
    /// [`ToolRegistry`] says `true`.
    fn is_frozen(&self) -> bool {
        false
    }
}

impl<T: ToolSource + ?Sized> ToolSource for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn snapshot(&self) -> CatalogSnapshot {
        (**self).snapshot()
    }

    fn revision(&self) -> u64 {
        (**self).revision()
    }

    fn is_frozen(&self) -> bool {
        (**self).is_frozen()
    }
}

/// A fixed set of tools, frozen once it is handed to an agent.
///
/// The tools are kept in the shared slice snapshots hand out, so reading
/// the catalog (every model call and every tool call) allocates nothing;
/// registering a tool copies the slice, which happens while building.
///
/// ```
/// use agentkit_tools_core::{CatalogError, ToolError, ToolRegistry, ToolSource, TypedTool};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct NoArgs {}
///
/// let clock = || TypedTool::new("clock", "The time.", |_: NoArgs, _ctx| async {
///     Ok::<_, ToolError>("12:00")
/// });
/// // Built in a chain and handed to `AgentBuilder::add_tool_source`.
/// let tools = ToolRegistry::new().named("builtin").with(clock());
/// assert_eq!(tools.snapshot().names(), ["clock"]);
///
/// // `register` refuses a second tool of the same name (`with` replaces it).
/// let mut tools = tools;
/// assert!(matches!(tools.register(clock()), Err(CatalogError::Collision { .. })));
/// assert_eq!(tools.len(), 1);
/// ```
#[derive(Clone)]
pub struct ToolRegistry {
    name: String,
    tools: Arc<[Arc<dyn Tool>]>,
}

impl ToolRegistry {
    /// An empty registry named `native`.
    pub fn new() -> Self {
        Self {
            name: "native".into(),
            tools: Arc::new([]),
        }
    }

    /// Renames the registry (for catalog events).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Adds a tool; a name already registered is an error.
    pub fn register(&mut self, tool: impl Tool + 'static) -> Result<(), CatalogError> {
        self.register_arc(Arc::new(tool))
    }

    /// Adds a shared tool; a name already registered is an error.
    pub fn register_arc(&mut self, tool: Arc<dyn Tool>) -> Result<(), CatalogError> {
        let name = tool.spec().name.clone();
        if self.tools.iter().any(|t| t.spec().name == name) {
            return Err(CatalogError::Collision {
                name,
                sources: vec![self.name.clone(), self.name.clone()],
            });
        }
        let mut tools = self.tools.to_vec();
        tools.push(tool);
        self.tools = tools.into();
        Ok(())
    }

    /// Adds a tool, replacing one of the same name; for builder chains.
    pub fn with(mut self, tool: impl Tool + 'static) -> Self {
        let tool: Arc<dyn Tool> = Arc::new(tool);
        let name = tool.spec().name.clone();
        let mut tools = self.tools.to_vec();
        tools.retain(|t| t.spec().name != name);
        tools.push(tool);
        self.tools = tools.into();
        self
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// `true` when there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolSource for ToolRegistry {
    fn name(&self) -> &str {
        &self.name
    }

    fn snapshot(&self) -> CatalogSnapshot {
        CatalogSnapshot {
            revision: 0,
            tools: self.tools.clone(),
        }
    }

    /// A registry never changes.
    fn revision(&self) -> u64 {
        0
    }

    /// A registry in a federation is no longer reachable to change
    /// (registering takes `&mut self`).
    fn is_frozen(&self) -> bool {
        true
    }
}
