//! `shell_exec` running real processes. Every test has a deadline of its
//! own, so a regression that leaks a process or hangs fails instead of
//! stalling the suite.

use agentkit_core::CancellationController;
use agentkit_tool_shell::{ShellConfig, ShellExecTool, shell_tools};
use agentkit_tools_core::{
    BasicToolExecutor, CommandPolicy, CompositePermissionChecker, PermissionPayload, Preflight,
    ShellCommand, Tool, ToolContext, ToolError, ToolExecutor, ToolFederation, ToolRequest,
    ToolResult,
};
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;

mod common;
#[cfg(unix)]
use common::assert_dies;

/// The most any test here may take.
const TEST_DEADLINE: Duration = Duration::from_secs(30);

async fn within_deadline<T>(work: impl Future<Output = T>) -> T {
    tokio::time::timeout(TEST_DEADLINE, work)
        .await
        .expect("the test ran past its deadline")
}

struct Shell {
    dir: TempDir,
    executor: BasicToolExecutor,
}

impl Shell {
    fn new(tune: impl FnOnce(ShellConfig) -> ShellConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tools = shell_tools(tune(ShellConfig::new(dir.path())));
        let executor = BasicToolExecutor::new(ToolFederation::new().with_source(tools))
            .with_max_output_bytes(None);
        Self { dir, executor }
    }

    async fn run(&self, input: Value) -> Result<ToolResult, ToolError> {
        self.run_in(input, ToolContext::detached()).await
    }

    async fn run_in(&self, input: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        within_deadline(
            self.executor
                .execute(ToolRequest::new("call", "shell_exec", input), ctx),
        )
        .await
    }
}

