//! `AGENTS.md` discovery on real directory trees: precedence, fallbacks,
//! the repository boundary and the size cap.

use agentkit_context::{CONTEXT_SOURCE_KEY, Problem, ProjectInstructions, Severity};
use agentkit_core::ItemKind;
use std::path::{Path, PathBuf};

/// `outer/` holds `repo/` (the repository) which holds `a/b/`.
fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("outer/repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("a/b")).unwrap();
    (dir, repo)
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn nearest_comes_last_and_the_search_stops_at_the_repository_root() {
    let (dir, repo) = tree();
    write(
        &dir.path().join("outer/AGENTS.md"),
        "OUTSIDE the repository",
    );
    write(&repo.join("AGENTS.md"), "root rules");
    write(&repo.join("a/CLAUDE.md"), "a rules (fallback name)");
    write(&repo.join("a/b/AGENTS.md"), "b rules");
    write(
        &repo.join("a/b/CLAUDE.md"),
        "b CLAUDE.md is not read: AGENTS.md is preferred",
    );

    let loaded = ProjectInstructions::new()
        .fallback("CLAUDE.md")
        .load(&repo.join("a/b"));
    assert_eq!(loaded.root.as_deref(), Some(repo.as_path()));
    let contents: Vec<&str> = loaded.files.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(
        contents,
        ["root rules", "a rules (fallback name)", "b rules"]
    );
    let dirs: Vec<&Path> = loaded
        .files
        .iter()
        .map(|f| f.relative_dir.as_path())
        .collect();
    assert_eq!(dirs, [Path::new(""), Path::new("a"), Path::new("a/b")]);
    assert!(loaded.diagnostics.is_empty());

    let items = loaded.to_items();
    assert!(items.iter().all(|item| item.kind == ItemKind::Context));
    assert!(items.iter().all(|item| {
        item.metadata.get(CONTEXT_SOURCE_KEY) == Some(&"project_instructions".into())
    }));
    let first = items[0].text_content();
    assert!(
        first.starts_with("Project instructions from AGENTS.md (they apply to the whole project;")
    );
    let last = items[2].text_content();
    assert!(
        last.contains("from a/b/AGENTS.md (they apply to files under a/b/;"),
        "{last}"
    );
    assert!(last.ends_with("b rules"));
}

#[test]
fn without_the_fallback_only_agents_md_is_read() {
    let (_dir, repo) = tree();
    write(&repo.join("a/CLAUDE.md"), "only CLAUDE.md here");
    write(&repo.join("a/b/AGENTS.md"), "b rules");
    let loaded = ProjectInstructions::new().load(&repo.join("a/b"));
    assert_eq!(loaded.files.len(), 1);
    assert_eq!(loaded.files[0].content, "b rules");

    // A replaced list reads only its own names.
    let loaded = ProjectInstructions::new()
        .file_names(["CLAUDE.md"])
        .load(&repo.join("a/b"));
    assert_eq!(loaded.files.len(), 1);
    assert_eq!(loaded.files[0].content, "only CLAUDE.md here");
}

#[test]
fn the_cap_goes_to_the_nearest_files_first() {
    let (_dir, repo) = tree();
    write(&repo.join("a/b/AGENTS.md"), &"b".repeat(30));
    write(&repo.join("a/AGENTS.md"), &"a".repeat(100));
    write(&repo.join("AGENTS.md"), "root is left out");

    let loaded = ProjectInstructions::new()
        .max_bytes(50)
        .load(&repo.join("a/b"));
    let contents: Vec<&str> = loaded.files.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(contents, ["a".repeat(20), "b".repeat(30)]);
    assert!(loaded.files[0].truncated);
    assert!(!loaded.files[1].truncated);
    let problems: Vec<(&Path, &Problem)> = loaded
        .diagnostics
        .iter()
        .map(|d| (d.path.as_path(), &d.problem))
        .collect();
    let a = repo.join("a/AGENTS.md");
    let root = repo.join("AGENTS.md");
    assert_eq!(
        problems,
        [
            (
                a.as_path(),
                &Problem::Truncated {
                    kept: 20,
                    total: 100
                }
            ),
            (root.as_path(), &Problem::Dropped { total: 16 }),
        ]
    );
    assert_eq!(loaded.diagnostics[0].severity(), Severity::Warning);
    assert_eq!(loaded.diagnostics[1].severity(), Severity::Error);
    let text = loaded.to_items()[0].text_content();
    assert!(
        text.ends_with("[truncated: 20 of 100 bytes shown]"),
        "{text}"
    );
}

#[test]
fn truncation_keeps_whole_characters() {
    let (_dir, repo) = tree();
    write(&repo.join("AGENTS.md"), "ééééé"); // 10 bytes
    let loaded = ProjectInstructions::new().max_bytes(5).load(&repo);
    assert_eq!(loaded.files[0].content, "éé");
    assert_eq!(
        loaded.diagnostics[0].problem,
        Problem::Truncated { kept: 4, total: 10 }
    );
}

#[test]
fn outside_a_repository_only_the_working_directory_is_read() {
    let dir = tempfile::tempdir().unwrap();
    if agentkit_context::repository_root(dir.path()).is_some() {
        return; // the temporary directory sits inside a repository here
    }
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    write(&dir.path().join("AGENTS.md"), "parent");
    write(&dir.path().join("work/AGENTS.md"), "here");
    let loaded = ProjectInstructions::new().load(&dir.path().join("work"));
    assert_eq!(loaded.root, None);
    assert_eq!(loaded.files.len(), 1);
    assert_eq!(loaded.files[0].content, "here");
    assert!(
        loaded.to_items()[0]
            .text_content()
            .contains("apply to the whole project")
    );
}

#[test]
fn a_directory_named_agents_md_is_not_a_file() {
    let (_dir, repo) = tree();
    std::fs::create_dir_all(repo.join("AGENTS.md")).unwrap();
    let loaded = ProjectInstructions::new().load(&repo);
    assert!(loaded.is_empty());
    assert!(loaded.diagnostics.is_empty());
}
