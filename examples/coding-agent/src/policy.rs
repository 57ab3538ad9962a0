//! What the agent may do unasked, and the session's "always" answers.
//!
//! Reading and listing inside the workspace are allowed; changing files
//! there needs approval; `.git` is off limits; paths outside the workspace
//! need approval. Shell commands need approval unless they only look around
//! (`ls`, `cat`, `grep` ...). MCP calls need approval.
//!
//! When the user answers `[a]lways`, the request's *key* joins the session
//! allow-list and the same kind of request is allowed from then on: the key
//! is the request kind and the reason it needed approval, plus the program
//! for shell commands and the server for MCP calls. So "always" for
//! `python3 -m unittest` allows later `python3` commands, not `rm`, and
//! "always" for a write inside the workspace does not allow writes outside
//! it.
//!
//! An [`ApprovalMode`] answers some requests without a person: `auto-edit`
//! approves changes to files inside the workspace, `full-auto` everything
//! that stays inside the workspace (shell commands run in the Landlock
//! sandbox, which confines their writes to it). `exec` mode and ACP
//! sessions choose one; the terminal asks.

use agentkit_tools_core::{
    ApprovalReason, ApprovalRequest, CommandPolicy, CompositePermissionChecker,
    FileSystemOperation, PathPolicy, PermissionChecker, PermissionDecision, PermissionPayload,
    PermissionPolicy, PermissionRequest, PolicyMatch, policy::parse_command_line,
};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The approval metadata entry that carries the allow-list key. It is the
/// ACP server's "allow always" scope too, so an editor's answer covers
/// what the terminal's does.
pub const ALWAYS_KEY: &str = agentkit_acp::ALWAYS_SCOPE;

/// Programs that only look around; they run without asking.
const LOOK_AROUND: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "pwd", "echo", "sort", "uniq", "diff",
    "file", "stat", "tree",
];

/// Which approval requests are answered without asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApprovalMode {
    /// Every request is asked (in `exec` mode, where nobody can answer,
    /// it is denied).
    #[default]
    Ask,
    /// Changes to files inside the workspace are approved.
    AutoEdit,
    /// Everything inside the workspace is approved: file changes, shell
    /// commands (sandboxed), MCP calls. Paths outside it are still asked.
    FullAuto,
}

impl ApprovalMode {
    /// Every mode, in order of trust.
    pub const ALL: [ApprovalMode; 3] = [Self::Ask, Self::AutoEdit, Self::FullAuto];

    /// The mode's name on the command line and over ACP.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::AutoEdit => "auto-edit",
            Self::FullAuto => "full-auto",
        }
    }

    /// The mode called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.name() == name)
    }

    /// What the mode lets through, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Ask => "ask before every change and command",
            Self::AutoEdit => "edit files in the workspace without asking; ask before commands",
            Self::FullAuto => {
                "edit files and run sandboxed commands in the workspace without asking"
            }
        }
    }

    /// `true` when the mode approves `request` without asking.
    pub fn approves(self, request: &ApprovalRequest) -> bool {
        let in_workspace_edit = request.request_kind.starts_with("filesystem.")
            && request.reason == ApprovalReason::PolicyRequiresConfirmation;
        match self {
            Self::Ask => false,
            Self::AutoEdit => in_workspace_edit,
            Self::FullAuto => !matches!(
                request.reason,
                ApprovalReason::SensitivePath | ApprovalReason::SensitiveAuthScope
            ),
        }
    }
}

/// Asks before any filesystem change.
struct AskBeforeChanges;

impl PermissionPolicy for AskBeforeChanges {
    fn evaluate(&self, request: &PermissionRequest) -> PolicyMatch {
        match &request.payload {
            PermissionPayload::FileSystem(
                FileSystemOperation::Read { .. } | FileSystemOperation::List { .. },
            ) => PolicyMatch::NoOpinion,
            PermissionPayload::FileSystem(_) => {
                PolicyMatch::RequireApproval(ApprovalReason::PolicyRequiresConfirmation)
            }
            _ => PolicyMatch::NoOpinion,
        }
    }
}

