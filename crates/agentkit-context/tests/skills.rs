//! Agent Skills on fixture directories: discovery, diagnostics for invalid
//! skills, the `load_skill` tool's path checks, and progressive disclosure
//! inside a real agent loop driven by a scripted model.

use agentkit_context::{Problem, ProjectInstructions, Severity, SkillLoader, SkillTool};
use agentkit_core::{FinishReason, ItemKind, validate_transcript};
use agentkit_loop::{Agent, LoopStep, SessionConfig};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{Tool, ToolContext, ToolError, ToolRegistry, ToolRequest};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A repository whose `.agents/skills` holds the fixture skills, with a
/// working directory `src/` inside it.
fn repo_with_skills() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join(".git")).unwrap();
    std::fs::create_dir_all(repo.path().join("src")).unwrap();
    copy_dir(
        &fixtures().join("skills"),
        &repo.path().join(".agents/skills"),
    );
    repo
}

/// The diagnostics as `(skill directory name, problem)`, sorted.
fn problems(catalog: &agentkit_context::SkillCatalog) -> Vec<(String, Problem)> {
    let mut found: Vec<(String, Problem)> = catalog
        .diagnostics()
        .iter()
        .map(|d| {
            let dir = if d.path.ends_with("SKILL.md") {
                d.path.parent().unwrap()
            } else {
                d.path.as_path()
            };
            let parent = dir.parent().unwrap().file_name().unwrap().to_string_lossy();
            let name = dir.file_name().unwrap().to_string_lossy();
            (format!("{parent}/{name}"), d.problem.clone())
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

#[test]
fn fixture_skills_load_and_each_invalid_one_is_a_diagnostic() {
    let repo = repo_with_skills();
    let catalog = SkillLoader::new()
        .project(&repo.path().join("src"))
        .dir(fixtures().join("user-skills"))
        .dir(repo.path().join("no-such-dir"))
        .load();

    // Project skills first (sorted by directory), then the configured directory.
    assert_eq!(
        catalog.names(),
        [
            "pdf-forms",
            "release-notes",
            "code-review",
            "commit-message"
        ]
    );
    let pdf = catalog.get("pdf-forms").unwrap();
    assert_eq!(
        pdf.description,
        "Fills in PDF forms from a JSON file of field values. Use when the user mentions a PDF form."
    );
    assert_eq!(pdf.allowed_tools, ["shell_exec", "fs_read_file"]);
    assert_eq!(
        pdf.compatibility.as_deref(),
        Some("Needs python3 and pdftk on PATH.")
    );
    let notes = catalog.get("release-notes").unwrap();
    assert_eq!(notes.license.as_deref(), Some("MIT"));
    assert_eq!(notes.metadata["author"], "agentkit");
    assert!(notes.body.starts_with("# Release notes\n"));
    // The project's skill shadows the user's of the same name.
    assert!(notes.directory.starts_with(repo.path()));

    let found = problems(&catalog);
    let summary: Vec<(&str, &str)> = found
        .iter()
        .map(|(dir, problem)| {
            let kind = match problem {
                Problem::InvalidField { field: "name", .. } => "invalid name",
                Problem::InvalidYaml { .. } => "invalid yaml",
                Problem::MissingField {
                    field: "description",
                } => "missing description",
                Problem::MissingFrontmatter => "no frontmatter",
                Problem::NameMismatch { .. } => "name mismatch",
                Problem::Duplicate { .. } => "duplicate",
                Problem::MissingDirectory => "missing directory",
                other => panic!("unexpected {other:?}"),
            };
            (dir.as_str(), kind)
        })
        .collect();
    let tmp_name = repo
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let missing = format!("{tmp_name}/no-such-dir");
    let mut expected = vec![
        ("skills/bad-name", "invalid name"),
        ("skills/broken-yaml", "invalid yaml"),
        ("skills/missing-description", "missing description"),
        ("skills/no-frontmatter", "no frontmatter"),
        ("skills/renamed", "name mismatch"),
        ("user-skills/release-notes", "duplicate"),
        (missing.as_str(), "missing directory"),
    ];
    expected.sort();
    assert_eq!(summary, expected);

    // Every diagnostic prints the file and the reason.
    let broken = catalog
        .diagnostics()
        .iter()
        .find(|d| matches!(d.problem, Problem::InvalidYaml { .. }))
        .unwrap();
    let shown = broken.to_string();
    assert!(
        shown.contains("broken-yaml/SKILL.md: the frontmatter is not a YAML mapping"),
        "{shown}"
    );
    assert!(shown.contains("line"), "{shown}");
    let mismatch = catalog
        .diagnostics()
        .iter()
        .find(|d| matches!(d.problem, Problem::NameMismatch { .. }))
        .unwrap();
    assert_eq!(mismatch.severity(), Severity::Warning);
}

#[test]
fn oversized_skills_are_refused() {
    let catalog = SkillLoader::new()
        .dir(fixtures().join("user-skills"))
        .max_skill_bytes(40)
        .load();
    assert!(catalog.is_empty());
    assert_eq!(catalog.diagnostics().len(), 2);
    assert!(
        catalog
            .diagnostics()
            .iter()
            .all(|d| matches!(d.problem, Problem::TooLarge { limit: 40, .. }))
    );
}

async fn call(tool: &SkillTool, input: Value) -> Result<String, ToolError> {
    tool.invoke(
        ToolRequest::new("c", "load_skill", input),
        ToolContext::detached(),
    )
    .await
    .map(|result| result.output.to_text())
}

#[tokio::test]
async fn the_tool_reads_only_inside_a_skill_directory() {
    let repo = repo_with_skills();
    let outside = repo.path().join("secret.txt");
    std::fs::write(&outside, "SECRET").unwrap();
    let skill_dir = repo.path().join(".agents/skills/release-notes");
    std::os::unix::fs::symlink(&outside, skill_dir.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(
        repo.path().join(".agents/skills/pdf-forms/SKILL.md"),
        skill_dir.join("sibling.md"),
    )
    .unwrap();
    let tool = SkillTool::new(SkillLoader::new().project(repo.path()).load());

    let whole = call(&tool, json!({ "name": "release-notes" }))
        .await
        .unwrap();
    assert!(whole.starts_with("Skill `release-notes` (directory "));
    assert!(whole.contains("2. Group them into Added, Changed and Fixed."));
    assert!(whole.contains("- references/FORMAT.md\n"), "{whole}");
    assert!(!whole.contains("- SKILL.md"));

    let format = call(
        &tool,
        json!({ "name": "release-notes", "file": "references/FORMAT.md" }),
    )
    .await
    .unwrap();
    assert!(format.starts_with("## vX.Y.Z (date)"));
    let dotted = call(
        &tool,
        json!({ "name": "release-notes", "file": "./references/FORMAT.md" }),
    )
    .await
    .unwrap();
    assert_eq!(dotted, format);

    // Refusals: (input, words the error must contain).
    let refused: &[(Value, &str)] = &[
        (
            json!({ "name": "release-notes", "file": "../pdf-forms/SKILL.md" }),
            "without `..`",
        ),
        (
            json!({ "name": "release-notes", "file": outside.to_str().unwrap() }),
            "without `..`",
        ),
        (
            json!({ "name": "release-notes", "file": "link.txt" }),
            "leads outside",
        ),
        (
            json!({ "name": "release-notes", "file": "sibling.md" }),
            "leads outside",
        ),
        (
            json!({ "name": "release-notes", "file": "references" }),
            "not a file",
        ),
        (
            json!({ "name": "release-notes", "file": "nope.md" }),
            "no such file",
        ),
        (
            json!({ "name": "unknown" }),
            "available: pdf-forms, release-notes, code-review",
        ),
        (json!({ "name": 7 }), "`name` must be a string"),
    ];
    for (input, words) in refused {
        match call(&tool, input.clone()).await {
            Err(ToolError::InvalidInput(message)) => {
                assert!(message.contains(words), "{input}: {message}");
                assert!(!message.contains("SECRET"));
            }
            other => panic!("{input}: expected a refusal, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_agent_sees_the_catalog_and_loads_a_skill_only_when_it_asks() {
    let repo = repo_with_skills();
    std::fs::write(repo.path().join("AGENTS.md"), "Root: run the tests.").unwrap();
    std::fs::write(repo.path().join("src/AGENTS.md"), "src: no unwrap().").unwrap();
    let cwd = repo.path().join("src");

    let instructions = ProjectInstructions::new().load(&cwd);
    let catalog = SkillLoader::new().project(&cwd).load();
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("call-1", "load_skill", json!({ "name": "release-notes" }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("Here are the release notes."),
    ]);
    let mut transcript = instructions.to_items();
    transcript.push(agentkit_core::Item::user("write release notes for v1.1"));
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(ToolRegistry::new().with(SkillTool::new(catalog)))
        .input(transcript)
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("skills")).await.unwrap();
    // Pass the cooperative pause after the tool round; nothing needs approval.
    loop {
        match driver.next().await.unwrap() {
            LoopStep::Finished(_) => break,
            LoopStep::Interrupt(interrupt) => assert!(!interrupt.is_blocking(), "{interrupt:?}"),
        }
    }

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    // First call: the instructions (root first, nearest last) and the catalog.
    let first = requests[0].transcript.to_vec();
    let context: Vec<String> = first
        .iter()
        .filter(|item| item.kind == ItemKind::Context)
        .map(|item| item.text_content())
        .collect();
    assert_eq!(context.len(), 2);
    assert!(context[0].ends_with("Root: run the tests."));
    assert!(context[1].ends_with("src: no unwrap()."));
    let tool = &requests[0].available_tools[0];
    assert_eq!(tool.name, "load_skill");
    assert!(
        tool.description
            .contains("- release-notes: Writes release notes from the git log between two tags.")
    );
    assert!(tool.description.contains("- code-review: Reviews a diff"));
    // Progressive disclosure: no skill body before the model asks.
    let seen: String = first.iter().map(|item| item.text_content()).collect();
    assert!(!seen.contains("Group them into Added"));
    assert!(!tool.description.contains("Group them into Added"));

    // Second call: the skill's instructions came back as the tool result.
    let second = requests[1].transcript.to_vec();
    validate_transcript(&second).unwrap();
    let result = second
        .iter()
        .flat_map(|item| item.tool_results())
        .next()
        .unwrap();
    assert!(!result.is_error);
    assert!(
        result
            .output
            .to_text()
            .contains("Group them into Added, Changed and Fixed.")
    );
}

#[test]
fn the_catalog_can_be_a_context_item_instead() {
    let catalog = SkillLoader::new()
        .dir(fixtures().join("user-skills"))
        .load();
    let item = catalog.to_item("load_skill");
    assert_eq!(item.kind, ItemKind::Context);
    let text = item.text_content();
    assert!(text.contains("call `load_skill` with its name"));
    assert!(text.contains("- commit-message: Writes a commit message in the project's style.\n"));
    let tool = SkillTool::new(catalog).catalog_in_description(false);
    assert!(!tool.spec().description.contains("commit-message"));
    let renamed = tool.named("skill").unwrap();
    assert_eq!(renamed.spec().name, "skill");
    assert!(
        SkillTool::new(Default::default())
            .named("bad name")
            .is_err()
    );
    assert!(
        SkillTool::new(Default::default())
            .spec()
            .description
            .contains("No skills are installed.")
    );
}

#[test]
fn a_nearer_project_skill_shadows_one_further_up() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join(".git")).unwrap();
    let write = |dir: &Path, body: &str| {
        let skill = dir.join(".agents/skills/deploy");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            format!("---\nname: deploy\ndescription: Deploys.\n---\n{body}\n"),
        )
        .unwrap();
    };
    let service = repo.path().join("services/api");
    write(repo.path(), "root version");
    write(&service, "service version");

    let catalog = SkillLoader::new().project(&service).load();
    assert_eq!(catalog.names(), ["deploy"]);
    assert_eq!(catalog.get("deploy").unwrap().body, "service version\n");
    let [shadowed] = catalog.diagnostics() else {
        panic!("one diagnostic expected: {:?}", catalog.diagnostics());
    };
    assert!(shadowed.path.starts_with(repo.path().join(".agents")));
    assert!(
        matches!(&shadowed.problem, Problem::Duplicate { kept, .. } if kept.starts_with(&service))
    );
}
