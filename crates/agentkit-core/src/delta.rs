//! Streaming deltas and the folder that turns them into parts.
//!
//! A model streams its answer as a sequence of [`Delta`]s: a part begins,
//! text or bytes are appended to it, and it is committed. Several parts may be
//! open at once (reasoning and text interleave in some providers), so every
//! delta names its part. [`DeltaFolder`] applies deltas and hands back the
//! finished parts in the order they began; a delta that does not fit (unknown
//! part, wrong kind, after commit) is a [`DeltaError`], never a panic, because
//! deltas come from the network.

use crate::data::DataRef;
use crate::{
    CustomPart, FilePart, MediaPart, MetadataMap, Modality, Part, PartId, ReasoningPart,
    StructuredPart, TextChunk, TextPart,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// What kind of part a [`Delta::BeginPart`] opens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PartKind {
    /// Text, built with [`Delta::AppendText`].
    Text,
    /// Reasoning, built with [`Delta::AppendText`] (the readable summary) and
    /// [`Delta::ReasoningOpaque`] (signature, encrypted payload).
    Reasoning,
    /// A JSON value, set with [`Delta::ReplaceStructured`].
    Structured,
    /// Media, built with [`Delta::AppendBytes`].
    Media {
        /// Image, audio or video.
        modality: Modality,
        /// The MIME type.
        mime_type: String,
    },
    /// A file, built with [`Delta::AppendBytes`] or [`Delta::AppendText`].
    File {
        /// The file name, when known.
        name: Option<String>,
        /// The MIME type, when known.
        mime_type: Option<String>,
    },
    /// A [`CustomPart`](crate::CustomPart) of this kind (such as
    /// `openai.web_search_call`), its value set with
    /// [`Delta::ReplaceStructured`]: what a provider's hosted tools did,
    /// kept for the host to show and for the adapter to send back.
    Custom {
        /// The custom part's kind.
        name: String,
    },
}

impl PartKind {
    fn name(&self) -> &'static str {
        match self {
            PartKind::Text => "text",
            PartKind::Reasoning => "reasoning",
            PartKind::Structured => "structured",
            PartKind::Media { .. } => "media",
            PartKind::File { .. } => "file",
            PartKind::Custom { .. } => "custom",
        }
    }
}

/// One step of a streamed answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Delta {
    /// Opens a part.
    BeginPart {
        /// The part's id, unique within the stream.
        part_id: PartId,
        /// What it will hold.
        kind: PartKind,
    },
    /// Appends text to a text, reasoning or file part.
    AppendText {
        /// The part.
        part_id: PartId,
        /// The text to append: inline when short, as nearly every streamed
        /// piece is (see [`TextChunk`]).
        chunk: TextChunk,
    },
    /// Appends bytes to a media or file part.
    AppendBytes {
        /// The part.
        part_id: PartId,
        /// The bytes to append.
        chunk: Vec<u8>,
    },
    /// Sets (or replaces) the value of a structured part.
    ReplaceStructured {
        /// The part.
        part_id: PartId,
        /// The whole value so far.
        value: Value,
    },
    /// Sets the opaque, provider-owned values of a reasoning part; a field
    /// left `None` keeps its previous value.
    ReasoningOpaque {
        /// The part.
        part_id: PartId,
        /// The provider's signature.
        signature: Option<String>,
        /// The provider's encrypted reasoning.
        encrypted: Option<String>,
    },
    /// Merges entries into the part's metadata.
    SetMetadata {
        /// The part.
        part_id: PartId,
        /// Entries to insert (replacing equal keys).
        metadata: MetadataMap,
    },
    /// Marks the part complete.
    CommitPart {
        /// The part.
        part_id: PartId,
    },
}

impl Delta {
    /// The part this delta is about.
    pub fn part_id(&self) -> &PartId {
        match self {
            Delta::BeginPart { part_id, .. }
            | Delta::AppendText { part_id, .. }
            | Delta::AppendBytes { part_id, .. }
            | Delta::ReplaceStructured { part_id, .. }
            | Delta::ReasoningOpaque { part_id, .. }
            | Delta::SetMetadata { part_id, .. }
            | Delta::CommitPart { part_id } => part_id,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Delta::BeginPart { .. } => "begin_part",
            Delta::AppendText { .. } => "append_text",
            Delta::AppendBytes { .. } => "append_bytes",
            Delta::ReplaceStructured { .. } => "replace_structured",
            Delta::ReasoningOpaque { .. } => "reasoning_opaque",
            Delta::SetMetadata { .. } => "set_metadata",
            Delta::CommitPart { .. } => "commit_part",
        }
    }
}

