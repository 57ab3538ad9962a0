//! Sources, their federation, the dynamic catalog and the source adapters.

mod common;

use agentkit_tools_core::{
    BasicToolExecutor, CatalogError, CollisionPolicy, FilteredSource, PrefixedSource, Preflight,
    ToolAnnotations, ToolCatalogEvent, ToolContext, ToolExecutor, ToolFederation, ToolRegistry,
    ToolRequest, ToolSource, dynamic_catalog,
};
use common::{Probe, shared};
use serde_json::json;
use std::sync::Arc;
use tokio::sync::broadcast::error::TryRecvError;

fn registry(name: &str, tools: &[(&str, &str)]) -> ToolRegistry {
    tools.iter().fold(
        ToolRegistry::new().named(name),
        |registry, (tool, description)| registry.with(Probe::new(tool).described(description)),
    )
}

fn names(federation: &ToolFederation) -> Vec<(String, String)> {
    federation
        .resolve()
        .unwrap()
        .specs()
        .iter()
        .map(|spec| (spec.name.clone(), spec.description.clone()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn first_wins_keeps_registration_order() {
    let federation = ToolFederation::new()
        .with_source(registry("a", &[("read", "from a"), ("write", "from a")]))
        .with_source(registry("b", &[("search", "from b"), ("read", "from b")]));
    assert_eq!(
        names(&federation),
        pairs(&[
            ("read", "from a"),
            ("write", "from a"),
            ("search", "from b")
        ])
    );
}

#[test]
fn last_wins_takes_the_later_tool_in_the_earlier_place() {
    let federation = ToolFederation::new()
        .with_policy(CollisionPolicy::LastWins)
        .with_source(registry("a", &[("read", "from a"), ("write", "from a")]))
        .with_source(registry("b", &[("search", "from b"), ("read", "from b")]));
    assert_eq!(
        names(&federation),
        pairs(&[
            ("read", "from b"),
            ("write", "from a"),
            ("search", "from b")
        ])
    );
}

#[test]
fn error_policy_names_both_sources() {
    let federation = ToolFederation::new()
        .with_policy(CollisionPolicy::Error)
        .with_source(registry("a", &[("read", "")]))
        .with_source(registry("b", &[("other", "")]))
        .with_source(registry("c", &[("read", "")]));
    let err = federation.resolve().unwrap_err();
    assert_eq!(
        err,
        CatalogError::Collision {
            name: "read".into(),
            sources: vec!["a".into(), "c".into()],
        }
    );
    assert_eq!(
        err.to_string(),
        "tool name \"read\" is offered by more than one source: a, c"
    );
}

#[test]
fn resolve_is_cached_until_a_revision_moves() {
    let (writer, reader) = dynamic_catalog("plugins");
    let federation = ToolFederation::new()
        .with_source(registry("native", &[("read", "")]))
        .with_source(reader);
    let first = federation.resolve().unwrap();
    let again = federation.resolve().unwrap();
    assert!(Arc::ptr_eq(&first, &again), "nothing changed: same catalog");

    writer.add(Arc::new(Probe::new("plugin_tool"))).unwrap();
    let changed = federation.resolve().unwrap();
    assert!(!Arc::ptr_eq(&first, &changed));
    assert!(changed.generation > first.generation);
    assert!(changed.get("plugin_tool").is_some());
    assert!(Arc::ptr_eq(&changed, &federation.resolve().unwrap()));
}

#[test]
fn diff_from_reports_added_removed_and_changed() {
    let (writer, reader) = dynamic_catalog("plugins");
    writer.add(Arc::new(Probe::new("stays"))).unwrap();
    writer.add(Arc::new(Probe::new("goes"))).unwrap();
    writer
        .add(Arc::new(Probe::new("edited").described("v1")))
        .unwrap();
    let federation = ToolFederation::new().with_source(reader);
    let before = federation.resolve().unwrap();

    writer.remove("goes");
    writer
        .upsert(Arc::new(Probe::new("edited").described("v2")))
        .unwrap();
    writer.add(Arc::new(Probe::new("fresh"))).unwrap();
    let after = federation.resolve().unwrap();

    assert_eq!(
        after.diff_from(&before, "agent"),
        ToolCatalogEvent {
            source: "agent".into(),
            added: vec!["fresh".into()],
            removed: vec!["goes".into()],
            changed: vec!["edited".into()],
        }
    );
    assert!(after.diff_from(&after, "agent").is_empty());
}

#[tokio::test]
async fn the_dynamic_catalog_announces_every_change() {
    let (writer, reader) = dynamic_catalog("plugins");
    let mut events = reader.subscribe();
    assert_eq!(reader.revision(), 0);

    writer.add(Arc::new(Probe::new("alpha"))).unwrap();
    let event = events.recv().await.unwrap();
    assert_eq!(event.source, "plugins");
    assert_eq!(event.added, ["alpha"]);
    assert_eq!(reader.revision(), 1);

    writer
        .upsert(Arc::new(Probe::new("alpha").described("new")))
        .unwrap();
    assert_eq!(events.recv().await.unwrap().changed, ["alpha"]);
    assert_eq!(reader.revision(), 2);

    assert!(writer.remove("alpha"));
    assert_eq!(events.recv().await.unwrap().removed, ["alpha"]);
    assert_eq!(reader.revision(), 3);

    // A no-op changes nothing and says nothing.
    assert!(!writer.remove("alpha"));
    assert_eq!(reader.revision(), 3);
    assert_eq!(events.try_recv(), Err(TryRecvError::Empty));
}

#[tokio::test]
async fn replace_all_is_one_revision_and_one_event() {
    let (writer, reader) = dynamic_catalog("mcp");
    writer
        .replace_all(vec![Arc::new(Probe::new("a")), Arc::new(Probe::new("b"))])
        .unwrap();
    let mut events = writer.subscribe();
    let revision = reader.revision();

    let event = writer
        .replace_all(vec![
            Arc::new(Probe::new("b").described("v2")),
            Arc::new(Probe::new("c")),
        ])
        .unwrap();
    assert_eq!(reader.revision(), revision + 1);
    assert_eq!(events.recv().await.unwrap(), event);
    assert_eq!(
        (event.added, event.removed, event.changed),
        (
            vec!["c".to_string()],
            vec!["a".to_string()],
            vec!["b".to_string()]
        )
    );
    assert_eq!(events.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(reader.snapshot().names(), ["b", "c"]);
}

#[test]
fn the_dynamic_catalog_refuses_bad_lists_whole() {
    let (writer, reader) = dynamic_catalog("mcp");
    writer.add(Arc::new(Probe::new("keep"))).unwrap();
    let duplicate = writer.replace_all(vec![Arc::new(Probe::new("x")), Arc::new(Probe::new("x"))]);
    assert!(matches!(duplicate, Err(CatalogError::Collision { .. })));
    assert!(matches!(
        writer.add(Arc::new(Probe::new("keep"))),
        Err(CatalogError::Collision { .. })
    ));
    assert_eq!(reader.snapshot().names(), ["keep"]);
    assert_eq!(reader.revision(), 1);
}

#[test]
fn swapping_an_implementation_bumps_the_revision_silently() {
    let (writer, reader) = dynamic_catalog("plugins");
    writer.add(Arc::new(Probe::new("tool"))).unwrap();
    let mut events = reader.subscribe();
    let event = writer.upsert(Arc::new(Probe::new("tool"))).unwrap();
    assert!(event.is_empty());
    assert_eq!(
        reader.revision(),
        2,
        "the federation must pick up the new object"
    );
    assert_eq!(events.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn a_lagging_subscriber_is_told_so() {
    let (writer, reader) = dynamic_catalog("busy");
    let mut events = reader.subscribe();
    for i in 0..100 {
        writer.add(Arc::new(Probe::new(&format!("t{i}")))).unwrap();
    }
    assert!(matches!(events.try_recv(), Err(TryRecvError::Lagged(_))));
    assert_eq!(reader.snapshot().tools.len(), 100);
}

#[tokio::test]
async fn prefixed_tools_run_under_their_original_name() {
    let (tool, calls) = shared(Probe::new("search"));
    let mut inner = ToolRegistry::new().named("github");
    inner.register_arc(tool).unwrap();
    let prefixed = PrefixedSource::new(inner, "gh_").unwrap();
    assert_eq!(prefixed.snapshot().names(), ["gh_search"]);

    let executor = BasicToolExecutor::new(ToolFederation::new().with_source(prefixed));
    let request = ToolRequest::new("c1", "gh_search", json!({ "q": "x" }));
    assert_eq!(executor.preflight(&request), Preflight::Ready);
    executor
        .execute(request, ToolContext::detached())
        .await
        .unwrap();
    assert_eq!(
        calls.lock().unwrap()[0],
        ("search".to_string(), json!({ "q": "x" }))
    );
}

#[test]
fn prefixing_keeps_names_valid() {
    let long = "a".repeat(62);
    let inner = ToolRegistry::new()
        .with(Probe::new(&long))
        .with(Probe::new("ok"));
    let prefixed = PrefixedSource::new(inner, "abc_").unwrap();
    assert_eq!(
        prefixed.snapshot().names(),
        ["abc_ok"],
        "a 66-character name is left out"
    );
    assert!(PrefixedSource::new(ToolRegistry::new(), "bad prefix").is_err());
    assert!(PrefixedSource::new(ToolRegistry::new(), "").is_err());
}

#[test]
fn adapters_follow_the_inner_revision_and_cache_their_view() {
    let (writer, reader) = dynamic_catalog("mcp");
    writer.add(Arc::new(Probe::new("one"))).unwrap();
    let prefixed = PrefixedSource::new(reader, "m_").unwrap();
    let first = prefixed.snapshot();
    let again = prefixed.snapshot();
    assert_eq!(first.revision, 1);
    assert!(
        Arc::ptr_eq(&first.tools[0], &again.tools[0]),
        "no rebuild without a change"
    );

    writer.add(Arc::new(Probe::new("two"))).unwrap();
    let later = prefixed.snapshot();
    assert_eq!(later.revision, 2);
    assert_eq!(later.names(), ["m_one", "m_two"]);
}

#[test]
fn filtered_sources_hide_what_the_predicate_rejects() {
    let reader_only = Probe::new("read");
    let mut spec = (*agentkit_tools_core::Tool::spec(&reader_only)).clone();
    spec.annotations = ToolAnnotations {
        read_only: true,
        ..Default::default()
    };
    struct Annotated(Arc<agentkit_tools_core::ToolSpec>);
    #[async_trait::async_trait]
    impl agentkit_tools_core::Tool for Annotated {
        fn spec(&self) -> Arc<agentkit_tools_core::ToolSpec> {
            self.0.clone()
        }
        async fn invoke(
            &self,
            _request: ToolRequest,
            _ctx: ToolContext,
        ) -> Result<agentkit_tools_core::ToolResult, agentkit_tools_core::ToolError> {
            Ok(agentkit_tools_core::ToolResult::new("read"))
        }
    }
    let inner = ToolRegistry::new()
        .with(Annotated(Arc::new(spec)))
        .with(Probe::new("write"));
    let filtered = FilteredSource::new(inner, |spec| spec.annotations.read_only);
    assert_eq!(filtered.snapshot().names(), ["read"]);
    assert_eq!(filtered.name(), "native");

    let federation = ToolFederation::new().with_source(filtered);
    let executor = BasicToolExecutor::new(federation);
    assert!(matches!(
        executor.preflight(&ToolRequest::new("c1", "write", json!({}))),
        Preflight::Rejected(agentkit_tools_core::ToolError::NotFound(_))
    ));
}

#[test]
fn adding_a_source_never_moves_the_generation_backwards() {
    let mut federation = ToolFederation::new().with_source(registry("a", &[("x", "")]));
    let first = federation.resolve().unwrap().generation;
    federation.add_source(registry("b", &[("y", "")]));
    let second = federation.resolve().unwrap().generation;
    assert!(second > first, "{second} > {first}");
}

#[test]
fn frozen_sources_are_resolved_once_and_others_are_still_asked() {
    // Registries (and views of them) are frozen: the catalog is built once
    // and is current for good.
    let prefixed = PrefixedSource::new(registry("inner", &[("a", "A")]), "p_").unwrap();
    assert!(prefixed.is_frozen());
    let mut federation = ToolFederation::new()
        .with_source(registry("native", &[("echo", "Echoes.")]))
        .with_source(prefixed);
    let first = federation.resolve().unwrap();
    assert!(Arc::ptr_eq(&first, &federation.resolve().unwrap()));
    assert!(federation.is_current(&first));

    // Adding a source builds a new catalog, which is the current one.
    federation.add_source(registry("more", &[("late", "Late.")]));
    let second = federation.resolve().unwrap();
    assert!(!federation.is_current(&first));
    assert!(federation.is_current(&second));
    assert_eq!(second.len(), 3);
    assert!(second.get("late").is_some());
    assert!(second.generation > first.generation);

    // One source that is not frozen: every read asks it, and a change is
    // seen at once.
    let (writer, reader) = dynamic_catalog("plugins");
    assert!(!reader.is_frozen());
    federation.add_source(reader);
    let third = federation.resolve().unwrap();
    assert!(federation.is_current(&third));
    writer.add(Arc::new(Probe::new("plugged"))).unwrap();
    assert!(!federation.is_current(&third));
    let fourth = federation.resolve().unwrap();
    assert!(fourth.get("plugged").is_some());
    assert!(federation.is_current(&fourth));
}
