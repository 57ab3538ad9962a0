//! `cargo xtask fuzz`: the fuzz targets of `agentkit-fuzz` (stable Rust,
//! proptest), longer than CI runs them.
//!
//! `cargo xtask fuzz [--time SECS] [--seed N] [TARGET...]` replays the saved
//! corpus and then generates inputs for SECS seconds per target (default
//! 30). The `ci` step runs every target on the corpus plus a fixed number
//! of inputs from a fixed seed, so a CI failure reproduces anywhere with
//! the same command.

use crate::run::cargo;

/// Inputs per target in CI: every target finishes in about a second on a
/// quiet 2-core machine (the shell and store targets are the slow ones: a
/// bash process or a database per input).
const CI_CASES: &str = "256";

/// The seed CI uses.
const CI_SEED: &str = "1";

/// `cargo xtask fuzz [ARGS]`: `ARGS` go to the fuzz binary.
pub fn fuzz(args: &[String]) -> Result<(), String> {
    let mut command = vec!["run", "--locked", "-q", "-p", "agentkit-fuzz", "--"];
    if !args.iter().any(|a| a == "--time" || a == "--cases") {
        command.extend(["--time", "30"]);
    }
    command.extend(args.iter().map(String::as_str));
    cargo(&command)
}

/// The CI step: the corpus, then a fixed count of seeded inputs.
pub fn ci() -> Result<(), String> {
    cargo(&[
        "run",
        "--locked",
        "-q",
        "-p",
        "agentkit-fuzz",
        "--",
        "--cases",
        CI_CASES,
        "--seed",
        CI_SEED,
    ])
    .map_err(|err| {
        format!("{err}; a failing input was saved under fuzz/corpus/: fix the bug and keep the file as a regression")
    })
}
