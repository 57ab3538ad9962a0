//! An operating-system sandbox for the commands `shell_exec` runs.
//!
//! Permission policies decide what may run; they cannot see what a program
//! does once it runs (`make` runs anything its Makefile says). So on Linux a
//! command can be started inside a Landlock domain: it may read everything,
//! but write only beneath the workspace and the paths configured here, and,
//! optionally, neither connect nor bind TCP sockets. The process also gets
//! `PR_SET_NO_NEW_PRIVS`, so no set-uid program can lift the restriction,
//! and every process it starts inherits the domain.
//!
//! How it is applied without `unsafe`: Landlock restricts the calling
//! *thread*, and a child inherits the credentials of the thread that forked
//! it. So the command is spawned from a fresh thread that restricts itself,
//! spawns, and exits; the rest of the host process is never restricted.
//! (`pre_exec` would need `unsafe`, which this workspace forbids, and a
//! re-exec helper binary would have to be installed beside every host.)
//!
//! Reads are open by default. [`ShellSandbox::restrict_reads`] limits them
//! to the workspace, the writable paths, the system directories a build
//! needs (`/usr`, `/lib*`, `/bin`, `/etc`, `/opt`, `/sys`, `/dev`, the
//! machine-wide files of `/proc`; not `/tmp`, not `/proc/<pid>`) and the
//! toolchains in the home directory (`~/.rustup`,
//! `~/.cargo/bin`, `registry` and `git`, `~/.gitconfig`), plus what
//! [`ShellSandbox::allow_reads`] adds. Landlock can only allow, never carve
//! out, so the secrets in the home directory ([`SECRET_HOME_PATHS`]:
//! `~/.ssh`, `~/.aws`, `~/.config/gcloud`, `~/.netrc` ...) stay unreadable
//! simply by not being listed, and a path given to `allow_reads` that would
//! expose one of them (the home directory itself, say) is refused and
//! reported.
//!
//! Where the kernel has no Landlock (not Linux, before 5.13, disabled at
//! boot), [`ShellSandbox::when_unavailable`] decides: run unsandboxed and say
//! so in the result (the default), or refuse to run.

use std::path::{Path, PathBuf};

/// The sandbox settings of `shell_exec`; see the module docs.
///
/// ```
/// use agentkit_tool_shell::{ShellConfig, ShellSandbox, WhenUnavailable};
///
/// let sandbox = ShellSandbox::new()
///     .allow_writes(std::env::temp_dir().join("agentkit-cache"))
///     .without_network()
///     .when_unavailable(WhenUnavailable::Refuse);
/// let config = ShellConfig::new(".").with_sandbox(sandbox);
/// assert!(config.sandbox().is_some());
/// ```
#[derive(Clone, Debug)]
pub struct ShellSandbox {
    writable: Vec<PathBuf>,
    /// `Some` once reads are restricted: the extra readable paths.
    readable: Option<Vec<PathBuf>>,
    network: bool,
    when_unavailable: WhenUnavailable,
}

/// Paths under the home directory that hold credentials; with
/// [`ShellSandbox::restrict_reads`] none of them is ever readable.
pub const SECRET_HOME_PATHS: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".docker",
    ".kube",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
];

/// System directories a build reads (those that exist are allowed).
/// Not `/tmp` (other programs' files; a build that uses it needs it
/// writable, which makes it readable) nor all of `/run` (sockets, mounted
/// secrets): only the resolver's directory there, which `/etc/resolv.conf`
/// often links to. Not all of `/proc` either: `/proc/<host pid>/environ`
/// would hand out the host's environment, keys included, even to a
/// sandboxed command (and root reads it whatever the host's dumpable flag);
/// only the machine-wide files that build tools read.
const SYSTEM_READS: &[&str] = &[
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/nix",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys",
    "/sys",
    "/dev",
    "/run/systemd/resolve",
];

/// Toolchain paths under the home directory (those that exist are allowed).
const HOME_TOOLCHAIN_READS: &[&str] = &[
    ".rustup",
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".cargo/config.toml",
    ".cargo/config",
    ".gitconfig",
    ".config/git",
];

