//! The tool through which the model loads a skill.

use crate::SkillCatalog;
use agentkit_tools_core::{
    Tool, ToolAnnotations, ToolContext, ToolError, ToolRequest, ToolResult, ToolSpec,
};
use serde_json::json;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The tool's default name.
pub const DEFAULT_SKILL_TOOL_NAME: &str = "load_skill";
/// The largest file beside `SKILL.md` the tool returns: 64 KiB.
pub const MAX_SKILL_FILE_BYTES: u64 = 64 * 1024;
/// How many files beside `SKILL.md` the tool lists at most.
const MAX_LISTED_FILES: usize = 100;

/// Loads skills for the model.
///
/// The tool (named `load_skill` unless renamed) takes a skill's name
/// and returns its instructions plus the list of files beside `SKILL.md`;
/// with a `file` argument it returns one of those files instead (level 3 of
/// progressive disclosure: a reference document the instructions point to).
/// Files are read only inside the skill's directory: absolute paths and `..`
/// are refused, and a symbolic link that leads outside is refused after
/// resolving it.
///
/// ```
/// use agentkit_context::{Skill, SkillCatalog, SkillTool};
/// use agentkit_tools_core::{Tool, ToolContext, ToolRequest};
/// use serde_json::json;
///
/// let text = "---\nname: greet\ndescription: How to greet people.\n---\nSay hello first.\n";
/// let dir = tempfile::tempdir().unwrap();
/// let (skill, _) = Skill::parse(text, &dir.path().join("greet")).unwrap();
/// let tool = SkillTool::new(SkillCatalog::from_skills([skill]));
/// // The model sees the catalog in the description...
/// assert!(tool.spec().description.contains("- greet: How to greet people."));
/// // ...and loads the instructions when it needs them.
/// let request = ToolRequest::new("call-1", "load_skill", json!({ "name": "greet" }));
/// let result = futures::executor::block_on(tool.invoke(request, ToolContext::detached())).unwrap();
/// assert!(result.output.to_text().contains("Say hello first."));
/// ```
#[derive(Clone, Debug)]
pub struct SkillTool {
    catalog: Arc<SkillCatalog>,
    spec: Arc<ToolSpec>,
    name: String,
    catalog_in_description: bool,
}

impl SkillTool {
    /// A `load_skill` tool whose description lists the catalog.
    pub fn new(catalog: SkillCatalog) -> Self {
        Self::build(Arc::new(catalog), DEFAULT_SKILL_TOOL_NAME.to_owned(), true)
    }

    /// The same tool under another name (it must match
    /// `^[a-zA-Z0-9_-]{1,64}$`).
    pub fn named(
        self,
        name: impl Into<String>,
    ) -> Result<Self, agentkit_tools_core::InvalidToolName> {
        let name = name.into();
        agentkit_tools_core::validate_tool_name(&name)?;
        Ok(Self::build(self.catalog, name, self.catalog_in_description))
    }

    /// Whether the description lists every skill (default `true`). Turn it
    /// off when the catalog goes into a context item instead
    /// ([`SkillCatalog::to_item`]), e.g. to keep tool descriptions stable
    /// for prompt caching.
    pub fn catalog_in_description(self, on: bool) -> Self {
        Self::build(self.catalog, self.name, on)
    }

    /// The catalog the tool serves.
    pub fn catalog(&self) -> &SkillCatalog {
        &self.catalog
    }

    fn build(catalog: Arc<SkillCatalog>, name: String, catalog_in_description: bool) -> Self {
        let mut description = String::from(
            "Loads a skill: instructions for a particular kind of task, written for you. \
             When a task matches a skill's description, call this tool with the skill's name \
             before starting, then follow the instructions. A skill may list more files; \
             read one by calling again with `file` set to its path.",
        );
        if catalog_in_description {
            if catalog.is_empty() {
                description.push_str("\n\nNo skills are installed.");
            } else {
                description.push_str("\n\nAvailable skills:\n");
                description.push_str(&catalog.listing());
            }
        }
        let schema = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "The skill's name." },
                "file": {
                    "type": "string",
                    "description": "Optional: a file of the skill, relative to its directory, to read instead of its instructions."
                }
            },
            "required": ["name"],
            "additionalProperties": false
        });
        let spec = ToolSpec::new(name.clone(), description, schema)
            .expect("the name was validated")
            .with_annotations(ToolAnnotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                parallel_safe: true,
            });
        Self {
            catalog,
            spec: Arc::new(spec),
            name,
            catalog_in_description,
        }
    }
}

#[async_trait::async_trait]
impl Tool for SkillTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let name = request.input["name"]
            .as_str()
            .ok_or_else(|| ToolError::InvalidInput("`name` must be a string".into()))?;
        let Some(skill) = self.catalog.get(name) else {
            return Err(ToolError::InvalidInput(format!(
                "no skill named {name:?}; available: {}",
                self.catalog.names().join(", ")
            )));
        };
        match request.input.get("file").and_then(|f| f.as_str()) {
            Some(file) => read_skill_file(&skill.directory, file).map(ToolResult::new),
            None => {
                let mut text = format!(
                    "Skill `{}` (directory {}):\n\n{}",
                    skill.name,
                    skill.directory.display(),
                    skill.body
                );
                let files = list_files(&skill.directory);
                if !files.is_empty() {
                    text.push_str("\n\nFiles of this skill (read one with `file`):\n");
                    for file in files {
                        text.push_str(&format!("- {file}\n"));
                    }
                }
                Ok(ToolResult::new(text))
            }
        }
    }
}

/// Reads `relative` inside `dir`, refusing anything that leaves it.
fn read_skill_file(dir: &Path, relative: &str) -> Result<String, ToolError> {
    let refuse = |why: &str| ToolError::InvalidInput(format!("cannot read {relative:?}: {why}"));
    let rel = Path::new(relative);
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(refuse(
            "give a path inside the skill's directory, without `..`",
        ));
    }
    let base = dir
        .canonicalize()
        .map_err(|e| ToolError::Unavailable(format!("skill directory: {e}")))?;
    let path = base
        .join(rel)
        .canonicalize()
        .map_err(|_| refuse("no such file"))?;
    if !path.starts_with(&base) {
        return Err(refuse("it leads outside the skill's directory"));
    }
    let meta = path.metadata().map_err(|e| refuse(&e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("not a file"));
    }
    if meta.len() > MAX_SKILL_FILE_BYTES {
        return Err(refuse(&format!(
            "it is {} bytes, more than {MAX_SKILL_FILE_BYTES}",
            meta.len()
        )));
    }
    let bytes = std::fs::read(&path).map_err(|e| refuse(&e.to_string()))?;
    String::from_utf8(bytes).map_err(|_| refuse("it is not a text file"))
}

/// The files under `dir` other than `SKILL.md`, relative, sorted, at most
/// [`MAX_LISTED_FILES`] and three levels deep.
fn list_files(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack: Vec<(PathBuf, usize)> = vec![(dir.to_path_buf(), 0)];
    while let Some((current, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if depth < 2 {
                    stack.push((path, depth + 1));
                }
            } else if let Ok(rel) = path.strip_prefix(dir)
                && rel != Path::new("SKILL.md")
            {
                files.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files.sort();
    files.truncate(MAX_LISTED_FILES);
    files
}
