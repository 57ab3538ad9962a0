//! Each filesystem tool against real files in a temporary workspace.

use agentkit_core::CancellationController;
use agentkit_tool_fs::{FsToolsConfig, fs_read_only_tools, fs_tools};
use agentkit_tools_core::{
    BasicToolExecutor, CompositePermissionChecker, FileSystemOperation, PathPolicy,
    PermissionPayload, Preflight, ToolContext, ToolError, ToolExecutor, ToolFederation,
    ToolRequest, ToolSource,
};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tempfile::TempDir;

struct Workspace {
    dir: TempDir,
    executor: BasicToolExecutor,
}

impl Workspace {
    fn new() -> Self {
        Self::with_config(|config| config)
    }

    fn with_config(tune: impl FnOnce(FsToolsConfig) -> FsToolsConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tools = fs_tools(tune(FsToolsConfig::new(dir.path())));
        // No output budget: the tools' own caps are what is under test.
        let executor = BasicToolExecutor::new(ToolFederation::new().with_source(tools))
            .with_max_output_bytes(None);
        Self { dir, executor }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).unwrap()
    }

    async fn call(&self, tool: &str, input: Value) -> Result<String, ToolError> {
        let result = self
            .executor
            .execute(
                ToolRequest::new("call", tool, input),
                ToolContext::detached(),
            )
            .await?;
        assert!(!result.is_error, "unexpected error result");
        Ok(result.output.to_text())
    }

    async fn fails(&self, tool: &str, input: Value) -> String {
        match self.call(tool, input).await {
            Ok(out) => panic!("expected {tool} to fail, got {out:?}"),
            Err(err) => err.to_string(),
        }
    }
}

#[tokio::test]
async fn read_numbers_lines_and_pages_through_a_file() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\ntwo\r\nthree\nfour\n");
    assert_eq!(
        ws.call("fs_read_file", json!({ "path": "a.txt" }))
            .await
            .unwrap(),
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n"
    );
    let window = ws
        .call(
            "fs_read_file",
            json!({ "path": "a.txt", "offset": 2, "limit": 2 }),
        )
        .await
        .unwrap();
    assert_eq!(
        window,
        "     2\ttwo\n     3\tthree\n[lines 2-3 of a.txt shown; more follow: call again with offset 4]"
    );
    let absolute = ws.root().join("a.txt").display().to_string();
    assert!(
        ws.call("fs_read_file", json!({ "path": absolute, "offset": 4 }))
            .await
            .unwrap()
            .starts_with("     4\tfour")
    );
    let past = ws
        .fails("fs_read_file", json!({ "path": "a.txt", "offset": 9 }))
        .await;
    assert_eq!(past, "a.txt has 4 lines; offset 9 is past the end");
    ws.write("empty.txt", "");
    assert_eq!(
        ws.call("fs_read_file", json!({ "path": "empty.txt" }))
            .await
            .unwrap(),
        "empty.txt is empty"
    );
}

#[tokio::test]
async fn read_stops_at_the_byte_cap_and_cuts_long_lines() {
    let ws = Workspace::with_config(|c| c.with_max_read_bytes(40).with_max_line_bytes(10));
    ws.write("big.txt", "0123456789abcdef\nshort\nthird line\nfourth\n");
    let out = ws
        .call("fs_read_file", json!({ "path": "big.txt" }))
        .await
        .unwrap();
    assert_eq!(
        out,
        "     1\t0123456789… [line cut: 6 more bytes]\n\
         [lines 1-1 of big.txt shown; more follow: call again with offset 2]"
    );
}

#[tokio::test]
async fn read_refuses_binary_files_and_directories() {
    let ws = Workspace::new();
    ws.write("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR");
    let err = ws
        .fails("fs_read_file", json!({ "path": "image.png" }))
        .await;
    assert_eq!(
        err,
        "image.png looks like a binary file (not UTF-8 text); it cannot be read as text"
    );
    ws.write("latin1.txt", b"caf\xe9\n");
    assert!(
        ws.fails("fs_read_file", json!({ "path": "latin1.txt" }))
            .await
            .contains("binary")
    );
    ws.write("dir/x", "");
    assert_eq!(
        ws.fails("fs_read_file", json!({ "path": "dir" })).await,
        "cannot read dir: it is a directory; use fs_list_directory"
    );
    assert_eq!(
        ws.fails("fs_read_file", json!({ "path": "missing.txt" }))
            .await,
        "cannot read missing.txt: it does not exist"
    );
}

