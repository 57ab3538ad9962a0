//! The ACP server against a real client no one here wrote: the official ACP
//! TypeScript SDK (`@agentclientprotocol/sdk`, installed from the committed
//! lockfile by `cargo xtask fixtures`) drives `examples/acp-agent.rs` as an
//! editor would, through `tests/fixtures/client.mjs`: a prompt with a tool
//! call and an approval (allow once, allow always, reject), a cancel during
//! a permission request, a cancel mid-stream, a prompt that arrives while a
//! turn runs, and `session/load`; every update is checked.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `target/<profile>/examples/acp-agent`, built by `cargo test` and
/// `cargo nextest` with the crate's tests.
fn agent_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("tests run from target/<profile>/deps");
    let agent = profile_dir.join("examples").join("acp-agent");
    assert!(
        agent.is_file(),
        "the example agent is missing at {}: build it with `cargo build -p agentkit-acp --examples` \
         (cargo test and cargo nextest build it with the tests)",
        agent.display()
    );
    agent
}

fn require_node() {
    let version = Command::new("node").arg("--version").output();
    match version {
        Ok(out) if out.status.success() => {}
        _ => panic!("Node.js 20 or newer is needed to run the ACP client: install `node`"),
    }
    let sdk = fixtures().join("node_modules/@agentclientprotocol/sdk/package.json");
    assert!(
        sdk.is_file(),
        "the ACP TypeScript SDK is not installed in {}: run `cargo xtask fixtures`",
        fixtures().display()
    );
}

#[test]
fn the_official_typescript_client_drives_the_agent() {
    require_node();
    let agent = agent_binary();
    let child = Command::new("node")
        .arg(fixtures().join("client.mjs"))
        .arg(&agent)
        .current_dir(fixtures())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start node");
    let pid = child.id();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output()));
    // A generous bound: the script takes a few seconds; a hang fails here
    // instead of stalling the suite.
    let deadline = Duration::from_secs(120);
    let Ok(output) = receiver.recv_timeout(deadline) else {
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("the ACP client did not finish within {deadline:?}");
    };
    let output = output.expect("node output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the ACP client failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(
        stdout.lines().any(|line| line == "15 passed, 0 failed"),
        "every check of the client must run:\n{stdout}"
    );
}
