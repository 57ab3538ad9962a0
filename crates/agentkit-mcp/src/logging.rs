//! A server's log messages (`notifications/message`) as tracing records
//! and host events.
//!
//! Servers log through MCP instead of stderr when they want the client to
//! see it. Each message becomes a record under the target
//! `agentkit_mcp::server_log`, at the level closest to the server's, with
//! the server's name and its logger, so a host's subscriber can filter and
//! show them like its own logs.

use crate::events::McpLogMessage;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};

/// Records one server log message; the same message as a host event.
pub(crate) fn record(server: &str, params: &LoggingMessageNotificationParam) -> McpLogMessage {
    let logger = params.logger.as_deref().unwrap_or("");
    let data = match &params.data {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    macro_rules! at {
        ($level:ident) => {
            tracing::$level!(target: "agentkit_mcp::server_log", server, logger, "{data}")
        };
    }
    match params.level {
        LoggingLevel::Debug => at!(debug),
        LoggingLevel::Info | LoggingLevel::Notice => at!(info),
        LoggingLevel::Warning => at!(warn),
        _ => at!(error),
    }
    McpLogMessage {
        server: server.to_owned(),
        level: serde_json::to_value(params.level)
            .ok()
            .and_then(|level| level.as_str().map(str::to_owned))
            .unwrap_or_default(),
        logger: params.logger.clone(),
        data: params.data.clone(),
    }
}
