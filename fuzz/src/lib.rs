//! Fuzz targets for every parser that reads bytes agentkit does not control.
//!
//! Provider streams, MCP results, tool arguments and shell lines written by
//! a model, snapshots and session rows written by another version: each is
//! read here under random, structure-aware inputs, and each target checks a
//! property, not only "does not panic" (the same stream cut differently
//! decodes the same, a decoder agrees with a reference, an accepted command
//! round-trips, malformed input gives the crate's typed error).
//!
//! It runs on the stable toolchain: `cargo fuzz` needs nightly, and a fresh
//! machine has only stable. The engine is proptest, already a dependency of
//! the workspace (no new crate to build): its strategies generate inputs
//! shaped like the real thing (fixture streams mutated, grammars of shell
//! words, schemas with matching values), its shrinker reduces a failure to a
//! small input, and its seeded RNG makes a run reproducible. Every input is
//! plain bytes, so a failure is saved as a file under `corpus/<target>/` and
//! replayed first by every later run: the corpus is the regression suite.
//!
//! `cargo xtask fuzz [--time SECS] [TARGET]` runs the targets;
//! `cargo xtask ci` runs each briefly with a fixed seed.

use proptest::strategy::BoxedStrategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod targets;

/// What a check says about one input: `Err` names the broken property.
pub type Outcome = Result<(), String>;

/// One fuzz target.
#[derive(Clone, Copy)]
pub struct Target {
    /// Its name, also the corpus directory.
    pub name: &'static str,
    /// What it checks, one line.
    pub about: &'static str,
    /// Checks one input.
    pub check: fn(&[u8]) -> Outcome,
    /// Generates inputs worth checking.
    pub generate: fn() -> BoxedStrategy<Vec<u8>>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("name", &self.name).finish()
    }
}

/// How long and from where a run goes.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Generated inputs are tried until this much time has passed (the
    /// saved corpus is always replayed in full first).
    pub time: Duration,
    /// Stop after this many generated inputs, whatever the time: a run with
    /// a seed and a count tries the same inputs on every machine (CI).
    pub cases: Option<u64>,
    /// The seed: the same seed tries the same inputs, in the same order.
    pub seed: u64,
    /// The corpus root (`corpus/` next to this crate's manifest).
    pub corpus: PathBuf,
}

/// What a run of one target did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Saved inputs replayed.
    pub replayed: usize,
    /// Generated inputs tried.
    pub generated: u64,
}

/// The corpus shipped with this crate.
pub fn default_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Runs `check` on one input, turning a panic into a failure.
///
/// With `AGENTKIT_FUZZ_LAST=<file>` in the environment, each input is
/// written there first: when a check hangs or runs out of memory (which no
/// property can report), the file holds the culprit.
pub fn check_input(target: &Target, input: &[u8]) -> Outcome {
    if let Some(path) = std::env::var_os("AGENTKIT_FUZZ_LAST") {
        let _ = std::fs::write(path, input);
    }
    match std::panic::catch_unwind(|| (target.check)(input)) {
        Ok(outcome) => outcome,
        Err(panic) => Err(format!("panicked: {}", panic_text(&*panic))),
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// Replays the saved corpus, then tries generated inputs until the time is
/// up. A failing generated input is shrunk and saved to the corpus, so the
/// next run replays it.
pub fn run(target: &Target, config: &RunConfig) -> Result<Report, String> {
    let dir = config.corpus.join(target.name);
    let mut replayed = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    for file in files.iter().filter(|f| f.is_file()) {
        let input = std::fs::read(file).map_err(|err| format!("{}: {err}", file.display()))?;
        check_input(target, &input).map_err(|why| {
            format!(
                "{}: corpus file {} fails: {why}",
                target.name,
                file.display()
            )
        })?;
        replayed += 1;
    }

    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&config.seed.to_le_bytes());
    seed[8..16].copy_from_slice(&fnv(target.name.as_bytes()).to_le_bytes());
    let proptest_config = Config {
        cases: 16,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    };
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
    let strategy = (target.generate)();
    let started = Instant::now();
    let mut generated = 0u64;
    loop {
        // A runner stops after `cases` successes; a fresh one per batch,
        // seeded from the previous, keeps the sequence reproducible.
        let mut runner = TestRunner::new_with_rng(proptest_config.clone(), rng);
        rng = runner.new_rng();
        let result = runner.run(&strategy, |input| {
            check_input(target, &input).map_err(TestCaseError::fail)
        });
        match result {
            Ok(()) => generated += 16,
            Err(TestError::Fail(why, input)) => {
                let saved = save_failure(&dir, &input);
                return Err(format!(
                    "{}: property broken after {generated} inputs: {why}\n  input ({} bytes) saved as {}",
                    target.name,
                    input.len(),
                    saved
                ));
            }
            Err(TestError::Abort(why)) => return Err(format!("{}: aborted: {why}", target.name)),
        }
        let enough = config
            .cases
            .map_or(started.elapsed() >= config.time, |n| generated >= n);
        if enough {
            break;
        }
    }
    Ok(Report {
        replayed,
        generated,
    })
}

fn save_failure(dir: &Path, input: &[u8]) -> String {
    let path = dir.join(format!("failure-{:016x}", fnv(input)));
    match std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, input)) {
        Ok(()) => path.display().to_string(),
        Err(err) => format!("(not saved: {err})"),
    }
}

