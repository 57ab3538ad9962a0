//! What a child gives back: its answer, structured output, usage, tagged events, typed failures.

use super::*;

#[tokio::test]
async fn the_childs_final_answer_reaches_the_parent() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("notes.txt"),
        "the launch is on Tuesday\n",
    )
    .unwrap();
    let child_model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "fs_read_file", json!({ "path": "notes.txt" })),
        ScriptedTurn::text("The notes say the launch is on Tuesday."),
    ]);
    let root = workspace.path().to_owned();
    let model = child_model.clone();
    let reader = SubAgent::new("reader", "Reads the notes.", move || {
        Agent::builder()
            .model(model.clone())
            .add_tool_source(fs_tools(FsToolsConfig::new(&root)))
    })
    .unwrap()
    .with_instructions("Read files and report.");
    let events = Events::default();
    let agent = parent(
        ScriptedModel::new([
            ScriptedTurn::tool_call(
                "p1",
                "reader",
                json!({ "task": "When is the launch?", "context": "See notes.txt." }),
            ),
            ScriptedTurn::text("Tuesday."),
        ]),
        reader,
        &events,
    );
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert_eq!(run.result.finish_reason, FinishReason::Completed);
    assert!(run.approvals.is_empty(), "reads need no approval");
    let results = results_by_call(&run.transcript);
    assert_eq!(
        results["p1"].output.to_text(),
        "The notes say the launch is on Tuesday."
    );
    assert_eq!(results["p1"].metadata[SUB_AGENT_KEY], "reader");

    // The child saw its instructions, the context and the task, and the
    // file's real content came back from the real tool.
    let requests = child_model.requests();
    let first = requests[0].transcript.to_vec();
    assert_eq!(first[0].kind, ItemKind::System);
    assert_eq!(first[0].text_content(), "Read files and report.");
    assert_eq!(first[1].kind, ItemKind::Context);
    assert_eq!(first[1].text_content(), "See notes.txt.");
    assert_eq!(first[2].text_content(), "When is the launch?");
    assert_eq!(requests[0].session_id.as_str(), "parent/reader/p1");
    let second = requests[1].transcript.to_vec();
    let read = second.iter().flat_map(|i| i.tool_results()).next().unwrap();
    assert!(read.output.to_text().contains("the launch is on Tuesday"));
}

#[tokio::test]
async fn a_child_with_an_output_schema_answers_structured() {
    let schema = OutputSchema::new(
        "forecast",
        json!({
            "type": "object",
            "properties": { "city": { "type": "string" }, "celsius": { "type": "number" } },
            "required": ["city", "celsius"]
        }),
    );
    let child_model =
        ScriptedModel::new([ScriptedTurn::text(r#"{"city": "Oslo", "celsius": -3.5}"#)]);
    let model = child_model.clone();
    let forecaster = SubAgent::new("forecaster", "Forecasts.", move || {
        Agent::builder().model(model.clone())
    })
    .unwrap()
    .with_output_schema(schema);
    let (run, _) = delegate_once(forecaster, Approvals::DenyAll).await;
    let result = &results_by_call(&run.transcript)["p1"];
    assert!(!result.is_error);
    assert_eq!(
        result.output,
        agentkit_core::ToolOutput::Structured(json!({ "city": "Oslo", "celsius": -3.5 }))
    );
    // The child's model was asked for that schema.
    let asked = child_model.requests()[0].output_schema.clone().unwrap();
    assert_eq!(&*asked.name, "forecast");

    // An answer that is not JSON is a typed failure, not a crash.
    let bad = ScriptedModel::new([ScriptedTurn::text("sunny, I think")]);
    let tool = SubAgent::new("forecaster", "Forecasts.", move || {
        Agent::builder().model(bad.clone())
    })
    .unwrap()
    .with_output_schema(OutputSchema::new("forecast", json!({ "type": "object" })));
    let err = tool
        .invoke(
            ToolRequest::new("x", "forecaster", json!({ "task": "?" })),
            ToolContext::detached(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::ExecutionFailed(_)));
    assert!(err.to_string().contains("invalid JSON"), "{err}");
}

#[tokio::test]
async fn usage_and_cost_of_the_child_roll_up_into_the_parents_turn() {
    let mut costly = usage(100, 20);
    costly.cost = Some(agentkit_core::CostUsage {
        amount: 0.25,
        currency: "USD".into(),
    });
    let child_model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("c1", "missing_tool", json!({}))
            .usage(costly.clone())
            .finish(FinishReason::ToolCall),
        ScriptedTurn::new()
            .say("done")
            .usage(costly)
            .finish(FinishReason::Completed),
    ]);
    let worker = SubAgent::new("worker", "Works.", move || {
        Agent::builder().model(child_model.clone())
    })
    .unwrap();
    let mut parent_cost = usage(10, 5);
    parent_cost.cost = Some(agentkit_core::CostUsage {
        amount: 0.01,
        currency: "USD".into(),
    });
    let events = Events::default();
    let agent = parent(
        ScriptedModel::new([
            ScriptedTurn::new()
                .call("p1", "worker", json!({ "task": "work" }))
                .usage(parent_cost.clone())
                .finish(FinishReason::ToolCall),
            ScriptedTurn::new()
                .say("ok")
                .usage(parent_cost)
                .finish(FinishReason::Completed),
        ]),
        worker,
        &events,
    );
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    let total = &run.result.usage;
    assert_eq!(total.tokens.input_tokens, 2 * 10 + 2 * 100);
    assert_eq!(total.tokens.output_tokens, 2 * 5 + 2 * 20);
    let cost = total.cost.as_ref().unwrap();
    assert_eq!(cost.currency, "USD");
    assert!((cost.amount - 0.52).abs() < 1e-9, "{}", cost.amount);
}

#[tokio::test]
async fn events_are_tagged_with_name_and_depth_two_levels_down() {
    let researcher_model = ScriptedModel::new([ScriptedTurn::text("42")]);
    let researcher = SubAgent::new("researcher", "Finds answers.", move || {
        Agent::builder().model(researcher_model.clone())
    })
    .unwrap();
    let planner = planner(researcher, "r1", "The researcher says 42.");
    let (run, events) = delegate_once(planner, Approvals::DenyAll).await;
    assert_eq!(
        results_by_call(&run.transcript)["p1"].output.to_text(),
        "The researcher says 42."
    );

    let tagged = events.tagged();
    // Flattened: nothing nests a SubAgent event inside another.
    assert!(
        tagged
            .iter()
            .all(|(_, _, inner)| !matches!(inner, AgentEvent::SubAgent { .. }))
    );
    let planner_started = tagged.iter().any(|(agent, depth, inner)| {
        agent == "planner"
            && *depth == 1
            && matches!(inner, AgentEvent::ToolStarted { tool_name, .. } if tool_name == "researcher")
    });
    assert!(planner_started, "{tagged:#?}");
    let researcher_finished = tagged.iter().find_map(|(agent, depth, inner)| match inner {
        AgentEvent::TurnFinished { result } if agent == "researcher" => Some((*depth, result)),
        _ => None,
    });
    let (depth, result) = researcher_finished.expect("the grandchild's turn was forwarded");
    assert_eq!(depth, 2);
    assert_eq!(result.items[0].text_content(), "42");
    // The grandchild's events carry the call that started it in the planner.
    let call_ids: Vec<_> = events
        .all()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::SubAgent { agent, call_id, .. } if agent == "researcher" => {
                Some(call_id.to_string())
            }
            _ => None,
        })
        .collect();
    assert!(!call_ids.is_empty() && call_ids.iter().all(|id| id == "r1"));
    // Tagged events serialize (JSON Lines logs) and read back unchanged.
    for event in events.all() {
        let json = serde_json::to_value(&event).unwrap();
        let back: AgentEvent = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
    }
    let json = serde_json::to_value(
        events
            .all()
            .iter()
            .find(|e| matches!(e, AgentEvent::SubAgent { depth: 2, .. }))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(json["event"], "sub_agent");
    assert_eq!(json["agent"], "researcher");
    assert_eq!(json["depth"], 2);
    // The parent's own events are untagged.
    assert!(
        events.all().iter().any(
            |e| matches!(e, AgentEvent::ToolStarted { tool_name, .. } if tool_name == "planner")
        )
    );
}