/// What `shell_exec` does when the sandbox cannot be applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum WhenUnavailable {
    /// Run without it, and say so in the result the model and host see.
    #[default]
    RunUnsandboxed,
    /// Do not run the command.
    Refuse,
}

impl Default for ShellSandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl ShellSandbox {
    /// Writes allowed beneath the workspace root and to `/dev/null`;
    /// network allowed; runs unsandboxed (and says so) where Landlock is
    /// missing.
    pub fn new() -> Self {
        Self {
            writable: vec![PathBuf::from("/dev/null")],
            readable: None,
            network: true,
            when_unavailable: WhenUnavailable::default(),
        }
    }

    /// Also allows writes beneath `path` (a cache, a temporary directory).
    /// Paths that do not exist when a command starts are skipped.
    pub fn allow_writes(mut self, path: impl Into<PathBuf>) -> Self {
        self.writable.push(path.into());
        self
    }

    /// Limits reads to the workspace, the writable paths, the system
    /// directories and home toolchains a build needs, and the paths given to
    /// [`allow_reads`](Self::allow_reads); the home directory's secrets
    /// ([`SECRET_HOME_PATHS`]) are never readable. See the module docs.
    ///
    /// ```
    /// use agentkit_tool_shell::ShellSandbox;
    ///
    /// let sandbox = ShellSandbox::new().restrict_reads().allow_reads("/srv/datasets");
    /// assert!(sandbox.reads_restricted());
    /// ```
    pub fn restrict_reads(mut self) -> Self {
        self.readable.get_or_insert_with(Vec::new);
        self
    }

    /// Also allows reads beneath `path` (implies
    /// [`restrict_reads`](Self::restrict_reads)). A path that is, or
    /// contains, one of the home directory's secrets is refused when a
    /// command starts, and the result says so.
    pub fn allow_reads(mut self, path: impl Into<PathBuf>) -> Self {
        self.readable.get_or_insert_with(Vec::new).push(path.into());
        self
    }

    /// Whether reads are restricted.
    pub fn reads_restricted(&self) -> bool {
        self.readable.is_some()
    }

    /// Forbids TCP connections and listening sockets (Landlock ABI 4, Linux
    /// 6.7, and later; UDP and Unix sockets are not covered).
    pub fn without_network(mut self) -> Self {
        self.network = false;
        self
    }

    /// Sets what happens where the sandbox cannot be applied.
    pub fn when_unavailable(mut self, when: WhenUnavailable) -> Self {
        self.when_unavailable = when;
        self
    }

    /// The extra writable paths (the workspace root is always writable).
    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    /// Whether network access is left open.
    pub fn network(&self) -> bool {
        self.network
    }

    /// What happens where the sandbox cannot be applied.
    pub fn unavailable_policy(&self) -> WhenUnavailable {
        self.when_unavailable
    }
}

/// How a command ended up being run, reported in the result's metadata
/// (`shell.sandbox`) and, when it matters, in its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SandboxOutcome {
    /// No sandbox was configured.
    Off,
    /// Landlock applied every restriction asked for.
    Enforced,
    /// Landlock applied some restrictions (an older kernel): what is missing.
    Partial(String),
    /// The sandbox could not be applied; the command ran without it.
    Unavailable(String),
}

impl SandboxOutcome {
    /// The metadata value.
    pub(crate) fn label(&self) -> String {
        match self {
            SandboxOutcome::Off => "off".into(),
            SandboxOutcome::Enforced => "landlock".into(),
            SandboxOutcome::Partial(why) => format!("landlock (partial: {why})"),
            SandboxOutcome::Unavailable(why) => format!("unavailable: {why}"),
        }
    }

    /// A line for the model when the command did not run as contained as
    /// configured.
    pub(crate) fn note(&self) -> Option<String> {
        match self {
            SandboxOutcome::Off | SandboxOutcome::Enforced => None,
            SandboxOutcome::Partial(why) => Some(format!("note: the sandbox is partial: {why}")),
            SandboxOutcome::Unavailable(why) => Some(format!(
                "note: the command ran WITHOUT the configured sandbox: {why}"
            )),
        }
    }
}

