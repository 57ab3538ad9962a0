//! The folder against streams as providers send them: parts in turn,
//! interleaved, out of order, malformed.

use super::*;
use serde_json::json;

fn id(s: &str) -> PartId {
    PartId::new(s)
}

fn begin(folder: &mut DeltaFolder, part: &str, kind: PartKind) {
    folder
        .apply(&Delta::BeginPart {
            part_id: id(part),
            kind,
        })
        .unwrap();
}

fn commit(folder: &mut DeltaFolder, part: &str) -> Result<(), DeltaError> {
    folder.apply(&Delta::CommitPart { part_id: id(part) })
}

#[test]
fn interleaved_parts_come_out_in_begin_order() {
    let mut folder = DeltaFolder::new();
    begin(&mut folder, "r", PartKind::Reasoning);
    begin(&mut folder, "t", PartKind::Text);
    folder
        .apply(&Delta::AppendText {
            part_id: id("t"),
            chunk: "answer".into(),
        })
        .unwrap();
    folder
        .apply(&Delta::AppendText {
            part_id: id("r"),
            chunk: "thinking".into(),
        })
        .unwrap();
    folder
        .apply(&Delta::ReasoningOpaque {
            part_id: id("r"),
            signature: Some("sig".into()),
            encrypted: None,
        })
        .unwrap();
    commit(&mut folder, "t").unwrap();
    commit(&mut folder, "r").unwrap();
    let parts = folder.finish().unwrap();
    assert_eq!(
        parts,
        vec![
            Part::Reasoning(ReasoningPart {
                summary: Some("thinking".into()),
                signature: Some("sig".into()),
                ..Default::default()
            }),
            Part::text("answer"),
        ]
    );
}

fn text(folder: &mut DeltaFolder, part: &str, chunk: &str) -> Result<(), DeltaError> {
    folder.apply_owned(Delta::AppendText {
        part_id: id(part),
        chunk: chunk.into(),
    })
}

#[test]
fn parts_streamed_in_turns_fold_into_their_own_parts() {
    // The way providers interleave: reasoning and text blocks
    // (Anthropic's content_block index), several output items
    // (Responses' output_index), Chat's tool_calls[i].index: deltas
    // jump between open parts, back to earlier ones, and one part is
    // committed while the others stay open. Every path of the folder
    // (by reference and owned) sees the same stream.
    for owned in [false, true] {
        let mut folder = DeltaFolder::new();
        let apply = |folder: &mut DeltaFolder, delta: Delta| {
            if owned {
                folder.apply_owned(delta)
            } else {
                folder.apply(&delta)
            }
        };
        let append = |part: &str, chunk: &str| Delta::AppendText {
            part_id: id(part),
            chunk: chunk.into(),
        };
        let begin = |part: &str, kind| Delta::BeginPart {
            part_id: id(part),
            kind,
        };
        let commit = |part: &str| Delta::CommitPart { part_id: id(part) };
        for delta in [
            begin("p0", PartKind::Reasoning),
            append("p0", "think "),
            begin("p1", PartKind::Text),
            append("p1", "Hel"),
            append("p0", "more"),
            begin("p2", PartKind::Text),
            append("p2", "two"),
            append("p1", "lo"),
            append("p1", ","),
            commit("p1"),
            append("p0", "."),
            append("p2", "!"),
            commit("p2"),
            commit("p0"),
        ] {
            apply(&mut folder, delta).unwrap();
        }
        // A part committed earlier is still known, and still closed,
        // after other parts' deltas went past it.
        assert_eq!(
            apply(&mut folder, append("p1", "late")),
            Err(DeltaError::AlreadyCommitted(id("p1")))
        );
        assert_eq!(
            apply(&mut folder, append("p9", "x")),
            Err(DeltaError::UnknownPart(id("p9")))
        );
        assert_eq!(
            folder.take_parts(0).unwrap(),
            vec![
                Part::Reasoning(ReasoningPart {
                    summary: Some("think more.".into()),
                    ..Default::default()
                }),
                Part::text("Hello,"),
                Part::text("two!"),
            ],
            "owned: {owned}"
        );
    }
}

