//! Snapshot helpers: transcripts with unstable fields made stable.

use agentkit_core::Item;

/// The items with generated ids replaced by their position (`#0`, `#1`,
/// ...), so snapshots do not change when id generation does.
pub fn normalized(items: &[Item]) -> Vec<Item> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let mut item = item.clone();
            if item.id.is_some() {
                item.id = Some(format!("#{index}").into());
            }
            item
        })
        .collect()
}

/// Snapshots a transcript as YAML with ids normalized.
///
/// `assert_transcript_snapshot!("name", &items)` or
/// `assert_transcript_snapshot!(&items)`.
#[macro_export]
macro_rules! assert_transcript_snapshot {
    ($name:expr, $items:expr) => {
        $crate::insta::assert_yaml_snapshot!($name, $crate::normalized($items))
    };
    ($items:expr) => {
        $crate::insta::assert_yaml_snapshot!($crate::normalized($items))
    };
}
