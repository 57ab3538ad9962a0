//! The filesystem tools against a hard link planted in the workspace: a
//! name inside the root whose inode is also a file outside it. Every row is
//! one way an attacker would try to read or change the outside file through
//! the inside name; each must fail with `PermissionDenied` and leave the
//! outside file exactly as it was.

#![cfg(unix)]

use agentkit_tools_core::{BasicToolExecutor, ToolContext, ToolError, ToolExecutor, ToolRequest};
use serde_json::{Value, json};
use std::path::PathBuf;

mod common;

const SECRET: &str = "AKIA-outside-secret-4242\n";

struct Setup {
    _top: tempfile::TempDir,
    ws: PathBuf,
    secret: PathBuf,
    executor: BasicToolExecutor,
}

/// A workspace and, beside it on the same filesystem, a secret file with a
/// hard link to it inside the workspace (`ws/linked.txt`, `ws/sub/deep.txt`).
fn setup() -> Setup {
    let top = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(top.path()).unwrap();
    let (ws, outside) = (base.join("ws"), base.join("outside"));
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let secret = outside.join("secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    std::fs::hard_link(&secret, ws.join("linked.txt")).unwrap();
    std::fs::hard_link(&secret, ws.join("sub/deep.txt")).unwrap();
    let executor = common::guarded_executor(&ws);
    Setup {
        _top: top,
        ws,
        secret,
        executor,
    }
}

async fn call(setup: &Setup, tool: &str, input: Value) -> Result<String, ToolError> {
    let request = ToolRequest::new("call", tool, input);
    setup
        .executor
        .execute(request, ToolContext::detached())
        .await
        .map(|result| result.output.to_text())
}

#[tokio::test]
async fn a_hard_link_to_an_outside_file_is_neither_read_nor_written() {
    let setup = setup();
    // One row per way in: (tool, arguments).
    let attacks: Vec<(&str, Value)> = vec![
        (
            "fs_write_file",
            json!({ "path": "linked.txt", "content": "pwned" }),
        ),
        (
            "fs_write_file",
            json!({ "path": "sub/../linked.txt", "content": "pwned" }),
        ),
        (
            "fs_write_file",
            json!({ "path": "sub/deep.txt", "content": "" }),
        ),
        (
            "fs_write_file",
            json!({ "path": setup.ws.join("linked.txt"), "content": "pwned" }),
        ),
        (
            "fs_replace_in_file",
            json!({ "path": "linked.txt", "old_string": "AKIA", "new_string": "pwned" }),
        ),
        (
            "fs_replace_in_file",
            json!({ "path": "sub/deep.txt", "old_string": "AKIA", "new_string": "x",
                    "replace_all": true }),
        ),
        ("fs_read_file", json!({ "path": "linked.txt" })),
        (
            "fs_read_file",
            json!({ "path": "sub/deep.txt", "offset": 1, "limit": 1 }),
        ),
    ];
    for (tool, input) in attacks {
        let row = format!("{tool} {input}");
        match call(&setup, tool, input).await {
            Err(ToolError::PermissionDenied(message)) => {
                assert!(message.contains("hard links"), "{row}: {message}");
                assert!(!message.contains("AKIA"), "{row} leaked: {message}");
            }
            other => panic!("{row}: expected PermissionDenied, got {other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(&setup.secret).unwrap(),
            SECRET,
            "{row} changed the outside file"
        );
    }
}

#[tokio::test]
async fn search_passes_over_hard_links_and_moves_keep_them_refused() {
    let setup = setup();
    std::fs::write(setup.ws.join("plain.txt"), "AKIA in a normal file\n").unwrap();
    // Search: the planted links are skipped, the normal file is found.
    let found = call(&setup, "fs_search", json!({ "pattern": "AKIA" }))
        .await
        .unwrap();
    assert!(found.contains("plain.txt"), "{found}");
    assert!(!found.contains("outside-secret"), "search leaked: {found}");
    assert!(!found.contains("linked.txt") && !found.contains("deep.txt"));

    // Renaming the link is allowed (it changes only the workspace's
    // directory), and the renamed name is still refused.
    call(
        &setup,
        "fs_move",
        json!({ "from": "linked.txt", "to": "renamed.txt" }),
    )
    .await
    .unwrap();
    let err = call(&setup, "fs_read_file", json!({ "path": "renamed.txt" }))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::PermissionDenied(_)), "{err:?}");
    // Deleting a link removes a name, never the outside data.
    call(&setup, "fs_delete", json!({ "path": "renamed.txt" }))
        .await
        .unwrap();
    call(&setup, "fs_delete", json!({ "path": "sub/deep.txt" }))
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&setup.secret).unwrap(), SECRET);
}

#[tokio::test]
async fn a_file_whose_other_names_are_gone_is_an_ordinary_file_again() {
    let setup = setup();
    std::fs::remove_file(setup.ws.join("sub/deep.txt")).unwrap();
    std::fs::remove_file(&setup.secret).unwrap();
    // `linked.txt` is now the only name of its inode: nothing outside shares it.
    let read = call(&setup, "fs_read_file", json!({ "path": "linked.txt" }))
        .await
        .unwrap();
    assert!(read.contains("AKIA"), "{read}");
    call(
        &setup,
        "fs_write_file",
        json!({ "path": "linked.txt", "content": "mine\n" }),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(setup.ws.join("linked.txt")).unwrap(),
        "mine\n"
    );
}
