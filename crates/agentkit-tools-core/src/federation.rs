//! Several tool sources seen as one catalog.
//!
//! Sources are walked in registration order. When two offer a tool of the
//! same name, the [`CollisionPolicy`] decides. The merged catalog is cached
//! and rebuilt only when a source's revision moves, so reading it at every
//! model call costs a lock and a comparison; a federation of frozen sources
//! (registries) builds it once and reads it without either.

use crate::schema::CompiledSchema;
use crate::{CatalogSnapshot, Tool, ToolCatalogEvent, ToolSource, ToolSpec};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// What to do when two sources offer the same tool name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CollisionPolicy {
    /// The source registered first keeps the name.
    #[default]
    FirstWins,
    /// The source registered last takes the name.
    LastWins,
    /// A collision is an error.
    Error,
}

/// A catalog that cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// Two tools share a name.
    #[error("tool name {name:?} is offered by more than one source: {}", sources.join(", "))]
    Collision {
        /// The name.
        name: String,
        /// The sources offering it.
        sources: Vec<String>,
    },
    /// A tool's name breaks the provider pattern.
    #[error(transparent)]
    InvalidName(#[from] crate::InvalidToolName),
}

/// The merged tools of a federation at one moment.
pub struct ResolvedCatalog {
    /// Increases whenever any source changed.
    pub generation: u64,
    specs: Arc<[Arc<ToolSpec>]>,
    // foldhash: every tool call looks its tool up here.
    tools: HashMap<String, CatalogTool, foldhash::fast::RandomState>,
}

/// A tool of a resolved catalog, with its input schema compiled when a
/// call first needs it (once per spec, not per call).
pub(crate) struct CatalogTool {
    pub(crate) tool: Arc<dyn Tool>,
    /// The spec the tool had when the catalog was built.
    spec: Arc<ToolSpec>,
    compiled: OnceLock<Option<CompiledSchema>>,
}

impl CatalogTool {
    /// The compiled schema of `spec`, when it is the spec the catalog was
    /// built with (a tool may change its spec between two catalogs) and
    /// can be compiled.
    pub(crate) fn compiled(&self, spec: &Arc<ToolSpec>) -> Option<&CompiledSchema> {
        if !Arc::ptr_eq(&self.spec, spec) {
            return None;
        }
        self.compiled
            .get_or_init(|| CompiledSchema::compile(&self.spec.input_schema))
            .as_ref()
    }
}

impl ResolvedCatalog {
    /// The specs, in federation order; cloning the `Vec` copies no schema.
    pub fn specs(&self) -> &[Arc<ToolSpec>] {
        &self.specs
    }

    /// The specs as a list shared with the catalog: what a model request
    /// carries, so a request does not copy the catalog's list.
    pub fn shared_specs(&self) -> Arc<[Arc<ToolSpec>]> {
        self.specs.clone()
    }

    /// The tool of this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name).map(|entry| &entry.tool)
    }

    /// The tool of this name, with its compiled schema.
    pub(crate) fn entry(&self, name: &str) -> Option<&CatalogTool> {
        self.tools.get(name)
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// `true` when there are no tools.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// What changed from `older` to `self`.
    pub fn diff_from(&self, older: &ResolvedCatalog, source: &str) -> ToolCatalogEvent {
        let mut event = ToolCatalogEvent {
            source: source.to_owned(),
            ..Default::default()
        };
        for spec in self.specs.iter() {
            match older.tools.get(&spec.name) {
                None => event.added.push(spec.name.clone()),
                Some(old) if *old.tool.spec() != **spec => event.changed.push(spec.name.clone()),
                Some(_) => {}
            }
        }
        for spec in older.specs.iter() {
            if !self.tools.contains_key(&spec.name) {
                event.removed.push(spec.name.clone());
            }
        }
        event
    }
}

/// A tool as a preflight found it: the catalog it was looked up in, the
/// tool, and the spec the call's input was validated against. Handed back
/// to the executor to run the call
/// ([`ToolExecutor::execute_validated`](crate::ToolExecutor::execute_validated)),
/// so the call is neither looked up nor validated a second time while that
/// catalog is still the current one.
#[derive(Clone)]
pub struct ResolvedTool {
    catalog: Arc<ResolvedCatalog>,
    tool: Arc<dyn Tool>,
    spec: Arc<ToolSpec>,
}

