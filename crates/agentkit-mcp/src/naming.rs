//! The names the model sees for MCP tools.
//!
//! Every provider accepts tool names matching `^[a-zA-Z0-9_-]{1,64}$`, while
//! MCP servers name tools freely (dots, slashes, long names) and two servers
//! may share tool names. A tool is therefore exposed as
//! `mcp_<server>_<tool>`, with every other character replaced by `_`. A name
//! that is too long, or that collides with one already handed out, keeps a
//! readable prefix and ends in a hash of the server and tool names. The hash
//! is our own FNV-1a, so a name stays the same across runs, machines and
//! compiler versions: transcripts saved yesterday still refer to the same
//! tools today.

use agentkit_tools_core::validate_tool_name;
use std::collections::HashSet;

/// The longest name every provider accepts.
const MAX_LEN: usize = 64;
/// `_` plus eight hex digits.
const HASH_SUFFIX_LEN: usize = 9;

/// Assigns exposed names to `(server, tool)` pairs, in order, without
/// collisions. Feed the pairs in a stable order (servers in registration
/// order, tools in the server's order) and the result is stable too.
#[derive(Debug, Default)]
pub(crate) struct NameAllocator {
    taken: HashSet<String>,
}

impl NameAllocator {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The exposed name for this server's tool.
    pub(crate) fn allocate(&mut self, server: &str, tool: &str) -> String {
        let plain = sanitize(&format!("mcp_{server}_{tool}"));
        let mut name = if plain.len() <= MAX_LEN && !self.taken.contains(&plain) {
            plain.clone()
        } else {
            hashed(&plain, &format!("{server}\u{0}{tool}"))
        };
        // Two different pairs with the same hash: practically never, but
        // the catalog must stay collision free, so count upwards.
        let mut salt = 0u32;
        while self.taken.contains(&name) {
            salt += 1;
            name = hashed(&plain, &format!("{server}\u{0}{tool}\u{0}{salt}"));
        }
        debug_assert!(validate_tool_name(&name).is_ok(), "{name}");
        self.taken.insert(name.clone());
        name
    }
}

/// The exposed name of one tool, ignoring collisions with other tools.
pub fn exposed_tool_name(server: &str, tool: &str) -> String {
    NameAllocator::new().allocate(server, tool)
}

fn sanitize(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn hashed(readable: &str, identity: &str) -> String {
    // `readable` is ASCII after sanitizing, so byte slicing is safe.
    let keep = readable.len().min(MAX_LEN - HASH_SUFFIX_LEN);
    format!("{}_{:08x}", &readable[..keep], fnv1a32(identity.as_bytes()))
}

fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_prefixed_and_sanitized() {
        assert_eq!(
            exposed_tool_name("everything", "echo"),
            "mcp_everything_echo"
        );
        assert_eq!(
            exposed_tool_name("everything", "get-tiny-image"),
            "mcp_everything_get-tiny-image"
        );
        assert_eq!(
            exposed_tool_name("my.server", "fs/read file"),
            "mcp_my_server_fs_read_file"
        );
        assert_eq!(exposed_tool_name("ü", "ß"), "mcp____");
    }

    #[test]
    fn long_names_are_shortened_with_a_stable_hash() {
        let tool = "a_really_long_tool_name_that_goes_on_and_on_and_on_forever";
        let name = exposed_tool_name("server", tool);
        assert_eq!(name.len(), 64);
        assert!(validate_tool_name(&name).is_ok());
        assert!(name.starts_with("mcp_server_a_really_long"));
        // Stable across calls (and, being FNV, across builds).
        assert_eq!(name, exposed_tool_name("server", tool));
        assert_ne!(name, exposed_tool_name("server", &format!("{tool}2")));
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
    }

    #[test]
    fn collisions_after_sanitizing_get_distinct_names() {
        let mut names = NameAllocator::new();
        let first = names.allocate("s", "read.file");
        let second = names.allocate("s", "read/file");
        let third = names.allocate("s", "read_file");
        assert_eq!(first, "mcp_s_read_file");
        assert_ne!(first, second);
        assert_ne!(second, third);
        assert_ne!(first, third);
        for name in [&first, &second, &third] {
            assert!(validate_tool_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn empty_server_and_tool_still_make_a_valid_name() {
        assert!(validate_tool_name(&exposed_tool_name("", "")).is_ok());
    }
}