fn first_line_pid(text: &str) -> u32 {
    text.lines()
        .find_map(|line| line.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {text:?}"))
}

#[tokio::test]
async fn a_shell_that_cannot_start_is_a_tool_error() {
    let shell = Shell::new(|c| c.with_shell("/nonexistent/agentkit-shell"));
    let err = shell.run(json!({ "command": "true" })).await.unwrap_err();
    assert!(matches!(err, ToolError::ExecutionFailed(_)), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("cannot start /nonexistent/agentkit-shell:"),
        "{err}"
    );
}

#[tokio::test]
async fn echo_succeeds_with_its_stdout() {
    let shell = Shell::new(|c| c);
    let result = shell
        .run(json!({ "command": "echo hello world" }))
        .await
        .unwrap();
    assert!(!result.is_error);
    assert_eq!(
        result.output.to_text(),
        "exit code: 0\nstdout:\nhello world\n"
    );
    assert_eq!(result.metadata["shell.exit_code"], 0);
    assert_eq!(result.metadata["shell.timed_out"], false);
    let quiet = shell.run(json!({ "command": "true" })).await.unwrap();
    assert_eq!(quiet.output.to_text(), "exit code: 0 (no output)");
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_result_with_the_output() {
    let shell = Shell::new(|c| c);
    let result = shell
        .run(json!({ "command": "echo partial; echo 'boom' >&2; exit 3" }))
        .await
        .expect("a failing command is a result, not a ToolError");
    assert!(result.is_error);
    assert_eq!(
        result.output.to_text(),
        "exit code: 3\nstdout:\npartial\nstderr:\nboom\n"
    );
    assert_eq!(result.metadata["shell.exit_code"], 3);
}

#[tokio::test]
async fn stderr_is_captured_apart_from_stdout() {
    let shell = Shell::new(|c| c);
    let result = shell
        .run(json!({ "command": "echo to-err >&2; echo to-out" }))
        .await
        .unwrap();
    assert_eq!(
        result.output.to_text(),
        "exit code: 0\nstdout:\nto-out\nstderr:\nto-err\n"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_timeout_kills_the_command_and_its_children() {
    let shell = Shell::new(|c| c);
    let started = Instant::now();
    let result = shell
        .run(json!({ "command": "sleep 60 & echo $!; sleep 60", "timeout_secs": 1 }))
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(result.is_error);
    assert_eq!(result.metadata["shell.timed_out"], true);
    let text = result.output.to_text();
    assert!(
        text.starts_with(
            "timed out after 1s; the command and every process it started were killed"
        ),
        "{text}"
    );
    // The output written before the timeout is kept: the background pid.
    assert_dies(first_line_pid(text.split("stdout:").nth(1).unwrap())).await;
}

#[cfg(unix)]
#[tokio::test]
async fn cancelling_the_turn_kills_the_process_group() {
    let shell = Shell::new(|c| c);
    let controller = CancellationController::new();
    let mut ctx = ToolContext::detached();
    ctx.cancellation = controller.handle().checkpoint();
    let pid_file = shell.dir.path().join("pid");
    let started = Instant::now();
    let (result, ()) = tokio::join!(
        shell.run_in(json!({ "command": "sleep 60 & echo $! > pid; wait" }), ctx),
        async {
            // Interrupt once the background process is known to be running.
            while std::fs::read_to_string(&pid_file).map_or(true, |s| !s.ends_with('\n')) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            controller.interrupt();
        }
    );
    assert_eq!(result.unwrap_err(), ToolError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    let pid = first_line_pid(&std::fs::read_to_string(&pid_file).unwrap());
    assert_dies(pid).await;
}

#[cfg(unix)]
#[tokio::test]
async fn background_processes_do_not_outlive_or_hold_up_the_call() {
    let shell = Shell::new(|c| c);
    // Detached from the pipes: the shell exits at once, the sleep is reaped
    // with the group.
    let result = shell
        .run(json!({ "command": "sleep 60 >/dev/null 2>&1 & echo $!" }))
        .await
        .unwrap();
    assert!(!result.is_error);
    assert_dies(first_line_pid(&result.output.to_text()[12..])).await;

    // Still holding stdout: the call ends shortly after the shell, not at
    // the timeout.
    let started = Instant::now();
    let result = shell
        .run(json!({ "command": "sleep 60 & echo $!", "timeout_secs": 20 }))
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(result.metadata["shell.exit_code"], 0);
    assert_dies(first_line_pid(&result.output.to_text()[12..])).await;
}

#[tokio::test]
async fn output_is_capped_per_stream_keeping_head_and_tail() {
    let shell = Shell::new(|c| c.with_max_output_bytes(20));
    let result = shell
        .run(json!({ "command": "seq 1 1000; seq 1 3 >&2" }))
        .await
        .unwrap();
    let text = result.output.to_text();
    // seq 1 1000 prints 3893 bytes; 10 from the start and 10 from the end stay.
    assert_eq!(
        text,
        "exit code: 0\nstdout:\n1\n2\n3\n4\n5\n[... 3873 bytes omitted ...]\n\n999\n1000\n\
         stderr:\n1\n2\n3\n"
    );
}

/// The resident memory of this process, from `/proc` (Linux).
#[cfg(target_os = "linux")]
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn ten_gigabytes_of_output_are_cut_off_in_bounded_memory() {
    // A tool printing 10 GB: the call ends once 32 MiB went by, the group
    // (the pipeline's `yes` and `head` included) is killed, memory stays flat
    // and the model sees the head and the tail.
    let shell = Shell::new(|c| {
        c.with_max_output_bytes(64)
            .with_max_stream_bytes(32 * 1024 * 1024)
    });
    let before = resident_bytes();
    let started = Instant::now();
    let result = shell
        .run(json!({ "command": "echo $$; yes 0123456789 | head -c 10000000000" }))
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(result.is_error);
    assert_eq!(result.metadata["shell.output_limited"], true);
    let text = result.output.to_text();
    assert!(
        text.starts_with(
            "printed more than 33554432 bytes; the command and every process it started were killed"
        ),
        "{text}"
    );
    assert!(text.contains("bytes omitted ...]"), "{text}");
    assert!(text.contains("0123456789\n0123456789"), "{text}");
    let grown = resident_bytes().saturating_sub(before);
    assert!(grown < 16 * 1024 * 1024, "memory grew by {grown} bytes");
    assert_dies(first_line_pid(text.split("stdout:").nth(1).unwrap())).await;
}

#[tokio::test]
async fn multibyte_output_is_cut_on_character_boundaries() {
    let shell = Shell::new(|c| c.with_max_output_bytes(7));
    // Forty three-byte characters, no newline.
    let result = shell
        .run(json!({ "command": "i=0; while [ $i -lt 40 ]; do printf '語'; i=$((i+1)); done" }))
        .await
        .unwrap();
    let text = result.output.to_text();
    assert!(!text.contains('\u{fffd}'), "{text}");
    assert_eq!(
        text,
        "exit code: 0\nstdout:\n語\n[... 114 bytes omitted ...]\n語"
    );
}

#[tokio::test]
async fn cwd_defaults_to_the_root_and_resolves_relative_to_it() {
    let shell = Shell::new(|c| c);
    let root = std::fs::canonicalize(shell.dir.path()).unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    let here = shell.run(json!({ "command": "pwd -P" })).await.unwrap();
    assert_eq!(
        here.output.to_text(),
        format!("exit code: 0\nstdout:\n{}\n", root.display())
    );
    let sub = shell
        .run(json!({ "command": "pwd -P", "cwd": "sub" }))
        .await
        .unwrap();
    assert_eq!(
        sub.output.to_text(),
        format!("exit code: 0\nstdout:\n{}\n", root.join("sub").display())
    );
    let missing = shell
        .run(json!({ "command": "pwd", "cwd": "nope" }))
        .await
        .unwrap_err();
    assert_eq!(
        missing.to_string(),
        format!(
            "the working directory {} does not exist",
            root.join("nope").display()
        )
    );
}

#[tokio::test]
async fn env_adds_variables_to_the_inherited_environment() {
    let shell = Shell::new(|c| c);
    let result = shell
        .run(json!({
            "command": "printf '%s %s' \"$GREETING\" \"${PATH:+path-kept}\"",
            "env": { "GREETING": "hi there" }
        }))
        .await
        .unwrap();
    assert_eq!(
        result.output.to_text(),
        "exit code: 0\nstdout:\nhi there path-kept"
    );
}

#[tokio::test]
async fn stdin_is_closed_so_readers_do_not_wait() {
    let shell = Shell::new(|c| c);
    let result = shell
        .run(json!({ "command": "cat; echo done" }))
        .await
        .unwrap();
    assert_eq!(result.output.to_text(), "exit code: 0\nstdout:\ndone\n");
}

#[tokio::test]
async fn the_schema_bounds_the_timeout_and_requires_a_command() {
    let shell = Shell::new(|c| c.with_max_timeout(Duration::from_secs(5)));
    let err = shell
        .run(json!({ "command": "true", "timeout_secs": 6 }))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid input: `/timeout_secs`"),
        "{err}"
    );
    let err = shell.run(json!({ "command": "" })).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)), "{err}");
    let err = shell
        .run(json!({ "command": "true", "env": { "A": 1 } }))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("/env/A"), "{err}");
}

