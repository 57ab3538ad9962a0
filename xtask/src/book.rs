//! The book: building it with mdBook (`cargo xtask book`), and the checks
//! that keep it whole (part of `cargo xtask docs`).
//!
//! The book is read twice: by mdBook through `docs/src/SUMMARY.md`, and by
//! the doc-tests through `docs/lib.rs`, which includes every chapter so its
//! Rust blocks run. A chapter listed in one but not the other is either
//! never tested or never shown, so the check compares the two and the files
//! in `docs/src`. Links are checked too: a relative link must name a file
//! that exists, a link under `api/` must name a page `cargo doc` built (the
//! book build copies the API docs there), and nothing may point at docs.rs
//! while the crates are unpublished.

use crate::checks::target_directory;
use crate::run::{cargo, workspace_root};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Prefix of book links into the API docs built by `cargo doc`.
const API_PREFIX: &str = "api/";

/// Builds the book into `docs/book` with mdBook, the API docs into
/// `docs/book/api`, or says how to install mdBook when it is missing.
pub fn build() -> Result<(), String> {
    let root = workspace_root();
    let has_mdbook = Command::new("mdbook")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !has_mdbook {
        return Err("mdBook is not installed. Install it with \
             `cargo install mdbook --locked` (a few minutes to build), then run \
             `cargo xtask book` again. The chapters' code runs without it: \
             `cargo test -p agentkit-book --doc`."
            .to_owned());
    }
    println!("    $ mdbook build docs");
    let status = Command::new("mdbook")
        .args(["build", "docs"])
        .current_dir(&root)
        .status()
        .map_err(|err| format!("could not start mdbook: {err}"))?;
    if !status.success() {
        return Err(format!("`mdbook build docs` exited with {status}"));
    }
    cargo(&[
        "doc",
        "--workspace",
        "--all-features",
        "--no-deps",
        "--locked",
    ])?;
    let api = root.join("docs/book").join(API_PREFIX);
    if api.exists() {
        std::fs::remove_dir_all(&api)
            .map_err(|err| format!("could not remove {}: {err}", api.display()))?;
    }
    copy_dir(&target_directory()?.join("doc"), &api)?;
    println!(
        "the book is in {} (API docs under api/)",
        root.join("docs/book/index.html").display()
    );
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to)
        .map_err(|err| format!("could not create {}: {err}", to.display()))?;
    let entries = std::fs::read_dir(from)
        .map_err(|err| format!("could not read {}: {err}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|err| format!("could not read {}: {err}", from.display()))?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .map_err(|err| format!("could not copy to {}: {err}", target.display()))?;
        }
    }
    Ok(())
}

/// SUMMARY.md, docs/lib.rs and docs/src agree, and every link of the book
/// and the READMEs points at something that exists. Run after `cargo doc`,
/// which builds the pages the `api/` links name.
pub fn check() -> Result<(), String> {
    let root = workspace_root();
    let src = root.join("docs/src");
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .map_err(|err| format!("could not read {}: {err}", path.display()))
    };
    let mut problems = chapter_problems(
        &read(&src.join("SUMMARY.md"))?,
        &read(&root.join("docs/lib.rs"))?,
        &markdown_files(&src)?,
    );

    let api_root = target_directory()?.join("doc");
    let mut files = markdown_files(&src)?
        .into_iter()
        .map(|name| src.join(name))
        .collect::<Vec<_>>();
    files.push(root.join("README.md"));
    for dir in ["crates", "examples"] {
        let entries = std::fs::read_dir(root.join(dir))
            .map_err(|err| format!("could not read {dir}: {err}"))?;
        for entry in entries.flatten() {
            let readme = entry.path().join("README.md");
            if readme.exists() {
                files.push(readme);
            }
        }
    }
    for file in files {
        let text = read(&file)?;
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let base = file.parent().unwrap_or(&root);
        let in_book = base == src;
        for (line, target) in links(&text) {
            if let Some(problem) = link_problem(&target, base, in_book.then_some(&api_root)) {
                problems.push(format!("{shown}:{line}: {problem}"));
            }
        }
    }
    if problems.is_empty() {
        println!("    the book's chapters and links are consistent");
        Ok(())
    } else {
        Err(format!(
            "the book is inconsistent:\n  {}",
            problems.join("\n  ")
        ))
    }
}

/// The `.md` files of a directory, by file name.
fn markdown_files(dir: &Path) -> Result<BTreeSet<String>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|err| format!("could not read {}: {err}", dir.display()))?;
    Ok(entries
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".md"))
        .collect())
}

