//! The filesystem tools against a concurrent symlink swapper: a symlink put
//! in place between the permission check and the write never makes the
//! write land outside the workspace.

#![cfg(target_os = "linux")]

use agentkit_tool_fs::{FsToolsConfig, fs_tools};
use agentkit_tools_core::{
    BasicToolExecutor, ToolContext, ToolError, ToolExecutor, ToolFederation, ToolRequest,
    ToolSource,
};
use rustix::fs::{CWD, RenameFlags, renameat_with};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

mod common;

struct Setup {
    _top: tempfile::TempDir,
    ws: std::path::PathBuf,
    outside: std::path::PathBuf,
    executor: BasicToolExecutor,
}

fn setup() -> Setup {
    let top = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(top.path()).unwrap();
    let (ws, outside) = (base.join("ws"), base.join("outside"));
    std::fs::create_dir_all(ws.join("d")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    // `alt` is the attacker's link; the swapper exchanges it with `d`.
    std::os::unix::fs::symlink(&outside, ws.join("alt")).unwrap();
    let executor = common::guarded_executor(&ws);
    Setup {
        _top: top,
        ws,
        outside,
        executor,
    }
}

#[tokio::test]
async fn a_swapped_symlink_never_sends_a_write_outside_the_root() {
    let setup = setup();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (d, alt, stop) = (setup.ws.join("d"), setup.ws.join("alt"), stop.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                renameat_with(CWD, &d, CWD, &alt, RenameFlags::EXCHANGE).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let (mut written, mut refused) = (0, 0);
    for round in 0..400 {
        for (tool, input) in [
            (
                "fs_write_file",
                json!({ "path": format!("d/w{round}.txt"), "content": "x" }),
            ),
            (
                "fs_create_directory",
                json!({ "path": format!("d/c{round}/sub") }),
            ),
            (
                "fs_move",
                json!({ "from": "moved-in.txt", "to": format!("d/m{round}.txt") }),
            ),
        ] {
            if tool == "fs_move" {
                std::fs::write(setup.ws.join("moved-in.txt"), "m").unwrap();
            }
            let call = ToolRequest::new(format!("c{round}"), tool, input);
            match setup.executor.execute(call, ToolContext::detached()).await {
                Ok(_) => written += 1,
                // Denied at the check, refused at use, or unresolvable while
                // the link flipped under the resolver: never written.
                Err(
                    ToolError::PermissionDenied(_)
                    | ToolError::ExecutionFailed(_)
                    | ToolError::InvalidInput(_),
                ) => refused += 1,
                Err(other) => panic!("unexpected error: {other:?}"),
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    let leaked: Vec<_> = std::fs::read_dir(&setup.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(leaked.is_empty(), "written outside the root: {leaked:?}");
    assert!(swaps > 0 && written + refused == 1200, "{swaps} swaps");
    // The swapper really raced the calls: some were turned away.
    assert!(refused > 0, "no call ever met the swapped symlink");
}

#[tokio::test]
async fn a_path_inside_the_root_that_now_leads_out_is_refused_at_use() {
    // Called directly (no permission check), a write through a symlink that
    // leaves the workspace is refused: the root's paths stay in the root.
    let setup = setup();
    let tools = fs_tools(FsToolsConfig::new(&setup.ws)).snapshot();
    let write = tools
        .tools
        .iter()
        .find(|t| t.spec().name == "fs_write_file")
        .unwrap();
    let err = write
        .invoke(
            ToolRequest::new(
                "c",
                "fs_write_file",
                json!({ "path": "alt/x.txt", "content": "x" }),
            ),
            ToolContext::detached(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("outside the workspace"), "{err}");
    assert!(!setup.outside.join("x.txt").exists());
    // The same file by its real path is the caller's (and the checker's) call.
    write
        .invoke(
            ToolRequest::new(
                "c",
                "fs_write_file",
                json!({ "path": setup.outside.join("x.txt"), "content": "x" }),
            ),
            ToolContext::detached(),
        )
        .await
        .unwrap();
    assert!(setup.outside.join("x.txt").exists());
}

/// Exchanges `ws/d` and `ws/alt` atomically.
fn swap(ws: &std::path::Path) {
    renameat_with(
        CWD,
        ws.join("d"),
        CWD,
        ws.join("alt"),
        RenameFlags::EXCHANGE,
    )
    .unwrap();
}

/// Allows everything and, as a side effect, swaps `ws/d` with `ws/alt`
/// right after judging: the worst possible moment, deterministically.
struct SwapAfterCheck {
    ws: std::path::PathBuf,
}

impl agentkit_tools_core::PermissionChecker for SwapAfterCheck {
    fn evaluate(
        &self,
        _request: &agentkit_tools_core::PermissionRequest,
    ) -> agentkit_tools_core::PermissionDecision {
        swap(&self.ws);
        agentkit_tools_core::PermissionDecision::Allow
    }
}

#[tokio::test]
async fn a_swap_between_check_and_use_is_refused_even_inside_the_root() {
    // The link now points at the protected `.git` inside the workspace: still
    // "in the root", but not what was checked.
    let setup = setup();
    std::fs::create_dir_all(setup.ws.join(".git/hooks")).unwrap();
    std::fs::remove_file(setup.ws.join("alt")).unwrap();
    std::os::unix::fs::symlink(setup.ws.join(".git/hooks"), setup.ws.join("alt")).unwrap();
    let executor = BasicToolExecutor::new(
        ToolFederation::new().with_source(fs_tools(FsToolsConfig::new(&setup.ws))),
    )
    .with_permissions(Arc::new(SwapAfterCheck {
        ws: setup.ws.clone(),
    }));
    for (tool, input) in [
        (
            "fs_write_file",
            json!({ "path": "d/pre-commit", "content": "evil" }),
        ),
        ("fs_create_directory", json!({ "path": "d/x" })),
        ("fs_delete", json!({ "path": "d/keep" })),
    ] {
        std::fs::write(setup.ws.join(".git/hooks/keep"), "k").unwrap();
        let err = setup_call(&executor, tool, input).await.unwrap_err();
        assert!(
            err.to_string().contains("when its permission was checked"),
            "{tool}: {err}"
        );
        // Swap back for the next round.
        swap(&setup.ws);
    }
    assert!(!setup.ws.join(".git/hooks/pre-commit").exists());
    assert!(!setup.ws.join(".git/hooks/x").exists());
    assert!(setup.ws.join(".git/hooks/keep").exists());
}

async fn setup_call(
    executor: &BasicToolExecutor,
    tool: &str,
    input: serde_json::Value,
) -> Result<agentkit_tools_core::ToolResult, ToolError> {
    executor
        .execute(ToolRequest::new("c", tool, input), ToolContext::detached())
        .await
}