/// Why a sandboxed command was not started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    /// The sandbox is required and could not be applied.
    #[error("the sandbox is required and cannot be applied: {0}")]
    SandboxRequired(String),
    /// Spawning failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Spawns `command`, inside the sandbox if one is configured.
pub(crate) async fn spawn(
    mut command: tokio::process::Command,
    sandbox: Option<&ShellSandbox>,
    root: &Path,
) -> Result<(tokio::process::Child, SandboxOutcome), SpawnError> {
    let Some(sandbox) = sandbox else {
        return Ok((command.spawn()?, SandboxOutcome::Off));
    };
    let mut writable = vec![root.to_path_buf()];
    writable.extend(sandbox.writable.iter().filter(|p| p.exists()).cloned());
    let reads = sandbox
        .readable
        .as_ref()
        .map(|extra| readable_paths(extra, &home_dir(), &writable));
    let network = sandbox.network;
    let policy = sandbox.when_unavailable;
    let handle = tokio::runtime::Handle::current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    // A fresh thread: it restricts itself, forks the command (which inherits
    // the restriction) and ends, taking the restriction with it.
    std::thread::Builder::new()
        .name("agentkit-sandboxed-spawn".into())
        .spawn(move || {
            let _runtime = handle.enter();
            let (readable, refused) = match &reads {
                Some((readable, refused)) => (Some(readable.as_slice()), refused.as_slice()),
                None => (None, &[][..]),
            };
            let outcome = with_refused(
                restrict_current_thread(&writable, readable, network),
                refused,
            );
            let result = decide(outcome, policy).and_then(|outcome| {
                command
                    .spawn()
                    .map(|child| (child, outcome))
                    .map_err(SpawnError::from)
            });
            let _ = tx.send(result);
        })?;
    rx.await
        .unwrap_or_else(|_| Err(std::io::Error::other("the sandboxed spawn thread died").into()))
}

/// The home directory (`$HOME`), if known.
fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
}

/// Every path a restricted command may read, and the extra paths refused
/// because they would expose a secret of the home directory.
fn readable_paths(
    extra: &[PathBuf],
    home: &Option<PathBuf>,
    writable: &[PathBuf],
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut readable: Vec<PathBuf> = SYSTEM_READS.iter().map(PathBuf::from).collect();
    let secrets: Vec<PathBuf> = match home {
        Some(home) => {
            readable.extend(HOME_TOOLCHAIN_READS.iter().map(|p| home.join(p)));
            if let Some(cargo) = std::env::var_os("CARGO_HOME") {
                let cargo = PathBuf::from(cargo);
                readable.extend(["bin", "registry", "git", "config.toml"].map(|p| cargo.join(p)));
            }
            if let Some(rustup) = std::env::var_os("RUSTUP_HOME") {
                readable.push(PathBuf::from(rustup));
            }
            SECRET_HOME_PATHS.iter().map(|p| home.join(p)).collect()
        }
        None => Vec::new(),
    };
    let mut refused = Vec::new();
    for path in extra {
        if secrets.iter().any(|secret| secret.starts_with(path)) {
            refused.push(path.clone());
        } else {
            readable.push(path.clone());
        }
    }
    // The workspace and the other writable paths are readable anyway; one
    // that holds a secret is reported, since it cannot be hidden.
    refused.extend(
        writable
            .iter()
            .filter(|w| secrets.iter().any(|s| s.starts_with(w) && s.exists()))
            .cloned(),
    );
    readable.retain(|p| p.exists());
    (readable, refused)
}

/// Reports the refused read paths as a partial sandbox.
fn with_refused(outcome: SandboxOutcome, refused: &[PathBuf]) -> SandboxOutcome {
    if refused.is_empty() {
        return outcome;
    }
    let listed: Vec<String> = refused.iter().map(|p| p.display().to_string()).collect();
    let why = format!(
        "{} would expose secrets of the home directory: not readable (or, for a writable \
         path, not hidden)",
        listed.join(", ")
    );
    match outcome {
        SandboxOutcome::Enforced => SandboxOutcome::Partial(why),
        SandboxOutcome::Partial(other) => SandboxOutcome::Partial(format!("{other}; {why}")),
        other => other,
    }
}

