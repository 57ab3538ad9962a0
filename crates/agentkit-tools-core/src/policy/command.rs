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
use super::shell::{ShellWord, parse_command_line};
use crate::{ApprovalReason, PermissionDenial, PermissionPayload, PermissionPolicy};
use crate::{PermissionRequest, PolicyMatch, ShellCommand};
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
        findings
    }

    fn check_env(&self, key: &str, findings: &mut Findings) {
        if findings.denial.is_none() && self.denied_env.contains(key) {
            findings.denial = Some(format!("setting the environment variable {key} is denied"));
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
            if privileged && !self.allowed.contains(name) {
                findings
                    .unsure
                    .push(format!("`{name}` is not an allowed program"));
            }
            let rest = self.runner_target(name, value_options, args, findings);
            if rest.is_empty() {
                // `env` alone prints the environment; `time` alone is a no-op.
                if !privileged && !self.allowed.contains(name) {
                    findings
                        .unsure
                        .push(format!("`{name}` is not an allowed program"));
                }
                return;
            }
            self.check_words(rest, depth, findings);
            return;
        }
        if !self.allowed.contains(name) {
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
