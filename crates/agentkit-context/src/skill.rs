//! One Agent Skill: a directory with a `SKILL.md` file.
//!
//! `SKILL.md` starts with YAML frontmatter between two `---` lines, then the
//! instructions in Markdown:
//!
//! ```text
//! ---
//! name: release-notes
//! description: Writes release notes from the git log. Use when asked for a changelog.
//! ---
//! # Release notes
//! 1. Run `git log --oneline v1.2.0..HEAD` ...
//! ```
//!
//! The fields follow the Agent Skills format: `name` (required; 1 to 64
//! lowercase letters, digits and single hyphens, not at either end; it
//! should equal the directory's name) and `description` (required; at most
//! 1024 characters), and the optional `license`, `compatibility` (at most
//! 500 characters), `metadata` (a map of strings) and `allowed-tools` (a
//! space-separated list). Unknown fields are ignored, so skills written for
//! newer versions of the format still load. Files beside `SKILL.md`
//! (scripts, references, assets) are read only when the model asks for them.
//!
//! The frontmatter is parsed with `yaml-rust2`, a pure-Rust YAML 1.2
//! parser: `description: >-` folded blocks and quoted strings work as in any
//! other YAML tool.

use crate::Problem;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use yaml_rust2::{Yaml, YamlLoader};

/// The longest `name` allowed.
pub const MAX_SKILL_NAME_LEN: usize = 64;
/// The longest `description` allowed, in characters.
pub const MAX_DESCRIPTION_LEN: usize = 1024;
/// The longest `compatibility` allowed, in characters.
pub const MAX_COMPATIBILITY_LEN: usize = 500;

/// A parsed skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// Its name, as the model asks for it.
    pub name: String,
    /// What it does and when to use it: the line the catalog shows.
    pub description: String,
    /// The `license` field.
    pub license: Option<String>,
    /// The `compatibility` field (what the skill needs of its environment).
    pub compatibility: Option<String>,
    /// The `allowed-tools` field, split at whitespace.
    pub allowed_tools: Vec<String>,
    /// The `metadata` map.
    pub metadata: BTreeMap<String, String>,
    /// The instructions: everything after the frontmatter.
    pub body: String,
    /// The skill's directory (holding `SKILL.md` and its other files).
    pub directory: PathBuf,
}

impl Skill {
    /// Parses the text of a `SKILL.md` found in `directory`. Returns the
    /// skill and any warnings (a `name` that differs from the directory's).
    pub fn parse(text: &str, directory: &Path) -> Result<(Skill, Vec<Problem>), Problem> {
        let (frontmatter, body) = split_frontmatter(text).ok_or(Problem::MissingFrontmatter)?;
        let docs =
            YamlLoader::load_from_str(frontmatter).map_err(|error| Problem::InvalidYaml {
                message: error.to_string(),
            })?;
        let map = match docs.into_iter().next() {
            Some(Yaml::Hash(map)) => map,
            Some(Yaml::Null) | None => {
                return Err(Problem::MissingField { field: "name" });
            }
            Some(_) => {
                return Err(Problem::InvalidYaml {
                    message: "expected `key: value` fields".into(),
                });
            }
        };
        let field = |key: &str| map.get(&Yaml::String(key.to_owned()));

        let name = required_string(field("name"), "name")?;
        if let Err(reason) = validate_skill_name(&name) {
            return Err(Problem::InvalidField {
                field: "name",
                reason: reason.into(),
            });
        }
        let description = required_string(field("description"), "description")?;
        if description.chars().count() > MAX_DESCRIPTION_LEN {
            return Err(Problem::InvalidField {
                field: "description",
                reason: format!("longer than {MAX_DESCRIPTION_LEN} characters"),
            });
        }
        let license = optional_string(field("license"), "license")?;
        let compatibility = optional_string(field("compatibility"), "compatibility")?;
        if compatibility
            .as_ref()
            .is_some_and(|c| c.chars().count() > MAX_COMPATIBILITY_LEN)
        {
            return Err(Problem::InvalidField {
                field: "compatibility",
                reason: format!("longer than {MAX_COMPATIBILITY_LEN} characters"),
            });
        }
        let allowed_tools = optional_string(field("allowed-tools"), "allowed-tools")?
            .map(|tools| tools.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        let metadata = match field("metadata") {
            None | Some(Yaml::Null) => BTreeMap::new(),
            Some(Yaml::Hash(entries)) => entries
                .iter()
                .map(|(key, value)| Ok((scalar(key)?, scalar(value)?)))
                .collect::<Result<_, ()>>()
                .map_err(|()| Problem::InvalidField {
                    field: "metadata",
                    reason: "keys and values must be strings".into(),
                })?,
            Some(_) => {
                return Err(Problem::InvalidField {
                    field: "metadata",
                    reason: "expected a map of strings".into(),
                });
            }
        };

        let mut warnings = Vec::new();
        let dir_name = directory
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if dir_name != name {
            warnings.push(Problem::NameMismatch {
                name: name.clone(),
                directory: dir_name,
            });
        }
        let skill = Skill {
            name,
            description,
            license,
            compatibility,
            allowed_tools,
            metadata,
            body: body.trim_start_matches(['\r', '\n']).to_owned(),
            directory: directory.to_path_buf(),
        };
        Ok((skill, warnings))
    }

    /// The path of its `SKILL.md`.
    pub fn path(&self) -> PathBuf {
        self.directory.join("SKILL.md")
    }
}

/// Checks a skill name: 1 to 64 characters, lowercase ASCII letters, digits
/// and hyphens, no hyphen at either end and no two in a row.
pub fn validate_skill_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("it is empty");
    }
    if name.len() > MAX_SKILL_NAME_LEN {
        return Err("it is longer than 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("only lowercase letters, digits and '-' are allowed");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("it must not start or end with '-'");
    }
    if name.contains("--") {
        return Err("it must not contain '--'");
    }
    Ok(())
}

