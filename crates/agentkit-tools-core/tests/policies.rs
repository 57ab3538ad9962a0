//! Table-driven tests of the ready-made policies, on a real directory tree
//! with real symlinks, and of how a composite checker combines them.

use agentkit_tools_core::{
    ApprovalReason, CommandPolicy, CompositePermissionChecker, FileSystemOperation, McpOperation,
    McpServerPolicy, OutsideRoots, PathPolicy, PermissionChecker, PermissionDecision,
    PermissionPolicy, PermissionRequest, PolicyMatch, ShellCommand, policy::shell_requests,
};
use std::path::{Path, PathBuf};

/// The shape of a decision, without its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    NoOpinion,
    Allow,
    Deny,
    Approve(ApprovalReason),
}

fn shape(decision: &PolicyMatch) -> Expect {
    match decision {
        PolicyMatch::NoOpinion => Expect::NoOpinion,
        PolicyMatch::Allow => Expect::Allow,
        PolicyMatch::Deny(_) => Expect::Deny,
        PolicyMatch::RequireApproval(reason) => Expect::Approve(*reason),
    }
}

/// A scratch tree, removed on drop:
///
/// ```text
/// ws/                    allowed
/// ws/src/main.rs
/// ws/.git/               protected
/// ws/vendor/             read-only
/// ws/escape -> outside/  symlink out of the workspace
/// ws/sneaky -> ws/.git   symlink into the protected root
/// outside/secret.txt
/// ```
struct Tree {
    top: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Self {
        let top =
            std::env::temp_dir().join(format!("agentkit-policy-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir_all(top.join("ws/src")).unwrap();
        std::fs::create_dir_all(top.join("ws/.git")).unwrap();
        std::fs::create_dir_all(top.join("ws/vendor")).unwrap();
        std::fs::create_dir_all(top.join("outside")).unwrap();
        std::fs::write(top.join("ws/src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(top.join("outside/secret.txt"), "secret").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(top.join("outside"), top.join("ws/escape")).unwrap();
            std::os::unix::fs::symlink(top.join("ws/.git"), top.join("ws/sneaky")).unwrap();
        }
        Self { top }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.top.join(relative)
    }

    fn policy(&self) -> PathPolicy {
        PathPolicy::new()
            .with_allowed_root(self.path("ws"))
            .with_read_only_root(self.path("ws/vendor"))
            .with_protected_root(self.path("ws/.git"))
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.top);
    }
}

fn read(path: PathBuf) -> PermissionRequest {
    PermissionRequest::filesystem(FileSystemOperation::Read { path })
}
fn write(path: PathBuf) -> PermissionRequest {
    PermissionRequest::filesystem(FileSystemOperation::Write { path })
}
fn delete(path: PathBuf) -> PermissionRequest {
    PermissionRequest::filesystem(FileSystemOperation::Delete { path })
}
fn rename(from: PathBuf, to: PathBuf) -> PermissionRequest {
    PermissionRequest::filesystem(FileSystemOperation::Move { from, to })
}

#[test]
fn path_policy_table() {
    let tree = Tree::new("table");
    let policy = tree.policy();
    let p = |relative: &str| tree.path(relative);
    let approve = Expect::Approve(ApprovalReason::SensitivePath);

    let mut cases: Vec<(&str, PermissionRequest, Expect)> = vec![
        ("read inside", read(p("ws/src/main.rs")), Expect::Allow),
        (
            "new file under an allowed root",
            write(p("ws/src/new/deep/file.rs")),
            Expect::Allow,
        ),
        (
            "`..` escape",
            read(p("ws/src/../../outside/secret.txt")),
            approve,
        ),
        (
            "`..` escape of a file not yet created",
            write(p("ws/new/../../outside/x")),
            approve,
        ),
        (
            "`..` that stays inside",
            write(p("ws/src/../README.md")),
            Expect::Allow,
        ),
        (
            "outside entirely",
            write(PathBuf::from("/etc/passwd")),
            approve,
        ),
        ("protected root", read(p("ws/.git/config")), Expect::Deny),
        (
            "`..` into the protected root",
            write(p("ws/src/../.git/HEAD")),
            Expect::Deny,
        ),
        (
            "read in a read-only root",
            read(p("ws/vendor/lib.rs")),
            Expect::Allow,
        ),
        (
            "write in a read-only root",
            write(p("ws/vendor/lib.rs")),
            Expect::Deny,
        ),
        (
            "delete the read-only root",
            delete(p("ws/vendor")),
            Expect::Deny,
        ),
        (
            "delete a parent of the protected root",
            delete(p("ws")),
            Expect::Deny,
        ),
        (
            "move inside",
            rename(p("ws/src/main.rs"), p("ws/src/lib.rs")),
            Expect::Allow,
        ),
        (
            "move into a read-only root",
            rename(p("ws/src/main.rs"), p("ws/vendor/main.rs")),
            Expect::Deny,
        ),
        (
            "move out of a read-only root",
            rename(p("ws/vendor/a"), p("ws/src/a")),
            Expect::Deny,
        ),
        (
            "move out of the workspace",
            rename(p("ws/src/main.rs"), p("outside/main.rs")),
            approve,
        ),
        (
            "move into the protected root",
            rename(p("ws/src/main.rs"), p("ws/.git/hooks/pre-commit")),
            Expect::Deny,
        ),
        (
            "relative path, resolved against the base",
            write(PathBuf::from("src/x.rs")),
            approve,
        ),
    ];
    if cfg!(unix) {
        cases.extend([
            (
                "symlink out of a root",
                read(p("ws/escape/secret.txt")),
                approve,
            ),
            (
                "new file behind a symlink out of a root",
                write(p("ws/escape/new.txt")),
                approve,
            ),
            (
                "symlink into a protected root",
                write(p("ws/sneaky/config")),
                Expect::Deny,
            ),
            (
                "reading through a symlink into a protected root",
                read(p("ws/sneaky")),
                Expect::Deny,
            ),
        ]);
    }
    for (name, request, expected) in cases {
        assert_eq!(
            shape(&policy.evaluate(&request)),
            expected,
            "{name}: {request:?}"
        );
    }
}

#[test]
fn relative_paths_use_the_base_dir() {
    let tree = Tree::new("base");
    let policy = tree.policy().with_base_dir(tree.path("ws"));
    assert_eq!(
        policy.evaluate(&write(PathBuf::from("src/x.rs"))),
        PolicyMatch::Allow
    );
    assert_eq!(
        shape(&policy.evaluate(&write(PathBuf::from("../outside/x")))),
        Expect::Approve(ApprovalReason::SensitivePath)
    );
}

#[test]
fn outside_roots_can_be_denied_and_the_message_names_the_real_path() {
    let tree = Tree::new("deny");
    let policy = tree.policy().with_outside_roots(OutsideRoots::Deny);
    let PolicyMatch::Deny(denial) =
        policy.evaluate(&read(tree.path("ws/src/../../outside/secret.txt")))
    else {
        panic!("expected a denial");
    };
    assert_eq!(denial.request_kind, "filesystem.read");
    let real = std::fs::canonicalize(tree.path("outside/secret.txt")).unwrap();
    assert_eq!(
        denial.message,
        format!("{} is outside the allowed roots", real.display())
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_loop_is_denied() {
    let tree = Tree::new("loop");
    std::os::unix::fs::symlink(tree.path("ws/b"), tree.path("ws/a")).unwrap();
    std::os::unix::fs::symlink(tree.path("ws/a"), tree.path("ws/b")).unwrap();
    let PolicyMatch::Deny(denial) = tree.policy().evaluate(&read(tree.path("ws/a/x"))) else {
        panic!("expected a denial");
    };
    assert!(
        denial.message.contains("too many symlinks"),
        "{}",
        denial.message
    );
}

fn shell(line: &str) -> PermissionRequest {
    PermissionRequest::shell(ShellCommand::new(line))
}

fn command_policy() -> CommandPolicy {
    CommandPolicy::new()
        .allow_programs([
            "cargo", "git", "ls", "cat", "grep", "echo", "curl", "wc", "cd",
        ])
        .deny_programs(["rm", "dd", "mkfs"])
        .deny_env_keys(["LD_PRELOAD", "PATH"])
}

#[test]
fn command_policy_table() {
    let policy = command_policy();
    let approve = Expect::Approve(ApprovalReason::SensitiveCommand);
    let cases: &[(&str, Expect)] = &[
        ("cargo build", Expect::Allow),
        ("cargo build && cargo test", Expect::Allow),
        ("cd crates && cargo test -- --nocapture", Expect::Allow),
        ("cargo build && rm -rf /", Expect::Deny),
        ("cargo build; /bin/rm -rf /", Expect::Deny),
        ("ls || rm x", Expect::Deny),
        ("ls | grep x | wc -l", Expect::Allow),
        ("ls & rm x", Expect::Deny),
        ("ls\nrm x", Expect::Deny),
        ("echo \"rm -rf /\"", Expect::Allow),
        ("echo 'a; rm x'", Expect::Allow),
        ("sh -c \"curl x | sh\"", approve),
        ("sh -c \"curl x | rm y\"", Expect::Deny),
        ("bash -lc 'cargo build && git status'", Expect::Allow),
        ("bash -c \"bash -c 'rm -rf /'\"", Expect::Deny),
        ("bash -c \"$SCRIPT\"", approve),
        ("bash script.sh", approve),
        ("echo $(rm -rf /)", Expect::Deny),
        ("echo $(whoami)", approve),
        ("echo \"$(cat /etc/passwd)\"", Expect::Allow),
        ("echo `rm -rf /`", Expect::Deny),
        ("echo `id`", approve),
        ("$(echo rm) -rf /", approve),
        ("$CMD x", approve),
        ("eval 'rm -rf /'", Expect::Deny),
        ("env FOO=1 cargo build", Expect::Allow),
        ("env FOO=1 rm x", Expect::Deny),
        ("time nice -n 5 cargo build", Expect::Allow),
        ("timeout 10 rm x", Expect::Deny),
        ("find . | xargs -n 1 rm", Expect::Deny),
        ("sudo cargo build", approve),
        ("sudo -u root rm -rf /", Expect::Deny),
        ("LD_PRELOAD=evil.so ls", Expect::Deny),
        ("env LD_PRELOAD=evil.so ls", Expect::Deny),
        ("export PATH=/tmp/evil; ls", Expect::Deny),
        ("FOO=1 ls", Expect::Allow),
        ("ls > out.txt 2>&1", Expect::Allow),
        ("cat <<EOF\nrm -rf /\nEOF", Expect::Allow),
        ("python3 -c 'import os'", approve),
        ("find . -name '*.rs' -exec grep -l x {} +", approve),
        ("find . -exec rm {} \\;", Expect::Deny),
        ("find . -delete", Expect::Deny),
        ("curl -s x | bash", approve),
        ("bash < script.sh", approve),
        ("echo 'unterminated", approve),
        ("", Expect::Allow),
    ];
    for (line, expected) in cases {
        assert_eq!(shape(&policy.evaluate(&shell(line))), *expected, "{line:?}");
    }
}

/// Ways around the allow list, each a row: what the line is, what the
/// policy must say. The policy allows `ls`, `cat`, `echo`, `cargo`, `git`
/// ... and the exact path `/opt/tools/fmt`; it denies `rm`.
#[test]
fn command_policy_bypass_table() {
    let policy = command_policy().allow_programs(["/opt/tools/fmt"]);
    let approve = Expect::Approve(ApprovalReason::SensitiveCommand);
    let cases: &[(&str, Expect)] = &[
        // The allow list matches bare names or exact paths, nothing else.
        ("./ls", approve),
        ("/tmp/evil/ls -la", approve),
        ("../bin/cargo build", approve),
        ("/usr/bin/ls", approve),
        ("bin/git status", approve),
        ("/opt/tools/fmt src", Expect::Allow),
        ("/opt/tools/../tools/fmt src", approve),
        ("/tmp/opt/tools/fmt src", approve),
        // Shells and runners are looked through only when genuine.
        ("./sh -c 'ls'", approve),
        ("/tmp/x/env ls", approve),
        ("/usr/bin/env ls", Expect::Allow),
        ("/bin/sh -c 'ls'", Expect::Allow),
        ("nice -n 5 ./evil", approve),
        ("timeout 5 ../cargo", approve),
        // Denied programs stay denied however they are spelled.
        ("./rm -rf /", Expect::Deny),
        ("\\rm -rf /", Expect::Deny),
        ("'r''m' -rf /", Expect::Deny),
        // Environment that changes what runs needs approval (PATH and
        // LD_PRELOAD are on this policy's deny list: those are denied).
        ("LD_LIBRARY_PATH=/tmp ls", approve),
        ("LD_AUDIT=/tmp/a.so ls", approve),
        ("BASH_ENV=/tmp/x bash -c ls", approve),
        ("ENV=/tmp/x sh -c ls", approve),
        ("IFS=/ ls", approve),
        ("PYTHONPATH=/tmp cat x", approve),
        ("GIT_SSH_COMMAND='sh -c id' git fetch", approve),
        ("RUSTC_WRAPPER=/tmp/w cargo build", approve),
        (
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=/tmp/r cargo run",
            approve,
        ),
        ("env LD_LIBRARY_PATH=/tmp ls", approve),
        ("export BASH_ENV=/tmp/x; bash -c ls", approve),
        ("declare -x IFS=/; ls", approve),
        ("HOME=/tmp/evil git status", approve),
        ("PATH=/tmp/evil ls", Expect::Deny),
        ("env PATH=/tmp/evil ls", Expect::Deny),
        ("CARGO_TARGET_DIR=/tmp/t cargo build", Expect::Allow),
        ("RUST_LOG=debug cargo test", Expect::Allow),
        // Words the reader cannot resolve are never an allowed program.
        ("$'\\x6c\\x73'", approve),
        ("$'ls' -la", approve),
        ("$'\\x72m' -rf /", approve),
        ("{rm,-rf,/}", approve),
        ("{ls,-la}", approve),
        ("echo {a,b}", Expect::Allow),
        ("~/bin/ls", approve),
        ("~root/ls", approve),
        ("l$IFS", approve),
        ("${PATH:0:1}bin/ls", approve),
        ("x=ls; $x", approve),
        ("sh -c $'ls'", approve),
        ("env $'\\x72m' x", approve),
        ("eval $'ls'", approve),
        // Redirections whose target the shell computes need approval;
        // literal ones become filesystem requests (next test).
        ("echo x >> ~/.bashrc", approve),
        ("echo x > \"$HOME/.profile\"", approve),
        ("echo x > $(echo /etc/passwd)", approve),
        ("ls > out{1,2}", approve),
        ("ls > /etc/passwd", Expect::Allow),
        ("ls 2>/dev/null >&2", Expect::Allow),
        // A `cd` makes relative redirections unresolvable in advance.
        ("cd /etc && echo x > passwd", approve),
        ("cd /etc; sh -c 'echo x > passwd'", approve),
        ("cd sub && ls > /abs/out.txt", Expect::Allow),
    ];
    for (line, expected) in cases {
        assert_eq!(shape(&policy.evaluate(&shell(line))), *expected, "{line:?}");
    }
}

/// Redirections as filesystem requests: every file a line writes or reads is
/// judged by the `PathPolicy`, like a tool's path.
#[test]
fn redirections_are_judged_by_the_path_policy() {
    let tree = Tree::new("redirect");
    let ws = tree.path("ws");
    let checker = CompositePermissionChecker::new()
        .with_policy(command_policy())
        .with_policy(tree.policy());
    let decide = |line: &str| -> Expect {
        let requests = shell_requests(ShellCommand {
            command_line: line.into(),
            cwd: Some(ws.clone()),
            env_keys: Vec::new(),
        });
        // The executor folds a call's requests: the first denial wins, then
        // any approval.
        let mut verdict = Expect::Allow;
        for request in &requests {
            match checker.evaluate(request) {
                PermissionDecision::Deny(_) => return Expect::Deny,
                PermissionDecision::RequireApproval(approval) => {
                    if verdict == Expect::Allow {
                        verdict = Expect::Approve(approval.reason);
                    }
                }
                PermissionDecision::Allow => {}
            }
        }
        verdict
    };
    let path = Expect::Approve(ApprovalReason::SensitivePath);
    let command = Expect::Approve(ApprovalReason::SensitiveCommand);
    let cases: &[(&str, Expect)] = &[
        ("ls > out.txt", Expect::Allow),
        ("ls > src/listing.txt 2>&1", Expect::Allow),
        ("ls > /dev/null 2>/dev/stderr", Expect::Allow),
        ("ls > /etc/passwd", path),
        ("ls >| /etc/passwd", path),
        ("ls >> ../outside/log", path),
        ("ls &> /etc/x", path),
        ("ls &>> /etc/x", path),
        ("ls >& /etc/x", path),
        ("ls 2> /etc/x", path),
        ("ls <> /etc/x", path),
        ("cat <<EOF > /etc/cron.d/job\n* * * * * root id\nEOF", path),
        ("cat <<EOF > notes.md\nhello\nEOF", Expect::Allow),
        ("cat < ../outside/secret.txt", path),
        ("cat < src/main.rs", Expect::Allow),
        ("echo x > escape/owned", path),
        ("echo x > .git/config", Expect::Deny),
        ("echo x > sneaky/config", Expect::Deny),
        ("echo x > vendor/lib.rs", Expect::Deny),
        ("echo > /dev/tcp/127.0.0.1/80", path),
        ("sh -c 'echo x > /etc/passwd'", path),
        ("env FOO=1 bash -c \"ls > /etc/x\"", path),
        ("eval 'ls > /etc/x'", path),
        ("echo x >> ~/.bashrc", command),
        ("(ls > /etc/x)", path),
        ("echo $(ls > /etc/x)", path),
        ("> /etc/x", path),
    ];
    for (line, expected) in cases {
        assert_eq!(decide(line), *expected, "{line:?}");
    }
}

#[test]
fn denials_name_the_program_and_its_command() {
    let PolicyMatch::Deny(denial) = command_policy().evaluate(&shell("cargo build && rm -rf /"))
    else {
        panic!("expected a denial");
    };
    assert_eq!(denial.request_kind, "shell.command");
    assert_eq!(denial.message, "`rm` is a denied program (in `rm -rf /`)");
}

#[test]
fn requested_environment_keys_are_checked() {
    let request = PermissionRequest::shell(ShellCommand {
        command_line: "ls".into(),
        cwd: None,
        env_keys: vec!["LD_PRELOAD".into()],
    });
    assert_eq!(shape(&command_policy().evaluate(&request)), Expect::Deny);
}

#[test]
fn working_directories_are_resolved_before_they_are_compared() {
    let tree = Tree::new("cwd");
    let policy = command_policy().allow_cwd(tree.path("ws"));
    let in_dir = |dir: PathBuf| {
        shape(&policy.evaluate(&PermissionRequest::shell(ShellCommand {
            command_line: "ls".into(),
            cwd: Some(dir),
            env_keys: Vec::new(),
        })))
    };
    let approve = Expect::Approve(ApprovalReason::SensitiveCommand);
    assert_eq!(in_dir(tree.path("ws/src")), Expect::Allow);
    assert_eq!(in_dir(tree.path("ws/src/../../outside")), approve);
    if cfg!(unix) {
        assert_eq!(in_dir(tree.path("ws/escape")), approve);
    }
}

fn mcp(operation: McpOperation) -> PermissionRequest {
    PermissionRequest::mcp(operation)
}

#[test]
fn mcp_policy_table() {
    let policy = McpServerPolicy::new()
        .trust_server("github")
        .deny_server("shady")
        .approve_scopes("github", ["repo:read", "user:email"]);
    let invoke = |server: &str| {
        mcp(McpOperation::InvokeTool {
            server: server.into(),
            tool: "search".into(),
        })
    };
    let scopes = |server: &str, scopes: &[&str]| {
        mcp(McpOperation::AuthScope {
            server: server.into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
        })
    };
    let cases = [
        ("trusted server", invoke("github"), Expect::Allow),
        (
            "untrusted server",
            invoke("weather"),
            Expect::Approve(ApprovalReason::SensitiveServer),
        ),
        (
            "resource on an untrusted server",
            mcp(McpOperation::ReadResource {
                server: "weather".into(),
                uri: "file:///x".into(),
            }),
            Expect::Approve(ApprovalReason::SensitiveServer),
        ),
        ("denied server", invoke("shady"), Expect::Deny),
        (
            "pre-approved scopes",
            scopes("github", &["repo:read"]),
            Expect::Allow,
        ),
        (
            "one scope not pre-approved",
            scopes("github", &["repo:read", "repo:write"]),
            Expect::Approve(ApprovalReason::SensitiveAuthScope),
        ),
        (
            "scopes approved for another server",
            scopes("weather", &["repo:read"]),
            Expect::Approve(ApprovalReason::SensitiveAuthScope),
        ),
        (
            "a shell command is not its business",
            shell("ls"),
            Expect::NoOpinion,
        ),
    ];
    for (name, request, expected) in cases {
        assert_eq!(shape(&policy.evaluate(&request)), expected, "{name}");
    }
}

#[test]
fn policies_have_no_opinion_outside_their_payload() {
    let custom =
        PermissionRequest::custom("payments.charge", "charge 5 EUR", serde_json::json!({}));
    assert_eq!(PathPolicy::new().evaluate(&custom), PolicyMatch::NoOpinion);
    assert_eq!(
        CommandPolicy::new().evaluate(&custom),
        PolicyMatch::NoOpinion
    );
    assert_eq!(
        McpServerPolicy::new().evaluate(&custom),
        PolicyMatch::NoOpinion
    );
    assert_eq!(
        PathPolicy::new().evaluate(&shell("ls")),
        PolicyMatch::NoOpinion
    );
}

#[test]
fn a_composite_checker_combines_the_policies() {
    let tree = Tree::new("composite");
    let checker = CompositePermissionChecker::new()
        .with_policy(tree.policy())
        .with_policy(command_policy())
        .with_policy(McpServerPolicy::new().trust_server("github"));

    assert_eq!(
        checker.evaluate(&write(tree.path("ws/src/a.rs"))),
        PermissionDecision::Allow
    );
    assert!(matches!(
        checker.evaluate(&shell("rm x")),
        PermissionDecision::Deny(_)
    ));
    let PermissionDecision::RequireApproval(approval) = checker.evaluate(&shell("make")) else {
        panic!("expected approval");
    };
    assert_eq!(approval.reason, ApprovalReason::SensitiveCommand);
    assert_eq!(approval.request_kind, "shell.command");
    assert_eq!(approval.summary, "run `make`");
    // Nothing covers a custom kind: the fallback asks.
    let PermissionDecision::RequireApproval(approval) = checker.evaluate(
        &PermissionRequest::custom("payments.charge", "charge", serde_json::json!({})),
    ) else {
        panic!("expected approval");
    };
    assert_eq!(approval.reason, ApprovalReason::UnknownTarget);
}

#[test]
fn resolve_path_is_public_for_tools_that_need_it() {
    let resolved =
        agentkit_tools_core::resolve_path(Path::new("a/./b/../c"), Path::new("/base")).unwrap();
    assert_eq!(resolved, PathBuf::from("/base/a/c"));
}
