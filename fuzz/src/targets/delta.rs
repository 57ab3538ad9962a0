//! `delta`: folding `Delta` sequences into parts.
//!
//! Adapters of buggy servers can produce deltas in any order: appends
//! before the part begins, a part begun twice, appends after its commit,
//! commits missing. The folder must answer each with the right
//! `DeltaError` and leave its state untouched by a refused delta. The
//! property compares it step by step with a small model written from the
//! documented rules, then compares `finish` and `finish_partial`.

use crate::{Outcome, Target};
use agentkit_core::{
    DataRef, Delta, DeltaError, DeltaFolder, MetadataMap, Modality, Part, PartId, PartKind,
};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde_json::{Value, json};

/// The target.
pub const TARGET: Target = Target {
    name: "delta",
    about: "DeltaFolder against a model: any order, repeats, missing commits",
    check,
    generate,
};

fn generate() -> BoxedStrategy<Vec<u8>> {
    // Three bytes per delta: what, which part, an argument. Begins and
    // commits are likelier, so most sequences build something.
    let op = (0u8..12, 0u8..4, any::<u8>());
    proptest::collection::vec(op, 0..40)
        .prop_map(|ops| ops.into_iter().flat_map(|(a, b, c)| [a, b, c]).collect())
        .boxed()
}

fn kind_of(arg: u8) -> PartKind {
    match arg % 5 {
        0 => PartKind::Text,
        1 => PartKind::Reasoning,
        2 => PartKind::Structured,
        3 => PartKind::Media {
            modality: Modality::Image,
            mime_type: "image/png".into(),
        },
        _ => PartKind::File {
            name: Some("f".into()),
            mime_type: None,
        },
    }
}

fn delta(op: u8, part: u8, arg: u8) -> Delta {
    let part_id = PartId::new(format!("p{}", part % 4));
    match op % 12 {
        0..=2 => Delta::BeginPart {
            part_id,
            kind: kind_of(arg),
        },
        3 => Delta::AppendText {
            part_id,
            chunk: format!("t{arg}").into(),
        },
        4 => Delta::AppendBytes {
            part_id,
            chunk: vec![arg],
        },
        5 => Delta::ReplaceStructured {
            part_id,
            value: json!(arg),
        },
        6 => Delta::ReasoningOpaque {
            part_id,
            signature: arg.is_multiple_of(2).then(|| format!("s{arg}")),
            encrypted: arg.is_multiple_of(3).then(|| format!("e{arg}")),
        },
        7 => Delta::SetMetadata {
            part_id,
            metadata: MetadataMap::from([(format!("k{}", arg % 3), json!(arg))]),
        },
        _ => Delta::CommitPart { part_id },
    }
}

/// One part as the model sees it.
#[derive(Clone, Debug)]
struct Slot {
    id: PartId,
    kind: PartKind,
    text: String,
    bytes: Vec<u8>,
    value: Option<Value>,
    signature: Option<String>,
    encrypted: Option<String>,
    metadata: MetadataMap,
    committed: bool,
}

/// The error the model expects, by name.
fn apply(slots: &mut Vec<Slot>, delta: &Delta) -> Result<(), &'static str> {
    if let Delta::BeginPart { part_id, kind } = delta {
        if slots.iter().any(|s| &s.id == part_id) {
            return Err("duplicate");
        }
        slots.push(Slot {
            id: part_id.clone(),
            kind: kind.clone(),
            text: String::new(),
            bytes: Vec::new(),
            value: None,
            signature: None,
            encrypted: None,
            metadata: MetadataMap::new(),
            committed: false,
        });
        return Ok(());
    }
    let slot = slots
        .iter_mut()
        .find(|s| s.id == *delta.part_id())
        .ok_or("unknown")?;
    if slot.committed {
        return Err("committed");
    }
    match (delta, &slot.kind) {
        (Delta::AppendText { chunk, .. }, PartKind::Text | PartKind::Reasoning) => {
            slot.text.push_str(chunk)
        }
        (Delta::AppendText { chunk, .. }, PartKind::File { .. }) => {
            slot.bytes.extend_from_slice(chunk.as_bytes())
        }
        (Delta::AppendBytes { chunk, .. }, PartKind::Media { .. } | PartKind::File { .. }) => {
            slot.bytes.extend_from_slice(chunk)
        }
        (Delta::ReplaceStructured { value, .. }, PartKind::Structured) => {
            slot.value = Some(value.clone())
        }
        (
            Delta::ReasoningOpaque {
                signature,
                encrypted,
                ..
            },
            PartKind::Reasoning,
        ) => {
            if signature.is_some() {
                slot.signature.clone_from(signature);
            }
            if encrypted.is_some() {
                slot.encrypted.clone_from(encrypted);
            }
        }
        (Delta::SetMetadata { metadata, .. }, _) => {
            slot.metadata
                .extend(metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        (Delta::CommitPart { .. }, PartKind::Structured) if slot.value.is_none() => {
            return Err("missing value");
        }
        (Delta::CommitPart { .. }, _) => slot.committed = true,
        _ => return Err("wrong kind"),
    }
    Ok(())
}

fn error_name(err: &DeltaError) -> &'static str {
    match err {
        DeltaError::DuplicatePart(_) => "duplicate",
        DeltaError::UnknownPart(_) => "unknown",
        DeltaError::AlreadyCommitted(_) => "committed",
        DeltaError::WrongKind { .. } => "wrong kind",
        DeltaError::MissingValue(_) => "missing value",
        DeltaError::Uncommitted(_) => "uncommitted",
        _ => "other",
    }
}

