//! `shell_exec`: run a command line and report what it printed and how it
//! exited.
//!
//! The call proposes a shell permission request with the command line, the
//! resolved working directory and the names of the variables it sets, so a
//! `CommandPolicy` judges exactly what will run and where. A command that
//! exits non-zero is a normal, if failed, result: the model reads the exit
//! code and the output and decides what to do, which is why it is an error
//! *result* and not a `ToolError`. The same goes for a timeout, whose partial
//! output often says what hung.

use crate::ShellConfig;
use crate::contain::{self, CallTag};
use crate::run::{Ending, Finished, OutputLimits, run};
use crate::sandbox::{self, SandboxOutcome, SpawnError};
use agentkit_tools_core::{
    PermissionRequest, ShellCommand, Tool, ToolAnnotations, ToolContext, ToolError, ToolRequest,
    ToolResult, ToolSpec, TypedTool, policy::shell_requests, resolve_path,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

/// Runs a command line with `sh -c`; see the module docs.
pub struct ShellExecTool(TypedTool);

/// The arguments of `shell_exec`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The command line, run with `sh -c`. Pipes, `&&` and redirections work. There is no standard input.
    #[schemars(length(min = 1))]
    command: String,
    /// The working directory, absolute or relative to the workspace root. Default: the root.
    cwd: Option<String>,
    /// Environment variables to set, on top of the inherited ones.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Seconds before the command and everything it started are killed.
    #[schemars(range(min = 1))]
    timeout_secs: Option<u64>,
}

impl ShellExecTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<ShellConfig>>) -> Self {
        let config = config.into();
        let default_secs = config.default_timeout().as_secs().max(1);
        let max_secs = config.max_timeout().as_secs().max(1);
        let description = format!(
            "Runs a shell command line and returns its exit code, stdout and stderr. Each stream \
             keeps at most {} bytes (its beginning and end). The command and every process it \
             starts are killed at the timeout and when the call ends, so do not start servers \
             meant to keep running. A non-zero exit code is reported as a failed result.",
            config.max_output_bytes()
        );
        let annotations = ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            parallel_safe: false,
        };
        let for_run = config.clone();
        let tool = TypedTool::new("shell_exec", description, move |input: Input, ctx| {
            execute(for_run.clone(), input, ctx)
        })
        .with_annotations(annotations)
        .with_requests(move |input: &Input| {
            validate(input)?;
            let cwd = working_dir(&config, input)?;
            // The command, then a filesystem request per file a redirection
            // reads or writes, for the PathPolicy to judge.
            Ok(shell_requests(ShellCommand {
                command_line: input.command.clone(),
                cwd: Some(cwd),
                env_keys: input.env.keys().cloned().collect(),
            }))
        })
        .map_schema(|mut schema| {
            if let Some(timeout) = schema.pointer_mut("/properties/timeout_secs")
                && let Some(timeout) = timeout.as_object_mut()
            {
                timeout.insert("maximum".into(), json!(max_secs));
                timeout.insert(
                    "description".into(),
                    json!(format!(
                        "Seconds before the command and everything it started are killed. Default {default_secs}."
                    )),
                );
            }
            schema
        });
        Self(tool)
    }
}

#[async_trait::async_trait]
impl Tool for ShellExecTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.0.spec()
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        self.0.proposed_requests(input)
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        self.0.invoke(request, ctx).await
    }
}

fn validate(input: &Input) -> Result<(), ToolError> {
    if input.command.trim().is_empty() {
        return Err(ToolError::InvalidInput(
            "`command` must not be empty".into(),
        ));
    }
    Ok(())
}

fn working_dir(config: &ShellConfig, input: &Input) -> Result<PathBuf, ToolError> {
    match input.cwd.as_deref() {
        None | Some("") => Ok(config.root().to_path_buf()),
        Some(dir) => resolve_path(Path::new(dir), config.root())
            .map_err(|err| ToolError::InvalidInput(format!("cannot resolve cwd {dir}: {err}"))),
    }
}

fn timeout(config: &ShellConfig, input: &Input) -> Duration {
    input
        .timeout_secs
        .map(Duration::from_secs)
        .unwrap_or(config.default_timeout())
        .min(config.max_timeout())
}

