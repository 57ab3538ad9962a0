//! `agentkit-fuzz [--time SECS | --cases N] [--seed N] [--list] [TARGET...]`:
//! replays each target's saved corpus, then tries generated inputs for SECS
//! seconds (default 10) per target, or exactly N of them. Exits non-zero on the first broken property,
//! after saving the shrunk input to the corpus. `cargo xtask fuzz` runs it.

use agentkit_fuzz::{RunConfig, default_corpus, run, targets};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str =
    "usage: agentkit-fuzz [--time SECS | --cases N] [--seed N] [--list] [TARGET...]";

fn main() -> ExitCode {
    let mut config = RunConfig {
        time: Duration::from_secs(10),
        cases: None,
        seed: 0x5eed,
        corpus: default_corpus(),
    };
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("{flag} needs a number\n{USAGE}"))
        };
        let parsed = match arg.as_str() {
            "--time" => value("--time").map(|secs| config.time = Duration::from_secs_f64(secs)),
            "--seed" => value("--seed").map(|seed| config.seed = seed as u64),
            "--cases" => value("--cases").map(|n| config.cases = Some(n as u64)),
            "--list" => {
                for target in targets::ALL {
                    println!("{:18} {}", target.name, target.about);
                }
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            name => {
                names.push(name.to_owned());
                Ok(())
            }
        };
        if let Err(message) = parsed {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    }
    let mut selected = Vec::new();
    for name in &names {
        match targets::find(name) {
            Some(target) => selected.push(target),
            None => {
                eprintln!("unknown target {name:?}; `--list` shows them");
                return ExitCode::from(2);
            }
        }
    }
    if selected.is_empty() {
        selected = targets::ALL.iter().collect();
    }
    // Panics are reported as broken properties, with their message; the
    // default hook would print every one met while shrinking.
    std::panic::set_hook(Box::new(|_| {}));
    for target in selected {
        let started = Instant::now();
        match run(target, &config) {
            Ok(report) => println!(
                "{:18} ok: {} corpus inputs, {} generated, {:.1} s",
                target.name,
                report.replayed,
                report.generated,
                started.elapsed().as_secs_f64()
            ),
            Err(message) => {
                eprintln!("{message}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
