//! The filesystem tools inside a real agent loop driven by a scripted model:
//! the calls go through schema validation, the `PathPolicy` preflight and
//! approvals exactly as they would with a provider.

use agentkit_core::{FinishReason, Item, ToolResultPart, validate_transcript};
use agentkit_loop::{Agent, LoopDriver, LoopInterrupt, LoopStep, SessionConfig};
use agentkit_testkit::{ScriptedModel, ScriptedSession, ScriptedTurn};
use agentkit_tool_fs::{FsToolsConfig, fs_tools};
use agentkit_tools_core::{CompositePermissionChecker, PathPolicy};
use serde_json::{Value, json};
use std::path::Path;

async fn agent_in(
    workspace: &Path,
    turns: Vec<ScriptedTurn>,
) -> (ScriptedModel, LoopDriver<ScriptedSession>) {
    let model = ScriptedModel::new(turns);
    let policy = PathPolicy::new().with_allowed_root(workspace);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(fs_tools(FsToolsConfig::new(workspace)))
        .permissions(CompositePermissionChecker::new().with_policy(policy))
        .input(vec![Item::user("keep a plan in notes/plan.md")])
        .build()
        .unwrap();
    let driver = agent.start(SessionConfig::new("fs-e2e")).await.unwrap();
    (model, driver)
}

fn call(id: &str, tool: &str, input: Value) -> ScriptedTurn {
    ScriptedTurn::new()
        .call(id, tool, input)
        .finish(FinishReason::ToolCall)
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
async fn the_model_writes_a_file_then_reads_it_back() {
    let workspace = tempfile::tempdir().unwrap();
    let (model, mut driver) = agent_in(
        workspace.path(),
        vec![
            call(
                "call-1",
                "fs_write_file",
                json!({ "path": "notes/plan.md", "content": "step one\nstep two\n" }),
            ),
            call(
                "call-2",
                "fs_read_file",
                json!({ "path": "notes/plan.md", "offset": 2 }),
            ),
            ScriptedTurn::text("The plan is saved."),
        ],
    )
    .await;
    loop {
        match driver.next().await.unwrap() {
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => continue,
            LoopStep::Finished(_) => break,
            other => panic!("unexpected step {other:?}"),
        }
    }
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("notes/plan.md")).unwrap(),
        "step one\nstep two\n"
    );
    let results = results(&driver);
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| !r.is_error));
    assert_eq!(
        results[0].output.to_text(),
        "created notes/plan.md (18 bytes)"
    );
    assert_eq!(results[1].output.to_text(), "     2\tstep two\n");
    // The model was offered every tool, with its schema.
    let offered: Vec<String> = model.requests()[0]
        .available_tools
        .iter()
        .map(|spec| spec.name.clone())
        .collect();
    assert!(
        offered.contains(&"fs_replace_in_file".to_string()),
        "{offered:?}"
    );
}

#[tokio::test]
async fn a_write_outside_the_root_waits_for_approval_and_a_denial_writes_nothing() {
    let sandbox = tempfile::tempdir().unwrap();
    let workspace = sandbox.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let (_model, mut driver) = agent_in(
        &workspace,
        vec![
            call(
                "call-1",
                "fs_write_file",
                json!({ "path": "../escape.txt", "content": "out" }),
            ),
            ScriptedTurn::text("Understood."),
        ],
    )
    .await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!("expected an approval request");
    };
    assert_eq!(pending.request.request_kind, "filesystem.write");
    let expected = std::fs::canonicalize(sandbox.path())
        .unwrap()
        .join("escape.txt");
    assert!(
        pending
            .request
            .summary
            .contains(&expected.display().to_string()),
        "the host sees the resolved path: {}",
        pending.request.summary
    );
    pending
        .deny_with_reason(&mut driver, "stay in the workspace")
        .unwrap();
    loop {
        match driver.next().await.unwrap() {
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => continue,
            LoopStep::Finished(_) => break,
            other => panic!("unexpected step {other:?}"),
        }
    }
    assert!(!expected.exists(), "a denied write must not happen");
    let results = results(&driver);
    assert!(results[0].is_error);
    assert!(
        results[0]
            .output
            .to_text()
            .contains("stay in the workspace")
    );
}

#[tokio::test]
async fn an_approved_write_outside_the_root_runs() {
    let sandbox = tempfile::tempdir().unwrap();
    let workspace = sandbox.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let (_model, mut driver) = agent_in(
        &workspace,
        vec![
            call(
                "call-1",
                "fs_write_file",
                json!({ "path": "../shared/out.txt", "content": "ok" }),
            ),
            ScriptedTurn::text("Written."),
        ],
    )
    .await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!("expected an approval request");
    };
    pending.approve(&mut driver).unwrap();
    loop {
        match driver.next().await.unwrap() {
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => continue,
            LoopStep::Finished(_) => break,
            other => panic!("unexpected step {other:?}"),
        }
    }
    assert_eq!(
        std::fs::read_to_string(sandbox.path().join("shared/out.txt")).unwrap(),
        "ok"
    );
    assert!(!results(&driver)[0].is_error);
}