#[tokio::test]
async fn typed_arguments_name_the_field_even_without_the_executor() {
    // Called directly, skipping the schema check, the typed arguments still
    // refuse bad input and say which field is wrong.
    let dir = tempfile::tempdir().unwrap();
    let tools = fs_tools(FsToolsConfig::new(dir.path())).snapshot();
    let read = tools
        .tools
        .iter()
        .find(|t| t.spec().name == "fs_read_file")
        .unwrap();
    let cases = [
        (json!({ "path": 3 }), "`path`: invalid type"),
        (
            json!({ "path": "a", "offset": -1 }),
            "`offset`: invalid value",
        ),
        (json!({ "path": "a", "bogus": 1 }), "`bogus`: unknown field"),
        (json!({}), "missing field `path`"),
    ];
    for (input, expected) in cases {
        let err = read
            .invoke(
                ToolRequest::new("c", "fs_read_file", input.clone()),
                ToolContext::detached(),
            )
            .await
            .unwrap_err();
        match &err {
            ToolError::InvalidInput(message) => {
                assert!(message.contains(expected), "{input}: {message}")
            }
            other => panic!("{input}: {other:?}"),
        }
    }
    // The generated schema is what the model sees: described, bounded, closed.
    let schema = &read.spec().input_schema;
    assert_eq!(
        schema["properties"]["path"]["description"],
        "The file, absolute or relative to the workspace root."
    );
    assert_eq!(
        schema["properties"]["limit"]["maximum"],
        FsToolsConfig::DEFAULT_MAX_READ_LINES
    );
    assert_eq!(schema["required"], json!(["path"]));
}

#[tokio::test]
async fn schema_rejects_bad_input_before_the_tool_runs() {
    let ws = Workspace::new();
    let err = ws
        .fails("fs_read_file", json!({ "path": "a", "limit": 0 }))
        .await;
    assert!(err.starts_with("invalid input: `/limit`"), "{err}");
    let err = ws.fails("fs_write_file", json!({ "path": "a" })).await;
    assert!(err.contains("content"), "{err}");
    let err = ws
        .fails("fs_delete", json!({ "path": "a", "force": true }))
        .await;
    assert!(err.contains("force"), "{err}");
}

#[cfg(unix)]
#[tokio::test]
async fn list_is_sorted_marks_directories_and_symlinks_and_respects_depth() {
    let ws = Workspace::new();
    ws.write("b.txt", "");
    ws.write("a/inner/deep.txt", "");
    ws.write("a/z.txt", "");
    std::os::unix::fs::symlink("b.txt", ws.root().join("link")).unwrap();
    assert_eq!(
        ws.call("fs_list_directory", json!({})).await.unwrap(),
        "a/\nb.txt\nlink -> b.txt"
    );
    assert_eq!(
        ws.call(
            "fs_list_directory",
            json!({ "path": "a", "recursive": true })
        )
        .await
        .unwrap(),
        "inner/\ninner/deep.txt\nz.txt"
    );
    assert_eq!(
        ws.call(
            "fs_list_directory",
            json!({ "recursive": true, "max_depth": 2 })
        )
        .await
        .unwrap(),
        "a/\na/inner/\na/z.txt\nb.txt\nlink -> b.txt"
    );
    ws.write("empty/.keep", "");
    std::fs::remove_file(ws.root().join("empty/.keep")).unwrap();
    assert_eq!(
        ws.call("fs_list_directory", json!({ "path": "empty" }))
            .await
            .unwrap(),
        "empty is empty"
    );
}

#[tokio::test]
async fn list_stops_at_the_entry_cap() {
    let ws = Workspace::with_config(|c| c.with_max_list_entries(3));
    for name in ["1", "2", "3", "4", "5"] {
        ws.write(name, "");
    }
    assert_eq!(
        ws.call("fs_list_directory", json!({})).await.unwrap(),
        "1\n2\n3\n[listing stopped after 3 entries; list a subdirectory to see more]"
    );
}