/// `true` when `part` holds what the model built in `slot`.
fn same(part: &Part, slot: &Slot) -> bool {
    let bytes = DataRef::bytes(slot.bytes.clone());
    match (part, &slot.kind) {
        (Part::Text(p), PartKind::Text) => p.text == slot.text && p.metadata == slot.metadata,
        (Part::Reasoning(p), PartKind::Reasoning) => {
            p.summary == (!slot.text.is_empty()).then(|| slot.text.clone())
                && p.signature == slot.signature
                && p.encrypted == slot.encrypted
                && p.metadata == slot.metadata
        }
        (Part::Structured(p), PartKind::Structured) => {
            Some(&p.value) == slot.value.as_ref() && p.metadata == slot.metadata
        }
        (Part::Media(p), PartKind::Media { .. }) => p.data == bytes,
        (Part::File(p), PartKind::File { .. }) => p.data == bytes,
        _ => false,
    }
}

fn metadata(part: &Part) -> Option<&MetadataMap> {
    match part {
        Part::Text(p) => Some(&p.metadata),
        Part::Reasoning(p) => Some(&p.metadata),
        Part::Structured(p) => Some(&p.metadata),
        Part::Media(p) => Some(&p.metadata),
        Part::File(p) => Some(&p.metadata),
        _ => None,
    }
}

fn check(input: &[u8]) -> Outcome {
    let mut folder = DeltaFolder::new();
    let mut model = Vec::new();
    for op in input.chunks_exact(3) {
        let delta = delta(op[0], op[1], op[2]);
        let expected = apply(&mut model, &delta);
        let got = folder.apply(&delta).map_err(|e| error_name(&e));
        if got != expected {
            return Err(format!(
                "{delta:?}: folder says {got:?}, model {expected:?}"
            ));
        }
        let open: Vec<PartId> = model
            .iter()
            .filter(|s| !s.committed)
            .map(|s| s.id.clone())
            .collect();
        if folder.open_parts() != open {
            return Err(format!("after {delta:?}: open parts differ"));
        }
    }
    let open: Vec<PartId> = model
        .iter()
        .filter(|s| !s.committed)
        .map(|s| s.id.clone())
        .collect();
    let partial_model = model.clone();
    let partial = {
        let mut copy = DeltaFolder::new();
        for op in input.chunks_exact(3) {
            let _ = copy.apply(&delta(op[0], op[1], op[2]));
        }
        copy.finish_partial()
    };
    match folder.finish() {
        Err(DeltaError::Uncommitted(ids)) if ids == open && !open.is_empty() => {}
        Ok(parts) if open.is_empty() => {
            if parts.len() != model.len() || !parts.iter().zip(&model).all(|(p, s)| same(p, s)) {
                return Err(format!("finished parts {parts:?} differ from the model"));
            }
        }
        other => return Err(format!("finish gave {other:?} with open parts {open:?}")),
    }
    // Partial: every part in begin order, an open structured part without
    // a value dropped, open ones marked incomplete.
    let kept: Vec<&Slot> = partial_model
        .iter()
        .filter(|s| s.committed || !(s.kind == PartKind::Structured && s.value.is_none()))
        .collect();
    if partial.len() != kept.len() {
        return Err(format!(
            "finish_partial kept {} parts, the model {}",
            partial.len(),
            kept.len()
        ));
    }
    for (part, slot) in partial.iter().zip(kept) {
        let marked = metadata(part)
            .and_then(|m| m.get("agentkit.incomplete"))
            .is_some_and(|v| v == &json!(true));
        if marked == slot.committed {
            return Err(format!("{part:?}: incomplete mark wrong"));
        }
    }
    Ok(())
}
