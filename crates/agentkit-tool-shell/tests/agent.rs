//! `shell_exec` inside a real agent loop driven by a scripted model: the
//! `CommandPolicy` preflight, approvals, failed commands and a cancelled
//! turn, with real processes.

use agentkit_core::{
    CancellationController, FinishReason, Item, ToolResultPart, validate_transcript,
};
use agentkit_loop::{Agent, LoopDriver, LoopInterrupt, LoopStep, SessionConfig, TurnResult};
use agentkit_testkit::{ScriptedModel, ScriptedSession, ScriptedTurn};
use agentkit_tool_shell::{ShellConfig, shell_tools};
use agentkit_tools_core::{CommandPolicy, CompositePermissionChecker, PathPolicy};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

mod common;

const TEST_DEADLINE: Duration = Duration::from_secs(30);

fn start(
    workspace: &Path,
    turns: Vec<ScriptedTurn>,
    controller: &CancellationController,
) -> impl std::future::Future<Output = LoopDriver<ScriptedSession>> {
    let policy = CommandPolicy::new()
        .allow_programs(["echo", "cat", "sleep", "false", "wait"])
        .deny_programs(["rm"]);
    let agent = Agent::builder()
        .model(ScriptedModel::new(turns))
        .add_tool_source(shell_tools(ShellConfig::new(workspace)))
        // Redirections are filesystem writes: the PathPolicy allows those
        // inside the workspace.
        .permissions(
            CompositePermissionChecker::new()
                .with_policy(policy)
                .with_policy(PathPolicy::new().with_allowed_root(workspace)),
        )
        .cancellation(controller.handle())
        .input(vec![Item::user("build it")])
        .build()
        .unwrap();
    async move { agent.start(SessionConfig::new("shell-e2e")).await.unwrap() }
}

fn call(id: &str, command: &str) -> ScriptedTurn {
    ScriptedTurn::new()
        .call(id, "shell_exec", json!({ "command": command }))
        .finish(FinishReason::ToolCall)
}

/// Runs the loop to the end of the turn, approving nothing.
async fn finish(driver: &mut LoopDriver<ScriptedSession>) -> TurnResult {
    tokio::time::timeout(TEST_DEADLINE, async {
        loop {
            match driver.next().await.unwrap() {
                LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => continue,
                LoopStep::Finished(result) => return result,
                other => panic!("unexpected step {other:?}"),
            }
        }
    })
    .await
    .expect("the turn ran past its deadline")
}

fn results(driver: &LoopDriver<ScriptedSession>) -> Vec<ToolResultPart> {
    let items = driver.transcript().to_vec();
    validate_transcript(&items).expect("the transcript stays valid");
    items
        .iter()
        .flat_map(|item| item.tool_results().cloned())
        .collect()
}

#[tokio::test]
async fn allowed_commands_run_denied_ones_do_not_and_failures_reach_the_model() {
    let workspace = tempfile::tempdir().unwrap();
    let controller = CancellationController::new();
    let mut driver = start(
        workspace.path(),
        vec![
            call("call-1", "echo built > out.txt && cat out.txt"),
            call("call-2", "rm out.txt"),
            call("call-3", "echo failing >&2; false"),
            ScriptedTurn::text("Done."),
        ],
        &controller,
    )
    .await;
    finish(&mut driver).await;
    let results = results(&driver);
    assert_eq!(results.len(), 3);
    assert!(!results[0].is_error);
    assert_eq!(
        results[0].output.to_text(),
        "exit code: 0\nstdout:\nbuilt\n"
    );
    assert!(results[1].is_error, "rm is denied");
    assert!(
        workspace.path().join("out.txt").exists(),
        "the denied rm never ran"
    );
    assert!(results[2].is_error);
    assert_eq!(
        results[2].output.to_text(),
        "exit code: 1\nstderr:\nfailing\n"
    );
}

#[tokio::test]
async fn an_unknown_program_waits_for_approval() {
    let workspace = tempfile::tempdir().unwrap();
    let controller = CancellationController::new();
    let mut driver = start(
        workspace.path(),
        vec![call("call-1", "touch made"), ScriptedTurn::text("Okay.")],
        &controller,
    )
    .await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!("expected an approval request");
    };
    assert_eq!(pending.request.request_kind, "shell.command");
    assert_eq!(pending.request.summary, "run `touch made`");
    pending.approve(&mut driver).unwrap();
    finish(&mut driver).await;
    assert!(workspace.path().join("made").exists());
    assert!(!results(&driver)[0].is_error);
}

#[cfg(unix)]
#[tokio::test]
async fn cancelling_the_turn_stops_a_running_command_and_its_children() {
    let workspace = tempfile::tempdir().unwrap();
    let controller = CancellationController::new();
    let mut driver = start(
        workspace.path(),
        vec![call("call-1", "sleep 60 & echo $! > pid; wait")],
        &controller,
    )
    .await;
    let pid_file = workspace.path().join("pid");
    let canceller = {
        let pid_file = pid_file.clone();
        tokio::spawn(async move {
            while std::fs::read_to_string(&pid_file).map_or(true, |s| !s.ends_with('\n')) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            controller.interrupt();
        })
    };
    let started = Instant::now();
    let result = finish(&mut driver).await;
    canceller.await.unwrap();
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(results(&driver)[0].is_error);
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    common::assert_dies(pid).await;
}