#[test]
fn the_call_proposes_its_line_resolved_cwd_and_env_keys() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let tool = ShellExecTool::new(ShellConfig::new(dir.path()));
    let requests = tool
        .proposed_requests(&json!({
            "command": "cargo test",
            "cwd": "crates/../crates/core",
            "env": { "RUST_LOG": "debug", "CARGO_TERM_COLOR": "never" }
        }))
        .unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].kind, "shell.command");
    assert_eq!(
        requests[0].payload,
        PermissionPayload::Shell(ShellCommand {
            command_line: "cargo test".into(),
            cwd: Some(root.join("crates/core")),
            env_keys: vec!["CARGO_TERM_COLOR".into(), "RUST_LOG".into()],
        })
    );
    let spec = tool.spec();
    assert!(spec.annotations.destructive && !spec.annotations.read_only);

    // A redirection adds a filesystem request with the file it writes.
    let requests = tool
        .proposed_requests(&json!({ "command": "echo x > /etc/passwd 2>/dev/null" }))
        .unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].payload,
        PermissionPayload::FileSystem(agentkit_tools_core::FileSystemOperation::Write {
            path: "/etc/passwd".into()
        })
    );
}

#[tokio::test]
async fn a_redirection_outside_the_workspace_needs_the_path_policy() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let checker = CompositePermissionChecker::new()
        .with_policy(CommandPolicy::new().allow_programs(["echo"]))
        .with_policy(agentkit_tools_core::PathPolicy::new().with_allowed_root(&root));
    let executor = BasicToolExecutor::new(
        ToolFederation::new().with_source(shell_tools(ShellConfig::new(dir.path()))),
    )
    .with_permissions(Arc::new(checker));
    let preflight = |line: &str| {
        executor.preflight(&ToolRequest::new(
            "c",
            "shell_exec",
            json!({ "command": line }),
        ))
    };
    assert_eq!(preflight("echo x > inside.txt"), Preflight::Ready);
    let Preflight::NeedsApproval(approval) = preflight("echo x >> /etc/profile") else {
        panic!("a write outside the workspace must be approved");
    };
    assert_eq!(approval.request_kind, "filesystem.write");
    // Nothing ran without approval.
    let err = executor
        .execute(
            ToolRequest::new(
                "c",
                "shell_exec",
                json!({ "command": "echo x > ../escaped" }),
            ),
            ToolContext::detached(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::PermissionDenied(_)), "{err}");
    assert!(!root.parent().unwrap().join("escaped").exists());
}

#[tokio::test]
async fn command_policy_decides_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let policy = CommandPolicy::new()
        .allow_programs(["echo", "touch"])
        .deny_programs(["rm"])
        .deny_env_keys(["LD_PRELOAD"])
        .allow_cwd(dir.path());
    let executor = BasicToolExecutor::new(
        ToolFederation::new().with_source(shell_tools(ShellConfig::new(dir.path()))),
    )
    .with_permissions(Arc::new(
        CompositePermissionChecker::new().with_policy(policy),
    ));
    let preflight = |input: Value| executor.preflight(&ToolRequest::new("c", "shell_exec", input));
    assert_eq!(
        preflight(json!({ "command": "echo ok && touch f" })),
        Preflight::Ready
    );
    assert!(matches!(
        preflight(json!({ "command": "echo x; rm -rf f" })),
        Preflight::Rejected(ToolError::PermissionDenied(_))
    ));
    assert!(matches!(
        preflight(json!({ "command": "echo x", "env": { "LD_PRELOAD": "evil.so" } })),
        Preflight::Rejected(ToolError::PermissionDenied(_))
    ));
    // The default cwd is the root, an allowed one; its parent is not.
    assert!(matches!(
        preflight(json!({ "command": "echo x", "cwd": ".." })),
        Preflight::NeedsApproval(_)
    ));
    // A denied call never ran: `execute` refuses it too, and no file appears.
    let err = within_deadline(executor.execute(
        ToolRequest::new(
            "c",
            "shell_exec",
            json!({ "command": "touch made; rm made" }),
        ),
        ToolContext::detached(),
    ))
    .await
    .unwrap_err();
    assert!(matches!(err, ToolError::PermissionDenied(_)));
    assert!(!dir.path().join("made").exists());
}
