//! Against the MCP reference server over stdio: a server's log messages
//! (`notifications/message`) become tracing records under
//! `agentkit_mcp::server_log`, naming the server.

mod common;

use agentkit_mcp::McpServerManager;
use agentkit_tools_core::ToolContext;
use common::{eventually, everything, within};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Keeps the fields of every server-log record, as "name=value" text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl Subscriber for Captured {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        if event.metadata().target() == "agentkit_mcp::server_log" {
            let mut fields = Fields(String::new());
            event.record(&mut fields);
            self.0.lock().unwrap().push(fields.0);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_log_messages_become_tracing_records() {
    let captured = Captured::default();
    // Global: rmcp handles notifications on its own tasks and threads.
    tracing::subscriber::set_global_default(captured.clone()).expect("first subscriber");
    within(60, "the server log test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.expect("connects");
        manager
            .call_tool(
                "everything",
                "toggle-simulated-logging",
                json!({}),
                ToolContext::detached(),
            )
            .await
            .expect("logging turned on");
        eventually(30, "a server log record", || {
            !captured.0.lock().unwrap().is_empty()
        })
        .await;
        let first = captured.0.lock().unwrap()[0].clone();
        assert!(first.contains("server=\"everything\""), "{first}");
        // One of the server's eight messages, picked at random
        // ("Debug-level message" ... "Alert level-message" ...).
        let message = first.split("message=").nth(1).unwrap_or_default();
        assert!(message.contains("level"), "{first}");
    })
    .await;
}
