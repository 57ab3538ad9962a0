//! Project instruction files: `AGENTS.md` and friends.

use crate::{Diagnostic, Problem};
use agentkit_core::{Item, ItemKind};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The default cap on all instruction files together: 32 KiB.
pub const DEFAULT_INSTRUCTIONS_MAX_BYTES: usize = 32 * 1024;

/// The metadata key set on every item this crate makes, naming what it is
/// (`"project_instructions"`, `"skill_catalog"`).
pub const CONTEXT_SOURCE_KEY: &str = "agentkit.context.source";

/// Finds and loads instruction files.
///
/// It looks for instruction files in every directory
/// from the working directory up to the repository root (see
/// [`search_path`](crate::search_path)). In each directory it takes the first
/// name of its list that exists (`AGENTS.md` by default; add `CLAUDE.md` as a
/// fallback with [`ProjectInstructions::fallback`]). The files become
/// context items, **root first and nearest last**: the most specific
/// instructions come last, closest to the conversation, and win where they
/// disagree with a file further up.
///
/// A size cap bounds what all files together may add to every model call.
/// The budget goes to the nearest files first; the file that crosses the cap
/// is truncated at a character boundary (with a marker saying so), and files
/// further up are left out. Both are reported as [`Diagnostic`]s.
///
/// ```
/// use agentkit_context::ProjectInstructions;
///
/// let repo = tempfile::tempdir().unwrap();
/// std::fs::create_dir_all(repo.path().join(".git")).unwrap();
/// std::fs::create_dir_all(repo.path().join("crates/app")).unwrap();
/// std::fs::write(repo.path().join("AGENTS.md"), "Run `cargo xtask ci` before committing.").unwrap();
/// std::fs::write(repo.path().join("crates/app/CLAUDE.md"), "This crate is the CLI.").unwrap();
///
/// let loaded = ProjectInstructions::new()
///     .fallback("CLAUDE.md")
///     .load(&repo.path().join("crates/app"));
/// let items = loaded.to_items();
/// assert_eq!(items.len(), 2);
/// assert!(items[0].text_content().contains("cargo xtask ci")); // the root's, first
/// assert!(items[1].text_content().contains("This crate is the CLI.")); // the nearest, last
/// assert!(loaded.diagnostics.is_empty());
/// ```
#[derive(Clone, Debug)]
pub struct ProjectInstructions {
    file_names: Vec<String>,
    max_bytes: usize,
}

impl Default for ProjectInstructions {
    fn default() -> Self {
        Self::new()
    }
}

impl ProjectInstructions {
    /// Looks for `AGENTS.md`, with a cap of
    /// [`DEFAULT_INSTRUCTIONS_MAX_BYTES`].
    pub fn new() -> Self {
        Self {
            file_names: vec!["AGENTS.md".to_owned()],
            max_bytes: DEFAULT_INSTRUCTIONS_MAX_BYTES,
        }
    }

    /// Replaces the list of file names. In each directory the first name of
    /// the list that exists is loaded, the others are ignored.
    pub fn file_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.file_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// Adds a name to the end of the list: it is loaded in directories that
    /// have none of the names before it.
    pub fn fallback(mut self, name: impl Into<String>) -> Self {
        self.file_names.push(name.into());
        self
    }

    /// The cap, in bytes, on all files together (0 loads nothing).
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The file names looked for, in order of preference.
    pub fn names(&self) -> &[String] {
        &self.file_names
    }

