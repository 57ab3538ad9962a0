//! The offline demo, end to end on a pseudo-terminal, and without one.

#[allow(dead_code)] // each test file uses part of the harness
mod terminal;

use std::process::{Command, Stdio};
use terminal::Term;

#[test]
fn offline_demo_fixes_the_sample_project_with_approvals() {
    let dir = tempfile::tempdir().unwrap();
    let mut term = Term::spawn(&[], &[], dir.path());
    term.wait_for("offline demo: no provider configured");
    term.wait_for("> The tests of this project fail. Find out why and fix it.");

    // The first test run needs approval; "always" allows python3 for the
    // rest of the session.
    term.wait_for("allow? [y]es / [n]o / [a]lways for this session");
    assert!(term.screen().contains("? run `python3 -m unittest -v`?"));
    term.type_text("a");
    term.wait_for("you: always for this session");
    term.wait_for("allowed from now on: `python3` commands");
    term.wait_for("exit code 1 · FAILED (failures=1)");

    // The fix is shown as a diff and needs its own approval.
    term.wait_for("  + return total(values) / len(values)");
    term.wait_for("allow? [y]es");
    assert!(
        term.screen()
            .contains("  - return total(values) / (len(values) - 1)")
    );
    term.type_text("y");
    term.wait_for("replaced 1 occurrence in calc.py");

    // The second test run is not asked about again.
    term.wait_for("exit code 0 · OK");
    term.wait_for("All 3 tests pass now.");
    term.wait_for("── 0 in ·");
    let screen = term.screen();
    assert_eq!(screen.matches("you: ").count(), 2, "{screen}");
    assert!(screen.contains("● shell_exec $ python3 -m unittest -v"));
    assert!(screen.contains("● fs_read_file calc.py"));

    // Ctrl-D at the prompt quits, and says where the fixed copy is.
    term.wait_prompt();
    term.ctrl_d();
    term.wait_for("demo finished: calc.py is fixed");
    assert!(term.wait_exit());
    // The book's transcript of a demo session comes from here
    // (`cargo test -p coding-agent --test demo -- --nocapture`).
    println!("{}", term.screen());
}

#[test]
fn offline_demo_runs_without_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_coding-agent"))
        .args(["--demo", "--yes"])
        .env("CODING_AGENT_STATE_DIR", dir.path().join("state"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("approved (--yes)"), "{text}");
    assert!(text.contains("✓ exit code 0 · OK"), "{text}");
    assert!(text.contains("demo finished: calc.py is fixed"), "{text}");
    // Plain text: no escape sequences without a terminal.
    assert!(!text.contains('\u{1b}'), "{text}");
    // The demo saves no session.
    assert!(!dir.path().join("state").exists());
}

#[test]
fn denying_the_fix_leaves_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut term = Term::spawn(&[], &[], dir.path());
    term.wait_for("allow? [y]es");
    term.type_text("y");
    term.wait_for("  + return total(values) / len(values)");
    term.wait_count("allow? [y]es", 1);
    term.type_text("n");
    term.wait_for("Understood, I left calc.py unchanged.");
    term.wait_for("── 0 in");
    assert!(term.screen().contains("✗ permission denied by the user"));
    term.wait_prompt();
    term.ctrl_c();
    term.wait_for("(Ctrl-C again or Ctrl-D to quit)");
    term.ctrl_c();
    term.wait_for("demo finished without the fix");
    assert!(term.wait_exit());
}

#[test]
fn the_demo_hears_a_steering_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut term = Term::spawn(&[], &[], dir.path());
    term.wait_for("I'll look at the project");
    term.enter("keep it short");
    term.wait_for("⧗ queued #1 (steer): keep it short");
    term.wait_for("allow? [y]es");
    term.type_text("a");
    term.wait_for("you: always for this session");
    term.wait_for("↳ injected #1");
    term.wait_for("Noted: “keep it short”.");
    term.wait_for("  + return total(values) / len(values)");
    term.wait_for("allow? [y]es");
    term.type_text("y");
    term.wait_for("All 3 tests pass now.");
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn sigint_without_a_terminal_cancels_the_turn_then_quits() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_coding-agent"))
        .arg("--demo")
        .env("CODING_AGENT_STATE_DIR", dir.path().join("state"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Lines arrive through a thread, so a missing one fails the test in
    // time instead of hanging it.
    let (lines, arrived) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let mut read_until = |needle: &str| {
        while !seen.contains(needle) {
            match arrived.recv_timeout(std::time::Duration::from_secs(30)) {
                Ok(line) => seen += &(line + "\n"),
                Err(_) => panic!("no {needle:?} in:\n{seen}"),
            }
        }
    };
    // The first approval waits for a line on stdin: interrupt it instead.
    read_until("? run `python3 -m unittest -v`?");
    let interrupt = |pid: u32| {
        // The shell's own `kill`, so no procps package is needed.
        let status = Command::new("sh")
            .args(["-c", &format!("kill -INT {pid}")])
            .status()
            .unwrap();
        assert!(status.success());
    };
    interrupt(child.id());
    read_until("you: cancel the turn");
    read_until("turn cancelled; the transcript is intact.");
    // At the prompt, SIGINT arms quitting; a second one quits.
    read_until("── ");
    interrupt(child.id());
    read_until("(Ctrl-C again or Ctrl-D to quit)");
    interrupt(child.id());
    read_until("demo finished without the fix");
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the agent did not quit:\n{seen}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success());
}

#[test]
fn text_typed_at_an_approval_is_a_message_not_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut term = Term::spawn(&[], &[], dir.path());
    term.wait_for("allow? [y]es / [n]o / [a]lways for this session");
    // "please ..." holds an `a`: it must not answer "always".
    term.enter("please be careful");
    term.wait_for("(sent once you answer: please be careful)");
    assert!(!term.screen().contains("you: "), "{}", term.screen());
    term.wait_for("allow? [y]es");
    term.type_text("a");
    term.wait_for("you: always for this session");
    term.wait_for("⧗ queued #1 (steer): please be careful");
    term.wait_for("Noted: “please be careful”.");
    term.wait_for("  + return total(values) / len(values)");
    term.wait_count("you: ", 1);
    term.wait_for("allow? [y]es");
    term.type_text("y");
    term.wait_for("All 3 tests pass now.");
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}
