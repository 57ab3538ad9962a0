//! Streams recorded from the real Messages API, published by other
//! projects as test fixtures (tests/cassettes/recorded/*.json name each
//! source and its licence), replayed through the decoder whole and cut
//! into 1-, 7- and 4096-byte pieces: one test per recording and piece size.

use agentkit_core::{DeltaFolder, FinishReason, Part};
use agentkit_http::SseStream;
use agentkit_loop::{ModelTurn, ModelTurnEvent};
use agentkit_provider_anthropic::AnthropicTurn;
use agentkit_testkit::cassette::Cassette;

/// The parts, tool calls and finish reason a recording decodes to.
async fn replay(name: &str, piece: usize) -> (Vec<Part>, Vec<(String, String)>, FinishReason) {
    let path = format!(
        "{}/tests/cassettes/recorded/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let cassette = Cassette::load(&path).expect("the cassette loads");
    let body = cassette.interactions[0].response.body.clone();
    let events = SseStream::from_pieces(body, piece);
    let mut turn = AnthropicTurn::from_events(events);
    let (mut folder, mut calls, mut reason) = (DeltaFolder::new(), Vec::new(), None);
    while let Some(event) = turn.next_event().await.expect("decodes") {
        match event {
            ModelTurnEvent::Delta(delta) => folder.apply(&delta).expect("fits"),
            ModelTurnEvent::ToolCall(call) => {
                calls.push((call.id.to_string(), format!("{}{}", call.name, call.input)));
            }
            ModelTurnEvent::Finished(result) => reason = Some(result.finish_reason),
            _ => {}
        }
    }
    (
        folder.finish().expect("committed"),
        calls,
        reason.expect("finished"),
    )
}

// Text, pings, then a tool call whose only argument delta is empty: the
// input is `{}`, not a parse error.
agentkit_testkit::replayed!(
    anthropic_tool_no_args,
    replay,
    |(parts, calls, reason): (Vec<Part>, Vec<(String, String)>, FinishReason)| {
        assert_eq!(
            parts,
            vec![Part::text("I'll update the issue list for you.")]
        );
        assert_eq!(
            calls,
            vec![(
                "toolu_01QE1WLsSVp5hy5Q3GmGTmjP".to_owned(),
                "updateIssueList{}".to_owned()
            )]
        );
        assert_eq!(reason, FinishReason::ToolCall);
    }
);
