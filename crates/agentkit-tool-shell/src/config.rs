//! `ShellConfig`: where commands run, how long they may take and how much
//! of their output the model gets to see.
//!
//! The defaults suit a coding agent on a developer machine: builds and test
//! runs get two minutes unless the call asks for more, never more than ten,
//! and each stream keeps 16 KiB, which holds a compiler's error report but
//! not a full build log.

use crate::ShellSandbox;
use agentkit_tools_core::resolve_path;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Settings of the shell tool.
///
/// ```
/// use agentkit_tool_shell::ShellConfig;
/// use std::time::Duration;
///
/// let config = ShellConfig::new(std::env::temp_dir())
///     .with_default_timeout(Duration::from_secs(30))
///     .with_max_output_bytes(8 * 1024);
/// assert_eq!(config.default_timeout(), Duration::from_secs(30));
/// ```
#[derive(Clone, Debug)]
pub struct ShellConfig {
    root: PathBuf,
    shell: PathBuf,
    default_timeout: Duration,
    max_timeout: Duration,
    max_output_bytes: usize,
    max_stream_bytes: u64,
    sandbox: Option<ShellSandbox>,
    secret_env: SecretEnv,
}

/// Which inherited variables that look like credentials reach commands.
#[derive(Clone, Debug, Default)]
enum SecretEnv {
    /// Dropped, except these names.
    #[default]
    Drop,
    DropExcept(Vec<String>),
    /// All passed through.
    PassAll,
}

impl ShellConfig {
    /// Default for [`with_default_timeout`](Self::with_default_timeout).
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
    /// Default for [`with_max_timeout`](Self::with_max_timeout).
    pub const DEFAULT_MAX_TIMEOUT: Duration = Duration::from_secs(600);
    /// Default for [`with_max_output_bytes`](Self::with_max_output_bytes): 16 KiB
    /// per stream, so both streams together stay well inside the executor's
    /// default output budget (64 KiB) and its cut never hides the end of
    /// stderr.
    pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 16 * 1024;
    /// Default for [`with_max_stream_bytes`](Self::with_max_stream_bytes):
    /// 256 MiB. Reading more only to drop it wastes the machine's time; a
    /// command that prints this much is stuck in a loop or dumping data.
    pub const DEFAULT_MAX_STREAM_BYTES: u64 = 256 * 1024 * 1024;

    /// Commands run in `root` unless a call names another directory, which is
    /// then taken relative to it. The root is resolved now (symlinks, `..`),
    /// as `CommandPolicy::allow_cwd` resolves its directories.
    pub fn new(root: impl AsRef<Path>) -> Self {
        let root = root.as_ref();
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let root = resolve_path(root, &base).unwrap_or_else(|_| base.join(root));
        Self {
            root,
            shell: PathBuf::from("sh"),
            default_timeout: Self::DEFAULT_TIMEOUT,
            max_timeout: Self::DEFAULT_MAX_TIMEOUT,
            max_output_bytes: Self::DEFAULT_MAX_OUTPUT_BYTES,
            max_stream_bytes: Self::DEFAULT_MAX_STREAM_BYTES,
            sandbox: None,
            secret_env: SecretEnv::default(),
        }
    }

    /// The shell that runs the command line as `SHELL -c LINE`; `sh` (found
    /// on `PATH`) by default.
    pub fn with_shell(mut self, shell: impl Into<PathBuf>) -> Self {
        self.shell = shell.into();
        self
    }

    /// The timeout of calls that set none. Capped by the maximum.
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The longest timeout a call may ask for.
    pub fn with_max_timeout(mut self, timeout: Duration) -> Self {
        self.max_timeout = timeout.max(Duration::from_secs(1));
        self
    }