/// Chapters that SUMMARY.md lists but docs/lib.rs does not include (never
/// tested), the reverse (tested, never shown), and files in none.
fn chapter_problems(summary: &str, lib_rs: &str, files: &BTreeSet<String>) -> Vec<String> {
    let listed: BTreeSet<String> = links(summary)
        .into_iter()
        .map(|(_, target)| target)
        .collect();
    let included: BTreeSet<String> = lib_rs
        .split("include_str!(\"src/")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect();
    let mut problems = Vec::new();
    for chapter in listed.difference(&included) {
        problems.push(format!(
            "docs/src/SUMMARY.md lists {chapter}, which docs/lib.rs does not include (its code would never run)"
        ));
    }
    for chapter in included.difference(&listed) {
        problems.push(format!(
            "docs/lib.rs includes {chapter}, which docs/src/SUMMARY.md does not list (the book would not show it)"
        ));
    }
    for file in files {
        if file != "SUMMARY.md" && !listed.contains(file) && !included.contains(file) {
            problems.push(format!(
                "docs/src/{file} is in neither SUMMARY.md nor docs/lib.rs"
            ));
        }
    }
    problems
}

/// What is wrong with one link target, if anything. `api_root` is where
/// `api/` links resolve (the book only).
fn link_problem(target: &str, base: &Path, api_root: Option<&PathBuf>) -> Option<String> {
    if target.contains("docs.rs") {
        return Some(format!(
            "{target}: the crates are not published; link the API docs as `api/CRATE/...` (built by `cargo doc`)"
        ));
    }
    if target.contains("://") || target.starts_with("mailto:") || target.starts_with('#') {
        return None;
    }
    let path = target.split('#').next().unwrap_or(target);
    let resolved = match (path.strip_prefix(API_PREFIX), api_root) {
        (Some(page), Some(api_root)) => api_root.join(page),
        _ => base.join(path),
    };
    (!resolved.exists()).then(|| format!("{target}: no such file ({})", resolved.display()))
}

/// Link targets of a Markdown text with their line numbers: inline links
/// `[text](target)` and reference definitions `[label]: target`, outside
/// fenced code blocks and code spans.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let line = without_code_spans(line);
        let number = index + 1;
        let trimmed = line.trim_start();
        if trimmed.starts_with('[')
            && let Some((_, target)) = trimmed.split_once("]: ")
        {
            if let Some(target) = target.split_whitespace().next() {
                found.push((number, target.to_owned()));
            }
            continue;
        }
        for rest in line.split("](").skip(1) {
            if let Some(target) = rest.split([')', ' ']).next()
                && !target.is_empty()
            {
                found.push((number, target.to_owned()));
            }
        }
    }
    found
}

/// The line with the contents of its `code spans` removed, so code that
/// looks like a link is not taken for one.
fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_outside_code_are_found() {
        let text = "See [loop](loop.md#state) and [`Item`](api/agentkit_core/struct.Item.html).\n\
                    ```rust\nlet x = [a](b);\n```\n\
                    Code `[no](link.md)` here.\n\
                    [`Part`]: api/agentkit_core/enum.Part.html\n";
        let found = links(text);
        assert_eq!(
            found,
            vec![
                (1, "loop.md#state".to_owned()),
                (1, "api/agentkit_core/struct.Item.html".to_owned()),
                (6, "api/agentkit_core/enum.Part.html".to_owned()),
            ]
        );
    }

    #[test]
    fn chapters_missing_from_either_side_are_reported() {
        let summary = "# Summary\n[Intro](introduction.md)\n- [Loop](loop.md)\n";
        let lib_rs = "#[doc = include_str!(\"src/introduction.md\")]\n\
                      #[doc = include_str!(\"src/tools.md\")]\n";
        let files: BTreeSet<String> = [
            "SUMMARY.md",
            "introduction.md",
            "loop.md",
            "tools.md",
            "stray.md",
        ]
        .map(str::to_owned)
        .into();
        let problems = chapter_problems(summary, lib_rs, &files);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("lists loop.md"));
        assert!(problems[1].contains("includes tools.md"));
        assert!(problems[2].contains("stray.md"));
    }

    #[test]
    fn docs_rs_and_missing_files_are_problems() {
        let dir = std::env::temp_dir();
        assert!(link_problem("https://docs.rs/agentkit-core", &dir, None).is_some());
        assert!(link_problem("https://modelcontextprotocol.io", &dir, None).is_none());
        assert!(link_problem("#anchor", &dir, None).is_none());
        assert!(link_problem("no-such-chapter-here.md", &dir, None).is_some());
        let api = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        assert!(link_problem("api/Cargo.toml", &dir, Some(&api)).is_none());
        assert!(link_problem("api/Nope.toml", &dir, Some(&api)).is_some());
    }
}
