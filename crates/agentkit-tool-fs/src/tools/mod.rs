//! The tools themselves, one module each.
//!
//! Every tool holds the shared [`FsToolsConfig`](crate::FsToolsConfig) and a
//! spec built once at construction, proposes the filesystem permission its
//! call needs with the resolved path, and then acts on that same path.

mod create_dir;
mod delete;
mod list;
mod move_path;
mod read;
mod replace;
mod search;
mod write;

pub use create_dir::CreateDirectoryTool;
pub use delete::DeleteTool;
pub use list::ListDirectoryTool;
pub use move_path::MoveTool;
pub use read::ReadFileTool;
pub use replace::ReplaceInFileTool;
pub use search::SearchTool;
pub use write::WriteFileTool;

use crate::FsToolsConfig;
use crate::paths::resolve;
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, ToolAnnotations, ToolContext, ToolError, ToolResult,
    TypedTool,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// A built-in tool as a [`TypedTool`]: its arguments are a typed struct
/// whose schema is generated and which proposes the one filesystem
/// permission a call needs ([`FsArgs`]), and `run` does the work. The names are constants
/// known to be valid.
fn typed_tool<A, F, Fut>(
    config: &Arc<FsToolsConfig>,
    name: &str,
    description: String,
    annotations: ToolAnnotations,
    run: F,
) -> TypedTool
where
    A: FsArgs + DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(Arc<FsToolsConfig>, A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
{
    let for_run = config.clone();
    let for_requests = config.clone();
    TypedTool::new(name, description, move |args: A, ctx| {
        run(for_run.clone(), args, ctx)
    })
    .with_annotations(annotations)
    .with_requests(move |args: &A| Ok(vec![args.request(&for_requests)?]))
}

/// The arguments of a filesystem tool know the one permission a call needs.
trait FsArgs {
    /// The request, with the path resolved against the root.
    fn request(&self, config: &FsToolsConfig) -> Result<PermissionRequest, ToolError>;
}

/// A request for one operation on one resolved path.
fn on_path(
    config: &FsToolsConfig,
    path: &str,
    operation: fn(PathBuf) -> FileSystemOperation,
) -> Result<PermissionRequest, ToolError> {
    Ok(PermissionRequest::filesystem(operation(resolve(
        config, path,
    )?)))
}

/// Sets `maximum` of one property of a generated schema, for limits that
/// come from the configuration.
fn with_maximum(mut schema: Value, property: &str, maximum: usize) -> Value {
    if let Some(object) = schema
        .pointer_mut(&format!("/properties/{property}"))
        .and_then(Value::as_object_mut)
    {
        object.insert("maximum".into(), maximum.into());
    }
    schema
}

/// The `Tool` impl of a built-in tool: everything is its `TypedTool`'s.
macro_rules! delegate_to_typed {
    ($tool:ident) => {
        #[async_trait::async_trait]
        impl agentkit_tools_core::Tool for $tool {
            fn spec(&self) -> std::sync::Arc<agentkit_tools_core::ToolSpec> {
                self.0.spec()
            }

            fn proposed_requests(
                &self,
                input: &serde_json::Value,
            ) -> Result<Vec<agentkit_tools_core::PermissionRequest>, agentkit_tools_core::ToolError>
            {
                self.0.proposed_requests(input)
            }

            async fn invoke(
                &self,
                request: agentkit_tools_core::ToolRequest,
                ctx: agentkit_tools_core::ToolContext,
            ) -> Result<agentkit_tools_core::ToolResult, agentkit_tools_core::ToolError> {
                self.0.invoke(request, ctx).await
            }
        }
    };
}
use delegate_to_typed;

/// Annotations of tools that only look.
fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        parallel_safe: true,
    }
}

/// Runs blocking filesystem calls (the race-free ones in
/// [`beneath`](crate::beneath)) on tokio's blocking pool.
async fn blocking<T, F>(f: F) -> std::io::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> std::io::Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|err| Err(std::io::Error::other(err)))
}

/// Stops a long walk or read when the turn is cancelled.
fn check_cancelled(ctx: &agentkit_tools_core::ToolContext) -> Result<(), ToolError> {
    ctx.cancellation.check().map_err(|_| ToolError::Cancelled)
}