    /// How many bytes of stdout, and separately of stderr, are kept. Longer
    /// output keeps its beginning and its end (where errors and summaries
    /// usually are) with a marker for what was left out.
    pub fn with_max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes.max(2);
        self
    }

    /// How many bytes a command may print, stdout and stderr together,
    /// before its process group is killed (the kept head and tail are
    /// reported as for a timeout). Memory never depends on it: only
    /// [`max_output_bytes`](Self::max_output_bytes) per stream is kept.
    pub fn with_max_stream_bytes(mut self, bytes: u64) -> Self {
        self.max_stream_bytes = bytes.max(1);
        self
    }

    /// Runs every command inside an OS sandbox (Landlock on Linux): writes
    /// only beneath the root and the sandbox's paths, optionally no network.
    /// Off unless set; see [`ShellSandbox`].
    pub fn with_sandbox(mut self, sandbox: ShellSandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Lets the inherited variable `name` reach commands although its name
    /// looks like a credential (see [`is_secret_env`](Self::is_secret_env)):
    /// say `GITHUB_TOKEN` for an agent that should push.
    ///
    /// ```
    /// use agentkit_tool_shell::ShellConfig;
    ///
    /// let config = ShellConfig::new(".").pass_secret_env("GITHUB_TOKEN");
    /// assert!(config.drops_env("OPENAI_API_KEY"));
    /// assert!(!config.drops_env("GITHUB_TOKEN"));
    /// assert!(!config.drops_env("PATH"));
    /// ```
    pub fn pass_secret_env(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.secret_env = match self.secret_env {
            SecretEnv::Drop => SecretEnv::DropExcept(vec![name]),
            SecretEnv::DropExcept(mut names) => {
                names.push(name);
                SecretEnv::DropExcept(names)
            }
            SecretEnv::PassAll => SecretEnv::PassAll,
        };
        self
    }

    /// Lets every inherited variable reach commands, credentials included
    /// (the host's own environment is then the model's to read).
    pub fn pass_all_env(mut self) -> Self {
        self.secret_env = SecretEnv::PassAll;
        self
    }

    /// Whether the inherited variable `name` is removed from commands'
    /// environments: it looks like a credential and was not let through.
    pub fn drops_env(&self, name: &str) -> bool {
        match &self.secret_env {
            SecretEnv::PassAll => false,
            SecretEnv::Drop => Self::is_secret_env(name),
            SecretEnv::DropExcept(names) => {
                Self::is_secret_env(name) && !names.iter().any(|n| n == name)
            }
        }
    }

    /// Whether a variable name looks like it holds a credential: it
    /// contains (case-insensitively) `API_KEY`, `APIKEY`, `TOKEN`,
    /// `SECRET`, `PASSWORD`, `PASSWD`, `CREDENTIAL`, `PRIVATE_KEY`,
    /// `ACCESS_KEY`, `SESSION_KEY` or `AUTH_KEY`, or is one of a few
    /// well-known names without those words (`PGPASS`..., see the source).
    /// Credentials in other variables are the host's to drop.
    pub fn is_secret_env(name: &str) -> bool {
        const WORDS: &[&str] = &[
            "API_KEY",
            "APIKEY",
            "TOKEN",
            "SECRET",
            "PASSWORD",
            "PASSWD",
            "CREDENTIAL",
            "PRIVATE_KEY",
            "ACCESS_KEY",
            "SESSION_KEY",
            "AUTH_KEY",
        ];
        const NAMES: &[&str] = &["PGPASS", "MYSQL_PWD", "NETRC", "DATABASE_URL"];
        let upper = name.to_ascii_uppercase();
        WORDS.iter().any(|word| upper.contains(word)) || NAMES.contains(&upper.as_str())
    }

    /// The sandbox, when one is configured.
    pub fn sandbox(&self) -> Option<&ShellSandbox> {
        self.sandbox.as_ref()
    }

    /// The resolved root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The shell program.
    pub fn shell(&self) -> &Path {
        &self.shell
    }

    /// The timeout of calls that set none (never above the maximum).
    pub fn default_timeout(&self) -> Duration {
        self.default_timeout.min(self.max_timeout)
    }

    /// The longest timeout a call may ask for.
    pub fn max_timeout(&self) -> Duration {
        self.max_timeout
    }

    /// The byte budget of each stream.
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_bytes
    }

    /// How much a command may print before it is killed.
    pub fn max_stream_bytes(&self) -> u64 {
        self.max_stream_bytes
    }
}
