//! Running a helper process (a test client, a real server's CLI) from a
//! test with a deadline, so a hang fails the test instead of stalling the
//! suite.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

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
}
