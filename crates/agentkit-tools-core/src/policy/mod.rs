//! Ready-made [`PermissionPolicy`](crate::PermissionPolicy) rules for the
//! built-in request kinds.
//!
//! Each policy looks at one payload type and has no opinion on the others, so
//! they stack in a [`CompositePermissionChecker`](crate::CompositePermissionChecker):
//! [`PathPolicy`] for filesystem operations, [`CommandPolicy`] for shell
//! command lines, [`McpServerPolicy`] for MCP servers and auth scopes. They
//! decide on what an operation would really touch, not on how it is spelled:
//! paths are resolved through `..` and symlinks, command lines are parsed
//! through `sh -c`, chaining and substitutions.

mod command;
mod mcp;
mod path;
mod shell;

pub use command::{CommandPolicy, SENSITIVE_ENV_KEYS, SENSITIVE_ENV_PREFIXES, shell_requests};
pub use mcp::McpServerPolicy;
pub use path::{OutsideRoots, PathPolicy, resolve_path};
pub use shell::{
    RedirectKind, ShellParseError, ShellRedirect, ShellWord, SimpleCommand, parse_command_line,
};
