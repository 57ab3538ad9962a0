//! `shell`: the shell reader behind `CommandPolicy`.
//!
//! Properties. Whenever the policy allows a line, bash really runs only
//! allowed programs: the line is run by `/bin/bash` in a scratch directory
//! whose `PATH` holds nothing but logging stubs (`ok` and `ok2` are
//! allowed; `bad` and stubs named like shell keywords are not), and the log
//! must name allowed programs only. The lines come from a grammar of
//! chaining, substitutions, quotes, here-documents, runners and keywords,
//! without loops, so each run ends quickly (a two-second cap kills the
//! process group otherwise). And a line the reader accepts round-trips:
//! its commands written back with every word single-quoted read back as
//! the same words.

use crate::{Outcome, Target};
use agentkit_tools_core::policy::{SimpleCommand, parse_command_line};
use agentkit_tools_core::{
    CommandPolicy, PermissionPolicy, PermissionRequest, PolicyMatch, ShellCommand,
};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The target.
pub const TARGET: Target = Target {
    name: "shell",
    about: "shell reader: allowed lines run only allowed programs under bash; accepted lines round-trip",
    check,
    generate,
};

const ALLOWED: &[&str] = &["ok", "ok2"];

/// Stubs that log their name; keywords are there to catch a quoted keyword
/// (a plain command to bash) taken for syntax.
const STUBS: &[&str] = &[
    "ok", "ok2", "bad", "if", "then", "fi", "do", "done", "{", "}", "!", "in", "function", "for",
    "case", "[[", "select",
];

const TOKENS: &[&str] = &[
    "ok", "ok", "ok", "ok2", "bad", "x", ";", "&&", "||", "|", "&", "\n", "$(", ")", "(", "`", "'",
    "\"", "\\", "$X", "X=bad", "X=ok", "${X:-", "}", "{", "$((", "))", "[[", "]]", "-n", "if",
    "then", "fi", "!", "for", "in", "do", "done", "env", "exec", "command", "eval", "sh", "-c",
    "<<E", "<<'E'", "E", "> f", "<(", "#", "=", "'ok'", "'if'", "\"{\"", "\\!", "f()", "time",
    "nice",
];

fn generate() -> BoxedStrategy<Vec<u8>> {
    let token = (0..TOKENS.len(), 0u8..4);
    proptest::collection::vec(token, 1..14)
        .prop_map(|tokens| {
            let mut line = String::new();
            for (i, glue) in tokens {
                line.push_str(TOKENS[i]);
                if glue != 0 {
                    line.push(' ');
                }
            }
            line.into_bytes()
        })
        .boxed()
}

/// The scratch directory with the stubs, made once per process.
fn sandbox() -> Option<&'static (tempfile::TempDir, PathBuf)> {
    static SANDBOX: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    SANDBOX
        .get_or_init(|| {
            if !std::path::Path::new("/bin/bash").exists() {
                return None;
            }
            let dir = tempfile::tempdir().ok()?;
            let bin = dir.path().join("bin");
            std::fs::create_dir(&bin).ok()?;
            for stub in STUBS {
                let path = bin.join(stub);
                std::fs::write(&path, "#!/bin/sh\necho \"${0##*/}\" >> \"$STUB_LOG\"\n").ok()?;
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).ok()?;
            }
            // Runners and shells the policy looks through, for real.
            for (name, target) in [
                ("env", "/usr/bin/env"),
                ("sh", "/bin/sh"),
                ("nice", "/usr/bin/nice"),
            ] {
                if std::path::Path::new(target).exists() {
                    std::os::unix::fs::symlink(target, bin.join(name)).ok()?;
                }
            }
            Some((dir, bin))
        })
        .as_ref()
}

/// The programs bash ran for `line`.
fn run_in_bash(line: &str) -> Result<Vec<String>, String> {
    let Some((dir, bin)) = sandbox() else {
        return Ok(Vec::new());
    };
    let work = tempfile::tempdir_in(dir.path()).map_err(|e| e.to_string())?;
    let log = work.path().join("log");
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("/bin/bash")
        .args(["--noprofile", "--norc", "-c", line])
        .current_dir(work.path())
        .env_clear()
        .env("PATH", bin)
        .env("STUB_LOG", &log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("bash: {e}"))?;
    let group = rustix::process::Pid::from_raw(child.id() as i32).ok_or("no pid")?;
    let started = Instant::now();
    loop {
        let done = child.try_wait().map_err(|e| e.to_string())?.is_some();
        // Background jobs of the line finish too before the log is read.
        let alive = rustix::process::test_kill_process_group(group).is_ok();
        if done && !alive {
            break;
        }
        if started.elapsed() > Duration::from_secs(2) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    Ok(text.lines().map(str::to_owned).collect())
}

fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

fn round_trip(commands: &[SimpleCommand]) -> Outcome {
    let plain: Vec<&SimpleCommand> = commands
        .iter()
        .filter(|c| {
            !c.words.is_empty()
                && c.assignments.is_empty()
                && c.redirects.is_empty()
                && c.words.iter().all(|w| !w.expands)
        })
        .collect();
    if plain.is_empty() {
        return Ok(());
    }
    let line: Vec<String> = plain
        .iter()
        .map(|c| {
            c.words
                .iter()
                .map(|w| quote(&w.text))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let line = line.join("\n");
    let again = parse_command_line(&line).map_err(|e| format!("{line:?} fails: {e}"))?;
    let words = |c: &[&SimpleCommand]| -> Vec<Vec<String>> {
        c.iter()
            .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
            .collect()
    };
    let again: Vec<&SimpleCommand> = again.iter().collect();
    if words(&again) != words(&plain) || again.iter().flat_map(|c| &c.words).any(|w| w.expands) {
        return Err(format!(
            "round trip of {line:?}: {:?} became {:?}",
            words(&plain),
            words(&again)
        ));
    }
    Ok(())
}

fn check(input: &[u8]) -> Outcome {
    let line = String::from_utf8_lossy(input);
    if line.contains('\0') {
        return Ok(());
    }
    if let Ok(commands) = parse_command_line(&line) {
        round_trip(&commands)?;
    }
    let policy = CommandPolicy::new().allow_programs(ALLOWED.iter().copied());
    let verdict = policy.evaluate(&PermissionRequest::shell(ShellCommand::new(line.as_ref())));
    if verdict != PolicyMatch::Allow {
        return Ok(());
    }
    let ran = run_in_bash(&line)?;
    if let Some(intruder) = ran.iter().find(|p| !ALLOWED.contains(&p.as_str())) {
        return Err(format!(
            "{line:?} was allowed, but bash ran {intruder:?} (all: {ran:?})"
        ));
    }
    Ok(())
}