/// The session's allow-list, shared with the approval prompt.
#[derive(Clone, Debug, Default)]
pub struct SessionAllowList {
    keys: Arc<Mutex<BTreeSet<String>>>,
}

impl SessionAllowList {
    /// Allows requests with this key for the rest of the session.
    pub fn add(&self, key: impl Into<String>) {
        self.lock().insert(key.into());
    }

    /// `true` if the key was allowed.
    pub fn contains(&self, key: &str) -> bool {
        self.lock().contains(key)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The agent's permission checker: the workspace rules, then the session
/// allow-list.
pub struct CodingPolicy {
    rules: CompositePermissionChecker,
    always: SessionAllowList,
}

impl CodingPolicy {
    /// Rules for `workspace`, with `always` as the session allow-list.
    pub fn new(workspace: &Path, always: SessionAllowList) -> Self {
        let paths = PathPolicy::new()
            .with_base_dir(workspace)
            .with_allowed_root(workspace)
            .with_protected_root(workspace.join(".git"));
        let commands = CommandPolicy::new()
            .allow_cwd(workspace)
            .allow_programs(LOOK_AROUND.iter().copied());
        let rules = CompositePermissionChecker::new()
            .with_policy(paths)
            .with_policy(AskBeforeChanges)
            .with_policy(commands);
        Self { rules, always }
    }
}

impl PermissionChecker for CodingPolicy {
    fn evaluate(&self, request: &PermissionRequest) -> PermissionDecision {
        match self.rules.evaluate(request) {
            PermissionDecision::RequireApproval(mut approval) => {
                let key = always_key(request, &approval.reason);
                if self.always.contains(&key) {
                    return PermissionDecision::Allow;
                }
                approval
                    .metadata
                    .insert(agentkit_acp::ALWAYS_LABEL.into(), describe_key(&key).into());
                approval.metadata.insert(ALWAYS_KEY.into(), key.into());
                PermissionDecision::RequireApproval(approval)
            }
            other => other,
        }
    }
}

/// The allow-list key of a request that needed approval for `reason`.
fn always_key(request: &PermissionRequest, reason: &ApprovalReason) -> String {
    let detail = match &request.payload {
        PermissionPayload::Shell(command) => parse_command_line(&command.command_line)
            .ok()
            .and_then(|commands| {
                let programs: Vec<String> = commands
                    .iter()
                    .filter_map(|c| c.program().map(|p| p.text.clone()))
                    .collect();
                (!programs.is_empty()).then(|| programs.join(","))
            })
            .unwrap_or_else(|| command.command_line.clone()),
        PermissionPayload::Mcp(operation) => operation.server().to_owned(),
        _ => String::new(),
    };
    format!("{}:{reason:?}:{detail}", request.kind)
}

/// An allow-list key in words: `shell.command python3`,
/// `filesystem.write in the workspace`.
pub fn describe_key(key: &str) -> String {
    let mut parts = key.splitn(3, ':');
    let kind = parts.next().unwrap_or_default();
    let reason = parts.next().unwrap_or_default();
    let detail = parts.next().unwrap_or_default();
    let place = match reason {
        "PolicyRequiresConfirmation" if kind.starts_with("filesystem.") => " in the workspace",
        "SensitivePath" => " outside the workspace",
        _ => "",
    };
    let what = match kind {
        "shell.command" => format!("`{}` commands", detail.replace(',', "`, `")),
        _ if detail.is_empty() => kind.to_owned(),
        _ => format!("{kind} on {detail}"),
    };
    format!("{what}{place}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_tools_core::ShellCommand;

    /// The approval request `policy` makes for `request`.
    fn approval(policy: &CodingPolicy, request: &PermissionRequest) -> ApprovalRequest {
        match policy.evaluate(request) {
            PermissionDecision::RequireApproval(approval) => ApprovalRequest {
                task_id: None,
                call_id: None,
                id: agentkit_core::ApprovalId::new("a1"),
                request_kind: request.kind.clone(),
                reason: approval.reason,
                summary: String::new(),
                metadata: approval.metadata,
            },
            other => panic!("{request:?} needs no approval: {other:?}"),
        }
    }

    #[test]
    fn modes_approve_what_they_say() {
        let dir = std::env::temp_dir();
        let policy = CodingPolicy::new(&dir, SessionAllowList::default());
        let write_inside = approval(
            &policy,
            &PermissionRequest::filesystem(FileSystemOperation::Write {
                path: dir.join("a.txt"),
            }),
        );
        let write_outside = approval(
            &policy,
            &PermissionRequest::filesystem(FileSystemOperation::Write {
                path: "/elsewhere/a.txt".into(),
            }),
        );
        let command = approval(&policy, &shell("python3 -m unittest", &dir));
        // (request, ask, auto-edit, full-auto)
        let table = [
            (&write_inside, false, true, true),
            (&command, false, false, true),
            (&write_outside, false, false, false),
        ];
        for (request, ask, edit, full) in table {
            assert_eq!(ApprovalMode::Ask.approves(request), ask, "{request:?}");
            assert_eq!(
                ApprovalMode::AutoEdit.approves(request),
                edit,
                "{request:?}"
            );
            assert_eq!(
                ApprovalMode::FullAuto.approves(request),
                full,
                "{request:?}"
            );
        }
        for mode in ApprovalMode::ALL {
            assert_eq!(ApprovalMode::from_name(mode.name()), Some(mode));
        }
        assert_eq!(ApprovalMode::from_name("yolo"), None);
    }

    fn shell(line: &str, workspace: &Path) -> PermissionRequest {
        let mut command = ShellCommand::new(line);
        command.cwd = Some(workspace.to_path_buf());
        PermissionRequest::shell(command)
    }

    #[test]
    fn rules_and_the_allow_list() {
        let dir = std::env::temp_dir();
        let always = SessionAllowList::default();
        let policy = CodingPolicy::new(&dir, always.clone());
        let fs = |op| policy.evaluate(&PermissionRequest::filesystem(op));
        let read = FileSystemOperation::Read {
            path: dir.join("a.txt"),
        };
        let write = FileSystemOperation::Write {
            path: dir.join("a.txt"),
        };
        let outside = FileSystemOperation::Write {
            path: "/elsewhere/a.txt".into(),
        };
        let git = FileSystemOperation::Write {
            path: dir.join(".git/config"),
        };
        assert_eq!(fs(read), PermissionDecision::Allow);
        assert!(matches!(fs(git), PermissionDecision::Deny(_)));
        assert_eq!(
            policy.evaluate(&shell("ls -la", &dir)),
            PermissionDecision::Allow
        );

        // Always for one write inside: later writes inside pass, outside
        // still asks.
        let PermissionDecision::RequireApproval(approval) = fs(write.clone()) else {
            panic!("a write needs approval");
        };
        let key = approval.metadata[ALWAYS_KEY].as_str().unwrap();
        assert_eq!(describe_key(key), "filesystem.write in the workspace");
        always.add(key);
        assert_eq!(fs(write), PermissionDecision::Allow);
        assert!(matches!(
            fs(outside),
            PermissionDecision::RequireApproval(_)
        ));

        // Always for python3 allows python3, not rm.
        let PermissionDecision::RequireApproval(approval) =
            policy.evaluate(&shell("python3 -m unittest", &dir))
        else {
            panic!("python3 needs approval");
        };
        let key = approval.metadata[ALWAYS_KEY].as_str().unwrap();
        assert_eq!(describe_key(key), "`python3` commands");
        always.add(key);
        assert_eq!(
            policy.evaluate(&shell("python3 -m unittest -v", &dir)),
            PermissionDecision::Allow
        );
        assert!(matches!(
            policy.evaluate(&shell("rm -rf build", &dir)),
            PermissionDecision::RequireApproval(_)
        ));
    }
}
