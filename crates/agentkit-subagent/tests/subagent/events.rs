//! A sub-agent's events reach the parent's observers through the parent's
//! core: in order inside the call that runs the child, each once, and a
//! replay of the parent's recorded inputs reproduces them byte for byte.

use super::*;

#[tokio::test]
async fn nested_events_arrive_once_inside_their_call_and_replay() {
    // The concurrent manager runs the call (and so the child's loop) as a
    // task of its own: the events come from another task.
    for concurrent in [false, true] {
        let researcher_model = ScriptedModel::new([ScriptedTurn::text("42")]);
        let researcher = SubAgent::new("researcher", "Finds answers.", move || {
            Agent::builder().model(researcher_model.clone())
        })
        .unwrap();
        let planner = planner(researcher, "r1", "The researcher says 42.");
        let events = Events::default();
        let mut builder = Agent::builder()
            .model(ScriptedModel::new([
                delegate("p1", "planner", "Plan it."),
                ScriptedTurn::text("ok"),
            ]))
            .add_tool_source(ToolRegistry::new().with(planner))
            .observer(events.clone())
            .input(vec![Item::user("Please delegate.")]);
        if concurrent {
            builder = builder.task_manager(agentkit_loop::ConcurrentTaskManager::new(2));
        }
        let mut driver = builder
            .build()
            .unwrap()
            .start(SessionConfig::new("parent"))
            .await
            .unwrap();
        driver.record_inputs();
        events.0.lock().unwrap().clear();
        let run = run_to_finish(&mut driver, Approvals::DenyAll)
            .await
            .unwrap();
        assert_eq!(
            results_by_call(&run.transcript)["p1"].output.to_text(),
            "The researcher says 42."
        );

        let all = events.all();
        let at = |wanted: &dyn Fn(&AgentEvent) -> bool| {
            let found: Vec<usize> = (0..all.len()).filter(|&i| wanted(&all[i])).collect();
            assert_eq!(found.len(), 1, "once: {all:#?}");
            found[0]
        };
        let started = at(
            &|e| matches!(e, AgentEvent::ToolStarted { call_id, .. } if call_id.as_str() == "p1"),
        );
        let answered = at(
            &|e| matches!(e, AgentEvent::ToolResultReceived { result } if result.call_id.as_str() == "p1"),
        );
        let nested: Vec<usize> = (0..all.len())
            .filter(|&i| matches!(all[i], AgentEvent::SubAgent { .. }))
            .collect();
        assert!(nested.len() > 10, "{all:#?}");
        assert!(
            nested.iter().all(|&i| started < i && i < answered),
            "every nested event arrives while its call runs"
        );
        // Each child's loop started and finished once, the planner's
        // around the researcher's.
        let child = |agent: &str, depth: u32, what: &str| {
            at(&|e| match e {
                AgentEvent::SubAgent {
                    agent: a,
                    depth: d,
                    inner,
                    ..
                } => {
                    a == agent
                        && *d == depth
                        && serde_json::to_value(inner).unwrap()["event"] == what
                }
                _ => false,
            })
        };
        let planner_started = child("planner", 1, "run_started");
        let researcher_started = child("researcher", 2, "run_started");
        let researcher_finished = child("researcher", 2, "turn_finished");
        let planner_finished = child("planner", 1, "turn_finished");
        assert!(
            planner_started < researcher_started
                && researcher_started < researcher_finished
                && researcher_finished < planner_finished,
            "{all:#?}"
        );

        let log = driver.take_input_log().unwrap();
        agentkit_testkit::check_replay(&log, &driver.transcript().to_vec(), &all).unwrap();
    }
}
