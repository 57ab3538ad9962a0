//! Cancelling, snapshots and abandoned turns: a child never outlives what its parent decided.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_stops_the_child_with_a_valid_transcript() {
    let items = Items::default();
    let (waiter, wait, child_model) = waiter(&items);
    let controller = CancellationController::new();
    let events = Events::default();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            delegate("p1", "waiter", "Wait."),
            ScriptedTurn::text("never reached"),
        ]))
        .add_tool_source(ToolRegistry::new().with(waiter))
        .observer(events.clone())
        .cancellation(controller.handle())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let interrupt = {
        let events = events.clone();
        tokio::spawn(async move {
            events
                .wait_for(|agent, _, e| {
                    agent == "waiter" && matches!(e, AgentEvent::ToolStarted { tool_name, .. } if tool_name == "wait")
                })
                .await;
            controller.interrupt();
        })
    };
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!("the parent's turn ends")
    };
    interrupt.await.unwrap();
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    assert_eq!(
        error_kind(&results_by_call(&transcript)["p1"]),
        Some("cancelled")
    );

    // The child ends its own turn cancelled, on its own task.
    events
        .deliver_until(&mut driver, |agent, _, e| {
            agent == "waiter"
                && matches!(e, AgentEvent::TurnFinished { result } if result.finish_reason == FinishReason::Cancelled)
        })
        .await;
    assert!(
        wait.cancelled.load(Ordering::SeqCst),
        "the child's tool saw it"
    );
    let child = items.get();
    validate_transcript(&child).unwrap();
    assert!(results_by_call(&child).contains_key("c1"));
    assert_eq!(child_model.requests().len(), 1, "the child stopped at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_while_the_child_waits_for_approval_ends_the_child() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let tool = writer(workspace.path(), write_script("Written."), items.clone());
    let handle = tool.clone();
    let controller = CancellationController::new();
    let events = Events::default();
    let agent = Agent::builder()
        .model(ScriptedModel::new([delegate("p1", "writer", "Write.")]))
        .add_tool_source(ToolRegistry::new().with(tool))
        .observer(events.clone())
        .cancellation(controller.handle())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(_)) = driver.next().await.unwrap()
    else {
        panic!("approval expected")
    };
    controller.interrupt();
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!("the parent's turn ends cancelled")
    };
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    validate_transcript(&driver.transcript().to_vec()).unwrap();
    events
        .deliver_until(&mut driver, |agent, _, e| {
            agent == "writer"
                && matches!(e, AgentEvent::TurnFinished { result } if result.finish_reason == FinishReason::Cancelled)
        })
        .await;
    assert!(!workspace.path().join("out.txt").exists());
    let child = items.get();
    validate_transcript(&child).unwrap();
    assert_eq!(
        error_kind(&results_by_call(&child)["w1"]),
        Some("cancelled")
    );
    // The child is over: it no longer counts as waiting.
    assert_eq!(handle.parked(), 0);
}

#[tokio::test]
async fn a_snapshot_keeps_the_paused_call_and_a_resumed_driver_continues_the_child() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let tool = writer(workspace.path(), write_script("Written."), items.clone());
    let events = Events::default();
    let agent = parent(
        ScriptedModel::new([delegate("p1", "writer", "Write."), ScriptedTurn::text("ok")]),
        tool,
        &events,
    );
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(first)) = driver.next().await.unwrap()
    else {
        panic!("approval expected")
    };
    // Saved as JSON and resumed by the same agent (same process: the child
    // still waits), the approval is shown again and answering it resumes
    // the child.
    let saved = serde_json::to_string(&driver.snapshot()).unwrap();
    drop(driver);
    let snapshot = serde_json::from_str(&saved).unwrap();
    let mut driver = agent
        .resume(SessionConfig::new("parent"), snapshot)
        .await
        .unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(again)) = driver.next().await.unwrap()
    else {
        panic!("the paused call's approval survives the snapshot")
    };
    assert_eq!(again.call, first.call);
    assert_eq!(again.request.summary, first.request.summary);
    again.approve(&mut driver).unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert_eq!(
        results_by_call(&run.transcript)["p1"].output.to_text(),
        "Written."
    );
    assert!(workspace.path().join("out.txt").exists());
}

