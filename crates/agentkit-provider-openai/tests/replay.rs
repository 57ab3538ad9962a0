//! Streams recorded from the real APIs, published by other projects as
//! test fixtures (tests/cassettes/recorded/*.json name each source and its
//! licence), replayed through the adapters' decoders whole and cut into
//! 1-, 7- and 4096-byte pieces: one test per recording and piece size, each
//! asserting what the recording must decode to.

use agentkit_core::{DeltaFolder, FinishReason, Part, ToolCallPart};
use agentkit_http::SseStream;
use agentkit_loop::{ModelError, ModelTurn, ModelTurnEvent, ModelTurnResult};
use agentkit_provider_openai::ResponsesTurn;
use agentkit_testkit::cassette::Cassette;

/// What a replayed answer decoded to.
#[derive(Debug)]
struct Decoded {
    parts: Vec<Part>,
    calls: Vec<ToolCallPart>,
    usage: Option<agentkit_core::Usage>,
    finished: Option<ModelTurnResult>,
    error: Option<ModelError>,
}

/// Which decoder a recording goes through.
#[derive(Clone, Copy)]
enum Api {
    Responses,
}

/// The recorded body of `name`.
fn recorded(name: &str) -> String {
    let path = format!(
        "{}/tests/cassettes/recorded/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let cassette = Cassette::load(&path).expect("the cassette loads");
    cassette.interactions[0].response.body.clone()
}

async fn replay(api: Api, name: &str, piece: usize) -> Decoded {
    let events = SseStream::from_pieces(recorded(name), piece);
    let mut turn: Box<dyn ModelTurn> = match api {
        Api::Responses => Box::new(ResponsesTurn::from_events(events)),
    };
    let mut folder = DeltaFolder::new();
    let mut decoded = Decoded {
        parts: Vec::new(),
        calls: Vec::new(),
        usage: None,
        finished: None,
        error: None,
    };
    loop {
        match turn.next_event().await {
            Ok(Some(ModelTurnEvent::Delta(delta))) => folder.apply(&delta).expect("fits"),
            Ok(Some(ModelTurnEvent::ToolCall(call))) => decoded.calls.push(call),
            Ok(Some(ModelTurnEvent::Usage(usage))) => decoded.usage = Some(usage),
            Ok(Some(ModelTurnEvent::Finished(result))) => decoded.finished = Some(result),
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(error) => {
                decoded.error = Some(error);
                break;
            }
        }
    }
    decoded.parts = folder.finish_partial();
    decoded
}

fn custom<'a>(parts: &'a [Part], kind: &str) -> Vec<&'a agentkit_core::CustomPart> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Custom(c) if c.kind == kind => Some(c),
            _ => None,
        })
        .collect()
}

// A hosted MCP tool that needs approval: the answer is the approval request
// (and the server's tool list), not an empty success.
agentkit_testkit::replayed!(
    openai_responses_mcp_approval,
    |name, piece| replay(Api::Responses, name, piece),
    |d: Decoded| {
        assert!(d.error.is_none(), "{:?}", d.error);
        let finished = d.finished.expect("finished");
        assert_eq!(
            finished.finish_reason,
            FinishReason::Other("mcp_approval_request".into())
        );
        let requests = custom(&d.parts, "openai.mcp_approval_request");
        assert_eq!(requests.len(), 1, "{:?}", d.parts);
        assert_eq!(
            requests[0].value["id"],
            "mcpr_04a97b4fce127879006949a83ac9308195a7f7b69ea82e91fe"
        );
        assert_eq!(requests[0].value["name"], "create_short_url");
        assert_eq!(requests[0].value["server_label"], "zip1");
        let lists = custom(&d.parts, "openai.mcp_list_tools");
        assert_eq!(lists[0].value["tools"].as_array().map(Vec::len), Some(4));
        assert!(d.calls.is_empty());
        assert_eq!(d.usage.expect("usage").tokens.input_tokens, 422);
    }
);

// An account out of quota, told mid-stream: not retryable, whatever the
// piece size.
agentkit_testkit::replayed!(
    openai_responses_insufficient_quota,
    |name, piece| replay(Api::Responses, name, piece),
    |d: Decoded| {
        let error = d.error.expect("an error");
        assert!(!error.is_retryable(), "{error:?}");
        assert_eq!(error.kind, agentkit_loop::ModelErrorKind::QuotaExceeded);
        assert!(error.message.contains("exceeded your current quota"));
        assert!(d.finished.is_none());
    }
);
