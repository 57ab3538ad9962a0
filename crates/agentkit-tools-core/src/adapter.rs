//! Source adapters: change how a source's tools appear without touching it.
//!
//! Two MCP servers may both call a tool `search`; a host may want only the
//! read-only tools of a server. [`PrefixedSource`] renames every tool with a
//! prefix (`gh_search`) while calls still reach the original tool under its
//! own name, and [`FilteredSource`] hides the tools a predicate rejects. Both
//! keep the wrapped source's revision, and both rebuild their view only when
//! that revision moves, so wrapping costs nothing per model call.

use crate::{
    CatalogSnapshot, InvalidToolName, PermissionRequest, Tool, ToolContext, ToolError, ToolRequest,
    ToolResult, ToolSource, ToolSpec, validate_tool_name,
};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// The last view an adapter built, and the inner revision it was built from.
type ViewCache = Mutex<Option<(u64, CatalogSnapshot)>>;

fn cached_view(
    cache: &ViewCache,
    inner: CatalogSnapshot,
    build: impl FnOnce(&CatalogSnapshot) -> Vec<Arc<dyn Tool>>,
) -> CatalogSnapshot {
    let mut cache = cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((revision, view)) = cache.as_ref()
        && *revision == inner.revision
    {
        return view.clone();
    }
    let view = CatalogSnapshot::new(inner.revision, build(&inner));
    *cache = Some((inner.revision, view.clone()));
    view
}

/// A source whose tool names all start with a prefix.
///
/// A renamed tool whose new name would break `^[a-zA-Z0-9_-]{1,64}$` (it
/// grows past 64 characters) is left out of the catalog, with a warning in
/// the log, rather than being offered under a name a provider would refuse.
///
/// ```
/// use agentkit_tools_core::{PrefixedSource, ToolRegistry, ToolSource};
///
/// let prefixed = PrefixedSource::new(ToolRegistry::new().named("github"), "gh_")?;
/// assert_eq!(prefixed.name(), "github");
/// assert!(PrefixedSource::new(ToolRegistry::new(), "gh.").is_err());
/// # Ok::<(), agentkit_tools_core::InvalidToolName>(())
/// ```
pub struct PrefixedSource<S> {
    inner: S,
    prefix: String,
    cache: ViewCache,
}

impl<S: ToolSource> PrefixedSource<S> {
    /// Wraps `inner`; the prefix must itself be a valid tool name.
    pub fn new(inner: S, prefix: impl Into<String>) -> Result<Self, InvalidToolName> {
        let prefix = prefix.into();
        validate_tool_name(&prefix)?;
        Ok(Self {
            inner,
            prefix,
            cache: Mutex::new(None),
        })
    }

    /// The prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The wrapped source.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn rename(&self, tool: &Arc<dyn Tool>) -> Option<Arc<dyn Tool>> {
        let original = tool.spec();
        let name = format!("{}{}", self.prefix, original.name);
        if let Err(err) = validate_tool_name(&name) {
            tracing::warn!(
                source = self.inner.name(),
                tool = %original.name,
                "left out of the prefixed catalog: {err}"
            );
            return None;
        }
        let mut spec = (*original).clone();
        spec.name = name;
        Some(Arc::new(RenamedTool {
            spec: Arc::new(spec),
            original_name: original.name.as_str().into(),
            inner: tool.clone(),
        }))
    }
}

impl<S: ToolSource> ToolSource for PrefixedSource<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn snapshot(&self) -> CatalogSnapshot {
        cached_view(&self.cache, self.inner.snapshot(), |inner| {
            inner.tools.iter().filter_map(|t| self.rename(t)).collect()
        })
    }

    /// The view keeps the wrapped source's revision.
    fn revision(&self) -> u64 {
        self.inner.revision()
    }

    /// Frozen when the wrapped source is.
    fn is_frozen(&self) -> bool {
        self.inner.is_frozen()
    }
}

/// A tool offered under another name; calls reach the original under its own.
struct RenamedTool {
    spec: Arc<ToolSpec>,
    original_name: Arc<str>,
    inner: Arc<dyn Tool>,
}

#[async_trait::async_trait]
impl Tool for RenamedTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        self.inner.proposed_requests(input)
    }

    async fn invoke(
        &self,
        mut request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        request.tool_name = self.original_name.clone();
        self.inner.invoke(request, ctx).await
    }
}

/// A source showing only the tools whose spec passes a predicate.
///
/// ```
/// use agentkit_tools_core::{FilteredSource, ToolRegistry, ToolSource};
///
/// let read_only = FilteredSource::new(ToolRegistry::new(), |spec| spec.annotations.read_only);
/// assert!(read_only.snapshot().tools.is_empty());
/// ```
pub struct FilteredSource<S> {
    inner: S,
    keep: Box<dyn Fn(&ToolSpec) -> bool + Send + Sync>,
    cache: ViewCache,
}

impl<S: ToolSource> FilteredSource<S> {
    /// Wraps `inner`, keeping the tools for which `keep` returns `true`. The
    /// predicate runs again only when the inner source's revision changes.
    pub fn new(inner: S, keep: impl Fn(&ToolSpec) -> bool + Send + Sync + 'static) -> Self {
        Self {
            inner,
            keep: Box::new(keep),
            cache: Mutex::new(None),
        }
    }

    /// The wrapped source.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: ToolSource> ToolSource for FilteredSource<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn snapshot(&self) -> CatalogSnapshot {
        cached_view(&self.cache, self.inner.snapshot(), |inner| {
            inner
                .tools
                .iter()
                .filter(|tool| (self.keep)(&tool.spec()))
                .cloned()
                .collect()
        })
    }

    /// The view keeps the wrapped source's revision.
    fn revision(&self) -> u64 {
        self.inner.revision()
    }

    /// Frozen when the wrapped source is.
    fn is_frozen(&self) -> bool {
        self.inner.is_frozen()
    }
}