#[tokio::test]
async fn a_child_at_its_step_limit_is_a_typed_error_for_the_parent() {
    let items = Items::default();
    let child_items = items.clone();
    let child_model = ScriptedModel::new([
        ScriptedTurn::new()
            .say("Looking")
            .call("c1", "nothing", json!({}))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::new()
            .say("Still looking")
            .call("c2", "nothing", json!({}))
            .usage(usage(7, 3))
            .finish(FinishReason::ToolCall),
    ]);
    let looper = SubAgent::new("looper", "Loops.", move || {
        Agent::builder()
            .model(child_model.clone())
            .max_model_calls(2)
            .transcript_observer(child_items.clone())
    })
    .unwrap();
    let (run, _) = delegate_once(looper, Approvals::DenyAll).await;
    let result = &results_by_call(&run.transcript)["p1"];
    assert!(result.is_error);
    assert_eq!(error_kind(result), Some("execution_failed"));
    assert_eq!(
        result.output.to_text(),
        "sub-agent looper reached its step limit (2 model calls) before answering; its last words: Still looking"
    );
    // Its usage still counts, and its transcript is valid.
    assert_eq!(run.result.usage.tokens.input_tokens, 7);
    let child = items.get();
    validate_transcript(&child).unwrap();
    assert_eq!(results_by_call(&child).len(), 2);
}

#[tokio::test]
async fn a_failing_child_is_abandoned_and_reported() {
    let items = Items::default();
    let child_model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "nothing", json!({})),
        ScriptedTurn::failing(agentkit_loop::ModelError::new(
            agentkit_loop::ModelErrorKind::Authentication,
            "bad key",
        )),
    ]);
    let broken = observed("broken", child_model, &items);
    let (run, events) = delegate_once(broken, Approvals::DenyAll).await;
    let result = &results_by_call(&run.transcript)["p1"];
    assert_eq!(error_kind(result), Some("execution_failed"));
    let text = result.output.to_text();
    assert!(text.starts_with("sub-agent broken failed: "), "{text}");
    assert!(text.contains("bad key"), "{text}");
    validate_transcript(&items.get()).unwrap();
    let finished = events.tagged().into_iter().find_map(|(_, _, e)| match e {
        AgentEvent::TurnFinished { result } => Some(result.finish_reason),
        _ => None,
    });
    assert_eq!(finished, Some(FinishReason::Error));
}
