//! `CommandPolicy`: which programs a shell command line may start.
//!
//! The line is read with the [shell reader](super::parse_command_line), so
//! chained commands, substitutions and subshells are each judged. The policy
//! then looks through the ways a program is commonly started by another:
//! `sh -c '...'` (and `bash -lc`, `eval`) are read again as command lines,
//! and runners such as `env`, `time`, `nice`, `timeout`, `xargs` or `exec`
//! pass judgement to the program they run. Those shells and runners are
//! checked against the deny list but need not be allowed themselves, since
//! what they run is judged. Privilege changers (`sudo`, `doas`) are looked
//! through as well, but must be allowed explicitly.
//!
//! `find -exec` actions are judged as commands too. A shell that reads its
//! script from a file or standard input (`curl x | sh`) always needs
//! approval: what it will run is not in the line.
//!
//! Programs are matched by their file name, so `/usr/bin/rm` is `rm`. A
//! program whose name the shell would compute (`$TOOL`, `$(which x)`) cannot
//! be judged and needs approval; so does a line the reader cannot parse.
//! Programs that run other programs in their own ways (`ssh host cmd`,
//! `make`, `python -c`, `git` aliases) are only as safe as allowing them:
//! allow them knowingly.

use super::path::resolve_path;
use super::shell::{RedirectKind, ShellRedirect, ShellWord, parse_command_line};
use crate::{ApprovalReason, PermissionDenial, PermissionPayload, PermissionPolicy};
use crate::{FileSystemOperation, PermissionRequest, PolicyMatch, ShellCommand};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `sh -c` inside `sh -c` inside ... is followed this deep.
const MAX_SCRIPT_DEPTH: usize = 8;

/// Shells whose `-c` argument is a command line of its own.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "busybox"];

/// Programs that run another program given in their arguments, with the
/// options of each that take a separate value.
const RUNNERS: &[(&str, &[&str])] = &[
    ("env", &["-u", "--unset", "-C", "--chdir"]),
    ("exec", &["-a"]),
    ("command", &[]),
    ("builtin", &[]),
    ("nohup", &[]),
    ("time", &["-f", "--format", "-o", "--output"]),
    ("nice", &["-n", "--adjustment"]),
    ("timeout", &["-s", "--signal", "-k", "--kill-after"]),
    ("stdbuf", &["-i", "-o", "-e"]),
    (
        "xargs",
        &[
            "-I",
            "-n",
            "-L",
            "-P",
            "-s",
            "-d",
            "-E",
            "-a",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
        ],
    ),
    (
        "sudo",
        &[
            "-u", "--user", "-g", "--group", "-C", "-D", "-h", "-p", "-r", "-t", "-U",
        ],
    ),
    ("doas", &["-u", "-C"]),
];

/// Runners that change who runs the program: looked through, but never
/// transparent.
const PRIVILEGED_RUNNERS: &[&str] = &["sudo", "doas"];

/// Environment variables that change which program runs or what it loads:
/// setting one needs approval, whatever `deny_env_keys` says (a denial there
/// still wins). Names starting with one of [`SENSITIVE_ENV_PREFIXES`] count
/// too.
pub const SENSITIVE_ENV_KEYS: &[&str] = &[
    // Which program a name runs, and what the shell runs on its own.
    "PATH",
    "CDPATH",
    "IFS",
    "ENV",
    "BASH_ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "GLOBIGNORE",
    "HOME",
    // What the dynamic loader and libc load into every program.
    "GCONV_PATH",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    "MALLOC_CONF",
    // Interpreters' and tools' hooks that run code.
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PERL5LIB",
    "PERL5OPT",
    "PERLLIB",
    "RUBYLIB",
    "RUBYOPT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_EDITOR",
    "GIT_PAGER",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTDOCFLAGS",
    "RUSTFLAGS",
    "CC",
    "CXX",
    "LD",
    "MAKEFLAGS",
    "NPM_CONFIG_SCRIPT_SHELL",
    "CARGO_HOME",
    "CARGO_BUILD_RUSTC",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_RUSTDOC",
];