/// Splits `---\n<yaml>\n---\n<body>`; `None` without frontmatter.
fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\r\n")
        .or_else(|| text.strip_prefix("---\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

fn scalar(value: &Yaml) -> Result<String, ()> {
    match value {
        Yaml::String(s) | Yaml::Real(s) => Ok(s.clone()),
        Yaml::Integer(i) => Ok(i.to_string()),
        Yaml::Boolean(b) => Ok(b.to_string()),
        _ => Err(()),
    }
}

fn required_string(value: Option<&Yaml>, field: &'static str) -> Result<String, Problem> {
    match optional_string(value, field)? {
        Some(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        _ => Err(Problem::MissingField { field }),
    }
}

fn optional_string(value: Option<&Yaml>, field: &'static str) -> Result<Option<String>, Problem> {
    match value {
        None | Some(Yaml::Null) => Ok(None),
        Some(Yaml::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Problem::InvalidField {
            field,
            reason: "expected a string".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<(Skill, Vec<Problem>), Problem> {
        Skill::parse(text, Path::new("/skills/pdf-tools"))
    }

    #[test]
    fn full_frontmatter() {
        let text = "---\nname: pdf-tools\ndescription: >-\n  Fills PDF forms.\n  Use for any PDF.\nlicense: MIT\ncompatibility: needs python3\nallowed-tools: Bash(pdftk:*) Read\nmetadata:\n  author: ada\n  version: 1.0\n---\n\n# PDF\nSteps.\n";
        let (skill, warnings) = parse(text).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(skill.name, "pdf-tools");
        assert_eq!(skill.description, "Fills PDF forms. Use for any PDF.");
        assert_eq!(skill.license.as_deref(), Some("MIT"));
        assert_eq!(skill.compatibility.as_deref(), Some("needs python3"));
        assert_eq!(skill.allowed_tools, ["Bash(pdftk:*)", "Read"]);
        assert_eq!(skill.metadata["author"], "ada");
        assert_eq!(skill.metadata["version"], "1.0");
        assert_eq!(skill.body, "# PDF\nSteps.\n");
    }

    #[test]
    fn crlf_and_bom() {
        let text = "\u{feff}---\r\nname: pdf-tools\r\ndescription: d\r\n---\r\nbody\r\n";
        let (skill, _) = parse(text).unwrap();
        assert_eq!(skill.description, "d");
        assert_eq!(skill.body, "body\r\n");
    }

    #[test]
    fn invalid_skills_are_problems() {
        type Check = fn(&Problem) -> bool;
        let cases: &[(&str, Check)] = &[
            ("no frontmatter", |p| {
                matches!(p, Problem::MissingFrontmatter)
            }),
            ("---\nname: x\n", |p| {
                matches!(p, Problem::MissingFrontmatter)
            }),
            ("---\nname: [unclosed\n---\n", |p| {
                matches!(p, Problem::InvalidYaml { .. })
            }),
            ("---\n- a\n- b\n---\n", |p| {
                matches!(p, Problem::InvalidYaml { .. })
            }),
            ("---\n---\nbody", |p| {
                matches!(p, Problem::MissingField { field: "name" })
            }),
            ("---\ndescription: d\n---\n", |p| {
                matches!(p, Problem::MissingField { field: "name" })
            }),
            ("---\nname: pdf-tools\n---\n", |p| {
                matches!(
                    p,
                    Problem::MissingField {
                        field: "description"
                    }
                )
            }),
            ("---\nname: pdf-tools\ndescription: '  '\n---\n", |p| {
                matches!(
                    p,
                    Problem::MissingField {
                        field: "description"
                    }
                )
            }),
            ("---\nname: PDF\ndescription: d\n---\n", |p| {
                matches!(p, Problem::InvalidField { field: "name", .. })
            }),
            ("---\nname: -pdf\ndescription: d\n---\n", |p| {
                matches!(p, Problem::InvalidField { field: "name", .. })
            }),
            ("---\nname: pdf--tools\ndescription: d\n---\n", |p| {
                matches!(p, Problem::InvalidField { field: "name", .. })
            }),
            ("---\nname: 12\ndescription: d\n---\n", |p| {
                matches!(p, Problem::InvalidField { field: "name", .. })
            }),
            ("---\nname: pdf-tools\ndescription: [a, b]\n---\n", |p| {
                matches!(
                    p,
                    Problem::InvalidField {
                        field: "description",
                        ..
                    }
                )
            }),
            (
                "---\nname: pdf-tools\ndescription: d\nmetadata: [1]\n---\n",
                |p| {
                    matches!(
                        p,
                        Problem::InvalidField {
                            field: "metadata",
                            ..
                        }
                    )
                },
            ),
        ];
        for (text, expected) in cases {
            let problem = parse(text).expect_err(text);
            assert!(expected(&problem), "{text:?} gave {problem:?}");
        }
        let long = format!(
            "---\nname: pdf-tools\ndescription: {}\n---\n",
            "x".repeat(1025)
        );
        assert!(matches!(
            parse(&long).unwrap_err(),
            Problem::InvalidField {
                field: "description",
                ..
            }
        ));
    }

    #[test]
    fn a_name_other_than_the_directory_is_a_warning() {
        let (skill, warnings) = parse("---\nname: other\ndescription: d\n---\n").unwrap();
        assert_eq!(skill.name, "other");
        assert_eq!(
            warnings,
            [Problem::NameMismatch {
                name: "other".into(),
                directory: "pdf-tools".into()
            }]
        );
    }
}
