//! Which MCP revisions this client speaks, and what it announces.
//!
//! The client announces the newest revision that still has the
//! `initialize` handshake. A server may answer with an older revision it
//! prefers (negotiating down); the session then runs at that revision and
//! [`ServerStatus::protocol_version`](crate::ServerStatus::protocol_version)
//! shows it. An answer naming a revision outside
//! [`SUPPORTED_PROTOCOL_VERSIONS`] ends the session with
//! [`McpError::UnsupportedProtocolVersion`](crate::McpError::UnsupportedProtocolVersion).
//! Revisions from 2026-07-28 on have no handshake at all, so announcing one
//! inside `initialize` would only make a strict server refuse the client.

use rmcp::model::ProtocolVersion;

/// The revision the client announces in its `initialize` request.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Every revision a server may answer with, oldest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", PROTOCOL_VERSION];

/// [`PROTOCOL_VERSION`] as rmcp's type.
pub(crate) fn announced() -> ProtocolVersion {
    ProtocolVersion::LATEST_WITH_INITIALIZE
}

/// `true` when the client can run a session at `version`.
pub(crate) fn supported(version: &ProtocolVersion) -> bool {
    SUPPORTED_PROTOCOL_VERSIONS.contains(&version.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_match_what_rmcp_can_speak_over_initialize() {
        assert_eq!(announced().as_str(), PROTOCOL_VERSION);
        let rmcp: Vec<&str> = ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .filter(|v| v.has_initialize())
            .map(ProtocolVersion::as_str)
            .collect();
        assert_eq!(rmcp, SUPPORTED_PROTOCOL_VERSIONS);
        assert!(!supported(&ProtocolVersion::LATEST), "no handshake there");
        assert!(supported(&ProtocolVersion::V_2025_03_26));
    }
}
