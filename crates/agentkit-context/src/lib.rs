//! Project context for agentkit agents: instruction files and Agent Skills.
//!
//! Coding agents read two kinds of files a project keeps for them:
//!
//! - **Instruction files** (`AGENTS.md`, and names such as `CLAUDE.md` a host
//!   adds): [`ProjectInstructions`] finds them from the working directory up
//!   to the repository root and turns them into context items, root first
//!   and nearest last, under a size cap.
//! - **Agent Skills** (`SKILL.md` with YAML frontmatter): [`SkillLoader`]
//!   finds them under `.agents/skills` and configured directories and builds
//!   a [`SkillCatalog`] of names and descriptions; the [`SkillTool`] shows the
//!   catalog to the model and loads a skill's full text only when the model
//!   asks for it (progressive disclosure).
//!
//! Loading never fails: unreadable, oversized or invalid files become
//! [`Diagnostic`]s beside what did load.
//!
//! ```
//! use agentkit_context::{ProjectInstructions, SkillLoader, SkillTool};
//!
//! let repo = tempfile::tempdir().unwrap();
//! std::fs::create_dir_all(repo.path().join(".git")).unwrap();
//! std::fs::write(repo.path().join("AGENTS.md"), "Use tabs.").unwrap();
//!
//! let instructions = ProjectInstructions::new().load(repo.path());
//! let skills = SkillLoader::new().project(repo.path()).load();
//! for diagnostic in instructions.diagnostics.iter().chain(skills.diagnostics()) {
//!     eprintln!("warning: {diagnostic}");
//! }
//! let context_items = instructions.to_items(); // for AgentBuilder::transcript
//! let tool = SkillTool::new(skills); // for a ToolRegistry
//! assert_eq!(context_items.len(), 1);
//! # let _ = tool;
//! ```

mod catalog;
mod diagnostic;
mod instructions;
mod skill;
mod tool;
mod walk;

pub use catalog::{DEFAULT_MAX_SKILL_BYTES, SkillCatalog, SkillLoader};
pub use diagnostic::{Diagnostic, Problem, Severity};
pub use instructions::{
    CONTEXT_SOURCE_KEY, DEFAULT_INSTRUCTIONS_MAX_BYTES, InstructionFile, LoadedInstructions,
    ProjectInstructions,
};
pub use skill::{
    MAX_COMPATIBILITY_LEN, MAX_DESCRIPTION_LEN, MAX_SKILL_NAME_LEN, Skill, validate_skill_name,
};
pub use tool::{DEFAULT_SKILL_TOOL_NAME, MAX_SKILL_FILE_BYTES, SkillTool};
pub use walk::{repository_root, search_path};

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
