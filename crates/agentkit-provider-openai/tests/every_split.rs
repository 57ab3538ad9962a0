//! The text fixture cut in two at every byte offset (inside multi-byte
//! characters, between CR and LF, inside JSON) decodes to the same answer.
//! In memory, through the same decoder the HTTP path uses, so all offsets
//! run in well under a second.

use agentkit_core::{DeltaFolder, Part};
use agentkit_http::SseStream;
use agentkit_loop::{ModelTurn, ModelTurnEvent};
use agentkit_provider_openai::OpenAiTurn;
use bytes::Bytes;

async fn decode(body: &Bytes, cut: usize) -> Vec<Part> {
    let pieces = vec![Ok(body.slice(..cut)), Ok(body.slice(cut..))];
    let mut turn =
        OpenAiTurn::from_events(SseStream::from_byte_stream(futures::stream::iter(pieces)));
    let mut folder = DeltaFolder::new();
    let mut finished = false;
    while let Some(event) = turn.next_event().await.expect("decodes") {
        match event {
            ModelTurnEvent::Delta(delta) => folder.apply(&delta).expect("fits"),
            ModelTurnEvent::Finished(_) => finished = true,
            _ => {}
        }
    }
    assert!(finished, "cut at {cut}: finished");
    folder.finish().expect("committed")
}

#[tokio::test]
async fn every_cut_of_the_text_fixture_decodes_the_same() {
    let path = format!("{}/tests/fixtures/text.sse", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    for body in [text.clone(), text.replace('\n', "\r\n")] {
        let body = Bytes::from(body);
        let expected = vec![Part::text("Bonjour le monde 🌍, ça va ?")];
        for cut in 1..body.len() {
            assert_eq!(decode(&body, cut).await, expected, "cut at {cut}");
        }
    }
}