/// Prefixes of [`SENSITIVE_ENV_KEYS`]: the loader's (`LD_PRELOAD`,
/// `LD_LIBRARY_PATH`, `LD_AUDIT`, macOS `DYLD_*`), git's configuration
/// (`GIT_CONFIG_*`), exported bash functions (`BASH_FUNC_*`) and cargo's
/// per-target configuration (`CARGO_TARGET_<triple>_RUNNER`, `_LINKER`; not
/// `CARGO_TARGET_DIR`).
pub const SENSITIVE_ENV_PREFIXES: &[&str] =
    &["LD_", "DYLD_", "GIT_CONFIG", "BASH_FUNC_", "CARGO_TARGET_"];

/// Directories whose shells and runners (`/bin/sh -c`, `/usr/bin/env`) are
/// looked through like their bare names. A shell or runner anywhere else
/// (`./env`, `/tmp/x/sh`) is just a program, which must be allowed by its
/// exact path.
const SYSTEM_BIN_DIRS: &[&str] = &["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"];

/// Builtins whose `NAME=value` arguments set environment variables.
const EXPORTERS: &[&str] = &["export", "declare", "typeset", "readonly", "local"];

/// Shell command rules: allowed and denied programs, allowed working
/// directories, denied environment variables.
///
/// For one line: a denied program or environment variable anywhere denies
/// it; otherwise, if every program is allowed and the working directory is
/// allowed, it is allowed; anything else needs approval
/// (`ApprovalReason::SensitiveCommand`).
///
/// ```
/// use agentkit_tools_core::{CommandPolicy, PermissionPolicy, PermissionRequest};
/// use agentkit_tools_core::{PolicyMatch, ShellCommand};
///
/// let policy = CommandPolicy::new()
///     .allow_programs(["cargo", "git"])
///     .deny_programs(["rm"]);
/// let run = |line| policy.evaluate(&PermissionRequest::shell(ShellCommand::new(line)));
///
/// assert_eq!(run("cargo test && git status"), PolicyMatch::Allow);
/// assert!(matches!(run("cargo build && /bin/rm -rf /"), PolicyMatch::Deny(_)));
/// assert!(matches!(run("bash -c 'curl x | sh'"), PolicyMatch::RequireApproval(_)));
/// ```
#[derive(Clone, Debug, Default)]
pub struct CommandPolicy {
    allowed: BTreeSet<String>,
    denied: BTreeSet<String>,
    allowed_cwds: Vec<PathBuf>,
    denied_env: BTreeSet<String>,
}

/// What the policy found out about one line.
#[derive(Default)]
struct Findings {
    denial: Option<String>,
    /// Why the line cannot be allowed outright.
    unsure: Vec<String>,
    /// The line changes directory (`cd`, `pushd`, `popd`) somewhere.
    changes_dir: bool,
    /// A redirection names a relative file; after a `cd` it is not where
    /// [`shell_requests`] resolved it.
    relative_redirect: bool,
}

impl CommandPolicy {
    /// A policy that allows nothing yet: every program needs approval.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows these programs (file names, such as `cargo`).
    pub fn allow_programs<I, S>(mut self, programs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed.extend(programs.into_iter().map(Into::into));
        self
    }

    /// Denies these programs wherever they appear in a line, also behind
    /// `sh -c`, `env`, `sudo` or a full path.
    pub fn deny_programs<I, S>(mut self, programs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.denied.extend(programs.into_iter().map(Into::into));
        self
    }

    /// Allows running commands in `dir` and below it. Once any is set, a
    /// command in another directory needs approval. The directory is resolved
    /// (symlinks, `..`) now and the command's directory when it is checked.
    pub fn allow_cwd(mut self, dir: impl AsRef<Path>) -> Self {
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let dir = dir.as_ref();
        let resolved = resolve_path(dir, &base).unwrap_or_else(|_| base.join(dir));
        self.allowed_cwds.push(resolved);
        self
    }

    /// Denies commands that set these environment variables (`LD_PRELOAD`,
    /// `PATH`), whether through the request's environment, `NAME=value` in
    /// front of a command, `env` or `export`.
    pub fn deny_env_keys<I, S>(mut self, keys: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.denied_env.extend(keys.into_iter().map(Into::into));
        self
    }