#[tokio::test]
async fn a_resumed_call_whose_child_is_gone_is_answered_as_lost() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let tool = writer(workspace.path(), write_script("Written."), items.clone());
    let (driver, _) = until_approval(tool, &Events::default()).await;
    let saved = serde_json::to_string(&driver.snapshot()).unwrap();

    // Another process: a new sub-agent, with no child waiting.
    let elsewhere = writer(workspace.path(), write_script("Written."), Items::default());
    let agent = parent(
        ScriptedModel::new([ScriptedTurn::text("The writer is gone.")]),
        elsewhere,
        &Events::default(),
    );
    let mut driver = agent
        .resume(
            SessionConfig::new("parent"),
            serde_json::from_str(&saved).unwrap(),
        )
        .await
        .unwrap();
    let run = run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    let result = &results_by_call(&run.transcript)["p1"];
    assert_eq!(error_kind(result), Some("unavailable"));
    assert_eq!(
        result.output.to_text(),
        "tool unavailable: sub-agent writer is no longer waiting for this approval"
    );
    assert!(!workspace.path().join("out.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_that_stops_waiting_interrupts_the_child() {
    let items = Items::default();
    let (waiter, wait, _) = waiter(&items);
    let events = Events::default();
    // The parent's task manager gives every call 200 ms.
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            delegate("p1", "waiter", "Wait."),
            ScriptedTurn::text("Too slow."),
        ]))
        .add_tool_source(ToolRegistry::new().with(waiter))
        .task_manager(
            agentkit_loop::SimpleTaskManager::new().with_timeout(Duration::from_millis(200)),
        )
        .observer(events.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert_eq!(
        error_kind(&results_by_call(&run.transcript)["p1"]),
        Some("timeout")
    );
    // The child ends on its own task after the parent's turn is over: its
    // last events wait for the parent's next step.
    events
        .deliver_until(&mut driver, |agent, _, e| {
            agent == "waiter"
                && matches!(e, AgentEvent::TurnFinished { result } if result.finish_reason == FinishReason::Cancelled)
        })
        .await;
    assert!(wait.cancelled.load(Ordering::SeqCst));
    validate_transcript(&items.get()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_left_waiting_by_an_abandoned_turn_is_ended_at_the_next_call() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let child_model = ScriptedModel::new([
        ScriptedTurn::tool_call(
            "w1",
            "fs_write_file",
            json!({ "path": "out.txt", "content": "x" }),
        ),
        ScriptedTurn::text("Second child answers."),
    ]);
    let tool = writer(workspace.path(), child_model, items.clone());
    let handle = tool.clone();
    let events = Events::default();
    let agent = parent(
        ScriptedModel::new([
            delegate("p1", "writer", "Write."),
            delegate("p2", "writer", "Just answer."),
            ScriptedTurn::text("ok"),
        ]),
        tool,
        &events,
    );
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(_)) = driver.next().await.unwrap()
    else {
        panic!("approval expected")
    };
    // The host gives up on the turn: the paused call is answered as
    // abandoned, and nothing will resume the child.
    driver.abandon_turn("the user left").unwrap();
    assert_eq!(handle.parked(), 1);

    // The next call of the same sub-agent in this session ends it.
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await.unwrap()
    else {
        panic!("idle after the abandoned turn")
    };
    request
        .submit(&mut driver, vec![Item::user("again")])
        .unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert_eq!(
        results_by_call(&run.transcript)["p2"].output.to_text(),
        "Second child answers."
    );
    events
        .deliver_until(&mut driver, |agent, _, e| {
            agent == "writer"
                && matches!(e, AgentEvent::TurnFinished { result } if result.finish_reason == FinishReason::Cancelled)
        })
        .await;
    assert_eq!(handle.parked(), 0);
    assert!(!workspace.path().join("out.txt").exists());
}