impl ResolvedTool {
    /// The tool `name` of `catalog`, with the spec it has now.
    pub fn find(catalog: Arc<ResolvedCatalog>, name: &str) -> Option<Self> {
        let tool = catalog.get(name)?.clone();
        let spec = tool.spec();
        Some(Self::new(catalog, tool, spec))
    }

    /// A tool of `catalog` with its spec (`tool.spec()`), as the
    /// executor's preflight found them.
    pub(crate) fn new(
        catalog: Arc<ResolvedCatalog>,
        tool: Arc<dyn Tool>,
        spec: Arc<ToolSpec>,
    ) -> Self {
        Self {
            catalog,
            tool,
            spec,
        }
    }

    /// The catalog the tool was found in.
    pub fn catalog(&self) -> &Arc<ResolvedCatalog> {
        &self.catalog
    }

    /// The tool.
    pub fn tool(&self) -> &Arc<dyn Tool> {
        &self.tool
    }

    /// The spec the input was validated against.
    pub fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    /// The parts, for the executor.
    pub(crate) fn into_parts(self) -> (Arc<ResolvedCatalog>, Arc<dyn Tool>, Arc<ToolSpec>) {
        (self.catalog, self.tool, self.spec)
    }
}

/// The same catalog, tool and spec (by identity, not by value).
impl PartialEq for ResolvedTool {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.catalog, &other.catalog)
            && std::ptr::addr_eq(Arc::as_ptr(&self.tool), Arc::as_ptr(&other.tool))
            && Arc::ptr_eq(&self.spec, &other.spec)
    }
}

impl std::fmt::Debug for ResolvedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedTool")
            .field("name", &self.spec.name)
            .field("generation", &self.catalog.generation)
            .finish()
    }
}

impl std::fmt::Debug for ResolvedCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.specs.iter().map(|s| &s.name).collect();
        f.debug_struct("ResolvedCatalog")
            .field("generation", &self.generation)
            .field("tools", &names)
            .finish()
    }
}

struct Cache {
    revisions: Vec<u64>,
    catalog: Arc<ResolvedCatalog>,
}

/// Several sources merged into one catalog.
pub struct ToolFederation {
    sources: Vec<Arc<dyn ToolSource>>,
    policy: CollisionPolicy,
    cache: Mutex<Option<Cache>>,
    /// The catalog, once built, when every source is frozen
    /// ([`ToolSource::is_frozen`]): it can never change, so it is read
    /// without the lock and without asking the sources.
    frozen: OnceLock<Arc<ResolvedCatalog>>,
    // Kept outside the cache so that adding a source or changing the policy,
    // which drop the cache, never makes the generation go backwards.
    next_generation: std::sync::atomic::AtomicU64,
}