/// Whether a command may start after the sandbox came out as `outcome`.
fn decide(outcome: SandboxOutcome, policy: WhenUnavailable) -> Result<SandboxOutcome, SpawnError> {
    match (outcome, policy) {
        (SandboxOutcome::Unavailable(why), WhenUnavailable::Refuse) => {
            Err(SpawnError::SandboxRequired(why))
        }
        (outcome, _) => Ok(outcome),
    }
}

/// Puts the calling thread in a Landlock domain: writes only beneath
/// `writable`, reads only beneath `writable` and `readable` when that is
/// given, and no TCP unless `network`.
#[cfg(target_os = "linux")]
fn restrict_current_thread(
    writable: &[PathBuf],
    readable: Option<&[PathBuf]>,
    network: bool,
) -> SandboxOutcome {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
        path_beneath_rules,
    };
    // The newest ABI whose rights we ask for; older kernels get what they
    // support (best effort), and the status says so.
    let abi = ABI::V7;
    let restrict = || -> Result<landlock::RestrictionStatus, landlock::RulesetError> {
        let handled = match readable {
            Some(_) => AccessFs::from_all(abi),
            None => AccessFs::from_write(abi),
        };
        let mut ruleset = Ruleset::default().handle_access(handled)?;
        if !network {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
        }
        ruleset
            .create()?
            .add_rules(path_beneath_rules(writable, handled))?
            .add_rules(path_beneath_rules(
                readable.unwrap_or_default(),
                AccessFs::from_read(abi),
            ))?
            .restrict_self()
    };
    match restrict() {
        Err(err) => SandboxOutcome::Unavailable(format!("Landlock failed: {err}")),
        Ok(status) => match status.ruleset {
            RulesetStatus::NotEnforced => SandboxOutcome::Unavailable(format!(
                "the kernel does not enforce Landlock ({:?})",
                status.landlock
            )),
            _ if !status.no_new_privs => {
                SandboxOutcome::Partial("PR_SET_NO_NEW_PRIVS was not set".into())
            }
            RulesetStatus::PartiallyEnforced => SandboxOutcome::Partial(format!(
                "the kernel supports only part of what was asked ({:?}){}",
                status.landlock,
                if network {
                    ""
                } else {
                    "; network access may not be restricted"
                }
            )),
            RulesetStatus::FullyEnforced => SandboxOutcome::Enforced,
        },
    }
}

#[cfg(not(target_os = "linux"))]
fn restrict_current_thread(
    _writable: &[PathBuf],
    _readable: Option<&[PathBuf]>,
    _network: bool,
) -> SandboxOutcome {
    SandboxOutcome::Unavailable("Landlock exists only on Linux".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuse_mode_refuses_only_when_the_sandbox_is_missing() {
        let missing = || SandboxOutcome::Unavailable("no Landlock".into());
        let refused = decide(missing(), WhenUnavailable::Refuse).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "the sandbox is required and cannot be applied: no Landlock"
        );
        assert_eq!(
            decide(missing(), WhenUnavailable::RunUnsandboxed).unwrap(),
            missing()
        );
        let partial = SandboxOutcome::Partial("old kernel".into());
        assert_eq!(
            decide(partial.clone(), WhenUnavailable::Refuse).unwrap(),
            partial
        );
        assert_eq!(
            decide(SandboxOutcome::Enforced, WhenUnavailable::Refuse).unwrap(),
            SandboxOutcome::Enforced
        );
    }

    #[test]
    fn outcomes_say_what_the_model_must_know() {
        assert_eq!(SandboxOutcome::Enforced.note(), None);
        assert_eq!(SandboxOutcome::Off.label(), "off");
        let missing = SandboxOutcome::Unavailable("no Landlock".into());
        assert!(missing.note().unwrap().contains("WITHOUT"));
        assert_eq!(missing.label(), "unavailable: no Landlock");
        assert!(
            SandboxOutcome::Partial("old kernel".into())
                .label()
                .starts_with("landlock (partial")
        );
    }
}
