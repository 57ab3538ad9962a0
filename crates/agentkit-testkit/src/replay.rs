//! The replay check every recorded test session owes: the input log,
//! replayed into a fresh core with no model, tools or clock, gives what the
//! live session gave.

use agentkit_core::Item;
use agentkit_loop::AgentEvent;
use agentkit_loop::replay::InputLog;

/// Replays `log` (after a round trip through JSON lines, as a store keeps
/// it) and compares it with the live session: its `transcript` and every
/// event its observers saw since the recording began, byte for byte as
/// JSON. The error names the first difference.
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, AgentEvent, LoopObserver, SessionConfig};
/// use agentkit_testkit::{Approvals, ScriptedModel, ScriptedTurn, check_replay, run_to_finish};
/// use std::sync::{Arc, Mutex};
///
/// #[derive(Clone, Default)]
/// struct Seen(Arc<Mutex<Vec<AgentEvent>>>);
/// impl LoopObserver for Seen {
///     fn handle_event(&self, event: AgentEvent) {
///         self.0.lock().unwrap().push(event);
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let seen = Seen::default();
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([ScriptedTurn::text("hello!")]))
///     .observer(seen.clone())
///     .input(vec![Item::user("hi")])
///     .build()?;
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
/// driver.record_inputs();
/// seen.0.lock().unwrap().clear(); // events before the recording are not in it
/// run_to_finish(&mut driver, Approvals::ApproveAll).await.unwrap();
/// let log = driver.take_input_log().expect("recording");
/// check_replay(&log, &driver.transcript().to_vec(), &seen.0.lock().unwrap()).unwrap();
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
pub fn check_replay(
    log: &InputLog,
    transcript: &[Item],
    events: &[AgentEvent],
) -> Result<(), String> {
    let log = InputLog::from_json_lines(&log.to_json_lines()).map_err(|e| e.to_string())?;
    let replay = log.replay().map_err(|e| e.to_string())?;
    let live = serde_json::to_string(transcript).map_err(|e| e.to_string())?;
    let replayed = serde_json::to_string(&replay.transcript).map_err(|e| e.to_string())?;
    if live != replayed {
        return Err(format!(
            "replay gave another transcript:\nlive   {live}\nreplay {replayed}"
        ));
    }
    let lines = |events: &[AgentEvent]| -> Vec<String> {
        events
            .iter()
            .map(|e| serde_json::to_string(e).unwrap_or_default())
            .collect()
    };
    let (live, replayed) = (lines(events), lines(&replay.events));
    match (0..live.len().max(replayed.len())).find(|&i| live.get(i) != replayed.get(i)) {
        Some(at) => Err(format!(
            "replay diverges at event {at}:\nlive   {:?}\nreplay {:?}",
            live.get(at),
            replayed.get(at)
        )),
        None => Ok(()),
    }
}