/// A delta that does not fit the stream so far.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeltaError {
    /// `BeginPart` for an id that is already open or committed.
    #[error("part {0} was begun twice")]
    DuplicatePart(PartId),
    /// A delta for a part that was never begun.
    #[error("delta for unknown part {0}")]
    UnknownPart(PartId),
    /// A delta for a part that was already committed.
    #[error("delta for part {0} after it was committed")]
    AlreadyCommitted(PartId),
    /// A delta that does not apply to the part's kind.
    #[error("{delta} does not apply to {kind} part {part_id}")]
    WrongKind {
        /// The part.
        part_id: PartId,
        /// The part's kind.
        kind: &'static str,
        /// The delta's name.
        delta: &'static str,
    },
    /// A structured part committed without a value.
    #[error("structured part {0} was committed without a value")]
    MissingValue(PartId),
    /// The stream ended with parts still open.
    #[error("the stream ended with {} part(s) never committed", .0.len())]
    Uncommitted(Vec<PartId>),
}

#[derive(Debug)]
enum Buffer {
    Text(String),
    Reasoning {
        summary: String,
        /// Boxed when the provider sends it (once a part at most): a
        /// slot stays small.
        opaque: Option<Box<Opaque>>,
    },
    Structured(Option<Value>),
    Bytes(Vec<u8>),
}

/// A reasoning part's provider-owned values.
#[derive(Debug, Default)]
struct Opaque {
    signature: Option<String>,
    encrypted: Option<String>,
}

/// A slot's kind: the usual ones by name, the others (which carry names
/// and types) boxed. A slot is 88 bytes, not 152: at 128 and more the
/// compiler moves one with a `memcpy` call, which every part paid twice
/// (begun, taken).
#[derive(Debug)]
enum SlotKind {
    Text,
    Reasoning,
    Structured,
    Other(Box<PartKind>),
}

impl SlotKind {
    fn new(kind: PartKind) -> Self {
        match kind {
            PartKind::Text => SlotKind::Text,
            PartKind::Reasoning => SlotKind::Reasoning,
            PartKind::Structured => SlotKind::Structured,
            other => SlotKind::Other(Box::new(other)),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            SlotKind::Text => "text",
            SlotKind::Reasoning => "reasoning",
            SlotKind::Structured => "structured",
            SlotKind::Other(kind) => kind.name(),
        }
    }
}

#[derive(Debug)]
struct Slot {
    id: PartId,
    kind: SlotKind,
    buffer: Buffer,
    metadata: MetadataMap,
    committed: bool,
}

impl Slot {
    fn into_part(self) -> Result<Part, DeltaError> {
        let metadata = self.metadata;
        let (kind, buffer) = match (self.kind, self.buffer) {
            (SlotKind::Text, Buffer::Text(text)) => {
                return Ok(Part::Text(TextPart { text, metadata }));
            }
            (SlotKind::Reasoning, Buffer::Reasoning { summary, opaque }) => {
                let Opaque {
                    signature,
                    encrypted,
                } = opaque.map(|opaque| *opaque).unwrap_or_default();
                return Ok(Part::Reasoning(ReasoningPart {
                    summary: (!summary.is_empty()).then_some(summary),
                    signature,
                    encrypted,
                    metadata,
                }));
            }
            (SlotKind::Structured, Buffer::Structured(value)) => {
                return Ok(Part::Structured(StructuredPart {
                    value: value.ok_or(DeltaError::MissingValue(self.id))?,
                    schema: None,
                    metadata,
                }));
            }
            (SlotKind::Other(kind), buffer) => (*kind, buffer),
            (kind, _) => unreachable!("buffer does not match {kind:?}"),
        };
        Ok(match (kind, buffer) {
            (PartKind::Custom { name }, Buffer::Structured(value)) => Part::Custom(CustomPart {
                kind: name,
                value: value.ok_or(DeltaError::MissingValue(self.id))?,
                metadata,
            }),
            (
                PartKind::Media {
                    modality,
                    mime_type,
                },
                Buffer::Bytes(data),
            ) => Part::Media(MediaPart {
                modality,
                mime_type,
                data: DataRef::bytes(data),
                metadata,
            }),
            (PartKind::File { name, mime_type }, Buffer::Bytes(data)) => Part::File(FilePart {
                name,
                mime_type,
                data: DataRef::bytes(data),
                metadata,
            }),
            // Buffers are created from the kind in `begin`, so the pairs above
            // are the only ones that exist.
            (kind, _) => unreachable!("buffer does not match {kind:?}"),
        })
    }
}

