//! Test fixtures that come from npm: real MCP servers the tests start.
//!
//! Each `crates/*/tests/fixtures/package-lock.json` is installed with
//! `npm ci`, which installs exactly what the committed lockfile says. It
//! runs only when `node_modules` is missing or older than the lockfile, so
//! repeated `cargo xtask ci` runs cost nothing.

use crate::run::workspace_root;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

pub fn install() -> Result<(), String> {
    let dirs = fixture_dirs()?;
    for dir in &dirs {
        let shown = dir
            .strip_prefix(workspace_root())
            .unwrap_or(dir)
            .display()
            .to_string();
        if is_fresh(dir) {
            println!("    {shown}: node_modules up to date");
            continue;
        }
        println!("    $ npm ci (in {shown})");
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(dir)
            .status()
            .map_err(|err| {
                format!("could not run npm in {shown}: {err}; install Node.js 20 or newer")
            })?;
        if !status.success() {
            return Err(format!("`npm ci` in {shown} exited with {status}"));
        }
    }
    if dirs.is_empty() {
        println!("    no npm fixtures");
    }
    Ok(())
}

fn fixture_dirs() -> Result<Vec<PathBuf>, String> {
    let crates = workspace_root().join("crates");
    let entries = std::fs::read_dir(&crates)
        .map_err(|err| format!("cannot read {}: {err}", crates.display()))?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("tests").join("fixtures"))
        .filter(|dir| dir.join("package-lock.json").is_file())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// `npm ci` writes `node_modules/.package-lock.json`; it is fresh when it
/// is newer than the committed lockfile.
fn is_fresh(dir: &Path) -> bool {
    let modified = |path: PathBuf| -> Option<SystemTime> { path.metadata().ok()?.modified().ok() };
    match (
        modified(dir.join("node_modules").join(".package-lock.json")),
        modified(dir.join("package-lock.json")),
    ) {
        (Some(installed), Some(locked)) => installed >= locked,
        _ => false,
    }
}
