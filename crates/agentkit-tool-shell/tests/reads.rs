//! `ShellSandbox::restrict_reads` on the real kernel, as the attack: a
//! home directory full of planted secrets, and one row per way a command
//! would try to read them or anything else outside the workspace. A build
//! still finds its system directories and toolchains.
//!
//! The host runs with `HOME` pointing at the planted home, which lives
//! under the build's temporary directory (not `/tmp`), so the test body
//! runs again as a child process with that environment (`set_var` would
//! need `unsafe`).

#![cfg(target_os = "linux")]

use agentkit_tool_shell::{SECRET_HOME_PATHS, ShellConfig, ShellSandbox, shell_tools};
use agentkit_tools_core::{
    BasicToolExecutor, ToolContext, ToolExecutor, ToolFederation, ToolRequest, ToolResult,
};
use serde_json::json;
use std::path::Path;

const SECRET: &str = "planted-secret-7f3a9";

async fn run(sandbox: ShellSandbox, root: &Path, command: &str) -> ToolResult {
    let config = ShellConfig::new(root).with_sandbox(sandbox);
    let executor = BasicToolExecutor::new(ToolFederation::new().with_source(shell_tools(config)));
    let call = ToolRequest::new("c", "shell_exec", json!({ "command": command }));
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        executor.execute(call, ToolContext::detached()),
    )
    .await
    .expect("deadline")
    .expect("the tool ran")
}

#[tokio::test]
async fn restricted_reads_never_reach_home_secrets_or_other_projects() {
    let Ok(home) = std::env::var("AGENTKIT_READS_HOME") else {
        // The parent: plant the home, then run this test again as its host.
        let top = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let home = top.path().join("home");
        for secret in SECRET_HOME_PATHS {
            let path = home.join(secret);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            // A directory secret gets a file inside; a file secret is one.
            if secret.contains('.') && !secret.ends_with("credentials") {
                std::fs::create_dir_all(&path).unwrap();
                std::fs::write(path.join("key"), SECRET).unwrap();
            } else {
                std::fs::write(&path, SECRET).unwrap();
            }
        }
        std::fs::create_dir_all(home.join("other-project")).unwrap();
        std::fs::write(home.join("other-project/notes.txt"), SECRET).unwrap();
        std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
        std::fs::write(home.join(".cargo/bin/tool"), "toolchain").unwrap();
        std::fs::create_dir_all(home.join("ws")).unwrap();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "restricted_reads_never_reach_home_secrets_or_other_projects",
                "--exact",
                "--nocapture",
            ])
            .env("AGENTKIT_READS_HOME", &home)
            .env("HOME", &home)
            .status()
            .unwrap();
        assert!(status.success(), "the host process failed");
        return;
    };
    let home = Path::new(&home);
    let ws = home.join("ws");
    let probe = run(ShellSandbox::new().restrict_reads(), &ws, "true").await;
    if probe.metadata.get("shell.sandbox") != Some(&json!("landlock")) {
        eprintln!("Landlock is not enforced here: {:?}", probe.metadata);
        return;
    }
    // One row per way in; each prints the secret if it gets through.
    let mut attacks: Vec<String> = SECRET_HOME_PATHS
        .iter()
        .map(|secret| format!("cat ~/{secret} ~/{secret}/key 2>&1"))
        .collect();
    attacks.extend([
        "cat ../other-project/notes.txt 2>&1".to_string(),
        "grep -r planted ~ 2>&1".to_string(),
        "find ~ -type f -exec cat {} + 2>&1".to_string(),
        "cd / && cat \"$HOME/.ssh/key\" 2>&1".to_string(),
        "ln -s ~/.ssh/key link && cat link 2>&1".to_string(),
        "ln ~/.aws/key hard 2>&1; cat hard 2>&1".to_string(),
        "cp -r ~/.ssh copied 2>&1; cat copied/key 2>&1".to_string(),
        "sh -c 'cat ~/.netrc' 2>&1".to_string(),
        "tar cf - ~/.config 2>&1 | strings".to_string(),
        // The host's own environment and memory through /proc.
        "cat /proc/$PPID/environ 2>&1 | tr '\\0' '\\n'".to_string(),
    ]);
    for attack in &attacks {
        let result = run(ShellSandbox::new().restrict_reads(), &ws, attack).await;
        let text = result.output.to_text();
        assert!(!text.contains(SECRET), "{attack} read a secret: {text}");
        assert!(
            !text.contains("AGENTKIT_READS_HOME"),
            "{attack} read the host's environment: {text}"
        );
    }
    // What a build needs is still there: system directories, toolchains,
    // the workspace.
    let ok = run(
        ShellSandbox::new().restrict_reads(),
        &ws,
        "echo made > mine.txt && cat mine.txt && ls /usr/bin >/dev/null && \
         cat /etc/hostname >/dev/null && cat ~/.cargo/bin/tool && \
         { ! command -v python3 >/dev/null || python3 -c 'import os, unittest, json; os.cpu_count()'; } && \
         nproc >/dev/null",
    )
    .await;
    assert!(!ok.is_error, "{}", ok.output.to_text());
    assert!(ok.output.to_text().contains("made\ntoolchain"));

    // Allowing a path that holds secrets (the home directory) is refused
    // and said; an ordinary one is allowed.
    let refused = run(
        ShellSandbox::new().allow_reads(home),
        &ws,
        "cat ~/.ssh/key 2>&1; cat ~/other-project/notes.txt 2>&1",
    )
    .await;
    assert!(!refused.output.to_text().contains(SECRET));
    assert!(
        refused.output.to_text().contains("would expose secrets"),
        "{}",
        refused.output.to_text()
    );
    let allowed = run(
        ShellSandbox::new().allow_reads(home.join("other-project")),
        &ws,
        "cat ../other-project/notes.txt",
    )
    .await;
    assert!(allowed.output.to_text().contains(SECRET));

    // Without the restriction, reads are open (the default), which is why
    // a coding agent turns it on.
    let open = run(ShellSandbox::new(), &ws, "cat ~/.ssh/key").await;
    assert!(open.output.to_text().contains(SECRET));
}
