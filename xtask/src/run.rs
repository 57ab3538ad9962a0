//! Steps that run cargo subcommands.

use std::process::Command;

/// Runs a command in the workspace root, inheriting stdio.
pub fn cargo(args: &[&str]) -> Result<(), String> {
    cargo_with_env(&[], args)
}

/// Like [`cargo`], with extra environment variables (shown in the log line).
pub fn cargo_with_env(env: &[(&str, &str)], args: &[&str]) -> Result<(), String> {
    let shown_env: String = env
        .iter()
        .map(|(key, value)| format!("{key}={value:?} "))
        .collect();
    let shown = format!("{shown_env}cargo {}", args.join(" "));
    println!("    $ {shown}");
    let status = Command::new(env!("CARGO"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(workspace_root())
        .status()
        .map_err(|err| format!("could not start `{shown}`: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` exited with {status}"))
    }
}

/// The workspace root: xtask lives one level below it.
pub fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace")
        .to_path_buf()
}

pub fn fmt() -> Result<(), String> {
    cargo(&["fmt", "--all", "--", "--check"]).map_err(|err| format!("{err}; run `cargo fmt --all`"))
}

pub fn clippy() -> Result<(), String> {
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ])
}

pub fn test() -> Result<(), String> {
    let has_nextest = Command::new(env!("CARGO"))
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|out| out.status.success());
    if has_nextest {
        cargo(&[
            "nextest",
            "run",
            "--workspace",
            "--locked",
            "--no-tests=fail",
        ])
    } else {
        cargo(&[
            "test",
            "--workspace",
            "--locked",
            "--lib",
            "--bins",
            "--tests",
            "--examples",
        ])
    }
}

pub fn doc_test() -> Result<(), String> {
    cargo(&["test", "--workspace", "--locked", "--doc"])
}

/// The API docs of every workspace crate, with every rustdoc warning (a
/// broken intra-doc link, a bare URL, an unclosed HTML tag) an error; then
/// the book's chapter lists and links (see `book::check`), which need those
/// API docs built.
pub fn docs() -> Result<(), String> {
    cargo_with_env(
        &[("RUSTDOCFLAGS", "-D warnings")],
        &[
            "doc",
            "--workspace",
            "--all-features",
            "--no-deps",
            "--locked",
        ],
    )?;
    crate::book::check()
}

/// Benchmarks print tables of medians and ratios; they are never run as
/// timed tests because timings on shared machines are noisy.
pub fn bench() -> Result<(), String> {
    cargo(&[
        "bench",
        "--locked",
        "-p",
        "agentkit-loop",
        "--bench",
        "scenarios",
    ])?;
    cargo(&[
        "bench",
        "--locked",
        "-p",
        "agentkit-provider-openai",
        "--bench",
        "s3_stream",
    ])?;
    cargo(&[
        "bench",
        "--locked",
        "-p",
        "agentkit",
        "--bench",
        "dyn_model",
    ])?;
    cargo(&[
        "bench",
        "--locked",
        "-p",
        "agentkit",
        "--bench",
        "many_sessions",
    ])?;
    cargo(&["bench", "--locked", "-p", "agentkit", "--bench", "loopback"])?;
    cargo(&[
        "bench",
        "--locked",
        "-p",
        "agentkit-store",
        "--bench",
        "store",
    ])
}

/// The umbrella crate builds with no optional part and with every part.
pub fn features() -> Result<(), String> {
    cargo(&[
        "check",
        "--locked",
        "-p",
        "agentkit",
        "--no-default-features",
    ])?;
    cargo(&["check", "--locked", "-p", "agentkit", "--all-features"])
}

/// Runs the offline examples, so the README's main command cannot rot.
pub fn examples() -> Result<(), String> {
    // The coding agent's offline demo, non-interactively: approvals are
    // given by flag, and it fails unless the sample project got fixed.
    let examples: &[(&str, &[&str])] = &[
        ("quickstart", &[]),
        // Fails unless the invoke_agent, chat and execute_tool spans reach
        // the OpenTelemetry exporter.
        ("tracing-otel", &[]),
        ("soft-interrupts", &[]),
        ("delegate", &[]),
        ("mcp-tools", &[]),
        ("coding-agent", &["--demo", "--yes"]),
    ];
    for &(example, args) in examples {
        let mut shown = format!("cargo run --locked -q -p {example}");
        if !args.is_empty() {
            shown = format!("{shown} -- {}", args.join(" "));
        }
        println!("    $ {shown}");
        let output = Command::new(env!("CARGO"))
            .args(["run", "--locked", "-q", "-p", example, "--"])
            .args(args)
            // Offline: a provider configured in the caller's environment
            // would make an example call it.
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("AGENTKIT_PROVIDER")
            .current_dir(workspace_root())
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|err| format!("could not start `{shown}`: {err}"))?;
        if !output.status.success() {
            return Err(format!(
                "`{shown}` exited with {}:\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    Ok(())
}
