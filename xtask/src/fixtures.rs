//! Test fixtures: real MCP servers from npm, and the PostgreSQL server the
//! session store's tests start.
//!
//! Each `crates/*/tests/fixtures/package-lock.json` is installed with
//! `npm ci`, which installs exactly what the committed lockfile says. It
//! runs only when `node_modules` is missing or older than the lockfile, so
//! repeated `cargo xtask ci` runs cost nothing.
//!
//! The PostgreSQL tests of `agentkit-store` run `initdb` and `pg_ctl`
//! themselves; this step only makes sure those binaries exist, installing
//! Debian's `postgresql` package with apt-get when they are missing.
//!
//! The instruction-count guard (`cargo xtask perf`) runs its scenarios
//! under valgrind's callgrind; [`valgrind`] installs Debian's `valgrind`
//! package the same way when it is missing.
//!
//! The chat page of `agentkit-server` is tested in a real headless
//! browser; [`chromium`] installs Debian's `chromium` and
//! `chromium-driver` (WebDriver) the same way when they are missing.

use crate::run::workspace_root;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

pub fn install() -> Result<(), String> {
    postgres()?;
    valgrind()?;
    chromium()?;
    npm()
}

fn npm() -> Result<(), String> {
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

/// The directory holding `initdb` and `pg_ctl`: PATH first, then Debian's
/// versioned directories (`/usr/lib/postgresql/<version>/bin`).
fn postgres_binaries() -> Option<PathBuf> {
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    debian.sort();
    debian.reverse();
    on_path
        .into_iter()
        .chain(debian)
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
}

/// Makes sure the PostgreSQL server binaries are installed.
fn postgres() -> Result<(), String> {
    if let Some(dir) = postgres_binaries() {
        println!("    PostgreSQL server binaries found in {}", dir.display());
        return Ok(());
    }
    println!(
        "    PostgreSQL server binaries (initdb, pg_ctl) are missing: installing Debian's `postgresql`"
    );
    let why =
        "install PostgreSQL's server (initdb, pg_ctl) by hand; the agentkit-store tests need it";
    apt(&["update"], why)?;
    apt(
        &["install", "-y", "--no-install-recommends", "postgresql"],
        why,
    )?;
    match postgres_binaries() {
        Some(dir) => {
            println!(
                "    PostgreSQL server binaries installed in {}",
                dir.display()
            );
            Ok(())
        }
        None => Err(
            "the `postgresql` package installed, but initdb and pg_ctl are still not found".into(),
        ),
    }
}

/// Runs apt-get (through `sudo -n` when not root); `why` tells the reader
/// what to do by hand when it fails.
fn apt(args: &[&str], why: &str) -> Result<(), String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0");
    let mut command = if root {
        Command::new("apt-get")
    } else {
        let mut sudo = Command::new("sudo");
        sudo.args(["-n", "apt-get"]);
        sudo
    };
    command.args(args).env("DEBIAN_FRONTEND", "noninteractive");
    println!("    $ apt-get {}", args.join(" "));
    let status = command
        .status()
        .map_err(|err| format!("could not run apt-get ({err}): {why}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`apt-get {}` exited with {status}: {why}",
            args.join(" ")
        ))
    }
}

/// `true` when `valgrind --version` runs.
fn has_valgrind() -> bool {
    runs("valgrind")
}

/// Makes sure valgrind (callgrind) is installed, for `cargo xtask perf`.
pub fn valgrind() -> Result<(), String> {
    if has_valgrind() {
        return Ok(());
    }
    println!("    valgrind is missing: installing Debian's `valgrind`");
    let why = "install valgrind by hand; `cargo xtask perf` counts instructions with callgrind";
    apt(&["update"], why)?;
    apt(
        &["install", "-y", "--no-install-recommends", "valgrind"],
        why,
    )?;
    if has_valgrind() {
        Ok(())
    } else {
        Err("the `valgrind` package installed, but `valgrind --version` still fails".into())
    }
}

/// `true` when `program --version` runs.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Makes sure Chromium and its WebDriver are installed, for the
/// `agentkit-server` chat page test.
fn chromium() -> Result<(), String> {
    if runs("chromium") && runs("chromedriver") {
        return Ok(());
    }
    println!(
        "    chromium or chromedriver is missing: installing Debian's `chromium` and `chromium-driver`"
    );
    let why =
        "install Chromium and chromedriver by hand; the agentkit-server page test drives them";
    apt(&["update"], why)?;
    apt(
        &[
            "install",
            "-y",
            "--no-install-recommends",
            "chromium",
            "chromium-driver",
        ],
        why,
    )?;
    if runs("chromium") && runs("chromedriver") {
        Ok(())
    } else {
        Err("`chromium` and `chromium-driver` installed, but `chromium --version` or `chromedriver --version` still fails".into())
    }
}