/// FNV-1a: a stable hash for file names and seeds.
pub fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Cut points derived from an input, so a check splits the same input the
/// same way every time: `count` offsets in `1..len`, sorted, distinct.
pub fn cuts_for(input: &[u8], count: usize) -> Vec<usize> {
    if input.len() < 2 {
        return Vec::new();
    }
    let mut state = fnv(input) | 1;
    let mut cuts: Vec<usize> = (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            1 + (state % (input.len() as u64 - 1)) as usize
        })
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// Splits `input` at `cuts` (sorted offsets).
pub fn split_at<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for &cut in cuts {
        pieces.push(&input[start..cut]);
        start = cut;
    }
    pieces.push(&input[start..]);
    pieces
}

/// A strategy for byte strings mutated from `seeds`, or made of up to
/// `max` pieces picked from `tokens` (random sequences of a grammar's
/// pieces reach its corner cases far more often than random bytes do).
pub fn seeds_or_tokens(
    seeds: &'static [&'static [u8]],
    tokens: &'static [&'static [u8]],
    max: usize,
) -> BoxedStrategy<Vec<u8>> {
    use proptest::prelude::*;
    let picked = proptest::collection::vec(0..tokens.len(), 0..max)
        .prop_map(move |picks| picks.into_iter().flat_map(|i| tokens[i].to_vec()).collect());
    prop_oneof![mutated(seeds), picked].boxed()
}

/// A strategy for byte strings mutated from `seeds`: bytes flipped,
/// inserted, removed, spans duplicated or cut, line ends changed. Most
/// inputs stay close to a real stream, so decoders get past their first
/// check.
pub fn mutated(seeds: &'static [&'static [u8]]) -> BoxedStrategy<Vec<u8>> {
    use proptest::prelude::*;
    let edit = (0u8..7, any::<usize>(), any::<usize>(), any::<u8>());
    (0..seeds.len(), proptest::collection::vec(edit, 0..6))
        .prop_map(move |(seed, edits)| {
            let mut bytes = seeds[seed].to_vec();
            for (kind, at, len, byte) in edits {
                mutate(&mut bytes, kind, at, len, byte);
            }
            bytes
        })
        .boxed()
}

fn mutate(bytes: &mut Vec<u8>, kind: u8, at: usize, len: usize, byte: u8) {
    if bytes.is_empty() {
        bytes.push(byte);
        return;
    }
    let at = at % bytes.len();
    let len = 1 + len % 64.min(bytes.len() - at);
    match kind {
        0 => bytes[at] = byte,
        1 => bytes.insert(at, byte),
        2 => {
            bytes.drain(at..at + len);
        }
        3 => {
            let span = bytes[at..at + len].to_vec();
            bytes.splice(at..at, span);
        }
        4 => bytes.truncate(at),
        5 => {
            // LF -> CRLF or CR across the rest: line ends are where
            // decoders differ most.
            let replaced: Vec<u8> = bytes[at..]
                .iter()
                .flat_map(|&b| match (b, byte % 2) {
                    (b'\n', 0) => vec![b'\r', b'\n'],
                    (b'\n', _) => vec![b'\r'],
                    _ => vec![b],
                })
                .collect();
            bytes.truncate(at);
            bytes.extend(replaced);
        }
        _ => {
            // A digit or quote swapped into JSON breaks it in small ways.
            bytes[at] = b"0\"{}[],:\\9e-"[byte as usize % 12];
        }
    }
}
