//! Drives `coding-agent` on a pseudo-terminal and reads its screen.
//!
//! The binary runs on a real pty (forkpty, with the pty as its controlling
//! terminal) sized 100×200 so a whole test fits on one screen without
//! scrolling. Everything it writes is fed to a vt100 parser on a reader
//! thread; tests wait for text to appear on the parsed screen, which is what
//! a person would see, escape sequences and redraws resolved.

use rexpect::process::{PtyProcess, Signal};
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ROWS: u16 = 200;
const COLS: u16 = 100;
/// Generous: the machine running the tests may be busy.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A running `coding-agent` on a pty.
pub struct Term {
    process: PtyProcess,
    writer: std::fs::File,
    parser: Arc<Mutex<vt100::Parser>>,
    /// Set when the reader saw the end of output.
    closed: Arc<Mutex<bool>>,
}

impl Term {
    /// Starts the binary with `args`, in an environment with no provider
    /// variables besides those in `env`, and with `state` as its state and
    /// config directory.
    pub fn spawn(args: &[&str], env: &[(&str, &str)], state: &Path) -> Term {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!(
                "stty cols {COLS} rows {ROWS} && exec \"$0\" \"$@\""
            ))
            .arg(env!("CARGO_BIN_EXE_coding-agent"))
            .args(args);
        for var in [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_API_KEY",
            "AGENTKIT_MODEL",
        ] {
            command.env_remove(var);
        }
        command
            .env("TERM", "xterm-256color")
            .env("CODING_AGENT_STATE_DIR", state.join("state"))
            // A killed process's session lease expires within a second, so
            // `--resume` after a kill does not wait long.
            .env("CODING_AGENT_LEASE_MS", "1000")
            .env("XDG_CONFIG_HOME", state.join("config"));
        for (key, value) in env {
            command.env(key, value);
        }
        let mut process = PtyProcess::new(command).expect("spawn on a pty");
        process.set_kill_timeout(Some(2_000));
        let mut reader = process.get_file_handle().expect("pty handle");
        let writer = process.get_file_handle().expect("pty handle");
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            ROWS.try_into().unwrap(),
            COLS.try_into().unwrap(),
            0,
        )));
        let closed = Arc::new(Mutex::new(false));
        {
            let parser = parser.clone();
            let closed = closed.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => parser.lock().unwrap().process(&buf[..n]),
                    }
                }
                *closed.lock().unwrap() = true;
            });
        }
        Term {
            process,
            writer,
            parser,
            closed,
        }
    }

    /// The screen's text, rows joined by newlines, trailing blanks trimmed.
    pub fn screen(&self) -> String {
        let contents = self.parser.lock().unwrap().screen().contents();
        contents
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
            .trim_end()
            .to_owned()
    }

    /// Waits until `needle` is on the screen; panics with the screen if it
    /// does not appear in time.
    pub fn wait_for(&self, needle: &str) {
        self.wait_until(needle, |screen| screen.contains(needle));
    }

    /// Waits until `needle` appears `count` times on the screen.
    pub fn wait_count(&self, needle: &str, count: usize) {
        self.wait_until(&format!("{count}× {needle}"), |screen| {
            screen.matches(needle).count() >= count
        });
    }

    fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return;
            }
            if start.elapsed() > TIMEOUT || (*self.closed.lock().unwrap() && !done(&self.screen()))
            {
                // One last look: the reader may have closed right after
                // the final output.
                let screen = self.screen();
                if done(&screen) {
                    return;
                }
                panic!("timed out waiting for {what:?}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the agent waits at its prompt: the last line is the
    /// idle prompt `>` (while it works the prompt reads `steer>`).
    pub fn wait_prompt(&self) {
        self.wait_until("the idle prompt", |screen| {
            screen.lines().last().is_some_and(|l| l.trim_end() == ">")
        });
    }

    /// Waits until the last line (the prompt) starts with `prefix`.
    pub fn wait_prompt_starting(&self, prefix: &str) {
        self.wait_until(&format!("a prompt starting {prefix:?}"), |screen| {
            screen.lines().last().is_some_and(|l| l.starts_with(prefix))
        });
    }

    /// Types `text` (no Enter).
    pub fn type_text(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Types `text` and Enter.
    pub fn enter(&mut self, text: &str) {
        self.type_text(text);
        // Enter is a carriage return on a terminal.
        self.type_text("\r");
    }

    /// Sends Ctrl-C.
    pub fn ctrl_c(&mut self) {
        self.type_text("\x03");
    }

    /// Sends Ctrl-D.
    pub fn ctrl_d(&mut self) {
        self.type_text("\x04");
    }

    /// Waits for the process to exit; `true` if it exited with status 0.
    pub fn wait_exit(&mut self) -> bool {
        let start = Instant::now();
        loop {
            match self.process.status() {
                Some(rexpect::process::WaitStatus::Exited(_, code)) => return code == 0,
                Some(rexpect::process::WaitStatus::StillAlive) | None => {}
                Some(other) => panic!("the agent ended with {other:?}:\n{}", self.screen()),
            }
            if start.elapsed() > TIMEOUT {
                panic!("the agent did not exit; the screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the process at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.process.kill(Signal::SIGKILL);
    }
}