/// Folds a stream of [`Delta`]s into [`Part`]s.
///
/// ```
/// use agentkit_core::{Delta, DeltaFolder, Part, PartId, PartKind};
///
/// let id = PartId::new("p0");
/// let mut folder = DeltaFolder::new();
/// folder.apply(&Delta::BeginPart { part_id: id.clone(), kind: PartKind::Text })?;
/// folder.apply(&Delta::AppendText { part_id: id.clone(), chunk: "Hel".into() })?;
/// folder.apply(&Delta::AppendText { part_id: id.clone(), chunk: "lo".into() })?;
/// folder.apply(&Delta::CommitPart { part_id: id })?;
/// assert_eq!(folder.finish()?, vec![Part::text("Hello")]);
/// # Ok::<(), agentkit_core::DeltaError>(())
/// ```
#[derive(Debug, Default)]
pub struct DeltaFolder {
    slots: Vec<Slot>,
    /// The slots by part id, once a stream has more parts than scanning
    /// them is worth: most answers have one to three, and a scan of those
    /// costs less than hashing the id (and the table an allocation).
    /// foldhash: every delta of a stream looks its part up here.
    index: Option<HashMap<PartId, usize, foldhash::fast::RandomState>>,
    /// The slot the last delta went to, tried first: a provider streams a
    /// part's deltas one after another (Anthropic's content blocks, the
    /// Responses API's output items, each Chat tool call's arguments), so
    /// the next delta nearly always names it again. Parts that interleave
    /// are still found by their id, whichever slot this points at.
    last: usize,
}

/// Parts a folder scans before it indexes them.
const SCAN_PARTS: usize = 8;

/// The room a text part starts with. Text streams in short chunks (in the
/// recorded cassettes 110 of 113 text deltas are 23 bytes or less, median
/// 5), and an empty `String` grows 8, 16, 32, ...: starting at 32 saves
/// the first two reallocations of every answer longer than 16 bytes, and
/// costs at most 24 idle bytes for a shorter one.
const TEXT_ROOM: usize = 32;

impl DeltaFolder {
    /// An empty folder.
    pub fn new() -> Self {
        Self::default()
    }

    /// `true` when no part was begun.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The ids of parts begun but not committed, in begin order.
    pub fn open_parts(&self) -> Vec<PartId> {
        self.slots
            .iter()
            .filter(|s| !s.committed)
            .map(|s| s.id.clone())
            .collect()
    }

    /// [`apply`](Self::apply) for a delta the caller no longer needs: a
    /// part's id and kind are moved into the folder instead of copied (no
    /// allocation and no free per part).
    ///
    /// ```
    /// use agentkit_core::{Delta, DeltaFolder, Part, PartId, PartKind};
    ///
    /// let id = PartId::new("p0");
    /// let mut folder = DeltaFolder::new();
    /// folder.apply_owned(Delta::BeginPart { part_id: id.clone(), kind: PartKind::Text })?;
    /// folder.apply_owned(Delta::AppendText { part_id: id.clone(), chunk: "Hel".into() })?;
    /// folder.apply_owned(Delta::AppendText { part_id: id.clone(), chunk: "lo".into() })?;
    /// folder.apply_owned(Delta::CommitPart { part_id: id })?;
    /// assert_eq!(folder.finish()?, vec![Part::text("Hello")]);
    /// # Ok::<(), agentkit_core::DeltaError>(())
    /// ```
    pub fn apply_owned(&mut self, delta: Delta) -> Result<(), DeltaError> {
        match delta {
            Delta::BeginPart { part_id, kind } => self.begin_owned(part_id, kind),
            Delta::AppendText { part_id, chunk } => {
                let slot = self.open_slot(&part_id)?;
                match &mut slot.buffer {
                    Buffer::Text(text) => text.push_str(&chunk),
                    _ => return self.apply(&Delta::AppendText { part_id, chunk }),
                }
                Ok(())
            }
            Delta::CommitPart { part_id } => self.commit(&part_id),
            other => self.apply(&other),
        }
    }

