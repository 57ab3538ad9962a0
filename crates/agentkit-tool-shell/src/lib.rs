//! A shell tool for agentkit agents.
//!
//! [`ShellExecTool`] (`shell_exec`) runs a command line with `sh -c` in a
//! workspace directory and reports its exit code, stdout and stderr, each
//! bounded. It is built to leave nothing behind: the command runs in its own
//! process group, and that whole group is killed at the timeout, when the
//! turn is cancelled, when the call's future is dropped, and once the command
//! has exited (background processes included). Processes that leave the
//! group (`setsid`, double forks, `nohup` daemons) carry a per-call
//! environment tag and are found and killed at the same moments, and a
//! watchdog process kills them when the host itself is killed.
//!
//! With [`ShellConfig::with_sandbox`] the command runs inside a Landlock
//! domain on Linux ([`ShellSandbox`]): it can write only beneath the
//! workspace and the configured paths, optionally with no network, under
//! `PR_SET_NO_NEW_PRIVS`; where Landlock is missing the tool says it ran
//! unsandboxed, or refuses, as configured.
//!
//! The tool does not decide what may run. Every call proposes a
//! [`PermissionRequest::shell`](agentkit_tools_core::PermissionRequest::shell)
//! with the command line, the resolved working directory and the names of
//! the environment variables it sets, for a
//! [`CommandPolicy`](agentkit_tools_core::CommandPolicy) or another checker
//! to allow, refuse or ask about before anything starts.
//!
//! # Example
//!
//! The README's example (it runs as a doc-test here and in the README):
//!
//! ```
//! use agentkit_tool_shell::{ShellConfig, shell_tools};
//! use agentkit_tools_core::{
//!     BasicToolExecutor, CommandPolicy, CompositePermissionChecker, Preflight, ToolContext,
//!     ToolExecutor, ToolFederation, ToolRequest,
//! };
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let workspace = tempfile::tempdir().unwrap();
//! let policy = CommandPolicy::new().allow_programs(["echo", "ls"]).deny_programs(["rm"]);
//! let executor = BasicToolExecutor::new(
//!     ToolFederation::new().with_source(shell_tools(ShellConfig::new(workspace.path()))),
//! )
//! .with_permissions(Arc::new(CompositePermissionChecker::new().with_policy(policy)));
//!
//! let call = |line: &str| ToolRequest::new("call-1", "shell_exec", json!({ "command": line }));
//! assert_eq!(executor.preflight(&call("echo hello")), Preflight::Ready);
//! let result = executor.execute(call("echo hello"), ToolContext::detached()).await.unwrap();
//! assert_eq!(result.output.to_text(), "exit code: 0\nstdout:\nhello\n");
//!
//! assert!(matches!(executor.preflight(&call("rm -rf /")), Preflight::Rejected(_)));
//! assert!(matches!(executor.preflight(&call("make")), Preflight::NeedsApproval(_)));
//! # });
//! ```

mod capture;
mod config;
mod contain;
mod exec;
mod host;
mod run;
mod sandbox;

pub use config::ShellConfig;
pub use exec::ShellExecTool;
pub use host::{adopt_orphans, hide_host_environment};
pub use sandbox::{SECRET_HOME_PATHS, ShellSandbox, WhenUnavailable};

use agentkit_tools_core::ToolRegistry;

/// A registry named `shell` holding `shell_exec` over `config`.
pub fn shell_tools(config: ShellConfig) -> ToolRegistry {
    ToolRegistry::new()
        .named("shell")
        .with(ShellExecTool::new(config))
}

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
