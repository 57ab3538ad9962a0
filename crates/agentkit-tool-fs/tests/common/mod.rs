//! The setup the attack tests share.

use agentkit_tool_fs::{FsToolsConfig, fs_tools};
use agentkit_tools_core::{
    BasicToolExecutor, CompositePermissionChecker, OutsideRoots, PathPolicy, ToolFederation,
};
use std::path::Path;
use std::sync::Arc;

/// The filesystem tools over `ws`, behind a `PathPolicy` that allows the
/// workspace and refuses everything outside it.
pub fn guarded_executor(ws: &Path) -> BasicToolExecutor {
    let policy = PathPolicy::new()
        .with_allowed_root(ws)
        .with_outside_roots(OutsideRoots::Deny);
    BasicToolExecutor::new(ToolFederation::new().with_source(fs_tools(FsToolsConfig::new(ws))))
        .with_permissions(Arc::new(
            CompositePermissionChecker::new().with_policy(policy),
        ))
}