    /// Applies one delta.
    pub fn apply(&mut self, delta: &Delta) -> Result<(), DeltaError> {
        match delta {
            Delta::BeginPart { part_id, kind } => return self.begin(part_id, kind),
            Delta::CommitPart { part_id } => return self.commit(part_id),
            _ => {}
        }
        let part_id = delta.part_id();
        let slot = self.open_slot(part_id)?;
        let wrong_kind = |slot: &Slot| DeltaError::WrongKind {
            part_id: slot.id.clone(),
            kind: slot.kind.name(),
            delta: delta.name(),
        };
        match delta {
            Delta::BeginPart { .. } | Delta::CommitPart { .. } => unreachable!("handled above"),
            Delta::AppendText { chunk, .. } => match &mut slot.buffer {
                Buffer::Text(text) => text.push_str(chunk),
                Buffer::Reasoning { summary, .. } => summary.push_str(chunk),
                Buffer::Bytes(bytes) if matches!(&slot.kind, SlotKind::Other(kind) if matches!(**kind, PartKind::File { .. })) => {
                    bytes.extend_from_slice(chunk.as_bytes())
                }
                _ => return Err(wrong_kind(slot)),
            },
            Delta::AppendBytes { chunk, .. } => match &mut slot.buffer {
                Buffer::Bytes(bytes) => bytes.extend_from_slice(chunk),
                _ => return Err(wrong_kind(slot)),
            },
            Delta::ReplaceStructured { value, .. } => match &mut slot.buffer {
                Buffer::Structured(current) => *current = Some(value.clone()),
                _ => return Err(wrong_kind(slot)),
            },
            Delta::ReasoningOpaque {
                signature: new_signature,
                encrypted: new_encrypted,
                ..
            } => match &mut slot.buffer {
                Buffer::Reasoning { opaque, .. } => {
                    let opaque = opaque.get_or_insert_default();
                    if let Some(value) = new_signature {
                        opaque.signature = Some(value.clone());
                    }
                    if let Some(value) = new_encrypted {
                        opaque.encrypted = Some(value.clone());
                    }
                }
                _ => return Err(wrong_kind(slot)),
            },
            Delta::SetMetadata { metadata, .. } => slot
                .metadata
                .extend(metadata.iter().map(|(k, v)| (k.clone(), v.clone()))),
        }
        Ok(())
    }

    /// Marks the part complete.
    fn commit(&mut self, part_id: &PartId) -> Result<(), DeltaError> {
        let slot = self.open_slot(part_id)?;
        if let Buffer::Structured(None) = slot.buffer {
            return Err(DeltaError::MissingValue(slot.id.clone()));
        }
        slot.committed = true;
        Ok(())
    }