impl ToolFederation {
    /// An empty federation with the default policy (`FirstWins`).
    pub fn new() -> Self {
        Self {
            sources: Vec::new(),
            policy: CollisionPolicy::default(),
            cache: Mutex::new(None),
            frozen: OnceLock::new(),
            next_generation: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Sets the collision policy.
    pub fn with_policy(mut self, policy: CollisionPolicy) -> Self {
        self.policy = policy;
        self.forget();
        self
    }

    /// Adds a source after the existing ones.
    pub fn add_source(&mut self, source: impl ToolSource + 'static) {
        self.sources.push(Arc::new(source));
        self.forget();
    }

    /// Drops the built catalog: the sources or the policy changed.
    fn forget(&mut self) {
        *self.cache.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
        self.frozen = OnceLock::new();
    }

    /// Adds a source; for builder chains.
    pub fn with_source(mut self, source: impl ToolSource + 'static) -> Self {
        self.add_source(source);
        self
    }

    /// The merged catalog, rebuilt only if a source changed since last time.
    #[inline]
    pub fn resolve(&self) -> Result<Arc<ResolvedCatalog>, CatalogError> {
        match self.frozen.get() {
            Some(catalog) => Ok(catalog.clone()),
            None => self.resolve_locked(),
        }
    }

    /// [`resolve`](Self::resolve) under the cache's lock.
    fn resolve_locked(&self) -> Result<Arc<ResolvedCatalog>, CatalogError> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        // The usual case (every tool call and model call): nothing changed,
        // checked without collecting the snapshots.
        if let Some(catalog) = self.unchanged(&cache) {
            return Ok(catalog.clone());
        }
        let snapshots: Vec<CatalogSnapshot> = self.sources.iter().map(|s| s.snapshot()).collect();
        let revisions: Vec<u64> = snapshots.iter().map(|s| s.revision).collect();
        let catalog = self.merge(&snapshots, 0)?;
        let generation = self
            .next_generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let catalog = Arc::new(ResolvedCatalog {
            generation,
            ..catalog
        });
        if self.sources.iter().all(|source| source.is_frozen()) {
            // Set under the lock, so only once: from now on the catalog
            // is read from here.
            let _ = self.frozen.set(catalog.clone());
        }
        *cache = Some(Cache {
            revisions,
            catalog: catalog.clone(),
        });
        Ok(catalog)
    }

    /// `true` when `catalog` is what [`resolve`](Self::resolve) would
    /// return now (no source changed since it was built): the same check,
    /// without taking a reference to the catalog.
    #[inline]
    pub fn is_current(&self, catalog: &Arc<ResolvedCatalog>) -> bool {
        match self.frozen.get() {
            Some(frozen) => Arc::ptr_eq(frozen, catalog),
            None => self.is_current_locked(catalog),
        }
    }

    /// [`is_current`](Self::is_current) under the cache's lock.
    fn is_current_locked(&self, catalog: &Arc<ResolvedCatalog>) -> bool {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        self.unchanged(&cache)
            .is_some_and(|cached| Arc::ptr_eq(cached, catalog))
    }

    /// The cached catalog, when no source's revision moved since it was
    /// built.
    fn unchanged<'c>(&self, cache: &'c Option<Cache>) -> Option<&'c Arc<ResolvedCatalog>> {
        let cached = cache.as_ref()?;
        (cached.revisions.len() == self.sources.len()
            && cached
                .revisions
                .iter()
                .zip(&self.sources)
                .all(|(revision, source)| *revision == source.revision()))
        .then_some(&cached.catalog)
    }

    fn merge(
        &self,
        snapshots: &[CatalogSnapshot],
        generation: u64,
    ) -> Result<ResolvedCatalog, CatalogError> {
        // name -> (index into `order`, source index)
        let mut owner: HashMap<String, usize> = HashMap::new();
        let mut order: Vec<(Arc<ToolSpec>, Arc<dyn Tool>)> = Vec::new();
        for (source_index, snapshot) in snapshots.iter().enumerate() {
            for tool in snapshot.tools.iter() {
                let spec = tool.spec();
                match owner.get(&spec.name) {
                    None => {
                        owner.insert(spec.name.clone(), order.len());
                        order.push((spec, tool.clone()));
                    }
                    Some(&slot) => match self.policy {
                        CollisionPolicy::FirstWins => {}
                        CollisionPolicy::LastWins => order[slot] = (spec, tool.clone()),
                        CollisionPolicy::Error => {
                            let first = snapshots
                                .iter()
                                .position(|s| s.tools.iter().any(|t| t.spec().name == spec.name))
                                .unwrap_or(source_index);
                            return Err(CatalogError::Collision {
                                name: spec.name.clone(),
                                sources: vec![
                                    self.sources[first].name().to_owned(),
                                    self.sources[source_index].name().to_owned(),
                                ],
                            });
                        }
                    },
                }
            }
        }
        let tools = order
            .iter()
            .map(|(spec, tool)| {
                let entry = CatalogTool {
                    tool: tool.clone(),
                    spec: spec.clone(),
                    compiled: OnceLock::new(),
                };
                (spec.name.clone(), entry)
            })
            .collect();
        let specs = order.into_iter().map(|(spec, _)| spec).collect();
        Ok(ResolvedCatalog {
            generation,
            specs,
            tools,
        })
    }
}

impl Default for ToolFederation {
    fn default() -> Self {
        Self::new()
    }
}