#[tokio::test]
async fn write_creates_parents_then_overwrites() {
    let ws = Workspace::new();
    assert_eq!(
        ws.call(
            "fs_write_file",
            json!({ "path": "src/new/mod.rs", "content": "fn a() {}\n" })
        )
        .await
        .unwrap(),
        "created src/new/mod.rs (10 bytes)"
    );
    assert_eq!(ws.read("src/new/mod.rs"), "fn a() {}\n");
    assert_eq!(
        ws.call(
            "fs_write_file",
            json!({ "path": "src/new/mod.rs", "content": "é" })
        )
        .await
        .unwrap(),
        "overwrote src/new/mod.rs (2 bytes)"
    );
    assert_eq!(ws.read("src/new/mod.rs"), "é");
    assert_eq!(
        ws.fails("fs_write_file", json!({ "path": "src", "content": "" }))
            .await,
        "cannot write src: it is a directory"
    );
}

#[tokio::test]
async fn replace_needs_a_unique_match_unless_replace_all() {
    let ws = Workspace::new();
    ws.write("lib.rs", "let a = 1;\nlet b = 1;\n");
    let call = |old: &str, new: &str, all: bool| json!({ "path": "lib.rs", "old_string": old, "new_string": new, "replace_all": all });
    assert_eq!(
        ws.fails("fs_replace_in_file", call("= 1", "= 2", false))
            .await,
        "`old_string` occurs 2 times in lib.rs; include more surrounding text to pick one, \
         or set `replace_all` to replace them all"
    );
    assert_eq!(
        ws.read("lib.rs"),
        "let a = 1;\nlet b = 1;\n",
        "a refused edit changes nothing"
    );
    assert_eq!(
        ws.call("fs_replace_in_file", call("let b = 1", "let b = 7", false))
            .await
            .unwrap(),
        "replaced 1 occurrence in lib.rs"
    );
    assert_eq!(
        ws.call("fs_replace_in_file", call("let ", "const ", true))
            .await
            .unwrap(),
        "replaced 2 occurrences in lib.rs"
    );
    assert_eq!(ws.read("lib.rs"), "const a = 1;\nconst b = 7;\n");
    assert!(
        ws.fails("fs_replace_in_file", call("missing", "x", false))
            .await
            .starts_with("`old_string` was not found in lib.rs")
    );
    assert!(
        ws.fails("fs_replace_in_file", call("same", "same", false))
            .await
            .contains("nothing to change")
    );
}

#[tokio::test]
async fn create_directory_is_idempotent_but_not_over_a_file() {
    let ws = Workspace::new();
    assert_eq!(
        ws.call("fs_create_directory", json!({ "path": "a/b/c" }))
            .await
            .unwrap(),
        "created directory a/b/c"
    );
    assert!(ws.root().join("a/b/c").is_dir());
    assert_eq!(
        ws.call("fs_create_directory", json!({ "path": "a/b/c" }))
            .await
            .unwrap(),
        "a/b/c already exists"
    );
    ws.write("file", "");
    assert_eq!(
        ws.fails("fs_create_directory", json!({ "path": "file" }))
            .await,
        "cannot create directory file: a file of that name exists"
    );
}

