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
    // A generous bound: the script takes a few seconds; a hang fails here
    // instead of stalling the suite.
    let output = agentkit_testkit::process::output_within(
        Command::new("node")
            .arg(fixtures().join("client.mjs"))
            .arg(&agent)
            .current_dir(fixtures()),
        Duration::from_secs(120),
        "the ACP client (node)",
    );
    agentkit_testkit::process::assert_all_passed(&output, 15, "the ACP client");
}
