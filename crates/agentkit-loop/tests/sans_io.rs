//! The driver's core is sans-IO in substance: its source reads no lock,
//! atomic or clock, awaits nothing and calls no callback (a trait object),
//! so everything it learns is an input a log can record and replay. Events
//! reach the observers only from the core's outbox (no second path a
//! replay would miss). And no source file of the crate grows past 900
//! lines.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The code of a file, comment lines left out (the docs may say what the
/// code must not do).
fn code(path: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .map(|(n, line)| (n + 1, line.to_owned()))
        .collect()
}

/// What would make the core depend on something other than its inputs.
const FORBIDDEN: &[(&str, &str)] = &[
    ("Mutex", "a lock"),
    ("RwLock", "a lock"),
    ("Atomic", "an atomic"),
    ("OnceLock", "shared state"),
    ("Instant", "a clock"),
    ("SystemTime", "a clock"),
    // Durations are data (the core's time is handed in); reading a
    // clock is not.
    ("::now(", "a clock"),
    ("UNIX_EPOCH", "a clock"),
    ("sleep", "a timer of its own"),
    ("tokio", "a runtime"),
    (".await", "an await"),
    ("async ", "an async function"),
    ("dyn ", "a callback or trait object"),
    (
        "CancellationHandle",
        "a cancellation read behind the core's back",
    ),
    (
        "TurnCancellation",
        "a cancellation read behind the core's back",
    ),
    ("SoftInterruptHandle", "a queue read behind the core's back"),
    ("thread_rng", "randomness"),
];

#[test]
fn the_core_reads_no_lock_atomic_clock_or_callback() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/driver/machine");
    let files = rust_files(&core);
    assert!(files.len() >= 5, "the core's modules are found");
    let mut found = Vec::new();
    for file in &files {
        for (line, text) in code(file) {
            for (needle, what) in FORBIDDEN {
                if text.contains(needle) {
                    found.push(format!("{}:{line}: {what} ({needle})", file.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the core must stay sans-IO:\n{}",
        found.join("\n")
    );
}

/// Every place of the crate that hands an event to observers: the one
/// `notify` and the outbox's dispatch calling it. A `notify(` or
/// `handle_event(` call anywhere else is an event leaving beside the core,
/// which a replay would not reproduce.
#[test]
fn events_reach_observers_only_through_the_outbox() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for file in rust_files(&src) {
        let name = file.strip_prefix(&src).unwrap().display().to_string();
        for (_, text) in code(&file) {
            if text.contains("notify(") || text.contains(".handle_event(") {
                found.push(format!("{name}: {}", text.trim()));
            }
        }
    }
    found.sort();
    assert_eq!(
        found,
        [
            "driver/mod.rs: Note::Event(event) => notify(self.config.as_ref(), event),",
            "driver/mod.rs: fn notify(config: &dyn DriverConfig, event: AgentEvent) {",
            "driver/mod.rs: guard(\"observer\", || last.handle_event(event));",
            "driver/mod.rs: guard(\"observer\", || observer.handle_event(event));",
        ],
        "events must leave through the core's outbox and `dispatch`"
    );
}

#[test]
fn no_source_file_is_over_900_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let long: Vec<String> = rust_files(&src)
        .into_iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            (lines > 900).then(|| format!("{} has {lines} lines", file.display()))
        })
        .collect();
    assert!(long.is_empty(), "{}", long.join("\n"));
}
