//! The text tools over a host's files (an editor's unsaved buffers): reads
//! and edits go to the buffers, the disk stays as it was, and a path the
//! tools would refuse never reaches the host.

use agentkit_tool_fs::{FsToolsConfig, TextFiles, fs_tools};
use agentkit_tools_core::{
    BasicToolExecutor, CompositePermissionChecker, PathPolicy, ToolContext, ToolError,
    ToolExecutor, ToolFederation, ToolRequest,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Buffers in memory, with every path asked for.
#[derive(Debug, Default)]
struct Buffers {
    files: Mutex<HashMap<PathBuf, String>>,
    asked: Mutex<Vec<PathBuf>>,
}

#[async_trait::async_trait]
impl TextFiles for Buffers {
    async fn read_text(&self, path: &Path) -> std::io::Result<String> {
        self.asked.lock().unwrap().push(path.to_owned());
        let files = self.files.lock().unwrap();
        files
            .get(path)
            .cloned()
            .ok_or_else(|| std::io::ErrorKind::NotFound.into())
    }

    async fn write_text(&self, path: &Path, text: &str) -> std::io::Result<()> {
        self.asked.lock().unwrap().push(path.to_owned());
        let mut files = self.files.lock().unwrap();
        files.insert(path.to_owned(), text.to_owned());
        Ok(())
    }
}

struct Editor {
    dir: tempfile::TempDir,
    root: PathBuf,
    buffers: Arc<Buffers>,
    executor: BasicToolExecutor,
}

impl Editor {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let buffers = Arc::new(Buffers::default());
        let config = FsToolsConfig::new(dir.path()).with_text_files(buffers.clone());
        let root = config.root().to_path_buf();
        // The permission rules a host sets: the workspace, nothing else
        // without an approval.
        let policy = PathPolicy::new().with_allowed_root(&root);
        let executor = BasicToolExecutor::new(ToolFederation::new().with_source(fs_tools(config)))
            .with_permissions(Arc::new(
                CompositePermissionChecker::new().with_policy(policy),
            ));
        Self {
            dir,
            root,
            buffers,
            executor,
        }
    }

    fn buffer(&self, rel: &str) -> Option<String> {
        self.buffers
            .files
            .lock()
            .unwrap()
            .get(&self.root.join(rel))
            .cloned()
    }

    fn open(&self, rel: &str, text: &str) {
        let mut files = self.buffers.files.lock().unwrap();
        files.insert(self.root.join(rel), text.to_owned());
    }

    async fn call(&self, tool: &str, input: Value) -> Result<String, ToolError> {
        let request = ToolRequest::new("call", tool, input);
        let result = self
            .executor
            .execute(request, ToolContext::detached())
            .await?;
        if result.is_error {
            return Err(ToolError::ExecutionFailed(result.output.to_text()));
        }
        Ok(result.output.to_text())
    }
}

#[tokio::test]
async fn reads_see_the_unsaved_buffer_not_the_disk() {
    let editor = Editor::new();
    std::fs::write(editor.dir.path().join("main.rs"), "on disk\n").unwrap();
    editor.open("main.rs", "fn main() {\n    unsaved();\n}\n");
    let out = editor
        .call(
            "fs_read_file",
            json!({ "path": "main.rs", "offset": 2, "limit": 1 }),
        )
        .await
        .unwrap();
    assert!(out.starts_with("     2\t    unsaved();\n"), "{out}");
    assert!(out.contains("more follow"), "{out}");
}

#[tokio::test]
async fn writes_and_replacements_land_in_the_buffers_and_leave_the_disk_alone() {
    let editor = Editor::new();
    let out = editor
        .call(
            "fs_write_file",
            json!({ "path": "src/new.rs", "content": "let a = 1;\n" }),
        )
        .await
        .unwrap();
    assert!(out.contains("src/new.rs"), "{out}");
    assert_eq!(editor.buffer("src/new.rs").as_deref(), Some("let a = 1;\n"));

    editor.open("lib.rs", "old();\nkeep();\n");
    std::fs::write(editor.dir.path().join("lib.rs"), "on disk\n").unwrap();
    editor
        .call(
            "fs_replace_in_file",
            json!({ "path": "lib.rs", "old_string": "old();", "new_string": "new();" }),
        )
        .await
        .unwrap();
    assert_eq!(
        editor.buffer("lib.rs").as_deref(),
        Some("new();\nkeep();\n")
    );

    // Nothing was written to the disk.
    assert!(!editor.dir.path().join("src").exists());
    let disk = std::fs::read_to_string(editor.dir.path().join("lib.rs")).unwrap();
    assert_eq!(disk, "on disk\n");
}

#[tokio::test]
async fn a_missing_buffer_is_a_clear_error() {
    let editor = Editor::new();
    let err = editor
        .call("fs_read_file", json!({ "path": "gone.rs" }))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("gone.rs"), "{err}");
}

/// One row per way out of the root: without an approval each is refused
/// before the host is asked, for reads and for writes.
#[tokio::test]
async fn paths_outside_the_root_never_reach_the_host() {
    let editor = Editor::new();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc", editor.dir.path().join("link")).unwrap();
    let escapes = [
        "../outside.txt",
        "/etc/passwd",
        "a/../../outside.txt",
        #[cfg(unix)]
        "link/passwd",
    ];
    for path in escapes {
        for (tool, input) in [
            ("fs_read_file", json!({ "path": path })),
            ("fs_write_file", json!({ "path": path, "content": "x" })),
            (
                "fs_replace_in_file",
                json!({ "path": path, "old_string": "a", "new_string": "b" }),
            ),
        ] {
            assert!(
                editor.call(tool, input).await.is_err(),
                "{tool} {path} was allowed"
            );
        }
    }
    let asked = editor.buffers.asked.lock().unwrap();
    assert!(asked.is_empty(), "the host was asked for {asked:?}");
}
