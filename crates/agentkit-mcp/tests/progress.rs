//! Against the MCP reference server over stdio: the progress notices a
//! server sends during a tool call reach the call's `ProgressSink` as
//! `ToolProgress`, in order, and stop with the call.

mod common;

use agentkit_mcp::McpServerManager;
use agentkit_tools_core::{ProgressSink, ToolContext, ToolProgress};
use common::{everything, within};
use serde_json::json;
use std::sync::{Arc, Mutex};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notices_become_tool_progress_of_the_call() {
    within(60, "the progress test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.expect("connects");
        let reports = Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let reports = reports.clone();
            ProgressSink::new(move |progress| reports.lock().unwrap().push(progress))
        };
        let result = manager
            .call_tool(
                "everything",
                "trigger-long-running-operation",
                json!({ "duration": 0.3, "steps": 3 }),
                ToolContext::detached().with_progress(sink),
            )
            .await
            .expect("the operation completes");
        assert!(
            result.output.to_text().contains("Steps: 3"),
            "{}",
            result.output.to_text()
        );
        let expected: Vec<ToolProgress> = (1..=3)
            .map(|step| ToolProgress::new(format!("{step} of 3")).with_fraction(step as f32 / 3.0))
            .collect();
        assert_eq!(*reports.lock().unwrap(), expected);

        // A second call has its own token: the first call's sink hears
        // nothing more.
        manager
            .call_tool(
                "everything",
                "trigger-long-running-operation",
                json!({ "duration": 0.2, "steps": 2 }),
                ToolContext::detached(),
            )
            .await
            .expect("the second operation completes");
        assert_eq!(reports.lock().unwrap().len(), 3);
    })
    .await;
}
