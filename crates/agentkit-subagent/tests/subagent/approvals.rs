//! A child's approvals reach the parent's host, through any depth, and its answers reach the child.

use super::*;

#[tokio::test]
async fn a_childs_approval_surfaces_to_the_parents_host_and_approving_resumes_it() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let tool = writer(workspace.path(), write_script("Written."), items.clone());
    let handle = tool.clone();
    let events = Events::default();
    let (mut driver, pending) = until_approval(tool, &events).await;
    // Not auto-approved: nothing was written yet, and the child waits.
    assert!(!workspace.path().join("out.txt").exists());
    assert_eq!(handle.parked(), 1);
    // The request is for the parent's call and names the child.
    assert_eq!(pending.call.id.as_str(), "p1");
    assert_eq!(&*pending.call.name, "writer");
    assert_eq!(pending.request.call_id.as_ref().unwrap().as_str(), "p1");
    assert_eq!(pending.request.metadata[SUB_AGENT_KEY], "writer");
    assert_eq!(
        pending.request.metadata[SUB_AGENT_PATH_KEY],
        json!(["writer"])
    );
    assert_eq!(
        pending.request.metadata["agentkit.sub_agent_tool"],
        "fs_write_file"
    );
    assert!(pending.request.summary.starts_with("writer (sub-agent): "));
    assert_eq!(pending.request.request_kind, "filesystem.write");
    // `next()` refuses to go on while it is unresolved, as for any approval.
    assert!(driver.next().await.is_err());

    pending.approve(&mut driver).unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert_eq!(run.result.finish_reason, FinishReason::Completed);
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("out.txt")).unwrap(),
        "hello from the child\n"
    );
    assert_eq!(
        results_by_call(&run.transcript)["p1"].output.to_text(),
        "Written."
    );
    assert_eq!(handle.parked(), 0);
    let child = items.get();
    validate_transcript(&child).unwrap();
    assert!(!results_by_call(&child)["w1"].is_error);
    // The parent's observers saw the approval and its resolution.
    let all = events.all();
    assert!(
        all.iter()
            .any(|e| matches!(e, AgentEvent::ApprovalRequired { .. }))
    );
    assert!(all.iter().any(
        |e| matches!(e, AgentEvent::ApprovalResolved { call_id, approved: true } if call_id.as_str() == "p1")
    ));
}

#[tokio::test]
async fn denying_a_childs_approval_tells_the_child_which_goes_on() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let child_model = write_script("I was not allowed to write.");
    let tool = writer(workspace.path(), child_model.clone(), items.clone());
    let (mut driver, pending) = until_approval(tool, &Events::default()).await;
    pending
        .deny_with_reason(&mut driver, "not in this directory")
        .unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert!(!workspace.path().join("out.txt").exists());
    // The parent's call is answered by the child, not by a denial stub.
    let answer = &results_by_call(&run.transcript)["p1"];
    assert!(!answer.is_error);
    assert_eq!(answer.output.to_text(), "I was not allowed to write.");
    // The child's model read the denial with the host's reason.
    let child = items.get();
    validate_transcript(&child).unwrap();
    let denied = &results_by_call(&child)["w1"];
    assert_eq!(error_kind(denied), Some("permission_denied"));
    assert!(denied.output.to_text().contains("not in this directory"));
    assert_eq!(child_model.requests().len(), 2);
}

#[tokio::test]
async fn a_grandchilds_approval_surfaces_through_two_levels() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let writer = writer(workspace.path(), write_script("Written."), items.clone());
    let planner = planner(writer, "q1", "The writer wrote it.");
    let (run, _) = delegate_once(planner, Approvals::ApproveAll).await;
    assert_eq!(run.approvals.len(), 1);
    let request = &run.approvals[0].request;
    assert_eq!(
        request.metadata[SUB_AGENT_PATH_KEY],
        json!(["planner", "writer"])
    );
    assert_eq!(request.metadata[SUB_AGENT_KEY], "planner");
    assert_eq!(request.metadata["agentkit.sub_agent_tool"], "fs_write_file");
    assert!(
        request
            .summary
            .starts_with("planner (sub-agent): writer (sub-agent): "),
        "{}",
        request.summary
    );
    assert!(workspace.path().join("out.txt").exists());
    assert_eq!(
        results_by_call(&run.transcript)["p1"].output.to_text(),
        "The writer wrote it."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_approval_waits_for_the_parents_running_siblings() {
    let workspace = tempfile::tempdir().unwrap();
    let tool = writer(workspace.path(), write_script("Written."), Items::default());
    let nap = Sleep::new("nap", 150);
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::new()
                .call("p1", "writer", json!({ "task": "Write." }))
                .call("p2", "nap", json!({}))
                .finish(FinishReason::ToolCall),
            ScriptedTurn::text("Both done."),
        ]))
        .add_tool_source(ToolRegistry::new().with(tool).with(nap.clone()))
        .task_manager(agentkit_loop::ConcurrentTaskManager::new(2))
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!("approval expected")
    };
    // Shown only once the sibling finished: the pause did not cut it short.
    assert!(nap.finished.load(Ordering::SeqCst));
    assert_eq!(pending.call.id.as_str(), "p1");
    pending.approve(&mut driver).unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    let results = results_by_call(&run.transcript);
    assert_eq!(results["p1"].output.to_text(), "Written.");
    assert_eq!(results["p2"].output.to_text(), "rested");
    assert!(workspace.path().join("out.txt").exists());
}

#[tokio::test]
async fn a_child_may_ask_again_after_a_denial() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let write = |id: &str, path: &str| {
        ScriptedTurn::tool_call(
            id,
            "fs_write_file",
            json!({ "path": path, "content": "x\n" }),
        )
    };
    let child_model = ScriptedModel::new([
        write("w1", "first.txt"),
        write("w2", "second.txt"),
        ScriptedTurn::text("Wrote the second file."),
    ]);
    let tool = writer(workspace.path(), child_model, items.clone());
    let (run, _) = delegate_once(
        tool,
        Approvals::decide(|pending| {
            pending.request.metadata["agentkit.sub_agent_input"]["path"] == "second.txt"
        }),
    )
    .await;
    // One parent call, paused twice: denied, then approved.
    assert_eq!(run.approvals.len(), 2);
    assert!(run.approvals.iter().all(|a| a.call.id.as_str() == "p1"));
    assert!(!workspace.path().join("first.txt").exists());
    assert!(workspace.path().join("second.txt").exists());
    assert_eq!(
        results_by_call(&run.transcript)["p1"].output.to_text(),
        "Wrote the second file."
    );
    let child = items.get();
    validate_transcript(&child).unwrap();
    assert_eq!(
        error_kind(&results_by_call(&child)["w1"]),
        Some("permission_denied")
    );
}
