//! The server against a client no one here wrote: the official AG-UI
//! TypeScript client (`@ag-ui/client`, installed from the committed lockfile
//! by `cargo xtask fixtures`) runs `tests/fixtures/agui-client.mjs` against a
//! real agent served on 127.0.0.1: a streamed answer, an approval ended by
//! an interrupt and answered with `resume`, and tenant checks. The client
//! validates every event against the AG-UI schema and stream rules.

mod support;

use agentkit_core::FinishReason;
use agentkit_testkit::ScriptedTurn;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::{TOKEN_A, TOKEN_B, start};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn require_client() {
    let version = Command::new("node").arg("--version").output();
    assert!(
        matches!(version, Ok(out) if out.status.success()),
        "Node.js 20 or newer is needed to run the AG-UI client: install `node`"
    );
    let client = fixtures().join("node_modules/@ag-ui/client/package.json");
    assert!(
        client.is_file(),
        "the AG-UI client is not installed in {}: run `cargo xtask fixtures`",
        fixtures().display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_agui_client_drives_an_agent_through_the_server() {
    require_client();
    let server = start(vec![
        ScriptedTurn::new()
            .say_chunks(&["Hello ", "from ", "agentkit!"])
            .finish(FinishReason::Completed),
        ScriptedTurn::tool_call("call-deploy", "deploy", json!({ "target": "production" })),
        ScriptedTurn::text("The site is live."),
    ])
    .await;
    let url = server.url.clone();
    let output = tokio::task::spawn_blocking(move || {
        agentkit_testkit::process::output_within(
            Command::new("node")
                .arg(fixtures().join("agui-client.mjs"))
                .args([&url, TOKEN_A, TOKEN_B])
                .current_dir(fixtures()),
            Duration::from_secs(120),
            "the AG-UI client (node)",
        )
    })
    .await
    .unwrap();
    agentkit_testkit::process::assert_all_passed(&output, 13, "the AG-UI client");
    assert_eq!(
        server.deploy.runs.load(Ordering::SeqCst),
        1,
        "the approved call ran once"
    );
}