    fn judge(&self, command: &ShellCommand) -> Findings {
        let mut findings = Findings::default();
        for key in &command.env_keys {
            self.check_env(key, &mut findings);
        }
        if !self.allowed_cwds.is_empty() {
            self.check_cwd(command.cwd.as_deref(), &mut findings);
        }
        self.check_script(&command.command_line, 0, &mut findings);
        if findings.changes_dir && findings.relative_redirect {
            findings.unsure.push(
                "the line changes directory and redirects to a relative path: \
                 where it writes cannot be known in advance"
                    .into(),
            );
        }
        findings
    }

    fn check_env(&self, key: &str, findings: &mut Findings) {
        if findings.denial.is_none() && self.denied_env.contains(key) {
            findings.denial = Some(format!("setting the environment variable {key} is denied"));
        } else if is_sensitive_env(key) {
            findings
                .unsure
                .push(format!("setting {key} changes what the command runs"));
        }
    }

    fn check_cwd(&self, cwd: Option<&Path>, findings: &mut Findings) {
        let Ok(base) = std::env::current_dir() else {
            findings
                .unsure
                .push("the working directory is unknown".into());
            return;
        };
        let dir = cwd.unwrap_or(&base);
        match resolve_path(dir, &base) {
            Ok(resolved) if self.allowed_cwds.iter().any(|d| resolved.starts_with(d)) => {}
            Ok(resolved) => findings.unsure.push(format!(
                "working directory {} is not an allowed one",
                resolved.display()
            )),
            Err(err) => findings
                .unsure
                .push(format!("cannot resolve the working directory: {err}")),
        }
    }

    fn check_script(&self, script: &str, depth: usize, findings: &mut Findings) {
        if depth > MAX_SCRIPT_DEPTH {
            findings.unsure.push("shells nest too deeply".into());
            return;
        }
        match parse_command_line(script) {
            Ok(commands) => {
                for command in &commands {
                    for name in &command.assignments {
                        self.check_env(name, findings);
                    }
                    if command
                        .program()
                        .is_some_and(|p| matches!(p.text.as_str(), "cd" | "pushd" | "popd"))
                    {
                        findings.changes_dir = true;
                    }
                    for redirect in &command.redirects {
                        if !redirect.target.text.starts_with('/') {
                            findings.relative_redirect = true;
                        }
                        if redirect.target.expands {
                            findings.unsure.push(format!(
                                "the redirection target `{}` is computed at run time",
                                redirect.target.text
                            ));
                        }
                    }
                    self.check_words(&command.words, depth, findings);
                }
            }
            Err(err) => findings
                .unsure
                .push(format!("cannot parse `{script}`: {err}")),
        }
    }

    /// Judges one command's program, and the program it starts if it is a
    /// shell or a runner.
    fn check_words(&self, words: &[ShellWord], depth: usize, findings: &mut Findings) {
        let Some(program) = words.first() else {
            return;
        };
        let shown = || {
            let words: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
            words.join(" ")
        };
        if program.expands {
            findings.unsure.push(format!(
                "the program in `{}` is computed at run time",
                shown()
            ));
            return;
        }
        let name = basename(&program.text);
        // Shells and runners are looked through only when they are what
        // their name says: a bare name or a system directory.
        let genuine = !program.text.contains('/')
            || Path::new(&program.text)
                .parent()
                .is_some_and(|dir| SYSTEM_BIN_DIRS.iter().any(|d| Path::new(d) == dir));
        let allowed = self.allowed.contains(program.text.as_str());
        if self.denied.contains(name) {
            findings
                .denial
                .get_or_insert(format!("`{name}` is a denied program (in `{}`)", shown()));
            return;
        }
        let args = &words[1..];
        if EXPORTERS.contains(&name) {
            for arg in args {
                if let Some((key, _)) = arg.text.split_once('=') {
                    self.check_env(key, findings);
                }
            }
        }
        if !genuine {
            if !allowed {
                findings.unsure.push(format!(
                    "`{}` is not an allowed program (only bare names and exact paths match)",
                    program.text
                ));
            }
            return;
        }
        if SHELLS.contains(&name) {
            match shell_script(args) {
                Some(Some(script)) if !script.expands => {
                    self.check_script(&script.text, depth + 1, findings)
                }
                Some(_) => findings.unsure.push(format!(
                    "the script of `{}` is computed at run time",
                    shown()
                )),
                // A shell reading a file or standard input (`curl x | sh`,
                // `bash <<EOF`) runs commands this line does not show, even
                // if the shell itself is on the allow list.
                None => findings.unsure.push(format!(
                    "`{}` runs a script the line does not show",
                    shown()
                )),
            }
            return;
        }
        if name == "find" {
            self.check_find_actions(args, depth, findings);
        }
        if name == "eval" {
            if args.iter().any(|a| a.expands) {
                findings
                    .unsure
                    .push(format!("`{}` evaluates text computed at run time", shown()));
            } else {
                let script: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
                self.check_script(&script.join(" "), depth + 1, findings);
            }
            return;
        }
        if let Some((_, value_options)) = RUNNERS.iter().find(|(runner, _)| *runner == name) {
            let privileged = PRIVILEGED_RUNNERS.contains(&name);
            if privileged && !allowed {
                findings
                    .unsure
                    .push(format!("`{name}` is not an allowed program"));
            }
            let rest = self.runner_target(name, value_options, args, findings);
            if rest.is_empty() {
                // `env` alone prints the environment; `time` alone is a no-op.
                if !privileged && !allowed {
                    findings
                        .unsure
                        .push(format!("`{name}` is not an allowed program"));
                }
                return;
            }
            self.check_words(rest, depth, findings);
            return;
        }
        if !allowed {
            findings
                .unsure
                .push(format!("`{name}` is not an allowed program"));
        }
    }

