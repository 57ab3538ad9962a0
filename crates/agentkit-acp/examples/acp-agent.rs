//! An agentkit agent an editor can drive over ACP on stdio.
//!
//! The "model" is scripted, so the agent runs offline and the same every
//! time; the tools are the real filesystem tools of `agentkit-tool-fs`,
//! rooted at the working directory the editor gives for each session, and
//! every change to a file needs the user's approval (asked through
//! `session/request_permission`). Sessions are recorded in memory, so an
//! editor can `session/load` them while the process lives.
//!
//! The script, one entry per model call (each prompt uses the next ones):
//!
//! 1. thinks, says so, writes `hello.txt` (approval); 2. reports it.
//! 3. writes `a.txt` (approval); 4. writes `b.txt` (approved "always"
//!    for `fs_write_file` above, so not asked); 5. reports it.
//! 6. deletes `hello.txt` (approval); 7. reports what happened.
//! 8. deletes `a.txt` (approval: the test client cancels the turn instead).
//! 9. streams a long answer slowly (the test client cancels mid-stream).
//! 10. streams slowly again (the test client sends a second prompt while it
//!     runs); 11. answers the second prompt in the same turn.
//!
//! `crates/agentkit-acp/tests/client.mjs` plays exactly this with the
//! official ACP TypeScript SDK. Run it by hand with
//! `cargo run -p agentkit-acp --example acp-agent` and type JSON-RPC lines.

use agentkit_acp::{AcpServer, MemorySessions};
use agentkit_core::{Delta, FinishReason, PartId, PartKind};
use agentkit_loop::Agent;
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tool_fs::{FsToolsConfig, fs_tools};
use agentkit_tools_core::{
    ApprovalReason, CompositePermissionChecker, PathPolicy, PermissionPayload, PermissionPolicy,
    PermissionRequest, PolicyMatch,
};
use serde_json::json;
use std::time::Duration;

/// Every filesystem change needs the user's approval.
struct AskBeforeChanges;

impl PermissionPolicy for AskBeforeChanges {
    fn evaluate(&self, request: &PermissionRequest) -> PolicyMatch {
        match &request.payload {
            PermissionPayload::FileSystem(op) if op.is_mutation() => {
                PolicyMatch::RequireApproval(ApprovalReason::PolicyRequiresConfirmation)
            }
            _ => PolicyMatch::NoOpinion,
        }
    }
}

fn thought_then_text(thought: &str, text: &str) -> ScriptedTurn {
    let (r, t) = (PartId::new("r"), PartId::new("t"));
    ScriptedTurn::new()
        .delta(Delta::BeginPart {
            part_id: r.clone(),
            kind: PartKind::Reasoning,
        })
        .delta(Delta::AppendText {
            part_id: r.clone(),
            chunk: thought.into(),
        })
        .delta(Delta::CommitPart { part_id: r })
        .delta(Delta::BeginPart {
            part_id: t.clone(),
            kind: PartKind::Text,
        })
        .delta(Delta::AppendText {
            part_id: t.clone(),
            chunk: text.into(),
        })
        .delta(Delta::CommitPart { part_id: t })
}

fn slow_text(first: &str, rest: &str, pause: Duration) -> ScriptedTurn {
    let t = PartId::new("slow");
    ScriptedTurn::new()
        .delta(Delta::BeginPart {
            part_id: t.clone(),
            kind: PartKind::Text,
        })
        .delta(Delta::AppendText {
            part_id: t.clone(),
            chunk: first.into(),
        })
        .delay(pause)
        .delta(Delta::AppendText {
            part_id: t.clone(),
            chunk: rest.into(),
        })
        .delta(Delta::CommitPart { part_id: t })
        .finish(FinishReason::Completed)
}

fn script() -> Vec<ScriptedTurn> {
    let write = |id: &str, path: &str| {
        ScriptedTurn::new()
            .call(
                id,
                "fs_write_file",
                json!({ "path": path, "content": format!("{path} from agentkit\n") }),
            )
            .finish(FinishReason::ToolCall)
    };
    let delete = |id: &str, path: &str| {
        ScriptedTurn::new()
            .call(id, "fs_delete", json!({ "path": path }))
            .finish(FinishReason::ToolCall)
    };
    vec![
        thought_then_text(
            "The user wants a file; writing it needs approval.",
            "Writing hello.txt.",
        )
        .call(
            "call-1",
            "fs_write_file",
            json!({ "path": "hello.txt", "content": "hello from agentkit\n" }),
        )
        .finish(FinishReason::ToolCall),
        ScriptedTurn::text("Wrote hello.txt."),
        write("call-2", "a.txt"),
        write("call-3", "b.txt"),
        ScriptedTurn::text("Wrote a.txt and b.txt."),
        delete("call-4", "hello.txt"),
        ScriptedTurn::text("You rejected the deletion, so hello.txt stays."),
        delete("call-5", "a.txt"),
        slow_text("Counting: one", ", two, three.", Duration::from_secs(30)),
        slow_text(
            "Here is a long answer",
            " that goes on.",
            Duration::from_millis(1500),
        ),
        ScriptedTurn::text("Also: the tests pass."),
    ]
}

#[tokio::main]
async fn main() {
    let sessions = MemorySessions::new();
    let model = ScriptedModel::per_session(script());
    let recorder_store = sessions.clone();
    let server = AcpServer::new(move |session| {
        let policy = PathPolicy::new().with_allowed_root(&session.cwd);
        let permissions = CompositePermissionChecker::new()
            .with_policy(policy)
            .with_policy(AskBeforeChanges);
        // Record every session, so the editor can load it again.
        let recorder = if session.loaded {
            recorder_store.resume_recorder(&session.session_id)
        } else {
            recorder_store.recorder(&session.session_id, Vec::new())
        };
        Ok(Agent::builder()
            .model(model.clone())
            .add_tool_source(fs_tools(FsToolsConfig::new(&session.cwd)))
            .permissions(permissions)
            .transcript_observer(recorder))
    })
    .agent_info("agentkit-acp-example", env!("CARGO_PKG_VERSION"))
    .session_loader(sessions);
    if let Err(err) = server.serve_stdio().await {
        eprintln!("acp-agent: {err}");
        std::process::exit(1);
    }
}