    /// The slot of `part_id`, if it was begun.
    fn find(&self, part_id: &PartId) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(part_id).copied(),
            None => self.slots.iter().position(|slot| slot.id == *part_id),
        }
    }

    fn begin(&mut self, part_id: &PartId, kind: &PartKind) -> Result<(), DeltaError> {
        self.begin_owned(part_id.clone(), kind.clone())
    }

    fn begin_owned(&mut self, part_id: PartId, kind: PartKind) -> Result<(), DeltaError> {
        if self.find(&part_id).is_some() {
            return Err(DeltaError::DuplicatePart(part_id));
        }
        let buffer = match &kind {
            PartKind::Text => Buffer::Text(String::with_capacity(TEXT_ROOM)),
            PartKind::Reasoning => Buffer::Reasoning {
                summary: String::new(),
                opaque: None,
            },
            PartKind::Structured | PartKind::Custom { .. } => Buffer::Structured(None),
            PartKind::Media { .. } | PartKind::File { .. } => Buffer::Bytes(Vec::new()),
        };
        match &mut self.index {
            Some(index) => {
                index.insert(part_id.clone(), self.slots.len());
            }
            None if self.slots.len() == SCAN_PARTS => {
                let index = self.slots.iter().map(|slot| slot.id.clone());
                let mut index: HashMap<_, _, _> = index.zip(0..).collect();
                index.insert(part_id.clone(), self.slots.len());
                self.index = Some(index);
            }
            None => {}
        }
        self.last = self.slots.len();
        self.slots.push(Slot {
            id: part_id,
            kind: SlotKind::new(kind),
            buffer,
            metadata: MetadataMap::new(),
            committed: false,
        });
        Ok(())
    }

    /// The open slot of `part_id`. The usual case, the part the last
    /// delta went to and still open, is checked inline; a lookup and the
    /// errors are out of line, so a delta does not pay for their code
    /// (registers saved, the error built in place).
    #[inline(always)]
    fn open_slot(&mut self, part_id: &PartId) -> Result<&mut Slot, DeltaError> {
        let last = self.last;
        if self
            .slots
            .get(last)
            .is_some_and(|slot| !slot.committed && slot.id == *part_id)
        {
            return Ok(&mut self.slots[last]);
        }
        self.find_open_slot(part_id)
    }

    /// [`open_slot`](Self::open_slot) for any part but the last one's.
    #[inline(never)]
    fn find_open_slot(&mut self, part_id: &PartId) -> Result<&mut Slot, DeltaError> {
        let index = match self.slots.get(self.last) {
            Some(slot) if slot.id == *part_id => self.last,
            _ => {
                let index = self
                    .find(part_id)
                    .ok_or_else(|| DeltaError::UnknownPart(part_id.clone()))?;
                self.last = index;
                index
            }
        };
        let slot = &mut self.slots[index];
        if slot.committed {
            return Err(DeltaError::AlreadyCommitted(part_id.clone()));
        }
        Ok(slot)
    }

    /// The committed parts in begin order; an error if any part is still open.
    pub fn finish(self) -> Result<Vec<Part>, DeltaError> {
        self.finish_reserving(0)
    }

    /// [`finish`](Self::finish), the vector sized for `additional` more
    /// parts: the loop adds an answer's tool calls to its parts, and
    /// growing the vector afterwards would copy it.
    pub fn finish_reserving(mut self, additional: usize) -> Result<Vec<Part>, DeltaError> {
        self.take_parts(additional)
    }

    /// [`finish_reserving`](Self::finish_reserving) without giving the
    /// folder up: it is left empty, keeping its room for the parts of the
    /// next stream, so a loop that folds one answer per model call
    /// allocates its slots once. On an error the folder is left as it was
    /// (an open part) or empty.
    ///
    /// ```
    /// use agentkit_core::{Delta, DeltaFolder, PartId, PartKind};
    ///
    /// let mut folder = DeltaFolder::new();
    /// for answer in ["one", "two"] {
    ///     let part_id = PartId::new("p");
    ///     folder.apply(&Delta::BeginPart { part_id: part_id.clone(), kind: PartKind::Text }).unwrap();
    ///     folder.apply(&Delta::AppendText { part_id: part_id.clone(), chunk: answer.into() }).unwrap();
    ///     folder.apply(&Delta::CommitPart { part_id }).unwrap();
    ///     let parts = folder.take_parts(0).unwrap();
    ///     assert_eq!(parts[0].as_text(), Some(answer));
    ///     assert!(folder.is_empty());
    /// }
    /// ```
    pub fn take_parts(&mut self, additional: usize) -> Result<Vec<Part>, DeltaError> {
        if self.slots.iter().any(|slot| !slot.committed) {
            return Err(DeltaError::Uncommitted(self.open_parts()));
        }
        self.index = None;
        self.last = 0;
        // Not collected in place: the parts would keep the slots' larger
        // allocation for as long as the transcript keeps the item.
        let mut parts = Vec::with_capacity(self.slots.len() + additional);
        for slot in self.slots.drain(..) {
            parts.push(slot.into_part()?);
        }
        Ok(parts)
    }

    /// Every part in begin order, open ones included, for a stream that was
    /// cut short (cancellation, network error). Open parts carry the metadata
    /// entry `agentkit.incomplete: true`; an open structured part with no
    /// value yet is dropped.
    pub fn finish_partial(self) -> Vec<Part> {
        let mut parts = Vec::with_capacity(self.slots.len());
        parts.extend(self.slots.into_iter().filter_map(|mut slot| {
            if !slot.committed {
                slot.metadata
                    .insert(crate::keys::INCOMPLETE.into(), Value::Bool(true));
            }
            slot.into_part().ok()
        }));
        parts
    }
}

#[cfg(test)]
mod tests;