    /// `find ... -exec prog args ;` runs `prog` once per file: judge it like
    /// any other command (`find` itself still has to be allowed).
    fn check_find_actions(&self, args: &[ShellWord], depth: usize, findings: &mut Findings) {
        let mut rest = args;
        while let Some(start) = rest
            .iter()
            .position(|a| matches!(a.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))
        {
            let action = &rest[start + 1..];
            let end = action
                .iter()
                .position(|a| a.text == ";" || a.text == "+")
                .unwrap_or(action.len());
            self.check_words(&action[..end], depth, findings);
            rest = action.get(end + 1..).unwrap_or(&[]);
        }
        if args.iter().any(|a| a.text == "-delete") && self.denied.contains("rm") {
            findings
                .denial
                .get_or_insert("`find -delete` removes files, and `rm` is denied".into());
        }
    }

    /// The words of the program a runner starts: its options, their values,
    /// `env`'s assignments and `timeout`'s duration skipped.
    fn runner_target<'w>(
        &self,
        runner: &str,
        value_options: &[&str],
        args: &'w [ShellWord],
        findings: &mut Findings,
    ) -> &'w [ShellWord] {
        let mut index = 0;
        let mut positional_skipped = false;
        while let Some(arg) = args.get(index) {
            let text = arg.text.as_str();
            if text == "--" {
                index += 1;
                break;
            }
            if text.starts_with('-') && text.len() > 1 {
                index += if value_options.contains(&text) { 2 } else { 1 };
                continue;
            }
            if runner == "env"
                && let Some((key, _)) = text.split_once('=')
            {
                self.check_env(key, findings);
                index += 1;
                continue;
            }
            if runner == "timeout" && !positional_skipped {
                positional_skipped = true;
                index += 1;
                continue;
            }
            break;
        }
        args.get(index..).unwrap_or(&[])
    }
}

/// The `-c` script of a shell invocation: `None` if the shell has no `-c`
/// (it runs a file or reads standard input), `Some(None)` if `-c` has no
/// argument.
fn shell_script(args: &[ShellWord]) -> Option<Option<&ShellWord>> {
    let mut takes_script = false;
    for (index, arg) in args.iter().enumerate() {
        let text = arg.text.as_str();
        if text == "--" {
            return takes_script.then(|| args.get(index + 1));
        }
        // Short options may be clustered: `-lc`, `-ec`, `-xc`.
        let short_cluster = (text.starts_with('-') || text.starts_with('+'))
            && !text.starts_with("--")
            && text.len() > 1;
        if short_cluster {
            if text[1..].contains('c') {
                takes_script = true;
            }
            continue;
        }
        if text.starts_with("--") {
            continue;
        }
        return takes_script.then_some(Some(arg));
    }
    takes_script.then_some(None)
}