#[test]
fn a_reused_folder_does_not_find_the_last_streams_part() {
    // The folder keeps its room across answers; the part the last
    // delta of one answer went to is gone in the next.
    let mut folder = DeltaFolder::new();
    begin(&mut folder, "a", PartKind::Text);
    begin(&mut folder, "b", PartKind::Text);
    text(&mut folder, "b", "one").unwrap();
    commit(&mut folder, "a").unwrap();
    commit(&mut folder, "b").unwrap();
    assert_eq!(folder.take_parts(0).unwrap().len(), 2);
    assert_eq!(
        text(&mut folder, "b", "stale"),
        Err(DeltaError::UnknownPart(id("b")))
    );
    begin(&mut folder, "c", PartKind::Text);
    assert_eq!(
        text(&mut folder, "a", "stale"),
        Err(DeltaError::UnknownPart(id("a")))
    );
    text(&mut folder, "c", "two").unwrap();
    // An open part is reported by id, whichever part was touched last.
    begin(&mut folder, "d", PartKind::Text);
    commit(&mut folder, "c").unwrap();
    assert_eq!(
        folder.take_parts(0),
        Err(DeltaError::Uncommitted(vec![id("d")]))
    );
    commit(&mut folder, "d").unwrap();
    assert_eq!(
        folder.take_parts(0).unwrap(),
        vec![Part::text("two"), Part::text("")]
    );
}

#[test]
fn a_delta_of_the_wrong_kind_names_its_own_part() {
    // The last-touched slot is a text part; the delta is for the
    // structured one begun before it.
    let mut folder = DeltaFolder::new();
    begin(&mut folder, "s", PartKind::Structured);
    begin(&mut folder, "t", PartKind::Text);
    text(&mut folder, "t", "x").unwrap();
    assert_eq!(
        text(&mut folder, "s", "y"),
        Err(DeltaError::WrongKind {
            part_id: id("s"),
            kind: "structured",
            delta: "append_text"
        })
    );
    assert_eq!(
        folder.apply_owned(Delta::CommitPart { part_id: id("s") }),
        Err(DeltaError::MissingValue(id("s")))
    );
    folder
        .apply_owned(Delta::ReplaceStructured {
            part_id: id("s"),
            value: json!([1]),
        })
        .unwrap();
    folder
        .apply_owned(Delta::CommitPart { part_id: id("s") })
        .unwrap();
    commit(&mut folder, "t").unwrap();
    let parts = folder.finish().unwrap();
    assert!(matches!(&parts[0], Part::Structured(s) if s.value == json!([1])));
    assert_eq!(parts[1], Part::text("x"));
}

#[test]
fn a_custom_part_takes_its_value_and_refuses_text() {
    let mut folder = DeltaFolder::new();
    let kind = PartKind::Custom {
        name: "openai.web_search_call".into(),
    };
    // Serialized, the kind keeps its own tag.
    assert_eq!(
        serde_json::to_value(&kind).unwrap(),
        json!({"kind": "custom", "name": "openai.web_search_call"})
    );
    begin(&mut folder, "w", kind);
    let text = folder.apply(&Delta::AppendText {
        part_id: id("w"),
        chunk: "x".into(),
    });
    assert!(matches!(
        text,
        Err(DeltaError::WrongKind { kind: "custom", .. })
    ));
    let value = json!({"type": "web_search_call", "id": "ws_1"});
    folder
        .apply(&Delta::ReplaceStructured {
            part_id: id("w"),
            value: value.clone(),
        })
        .unwrap();
    commit(&mut folder, "w").unwrap();
    let parts = folder.finish().unwrap();
    assert!(
        matches!(&parts[..], [Part::Custom(c)] if c.kind == "openai.web_search_call" && c.value == value),
        "{parts:?}"
    );
}

