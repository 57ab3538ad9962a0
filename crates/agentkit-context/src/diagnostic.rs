//! What went wrong (or was cut short) while loading project context.
//!
//! Loading never fails as a whole: a broken `SKILL.md` or an unreadable
//! `AGENTS.md` becomes a [`Diagnostic`] beside everything that did load, so
//! one bad file in a repository cannot stop an agent from starting. A host
//! shows them to the user (or logs them); the model never sees them.

use std::path::PathBuf;

/// How serious a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Severity {
    /// The file was loaded, but not entirely as written (truncated, renamed,
    /// shadowed by another file).
    Warning,
    /// The file was skipped.
    Error,
}

/// One problem with one file or directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file or directory concerned.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: Problem,
}

impl Diagnostic {
    /// A diagnostic for `path`.
    pub fn new(path: impl Into<PathBuf>, problem: Problem) -> Self {
        Self {
            path: path.into(),
            problem,
        }
    }

    /// Whether the file was skipped ([`Severity::Error`]) or loaded anyway.
    pub fn severity(&self) -> Severity {
        self.problem.severity()
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

/// What is wrong with a file. Match on it to react to one kind of problem.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The file or directory could not be read.
    #[error("cannot read it ({kind:?}): {message}")]
    Unreadable {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
    /// A configured skill directory does not exist.
    #[error("the skill directory does not exist")]
    MissingDirectory,
    /// An instruction file was cut to fit the size cap.
    #[error("truncated to {kept} of {total} bytes (size cap)")]
    Truncated {
        /// Bytes kept.
        kept: usize,
        /// The file's size.
        total: usize,
    },
    /// An instruction file was left out: nearer files used the whole cap.
    #[error("left out: the size cap was used by nearer files ({total} bytes)")]
    Dropped {
        /// The file's size.
        total: usize,
    },
    /// `SKILL.md` is larger than the per-skill limit.
    #[error("the file is {size} bytes, more than the limit of {limit}")]
    TooLarge {
        /// The file's size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// `SKILL.md` does not start with a `---` line, or the frontmatter is
    /// never closed by a second one.
    #[error("no YAML frontmatter: the file must start with `---`, then fields, then `---`")]
    MissingFrontmatter,
    /// The frontmatter is not valid YAML, or not a mapping.
    #[error("the frontmatter is not a YAML mapping: {message}")]
    InvalidYaml {
        /// The parser's message, with line and column.
        message: String,
    },
    /// A required field is missing or empty.
    #[error("the required field `{field}` is missing or empty")]
    MissingField {
        /// The field's name.
        field: &'static str,
    },
    /// A field has the wrong type or breaks a rule of the format.
    #[error("the field `{field}` is invalid: {reason}")]
    InvalidField {
        /// The field's name.
        field: &'static str,
        /// Which rule it breaks.
        reason: String,
    },
    /// The skill's `name` differs from its directory's name. The skill is
    /// loaded under its `name`.
    #[error("the skill is named {name:?} but its directory is {directory:?}")]
    NameMismatch {
        /// The `name` field.
        name: String,
        /// The directory's name.
        directory: String,
    },
    /// Another skill of the same name was found first and wins.
    #[error("skill {name:?} is shadowed by {}", kept.display())]
    Duplicate {
        /// The skill's name.
        name: String,
        /// The `SKILL.md` that is used instead.
        kept: PathBuf,
    },
}

impl Problem {
    /// Whether the file was skipped or loaded anyway.
    pub fn severity(&self) -> Severity {
        match self {
            Problem::Truncated { .. } | Problem::NameMismatch { .. } => Severity::Warning,
            _ => Severity::Error,
        }
    }

    pub(crate) fn io(error: &std::io::Error) -> Self {
        Problem::Unreadable {
            kind: error.kind(),
            message: error.to_string(),
        }
    }
}