fn is_sensitive_env(key: &str) -> bool {
    key != "CARGO_TARGET_DIR"
        && (SENSITIVE_ENV_KEYS.contains(&key)
            || SENSITIVE_ENV_PREFIXES.iter().any(|p| key.starts_with(p)))
}

/// Redirection targets that are not files anyone could harm: the null
/// device and the process's own streams.
const HARMLESS_TARGETS: &[&str] = &[
    "/dev/null",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
];

/// Every permission request of running `command` through a shell: the
/// `shell.command` request itself, then a `filesystem.read` or
/// `filesystem.write` request for each file a redirection in the line reads
/// or writes (`ls > /etc/passwd`, `cat <<EOF > notes.md`, `sort < data`),
/// also inside `sh -c '...'` and `eval`, resolved against the command's
/// working directory (the process's when unset). A `PathPolicy` then judges
/// those paths like any tool's. Targets the shell would compute
/// (`> ~/.bashrc`) are left to [`CommandPolicy`], which asks about them;
/// `/dev/null` and the standard streams are skipped.
///
/// ```
/// use agentkit_tools_core::{PermissionPayload, ShellCommand, FileSystemOperation};
/// use agentkit_tools_core::policy::shell_requests;
///
/// let mut command = ShellCommand::new("echo hi > notes.txt 2>/dev/null");
/// command.cwd = Some("/work".into());
/// let requests = shell_requests(command);
/// assert_eq!(requests[0].kind, "shell.command");
/// assert_eq!(
///     requests[1].payload,
///     PermissionPayload::FileSystem(FileSystemOperation::Write { path: "/work/notes.txt".into() })
/// );
/// assert_eq!(requests.len(), 2);
/// ```
pub fn shell_requests(command: ShellCommand) -> Vec<PermissionRequest> {
    let base = command
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut redirects = Vec::new();
    collect_redirects(&command.command_line, 0, &mut redirects);
    let mut requests = vec![PermissionRequest::shell(command)];
    for redirect in redirects {
        if redirect.target.expands || HARMLESS_TARGETS.contains(&redirect.target.text.as_str()) {
            continue;
        }
        if redirect.target.text.starts_with("/dev/fd/") {
            continue;
        }
        let path = base.join(&redirect.target.text);
        let operation = match redirect.kind {
            RedirectKind::Read => FileSystemOperation::Read { path },
            _ => FileSystemOperation::Write { path },
        };
        let request = PermissionRequest::filesystem(operation);
        if !requests.contains(&request) {
            requests.push(request);
        }
    }
    requests
}

/// The redirections of a line and of the scripts it hands to nested shells
/// (`sh -c`, also behind runners such as `env` or `sudo`) and `eval`.
fn collect_redirects(script: &str, depth: usize, out: &mut Vec<ShellRedirect>) {
    if depth > MAX_SCRIPT_DEPTH {
        return;
    }
    let Ok(commands) = parse_command_line(script) else {
        return;
    };
    for command in commands {
        out.extend(command.redirects);
        let words = &command.words;
        for (index, word) in words.iter().enumerate() {
            let name = basename(&word.text);
            if SHELLS.contains(&name)
                && let Some(Some(inner)) = shell_script(&words[index + 1..])
                && !inner.expands
            {
                collect_redirects(&inner.text, depth + 1, out);
            }
            if name == "eval" && words[index + 1..].iter().all(|w| !w.expands) {
                let inner: Vec<&str> = words[index + 1..].iter().map(|w| w.text.as_str()).collect();
                collect_redirects(&inner.join(" "), depth + 1, out);
            }
        }
    }
}

fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

impl PermissionPolicy for CommandPolicy {
    fn evaluate(&self, request: &PermissionRequest) -> PolicyMatch {
        let PermissionPayload::Shell(command) = &request.payload else {
            return PolicyMatch::NoOpinion;
        };
        let findings = self.judge(command);
        if let Some(message) = findings.denial {
            return PolicyMatch::Deny(PermissionDenial {
                request_kind: request.kind.clone(),
                message,
            });
        }
        if findings.unsure.is_empty() {
            PolicyMatch::Allow
        } else {
            tracing::debug!(
                line = %command.command_line,
                reasons = ?findings.unsure,
                "shell command needs approval"
            );
            PolicyMatch::RequireApproval(ApprovalReason::SensitiveCommand)
        }
    }
}
