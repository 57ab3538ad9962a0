//! Finding skills, and the catalog the model sees.

use crate::{CONTEXT_SOURCE_KEY, Diagnostic, Problem, Skill};
use agentkit_core::{Item, ItemKind};
use std::path::{Path, PathBuf};

/// The default limit on one `SKILL.md`: 256 KiB.
pub const DEFAULT_MAX_SKILL_BYTES: u64 = 256 * 1024;

/// Where a skill directory comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SkillRoot {
    path: PathBuf,
    /// Configured explicitly: report it when missing.
    configured: bool,
}

/// Finds skills.
///
/// It scans skill directories: `.agents/skills` in every
/// directory from the working directory up to the repository root (nearest
/// first), then the directories the host configures (a user-wide
/// `~/.agents/skills`, a `.claude/skills`), in the order added. Each
/// immediate subdirectory holding a `SKILL.md` is one skill. When two skills
/// share a name, the one found first wins and the other is reported as a
/// [`Problem::Duplicate`].
///
/// The resulting [`SkillCatalog`] is the first level of progressive
/// disclosure: names and descriptions only, a few dozen tokens per skill.
/// The model sees it either in the description of the
/// [`SkillTool`](crate::SkillTool) or as a context item
/// ([`SkillCatalog::to_item`]), and loads a skill's full text through the
/// tool when a task calls for it.
///
/// ```
/// use agentkit_context::SkillLoader;
///
/// let repo = tempfile::tempdir().unwrap();
/// std::fs::create_dir_all(repo.path().join(".git")).unwrap();
/// let skill_dir = repo.path().join(".agents/skills/release-notes");
/// std::fs::create_dir_all(&skill_dir).unwrap();
/// std::fs::write(
///     skill_dir.join("SKILL.md"),
///     "---\nname: release-notes\ndescription: Writes release notes from the git log.\n---\nRun git log.\n",
/// ).unwrap();
///
/// let catalog = SkillLoader::new().project(repo.path()).load();
/// assert_eq!(catalog.names(), ["release-notes"]);
/// assert!(catalog.diagnostics().is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct SkillLoader {
    roots: Vec<SkillRoot>,
    max_skill_bytes: Option<u64>,
}

impl SkillLoader {
    /// A loader with no directories yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `.agents/skills` of every directory from `cwd` up to the
    /// repository root, nearest first. Missing ones are skipped silently.
    pub fn project(mut self, cwd: &Path) -> Self {
        for dir in crate::search_path(cwd) {
            self.roots.push(SkillRoot {
                path: dir.join(".agents").join("skills"),
                configured: false,
            });
        }
        self
    }

    /// Adds a directory whose subdirectories are skills. A missing one is
    /// reported as [`Problem::MissingDirectory`].
    pub fn dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.roots.push(SkillRoot {
            path: path.into(),
            configured: true,
        });
        self
    }

    /// The limit on one `SKILL.md` (default [`DEFAULT_MAX_SKILL_BYTES`]).
    pub fn max_skill_bytes(mut self, limit: u64) -> Self {
        self.max_skill_bytes = Some(limit);
        self
    }

    /// Scans every directory. Never fails: problems become diagnostics.
    pub fn load(&self) -> SkillCatalog {
        let limit = self.max_skill_bytes.unwrap_or(DEFAULT_MAX_SKILL_BYTES);
        let mut catalog = SkillCatalog::default();
        for root in &self.roots {
            let entries = match std::fs::read_dir(&root.path) {
                Ok(entries) => entries,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    if root.configured {
                        catalog
                            .diagnostics
                            .push(Diagnostic::new(&root.path, Problem::MissingDirectory));
                    }
                    continue;
                }
                Err(error) => {
                    catalog
                        .diagnostics
                        .push(Diagnostic::new(&root.path, Problem::io(&error)));
                    continue;
                }
            };
            let mut dirs: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.join("SKILL.md").is_file())
                .collect();
            dirs.sort();
            for dir in dirs {
                catalog.add_from_dir(&dir, limit);
            }
        }
        catalog
    }
}

/// The skills found, with the problems met on the way.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkillCatalog {
    skills: Vec<Skill>,
    diagnostics: Vec<Diagnostic>,
}

impl SkillCatalog {
    /// A catalog of these skills (for tests and hosts that build skills in
    /// code). Later duplicates are reported and dropped.
    pub fn from_skills(skills: impl IntoIterator<Item = Skill>) -> Self {
        let mut catalog = Self::default();
        for skill in skills {
            catalog.insert(skill);
        }
        catalog
    }

    fn add_from_dir(&mut self, dir: &Path, limit: u64) {
        let path = dir.join("SKILL.md");
        let text = match read_limited(&path, limit) {
            Ok(text) => text,
            Err(problem) => {
                self.diagnostics.push(Diagnostic::new(path, problem));
                return;
            }
        };
        match Skill::parse(&text, dir) {
            Ok((skill, warnings)) => {
                for warning in warnings {
                    self.diagnostics.push(Diagnostic::new(&path, warning));
                }
                self.insert(skill);
            }
            Err(problem) => self.diagnostics.push(Diagnostic::new(path, problem)),
        }
    }

    fn insert(&mut self, skill: Skill) {
        if let Some(kept) = self.get(&skill.name) {
            let problem = Problem::Duplicate {
                name: skill.name.clone(),
                kept: kept.path(),
            };
            self.diagnostics
                .push(Diagnostic::new(skill.path(), problem));
        } else {
            self.skills.push(skill);
        }
    }

    /// The skills, in the order found.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// The skills' names, in the order found.
    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }

    /// The skill of that name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Whether no skill was found.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The problems met while loading.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The catalog as text: one `- name: description` line per skill.
    pub fn listing(&self) -> String {
        self.skills
            .iter()
            .map(|skill| format!("- {}: {}\n", skill.name, skill.description))
            .collect()
    }

    /// The catalog as a context item, for hosts that keep the tool's
    /// description short ([`SkillTool::catalog_in_description`]). `tool_name`
    /// is the name the skill tool is registered under.
    ///
    /// [`SkillTool::catalog_in_description`]: crate::SkillTool::catalog_in_description
    pub fn to_item(&self, tool_name: &str) -> Item {
        let text = format!(
            "Skills are available: instructions for particular tasks. When a task matches a skill's description, call `{tool_name}` with its name and follow what it says.\n\n{}",
            self.listing()
        );
        Item::text(ItemKind::Context, text).with_metadata(CONTEXT_SOURCE_KEY, "skill_catalog")
    }
}

fn read_limited(path: &Path, limit: u64) -> Result<String, Problem> {
    let size = path.metadata().map_err(|e| Problem::io(&e))?.len();
    if size > limit {
        return Err(Problem::TooLarge { size, limit });
    }
    let bytes = std::fs::read(path).map_err(|e| Problem::io(&e))?;
    String::from_utf8(bytes).map_err(|_| Problem::Unreadable {
        kind: std::io::ErrorKind::InvalidData,
        message: "it is not UTF-8".into(),
    })
}