async fn execute(
    config: Arc<ShellConfig>,
    input: Input,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    validate(&input)?;
    let cwd = working_dir(&config, &input)?;
    if !cwd.is_dir() {
        return Err(ToolError::ExecutionFailed(format!(
            "the working directory {} does not exist",
            cwd.display()
        )));
    }
    let timeout = timeout(&config, &input);
    ctx.cancellation.check().map_err(|_| ToolError::Cancelled)?;

    // Every process the command starts carries this tag, so that the ones
    // leaving its process group are found and killed too (see `contain`).
    let tag = CallTag::new();
    contain::ensure_watchdog();
    let mut command = tokio::process::Command::new(config.shell());
    command
        .arg("-c")
        .arg(&input.command)
        .current_dir(&cwd)
        .envs(&input.env)
        .env(contain::TAG_VAR, tag.value())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    // Credentials the host runs with are not the command's (nor, through
    // its output, the model's): inherited variables that look like keys are
    // dropped unless the host let them through. Variables the call sets
    // itself are the model's own and stay.
    for (name, _) in std::env::vars_os() {
        if let Some(name) = name.to_str()
            && config.drops_env(name)
            && !input.env.contains_key(name)
        {
            command.env_remove(name);
        }
    }

    tracing::debug!(command = %input.command, cwd = %cwd.display(), ?timeout, "shell_exec");
    let (child, sandboxed) = sandbox::spawn(command, config.sandbox(), config.root())
        .await
        .map_err(|err| match err {
            SpawnError::SandboxRequired(_) => {
                ToolError::ExecutionFailed(format!("the command was not run: {err}"))
            }
            SpawnError::Io(err) => ToolError::ExecutionFailed(format!(
                "cannot start {}: {err}",
                config.shell().display()
            )),
        })?;
    if let Some(note) = sandboxed.note() {
        tracing::warn!(command = %input.command, "{note}");
    }
    let limits = OutputLimits {
        kept: config.max_output_bytes(),
        total: config.max_stream_bytes(),
    };
    let finished = run(child, timeout, limits, &ctx.cancellation, tag)
        .await
        .map_err(|err| ToolError::ExecutionFailed(format!("cannot wait for the command: {err}")))?;
    report(finished, timeout, limits.total, &sandboxed)
}

/// The result the model reads: the status line first, then each stream that
/// printed something.
fn report(
    finished: Finished,
    timeout: Duration,
    max_stream_bytes: u64,
    sandboxed: &SandboxOutcome,
) -> Result<ToolResult, ToolError> {
    let (status_line, exit_code, success) = match &finished.ending {
        Ending::Cancelled => return Err(ToolError::Cancelled),
        Ending::TimedOut => (
            format!(
                "timed out after {}s; the command and every process it started were killed",
                timeout.as_secs_f64()
            ),
            None,
            false,
        ),
        Ending::OutputLimit => (
            format!(
                "printed more than {max_stream_bytes} bytes; the command and every process it started were killed"
            ),
            None,
            false,
        ),
        Ending::Exited(status) => match status.code() {
            Some(code) => (format!("exit code: {code}"), Some(code), code == 0),
            None => (describe_signal(status), None, false),
        },
    };
    let mut text = status_line;
    for (name, stream) in [("stdout", &finished.stdout), ("stderr", &finished.stderr)] {
        if stream.total() > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("{name}:\n{}", stream.render()));
        }
    }
    if finished.stdout.total() == 0 && finished.stderr.total() == 0 {
        text.push_str(" (no output)");
    }
    if let Some(note) = sandboxed.note() {
        text.push('\n');
        text.push_str(&note);
    }
    let mut result = if success {
        ToolResult::new(text)
    } else {
        ToolResult::error(text)
    };
    result
        .metadata
        .insert("shell.exit_code".into(), json!(exit_code));
    result.metadata.insert(
        "shell.timed_out".into(),
        json!(matches!(finished.ending, Ending::TimedOut)),
    );
    if matches!(finished.ending, Ending::OutputLimit) {
        result
            .metadata
            .insert("shell.output_limited".into(), json!(true));
    }
    if *sandboxed != SandboxOutcome::Off {
        result
            .metadata
            .insert("shell.sandbox".into(), json!(sandboxed.label()));
    }
    result.metadata.insert(
        "shell.duration_ms".into(),
        json!(finished.elapsed.as_millis() as u64),
    );
    Ok(result)
}

fn describe_signal(status: &std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    format!("ended without an exit code ({status})")
}
