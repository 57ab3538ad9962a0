//! `cargo xtask`: the workspace's checks, runnable together (`ci`) or alone.
//!
//! Plain Rust with no dependency beyond `serde_json`, so it builds in seconds
//! and works on a fresh machine with nothing but the toolchain.

mod book;
mod checks;
mod fixtures;
mod fuzz;
mod layers;
mod llama;
mod load_server;
mod mcp_conformance;
mod miri;
mod perf;
mod run;
mod soak;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci        every check below, stopping at the first failure
  fmt       cargo fmt --check
  clippy    cargo clippy on all targets with -D warnings
  docs      cargo doc for every crate, rustdoc warnings (broken links) as errors;
            then SUMMARY.md, docs/lib.rs and the book's links agree
  book      build the book with mdBook into docs/book, the API docs under
            docs/book/api (not part of ci; says how to install mdBook)
  test      all tests (nextest when installed, else cargo test)
  doc-test  doc tests, the book's code blocks included
  fixtures  npm ci for test fixtures (real MCP servers) when missing or stale,
            and the PostgreSQL server binaries and valgrind (apt-get) when
            missing
  mcp-conformance
            the official MCP conformance suite (client mode, every scenario
            and the auth suite) against examples/mcp-conformance; fails on
            any scenario not in its expected-failures.yml
  layers    the crate layer rules (docs/src/architecture.md, Layers)
  meta      every crate has a README.md, a description and the workspace lints
  features  the umbrella crate with no optional part and with all of them
  examples  run the offline examples
  fuzz      the fuzz targets (agentkit-fuzz): `fuzz [--time SECS] [--seed N]
            [TARGET...]`, 30 s per target by default; in ci, a fixed seed and
            count
  perf      the instruction-count guard: the counted scenarios under
            callgrind against crates/agentkit/benches/counted-baseline.json
            (fails above its tolerance; `perf --update` rewrites it)
  bench     the benchmark scenarios, printed as tables with their targets
            (wall clock, not part of ci; ends with the counted figures)
  llama     live test against a real llama.cpp server, re-recording its
            cassettes (installs llama-cpp-python; not part of ci)
  load-server
            the agent server under load: `load-server [--sessions N]
            [--replicas R] [--quick]`, N concurrent AG-UI sessions (1,000;
            100 with --quick) across R replica processes (2) on a temporary
            PostgreSQL, then the same with one replica SIGKILLed halfway;
            fails if a session is lost or a tool runs twice (not part of ci)
  miri      the tests of the workspace's unsafe code under Miri (installs the
            nightly toolchain's miri and rust-src components; not part of
            ci: only stable is guaranteed on a fresh machine)
  soak      sessions under random faults for a while: `soak [--minutes N]
            [--seed S]` (10 minutes by default; not part of ci)
";

fn main() -> ExitCode {
    let command = std::env::args().nth(1).unwrap_or_default();
    let result = match command.as_str() {
        "ci" => ci(),
        "fmt" => run::fmt(),
        "clippy" => run::clippy(),
        "test" => run::test(),
        "doc-test" => run::doc_test(),
        "docs" => run::docs(),
        "book" => book::build(),
        "fixtures" => fixtures::install(),
        "mcp-conformance" => mcp_conformance::run(),
        "layers" => layers::check(),
        "meta" => checks::meta(),
        "bench" => run::bench().and_then(|()| perf::report()),
        "perf" => perf::run(&std::env::args().skip(2).collect::<Vec<_>>()),
        "llama" => llama::run(),
        "load-server" => load_server::run(&std::env::args().skip(2).collect::<Vec<_>>()),
        "miri" => miri::run(),
        "soak" => soak::run(&std::env::args().skip(2).collect::<Vec<_>>()),
        "features" => run::features(),
        "examples" => run::examples(),
        "fuzz" => fuzz::fuzz(&std::env::args().skip(2).collect::<Vec<_>>()),
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => {
            eprint!("xtask: unknown command {other:?}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("\nxtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// One check: `Err` carries a message for the reader.
type Step = fn() -> Result<(), String>;

/// Cheap checks first, so a layer violation is reported before a long build.
fn ci() -> Result<(), String> {
    let steps: &[(&str, Step)] = &[
        ("layers", layers::check),
        ("meta", checks::meta),
        ("fmt", run::fmt),
        ("clippy", run::clippy),
        ("docs", run::docs),
        ("features", run::features),
        ("fixtures", fixtures::install),
        ("test", run::test),
        ("mcp-conformance", mcp_conformance::run),
        ("doc-test", run::doc_test),
        ("examples", run::examples),
        ("fuzz", fuzz::ci),
        ("perf", || perf::run(&[])),
    ];
    for (name, step) in steps {
        println!("==> xtask {name}");
        step().map_err(|err| format!("step `{name}` failed: {err}"))?;
    }
    println!("==> xtask ci: all checks passed");
    Ok(())
}