#[test]
fn many_parts_are_found_before_and_after_the_folder_indexes_them() {
    let mut folder = DeltaFolder::new();
    let names: Vec<String> = (0..SCAN_PARTS * 2 + 2).map(|i| format!("p{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        begin(&mut folder, name, PartKind::Text);
        assert_eq!(folder.index.is_some(), i >= SCAN_PARTS, "part {i}");
        // Earlier parts are still found, whichever way.
        folder
            .apply(&Delta::AppendText {
                part_id: id(&names[i / 2]),
                chunk: i.to_string().into(),
            })
            .unwrap();
    }
    assert!(matches!(
        folder.apply(&Delta::BeginPart {
            part_id: id("p3"),
            kind: PartKind::Text,
        }),
        Err(DeltaError::DuplicatePart(_))
    ));
    assert!(matches!(
        commit(&mut folder, "nope"),
        Err(DeltaError::UnknownPart(_))
    ));
    for name in &names {
        commit(&mut folder, name).unwrap();
    }
    let parts = folder.finish().unwrap();
    assert_eq!(parts.len(), names.len());
    assert_eq!(parts[0], Part::text("01"));
    assert_eq!(
        parts[SCAN_PARTS],
        Part::text(format!("{}{}", SCAN_PARTS * 2, SCAN_PARTS * 2 + 1))
    );
}

#[test]
fn bytes_structured_and_metadata() {
    let mut folder = DeltaFolder::new();
    begin(
        &mut folder,
        "m",
        PartKind::Media {
            modality: Modality::Image,
            mime_type: "image/png".into(),
        },
    );
    folder
        .apply(&Delta::AppendBytes {
            part_id: id("m"),
            chunk: vec![1, 2],
        })
        .unwrap();
    folder
        .apply(&Delta::AppendBytes {
            part_id: id("m"),
            chunk: vec![3],
        })
        .unwrap();
    let mut meta = MetadataMap::new();
    meta.insert("k".into(), json!(1));
    folder
        .apply(&Delta::SetMetadata {
            part_id: id("m"),
            metadata: meta,
        })
        .unwrap();
    commit(&mut folder, "m").unwrap();
    begin(&mut folder, "s", PartKind::Structured);
    folder
        .apply(&Delta::ReplaceStructured {
            part_id: id("s"),
            value: json!({"a": 1}),
        })
        .unwrap();
    folder
        .apply(&Delta::ReplaceStructured {
            part_id: id("s"),
            value: json!({"a": 2}),
        })
        .unwrap();
    commit(&mut folder, "s").unwrap();
    let parts = folder.finish().unwrap();
    match &parts[0] {
        Part::Media(media) => {
            assert_eq!(media.data, DataRef::bytes(vec![1, 2, 3]));
            assert_eq!(media.metadata["k"], json!(1));
        }
        other => panic!("expected media, got {other:?}"),
    }
    assert_eq!(
        parts[1],
        Part::Structured(StructuredPart {
            value: json!({"a": 2}),
            schema: None,
            metadata: MetadataMap::new()
        })
    );
}

#[test]
fn delta_for_unknown_part_is_an_error() {
    let mut folder = DeltaFolder::new();
    let err = folder
        .apply(&Delta::AppendText {
            part_id: id("x"),
            chunk: "a".into(),
        })
        .unwrap_err();
    assert_eq!(err, DeltaError::UnknownPart(id("x")));
}

#[test]
fn begin_twice_is_an_error() {
    let mut folder = DeltaFolder::new();
    begin(&mut folder, "a", PartKind::Text);
    let err = folder
        .apply(&Delta::BeginPart {
            part_id: id("a"),
            kind: PartKind::Text,
        })
        .unwrap_err();
    assert_eq!(err, DeltaError::DuplicatePart(id("a")));
}

#[test]
fn delta_after_commit_is_an_error() {
    let mut folder = DeltaFolder::new();
    begin(&mut folder, "a", PartKind::Text);
    commit(&mut folder, "a").unwrap();
    let err = folder
        .apply(&Delta::AppendText {
            part_id: id("a"),
            chunk: "late".into(),
        })
        .unwrap_err();
    assert_eq!(err, DeltaError::AlreadyCommitted(id("a")));
    assert_eq!(
        commit(&mut folder, "a").unwrap_err(),
        DeltaError::AlreadyCommitted(id("a"))
    );
}

#[test]
fn wrong_kind_is_an_error() {
    let mut folder = DeltaFolder::new();
    begin(&mut folder, "a", PartKind::Text);
    let err = folder
        .apply(&Delta::AppendBytes {
            part_id: id("a"),
            chunk: vec![0],
        })
        .unwrap_err();
    assert_eq!(
        err,
        DeltaError::WrongKind {
            part_id: id("a"),
            kind: "text",
            delta: "append_bytes"
        }
    );
    let err = folder
        .apply(&Delta::ReplaceStructured {
            part_id: id("a"),
            value: json!(1),
        })
        .unwrap_err();
    assert!(matches!(
        err,
        DeltaError::WrongKind {
            delta: "replace_structured",
            ..
        }
    ));
    let err = folder
        .apply(&Delta::ReasoningOpaque {
            part_id: id("a"),
            signature: None,
            encrypted: None,
        })
        .unwrap_err();
    assert!(matches!(
        err,
        DeltaError::WrongKind {
            delta: "reasoning_opaque",
            ..
        }
    ));
}

#[test]
fn structured_without_value_cannot_commit() {
    let mut folder = DeltaFolder::new();
    begin(&mut folder, "s", PartKind::Structured);
    assert_eq!(
        commit(&mut folder, "s").unwrap_err(),
        DeltaError::MissingValue(id("s"))
    );
}

#[test]
fn finish_with_open_parts_is_an_error_but_partial_keeps_them() {
    let mut folder = DeltaFolder::new();
    begin(&mut folder, "a", PartKind::Text);
    folder
        .apply(&Delta::AppendText {
            part_id: id("a"),
            chunk: "half".into(),
        })
        .unwrap();
    begin(&mut folder, "s", PartKind::Structured);
    assert_eq!(folder.open_parts(), vec![id("a"), id("s")]);
    let err = std::mem::take(&mut folder).finish().unwrap_err();
    assert_eq!(err, DeltaError::Uncommitted(vec![id("a"), id("s")]));

    let mut folder = DeltaFolder::new();
    begin(&mut folder, "a", PartKind::Text);
    folder
        .apply(&Delta::AppendText {
            part_id: id("a"),
            chunk: "half".into(),
        })
        .unwrap();
    begin(&mut folder, "s", PartKind::Structured);
    let parts = folder.finish_partial();
    assert_eq!(parts.len(), 1, "the valueless structured part is dropped");
    match &parts[0] {
        Part::Text(text) => {
            assert_eq!(text.text, "half");
            assert_eq!(text.metadata["agentkit.incomplete"], json!(true));
        }
        other => panic!("expected text, got {other:?}"),
    }
}

#[cfg(target_pointer_width = "64")]
#[test]
fn a_slot_moves_without_a_memcpy_call() {
    // At 128 bytes and more the compiler moves a value with a `memcpy`
    // call; every part is moved into the folder and out of it.
    assert!(
        std::mem::size_of::<Slot>() < 128,
        "{}",
        std::mem::size_of::<Slot>()
    );
}

#[test]
fn opaque_reasoning_values_keep_the_last_of_each() {
    let mut folder = DeltaFolder::new();
    begin(&mut folder, "r", PartKind::Reasoning);
    for (signature, encrypted) in [(Some("s1"), None), (None, Some("e1")), (Some("s2"), None)] {
        folder
            .apply_owned(Delta::ReasoningOpaque {
                part_id: id("r"),
                signature: signature.map(Into::into),
                encrypted: encrypted.map(Into::into),
            })
            .unwrap();
    }
    commit(&mut folder, "r").unwrap();
    begin(&mut folder, "bare", PartKind::Reasoning);
    commit(&mut folder, "bare").unwrap();
    assert_eq!(
        folder.finish().unwrap(),
        vec![
            Part::Reasoning(ReasoningPart {
                signature: Some("s2".into()),
                encrypted: Some("e1".into()),
                ..Default::default()
            }),
            Part::Reasoning(ReasoningPart::default()),
        ]
    );
}

#[test]
fn a_file_takes_text_and_bytes_and_media_takes_bytes_only() {
    let mut folder = DeltaFolder::new();
    let file = PartKind::File {
        name: Some("notes.txt".into()),
        mime_type: Some("text/plain".into()),
    };
    begin(&mut folder, "f", file);
    text(&mut folder, "f", "ab").unwrap();
    folder
        .apply_owned(Delta::AppendBytes {
            part_id: id("f"),
            chunk: b"c".to_vec(),
        })
        .unwrap();
    let media = PartKind::Media {
        modality: Modality::Audio,
        mime_type: "audio/wav".into(),
    };
    begin(&mut folder, "m", media);
    assert_eq!(
        text(&mut folder, "m", "x"),
        Err(DeltaError::WrongKind {
            part_id: id("m"),
            kind: "media",
            delta: "append_text"
        })
    );
    commit(&mut folder, "f").unwrap();
    commit(&mut folder, "m").unwrap();
    let parts = folder.finish().unwrap();
    assert!(
        matches!(&parts[0], Part::File(f) if f.name.as_deref() == Some("notes.txt")
            && f.mime_type.as_deref() == Some("text/plain")
            && f.data == DataRef::bytes(b"abc".to_vec())),
        "{parts:?}"
    );
    assert!(
        matches!(&parts[1], Part::Media(m) if m.modality == Modality::Audio && m.mime_type == "audio/wav"),
        "{parts:?}"
    );
}