#[tokio::test]
async fn delete_removes_files_and_guards_directories_and_the_root() {
    let ws = Workspace::new();
    ws.write("a.txt", "");
    ws.write("dir/inner.txt", "");
    assert_eq!(
        ws.call("fs_delete", json!({ "path": "a.txt" }))
            .await
            .unwrap(),
        "deleted a.txt"
    );
    assert!(!ws.root().join("a.txt").exists());
    assert_eq!(
        ws.fails("fs_delete", json!({ "path": "dir" })).await,
        "cannot delete dir: the directory is not empty; set `recursive` to delete it with its contents"
    );
    assert!(ws.root().join("dir/inner.txt").exists());
    assert_eq!(
        ws.call("fs_delete", json!({ "path": "dir", "recursive": true }))
            .await
            .unwrap(),
        "deleted directory dir with its contents"
    );
    assert!(!ws.root().join("dir").exists());
    std::fs::create_dir(ws.root().join("empty")).unwrap();
    assert_eq!(
        ws.call("fs_delete", json!({ "path": "empty" }))
            .await
            .unwrap(),
        "deleted directory empty"
    );
    for root in [".", "..", "sub/.."] {
        let err = ws
            .fails("fs_delete", json!({ "path": root, "recursive": true }))
            .await;
        assert!(err.starts_with("refusing to delete"), "{root}: {err}");
    }
    assert!(ws.root().exists());
    assert_eq!(
        ws.fails("fs_delete", json!({ "path": "gone" })).await,
        "cannot delete gone: it does not exist"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn delete_of_a_symlink_removes_the_link_not_its_target() {
    let ws = Workspace::new();
    ws.write("real/keep.txt", "precious");
    std::os::unix::fs::symlink(ws.root().join("real"), ws.root().join("link")).unwrap();
    ws.call("fs_delete", json!({ "path": "link", "recursive": true }))
        .await
        .unwrap();
    assert!(!ws.root().join("link").exists());
    assert_eq!(ws.read("real/keep.txt"), "precious");
}

#[tokio::test]
async fn move_renames_creates_parents_and_refuses_to_clobber() {
    let ws = Workspace::new();
    ws.write("a.txt", "A");
    ws.write("b.txt", "B");
    assert_eq!(
        ws.call("fs_move", json!({ "from": "a.txt", "to": "moved/a2.txt" }))
            .await
            .unwrap(),
        "moved a.txt to moved/a2.txt"
    );
    assert_eq!(ws.read("moved/a2.txt"), "A");
    assert!(!ws.root().join("a.txt").exists());
    assert_eq!(
        ws.fails("fs_move", json!({ "from": "b.txt", "to": "moved/a2.txt" }))
            .await,
        "cannot move b.txt to moved/a2.txt: the destination exists; set `overwrite` to replace it"
    );
    assert_eq!(ws.read("moved/a2.txt"), "A");
    ws.call(
        "fs_move",
        json!({ "from": "b.txt", "to": "moved/a2.txt", "overwrite": true }),
    )
    .await
    .unwrap();
    assert_eq!(ws.read("moved/a2.txt"), "B");
    ws.call("fs_move", json!({ "from": "moved", "to": "renamed" }))
        .await
        .unwrap();
    assert_eq!(ws.read("renamed/a2.txt"), "B");
    assert!(
        ws.fails("fs_move", json!({ "from": ".", "to": "x" }))
            .await
            .starts_with("refusing")
    );
}

#[tokio::test]
async fn search_finds_literal_lines_and_skips_binary_and_bulky_dirs() {
    let ws = Workspace::new();
    ws.write("src/lib.rs", "fn main() {}\n// TODO: tidy\n");
    ws.write("src/util/mod.rs", "// todo later\n");
    ws.write("README.md", "nothing here\n");
    ws.write("target/debug/out.rs", "// TODO: generated\n");
    ws.write(".git/HEAD", "TODO\n");
    ws.write("blob.bin", b"TODO\x00\x01");
    // Without ignore files, build output is searched like anything else
    // (no fixed skip list); `.git` never is.
    assert_eq!(
        ws.call("fs_search", json!({ "pattern": "TODO" }))
            .await
            .unwrap(),
        "src/lib.rs:2: // TODO: tidy\ntarget/debug/out.rs:1: // TODO: generated"
    );
    ws.write(".gitignore", "target/\n");
    assert_eq!(
        ws.call("fs_search", json!({ "pattern": "TODO" }))
            .await
            .unwrap(),
        "src/lib.rs:2: // TODO: tidy"
    );
    assert_eq!(
        ws.call(
            "fs_search",
            json!({ "pattern": "todo", "case_insensitive": true })
        )
        .await
        .unwrap(),
        "src/lib.rs:2: // TODO: tidy\nsrc/util/mod.rs:1: // todo later"
    );
    assert_eq!(
        ws.call(
            "fs_search",
            json!({ "pattern": "main", "path": "src/lib.rs" })
        )
        .await
        .unwrap(),
        "src/lib.rs:1: fn main() {}"
    );
    assert_eq!(
        ws.call("fs_search", json!({ "pattern": "absent" }))
            .await
            .unwrap(),
        "no matches for \"absent\" in ."
    );
}

#[tokio::test]
async fn search_and_list_respect_gitignore_and_ignore_files() {
    let ws = Workspace::new();
    ws.write(".gitignore", "*.log\nbuild/\n!keep.log\n");
    ws.write("src/.ignore", "generated.rs\n");
    ws.write("src/lib.rs", "needle\n");
    ws.write("src/generated.rs", "needle\n");
    ws.write("debug.log", "needle\n");
    ws.write("keep.log", "needle\n");
    ws.write("build/out.txt", "needle\n");
    ws.write(".github/ci.yml", "needle\n");
    assert_eq!(
        ws.call("fs_search", json!({ "pattern": "needle" }))
            .await
            .unwrap(),
        ".github/ci.yml:1: needle\nkeep.log:1: needle\nsrc/lib.rs:1: needle"
    );
    assert_eq!(
        ws.call("fs_list_directory", json!({ "recursive": true }))
            .await
            .unwrap(),
        ".github/\n.github/ci.yml\n.gitignore\nkeep.log\nsrc/\nsrc/.ignore\nsrc/lib.rs"
    );
    // A search started inside an ignored directory's parent still applies
    // the root's rules.
    assert_eq!(
        ws.call("fs_search", json!({ "pattern": "needle", "path": "src" }))
            .await
            .unwrap(),
        "src/lib.rs:1: needle"
    );
}

#[tokio::test]
async fn search_stops_at_the_result_cap() {
    let ws = Workspace::with_config(|c| c.with_max_search_results(2));
    ws.write("a.txt", "x\nx\nx\n");
    assert_eq!(
        ws.call("fs_search", json!({ "pattern": "x" }))
            .await
            .unwrap(),
        "a.txt:1: x\na.txt:2: x\n[stopped after 2 matches; search a narrower path or a more specific pattern]"
    );
}

#[tokio::test]
async fn long_operations_stop_when_the_turn_is_cancelled() {
    let ws = Workspace::new();
    ws.write("a/b.txt", "needle\n");
    let controller = CancellationController::new();
    let mut ctx = ToolContext::detached();
    ctx.cancellation = controller.handle().checkpoint();
    controller.interrupt();
    for (tool, input) in [
        ("fs_search", json!({ "pattern": "needle" })),
        ("fs_list_directory", json!({ "recursive": true })),
        (
            "fs_write_file",
            json!({ "path": "new.txt", "content": "x" }),
        ),
    ] {
        let err = ws
            .executor
            .execute(ToolRequest::new("call", tool, input), ctx.clone())
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::Cancelled, "{tool}");
    }
    assert!(!ws.root().join("new.txt").exists());
}

#[tokio::test]
async fn each_tool_proposes_the_resolved_path_to_the_path_policy() {
    let ws = Workspace::new();
    let root = std::fs::canonicalize(ws.root()).unwrap();
    let tools = fs_tools(FsToolsConfig::new(ws.root()));
    let snapshot = tools.snapshot();
    let find = |name: &str| {
        snapshot
            .tools
            .iter()
            .find(|t| t.spec().name == name)
            .unwrap()
            .clone()
    };
    let ops = |name: &str, input: Value| -> Vec<FileSystemOperation> {
        find(name)
            .proposed_requests(&input)
            .unwrap()
            .into_iter()
            .map(|r| match r.payload {
                PermissionPayload::FileSystem(op) => op,
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(
        ops("fs_read_file", json!({ "path": "x/../a.txt" })),
        vec![FileSystemOperation::Read {
            path: root.join("a.txt")
        }]
    );
    assert_eq!(
        ops("fs_list_directory", json!({})),
        vec![FileSystemOperation::List { path: root.clone() }]
    );
    assert_eq!(
        ops("fs_search", json!({ "pattern": "p", "path": "src" })),
        vec![FileSystemOperation::Read {
            path: root.join("src")
        }]
    );
    assert_eq!(
        ops("fs_write_file", json!({ "path": "n.txt", "content": "" })),
        vec![FileSystemOperation::Write {
            path: root.join("n.txt")
        }]
    );
    assert_eq!(
        ops(
            "fs_replace_in_file",
            json!({ "path": "n.txt", "old_string": "a", "new_string": "b" })
        ),
        vec![FileSystemOperation::Write {
            path: root.join("n.txt")
        }]
    );
    assert_eq!(
        ops("fs_create_directory", json!({ "path": "d" })),
        vec![FileSystemOperation::CreateDir {
            path: root.join("d")
        }]
    );
    assert_eq!(
        ops("fs_delete", json!({ "path": "d" })),
        vec![FileSystemOperation::Delete {
            path: root.join("d")
        }]
    );
    assert_eq!(
        ops("fs_move", json!({ "from": "a", "to": "/tmp/b" })),
        vec![FileSystemOperation::Move {
            from: root.join("a"),
            to: "/tmp/b".into()
        }]
    );

    // And a PathPolicy over the same root judges them.
    let policy = PathPolicy::new()
        .with_allowed_root(ws.root())
        .with_read_only_root(ws.root().join("docs"));
    let executor = BasicToolExecutor::new(ToolFederation::new().with_source(tools))
        .with_permissions(Arc::new(
            CompositePermissionChecker::new().with_policy(policy),
        ));
    let preflight =
        |tool: &str, input: Value| executor.preflight(&ToolRequest::new("c", tool, input));
    assert_eq!(
        preflight("fs_write_file", json!({ "path": "ok.txt", "content": "" })),
        Preflight::Ready
    );
    assert_eq!(
        preflight("fs_read_file", json!({ "path": "docs/a.md" })),
        Preflight::Ready
    );
    assert!(matches!(
        preflight(
            "fs_write_file",
            json!({ "path": "docs/a.md", "content": "" })
        ),
        Preflight::Rejected(ToolError::PermissionDenied(_))
    ));
    assert!(matches!(
        preflight("fs_move", json!({ "from": "ok.txt", "to": "../out.txt" })),
        Preflight::NeedsApproval(_)
    ));
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_out_of_the_workspace_is_judged_by_where_it_leads() {
    let sandbox = tempfile::tempdir().unwrap();
    let workspace = sandbox.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(sandbox.path().join("secret.txt"), "s3cret").unwrap();
    std::os::unix::fs::symlink(sandbox.path(), workspace.join("escape")).unwrap();
    let policy = PathPolicy::new().with_allowed_root(&workspace);
    let executor = BasicToolExecutor::new(
        ToolFederation::new().with_source(fs_tools(FsToolsConfig::new(&workspace))),
    )
    .with_permissions(Arc::new(
        CompositePermissionChecker::new().with_policy(policy),
    ));
    let read = ToolRequest::new("c", "fs_read_file", json!({ "path": "escape/secret.txt" }));
    let Preflight::NeedsApproval(approval) = executor.preflight(&read) else {
        panic!("a read through the link must be put to the host");
    };
    let target = std::fs::canonicalize(sandbox.path())
        .unwrap()
        .join("secret.txt");
    assert_eq!(approval.summary, format!("read {}", target.display()));
    // Without approval it does not run.
    let err = executor
        .execute(read, ToolContext::detached())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::PermissionDenied(_)), "{err:?}");
}

#[test]
fn specs_carry_annotations_and_the_read_only_set_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let all = fs_tools(FsToolsConfig::new(dir.path())).snapshot();
    assert_eq!(
        all.names(),
        [
            "fs_read_file",
            "fs_list_directory",
            "fs_search",
            "fs_write_file",
            "fs_replace_in_file",
            "fs_create_directory",
            "fs_delete",
            "fs_move"
        ]
    );
    for tool in all.tools.iter() {
        let spec = tool.spec();
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
        assert_eq!(
            spec.input_schema["additionalProperties"], false,
            "{}",
            spec.name
        );
        let mutates = !spec.annotations.read_only;
        assert_eq!(mutates, !spec.annotations.parallel_safe, "{}", spec.name);
    }
    let destructive: Vec<String> = all
        .tools
        .iter()
        .filter(|t| t.spec().annotations.destructive)
        .map(|t| t.spec().name.clone())
        .collect();
    assert_eq!(
        destructive,
        [
            "fs_write_file",
            "fs_replace_in_file",
            "fs_delete",
            "fs_move"
        ]
    );
    let read_only = fs_read_only_tools(FsToolsConfig::new(dir.path())).snapshot();
    assert_eq!(
        read_only.names(),
        ["fs_read_file", "fs_list_directory", "fs_search"]
    );
    assert!(
        read_only
            .tools
            .iter()
            .all(|t| t.spec().annotations.read_only)
    );
}
