//! Running a helper process (a test client, a real server's CLI) from a
//! test with a deadline, so a hang fails the test instead of stalling the
//! suite, and a server process that says where it listens
//! ([`ListeningProcess`]), killed when the test lets go of it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// A server process started from a test or a load run: it prints
/// `listening on <address>` as its first line on standard output, and is
/// killed (SIGKILL) when dropped.
///
/// ```no_run
/// use agentkit_testkit::process::{ListeningProcess, example_binary};
/// use std::process::Command;
///
/// let mut replica = ListeningProcess::spawn(
///     Command::new(example_binary("replica")).env("REPLICA_LEASE_MS", "1500"),
///     "the replica",
/// );
/// println!("serving at {}", replica.url());
/// replica.kill(); // no chance to save, release or flush anything
/// ```
pub struct ListeningProcess {
    child: Child,
    address: String,
}

impl ListeningProcess {
    /// Starts `command` with its standard output piped and waits for its
    /// `listening on <address>` line. Panics, naming `what`, if it cannot
    /// start or says anything else first.
    pub fn spawn(command: &mut Command, what: &str) -> Self {
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {what}: {err}"));
        let mut line = String::new();
        let stdout = child.stdout.take().expect("standard output is piped");
        if let Err(err) = BufReader::new(stdout).read_line(&mut line) {
            let _ = child.kill();
            panic!("{what} did not say where it listens: {err}");
        }
        let Some(address) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} said {line:?}, not `listening on <address>`");
        };
        Self {
            address: address.to_owned(),
            child,
        }
    }

    /// The address it listens on, as it printed it (`127.0.0.1:port`).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// `http://` and the address.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Its peak resident memory so far in MiB (`VmHWM`), `NaN` once it has
    /// exited or where `/proc` cannot tell.
    pub fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    }

    /// Kills it with SIGKILL (no chance to save, release or flush
    /// anything) and reaps it. Killing it again does nothing.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ListeningProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The path of the example binary `name` built beside the running test or
/// example (`target/<profile>/examples/<name>`). Panics if it is missing,
/// saying how to build it.
pub fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the running binary's path");
    // A test runs from `<profile>/deps`, an example from `<profile>/examples`.
    let profile = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("a binary inside target/<profile>");
    let binary = profile.join("examples").join(name);
    assert!(
        binary.is_file(),
        "{} is missing: build it (`cargo build --example {name}`; cargo test and nextest build a \
         crate's examples with its tests)",
        binary.display()
    );
    binary
}

/// Runs `command` with its standard output and error captured and returns
/// what it printed. Panics, after killing it, if it is still running after
/// `deadline`, and if it cannot be started (`what` names it in the
/// message, with how to install it).
pub fn output_within(command: &mut Command, deadline: Duration, what: &str) -> Output {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot start {what}: {err}"));
    let pid = child.id();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output()));
    match receiver.recv_timeout(deadline) {
        Ok(output) => output.unwrap_or_else(|err| panic!("{what} failed: {err}")),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("{what} did not finish within {deadline:?}");
        }
    }
}

/// Asserts that a test client run by [`output_within`] succeeded and
/// closed with the line `N passed, 0 failed` for exactly `checks` checks
/// (so a client that skipped some does not pass).
pub fn assert_all_passed(output: &Output, checks: usize, what: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let closing = format!("{checks} passed, 0 failed");
    assert!(
        stdout.lines().any(|line| line == closing),
        "every check of {what} must run ({closing}):\n{stdout}\n{stderr}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_captured_and_hangs_are_cut_short() {
        let output = output_within(
            Command::new("sh").args(["-c", "echo out; echo err >&2"]),
            Duration::from_secs(10),
            "sh",
        );
        assert_eq!(output.stdout, b"out\n");
        let partial = std::panic::catch_unwind(|| assert_all_passed(&output, 1, "sh"));
        assert!(partial.is_err(), "no closing line: not passed");
        assert_eq!(output.stderr, b"err\n");
        let hang = std::panic::catch_unwind(|| {
            output_within(
                Command::new("sleep").arg("30"),
                Duration::from_millis(200),
                "sleep",
            )
        });
        let message = *hang.unwrap_err().downcast::<String>().unwrap();
        assert!(message.contains("sleep did not finish within"), "{message}");
    }

    #[test]
    fn a_listening_process_is_found_by_its_line_and_killed_on_drop() {
        let mut server = ListeningProcess::spawn(
            Command::new("sh").args(["-c", "echo 'listening on 127.0.0.1:4321'; exec sleep 30"]),
            "sh",
        );
        assert_eq!(server.address(), "127.0.0.1:4321");
        assert_eq!(server.url(), "http://127.0.0.1:4321");
        let proc_dir = format!("/proc/{}", server.id());
        assert!(
            server.peak_rss_mib() > 0.0,
            "a live process has a resident size"
        );
        server.kill();
        assert!(
            !std::path::Path::new(&proc_dir).exists(),
            "killed and reaped"
        );
        assert!(server.peak_rss_mib().is_nan(), "gone");

        let silent = std::panic::catch_unwind(|| {
            ListeningProcess::spawn(Command::new("sh").args(["-c", "echo hello"]), "sh")
        });
        let message = *silent.err().unwrap().downcast::<String>().unwrap();
        assert!(
            message.contains("not `listening on <address>`"),
            "{message}"
        );
    }
}