    /// Finds and reads the files for an agent working in `cwd`.
    pub fn load(&self, cwd: &Path) -> LoadedInstructions {
        let root = crate::repository_root(cwd);
        let mut diagnostics = Vec::new();
        let mut found = Vec::new(); // nearest first
        for dir in crate::search_path(cwd) {
            if let Some(path) = self.first_existing(&dir) {
                found.push((dir, path));
            }
        }

        let mut budget = self.max_bytes;
        let mut files = Vec::new();
        for (dir, path) in found {
            let bytes = match read_up_to(&path, budget) {
                Ok(bytes) => bytes,
                Err(error) => {
                    diagnostics.push(Diagnostic::new(&path, Problem::io(&error)));
                    continue;
                }
            };
            let (content, total) = bytes;
            if budget == 0 {
                diagnostics.push(Diagnostic::new(&path, Problem::Dropped { total }));
                continue;
            }
            let content = String::from_utf8_lossy(&content).into_owned();
            let (content, truncated) = if total > budget {
                let kept = floor_char_boundary(&content, budget);
                diagnostics.push(Diagnostic::new(&path, Problem::Truncated { kept, total }));
                (content[..kept].to_owned(), true)
            } else {
                (content, false)
            };
            budget -= content.len().min(budget);
            let relative_dir = match &root {
                Some(root) => dir.strip_prefix(root).unwrap_or(&dir).to_path_buf(),
                None => PathBuf::new(),
            };
            files.push(InstructionFile {
                path,
                relative_dir,
                content,
                truncated,
                original_bytes: total,
            });
        }
        files.reverse(); // root first, nearest last
        LoadedInstructions {
            root,
            files,
            diagnostics,
        }
    }

    fn first_existing(&self, dir: &Path) -> Option<PathBuf> {
        self.file_names
            .iter()
            .map(|name| dir.join(name))
            .find(|path| path.is_file())
    }
}

/// Reads at most `limit` bytes; returns them and the file's full size.
fn read_up_to(path: &Path, limit: usize) -> std::io::Result<(Vec<u8>, usize)> {
    let file = std::fs::File::open(path)?;
    let total = usize::try_from(file.metadata()?.len()).unwrap_or(usize::MAX);
    let mut content = Vec::with_capacity(total.min(limit));
    file.take(limit as u64).read_to_end(&mut content)?;
    Ok((content, total))
}

/// The largest index `<= at` that is a char boundary of `text`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// What [`ProjectInstructions::load`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadedInstructions {
    /// The repository root, if the working directory is inside one.
    pub root: Option<PathBuf>,
    /// The files loaded, root first and nearest last.
    pub files: Vec<InstructionFile>,
    /// Files that could not be read, were truncated or left out.
    pub diagnostics: Vec<Diagnostic>,
}

impl LoadedInstructions {
    /// Whether no file was loaded.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// One [`ItemKind::Context`] item per file, root first and nearest last,
    /// ready for [`AgentBuilder::transcript`] or a session's first input.
    ///
    /// [`AgentBuilder::transcript`]: https://docs.rs/agentkit-loop
    pub fn to_items(&self) -> Vec<Item> {
        self.files.iter().map(InstructionFile::to_item).collect()
    }
}

/// One instruction file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstructionFile {
    /// Where it was read.
    pub path: PathBuf,
    /// Its directory relative to the repository root (empty at the root or
    /// outside a repository).
    pub relative_dir: PathBuf,
    /// The text loaded (lossily decoded if the file is not UTF-8).
    pub content: String,
    /// Whether `content` is cut short by the size cap.
    pub truncated: bool,
    /// The file's size in bytes.
    pub original_bytes: usize,
}

impl InstructionFile {
    /// The context item the model sees: a heading naming the file and the
    /// directory it applies to, then its text.
    pub fn to_item(&self) -> Item {
        let name = self
            .path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let scope = if self.relative_dir.as_os_str().is_empty() {
            "the whole project".to_owned()
        } else {
            format!("files under {}/", self.relative_dir.display())
        };
        let mut text = format!(
            "Project instructions from {} (they apply to {scope}; instructions from deeper directories come later and take precedence):\n\n{}",
            self.display_path(&name),
            self.content
        );
        if self.truncated {
            text.push_str(&format!(
                "\n\n[truncated: {} of {} bytes shown]",
                self.content.len(),
                self.original_bytes
            ));
        }
        Item::text(ItemKind::Context, text)
            .with_metadata(CONTEXT_SOURCE_KEY, "project_instructions")
            .with_metadata("agentkit.context.path", self.path.display().to_string())
    }

    fn display_path(&self, name: &str) -> String {
        if self.relative_dir.as_os_str().is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", self.relative_dir.display())
        }
    }
}
