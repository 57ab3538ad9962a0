//! Child processes of stdio servers: spawned in their own process group,
//! stderr captured, the whole group ended when we are done.
//!
//! Servers are often launchers (`npx`, `uvx`, shell scripts) whose real
//! server is a grandchild. Killing only the direct child leaves that
//! grandchild running, holding ports and files. Each server therefore leads
//! a new process group and every shutdown signals the whole group, through
//! the same [`ProcessGroup`] the shell tool uses. Its
//! stderr is piped (a server's log lines must never scribble over the
//! host's terminal UI), forwarded to `tracing` at debug level and kept as a
//! short tail that connect errors quote.

use crate::config::StdioConfig;
use agentkit_tools_core::ProcessGroup;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How many stderr lines a server keeps for error messages.
const STDERR_TAIL_LINES: usize = 50;

/// The last lines a server wrote to stderr.
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    /// Set once the pipe reached end of file.
    closed: tokio::sync::watch::Sender<bool>,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.lines.lock().expect("stderr tail lock");
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// Waits (at most `limit`) for the pipe to close, so an error about a
    /// server that just exited can quote its last words.
    pub(crate) async fn settle(&self, limit: Duration) {
        let mut closed = self.closed.subscribe();
        let _ = tokio::time::timeout(limit, closed.wait_for(|closed| *closed)).await;
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .expect("stderr tail lock")
            .iter()
            .cloned()
            .collect()
    }

    /// The tail as a suffix for error messages, empty when there is none.
    pub(crate) fn describe(&self) -> String {
        let lines = self.lines();
        let last: Vec<&str> = lines
            .iter()
            .rev()
            .take(5)
            .rev()
            .map(String::as_str)
            .collect();
        if last.is_empty() {
            String::new()
        } else {
            format!("; stderr: {}", last.join(" | "))
        }
    }
}

/// A running server process, ended (with its whole group) on drop.
pub(crate) struct ServerProcess {
    child: Mutex<Option<Child>>,
    group: ProcessGroup,
    pid: Option<u32>,
    pub(crate) stderr: Arc<StderrTail>,
}

/// A freshly spawned server and its pipes.
pub(crate) struct Spawned {
    pub(crate) process: ServerProcess,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
}

/// Starts the server in a new process group with all three stdio pipes.
pub(crate) fn spawn(server: &str, config: &StdioConfig) -> std::io::Result<Spawned> {
    let mut command = tokio::process::Command::new(&config.command);
    command
        .args(&config.args)
        .envs(&config.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn()?;
    let pid = child.id();
    let group = ProcessGroup::led_by(pid);
    let missing = |what| std::io::Error::other(format!("the child's {what} was not piped"));
    let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
    let stderr_pipe = child.stderr.take();
    let stderr = Arc::new(StderrTail::default());
    if let Some(pipe) = stderr_pipe {
        let tail = stderr.clone();
        let server = server.to_owned();
        tokio::spawn(async move {
            let mut lines = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "agentkit_mcp::stderr", server = %server, "{line}");
                tail.push(line);
            }
            tail.closed.send_replace(true);
        });
    }
    tracing::debug!(server, pid, command = %config.command, "spawned MCP server");
    Ok(Spawned {
        process: ServerProcess {
            child: Mutex::new(Some(child)),
            group,
            pid,
            stderr,
        },
        stdin,
        stdout,
    })
}

impl ServerProcess {
    /// The process id (and process group id) of the server.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// `true` once the server process has exited.
    pub(crate) fn has_exited(&self) -> bool {
        let mut guard = self.child.lock().expect("child lock");
        match guard.as_mut() {
            Some(child) => !matches!(child.try_wait(), Ok(None)),
            None => true,
        }
    }

    /// The MCP stdio shutdown: the caller has closed stdin; give the server
    /// `grace` to exit, then SIGTERM the group, then SIGKILL it. Never takes
    /// much longer than twice `grace`.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        let Some(mut child) = self.child.lock().expect("child lock").take() else {
            return;
        };
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
        self.group.terminate();
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
        self.group.kill();
        let _ = child.start_kill();
        let _ = tokio::time::timeout(grace, child.wait()).await;
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let child = self.child.get_mut().map(Option::take).unwrap_or_default();
        if let Some(mut child) = child {
            // SIGKILL to the whole group, synchronously: drop may run where
            // no runtime is left to await a graceful exit.
            self.group.kill();
            if let Err(err) = child.start_kill() {
                tracing::debug!(pid = self.pid, %err, "could not kill MCP server");
            }
            // Reap in the background when a runtime is still around.
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
                });
            }
        }
    }
}
