//! Workspace metadata and the per-crate hygiene check (`meta`).

use crate::run::workspace_root;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// What the checks need to know of one workspace package.
#[derive(Debug)]
pub struct Package {
    pub name: String,
    pub manifest_dir: PathBuf,
    pub description: Option<String>,
    /// Names of normal and build dependencies (dev-dependencies excluded).
    pub normal_deps: Vec<String>,
}

impl Package {
    /// Library crates live under `crates/`; examples, docs and xtask do not.
    pub fn is_library_crate(&self) -> bool {
        self.manifest_dir
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == "crates")
    }

    pub fn agentkit_deps(&self) -> impl Iterator<Item = &String> {
        self.normal_deps
            .iter()
            .filter(|d| d.starts_with("agentkit"))
    }
}

pub fn workspace_packages() -> Result<Vec<Package>, String> {
    let metadata = metadata()?;
    let packages = metadata["packages"]
        .as_array()
        .ok_or("cargo metadata has no packages")?;
    packages.iter().map(parse_package).collect()
}

/// Where cargo puts its output (`CARGO_TARGET_DIR` honoured), so checks can
/// find what `cargo doc` built.
pub fn target_directory() -> Result<PathBuf, String> {
    metadata()?["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata has no target_directory".to_owned())
}

/// `cargo metadata` of the workspace, without dependencies.
fn metadata() -> Result<Value, String> {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .current_dir(workspace_root())
        .output()
        .map_err(|err| format!("could not run cargo metadata: {err}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|err| format!("cargo metadata printed invalid JSON: {err}"))
}

fn parse_package(value: &Value) -> Result<Package, String> {
    let name = value["name"]
        .as_str()
        .ok_or("package without a name")?
        .to_owned();
    let manifest = value["manifest_path"]
        .as_str()
        .ok_or("package without a manifest path")?;
    let manifest_dir = PathBuf::from(manifest)
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    let description = value["description"].as_str().map(str::to_owned);
    let normal_deps = value["dependencies"]
        .as_array()
        .map(|deps| {
            deps.iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .filter_map(|d| d["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Ok(Package {
        name,
        manifest_dir,
        description,
        normal_deps,
    })
}

/// Every library crate has a README.md, a description, and opts into the
/// workspace lints (which make `missing_docs` a warning, an error under CI's
/// `-D warnings`, and deny `unsafe` code); only [`UNSAFE_ALLOWED`] may
/// allow `unsafe`.
pub fn meta() -> Result<(), String> {
    let packages = workspace_packages()?;
    let mut problems = Vec::new();
    for package in packages.iter().filter(|p| p.is_library_crate()) {
        problems.extend(package_problems(package));
    }
    let root = workspace_root();
    let mut sources = Vec::new();
    for dir in ["crates", "examples", "docs", "xtask", "fuzz"] {
        rust_files(&root.join(dir), &mut sources);
    }
    for file in sources {
        let relative = file.strip_prefix(&root).unwrap_or(&file);
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if relative != std::path::Path::new(UNSAFE_ALLOWED) && allows_unsafe(&text) {
            problems.push(format!(
                "{} allows unsafe code; only {UNSAFE_ALLOWED} may (see the workspace lints)",
                relative.display()
            ));
        }
    }
    if problems.is_empty() {
        println!(
            "    every crate has a README, a description and the workspace lints; unsafe only in {UNSAFE_ALLOWED}"
        );
        Ok(())
    } else {
        Err(format!("crate hygiene:\n  {}", problems.join("\n  ")))
    }
}

fn package_problems(package: &Package) -> Vec<String> {
    let mut problems = Vec::new();
    let name = &package.name;
    if !package.manifest_dir.join("README.md").is_file() {
        problems.push(format!("{name} has no README.md"));
    }
    if package
        .description
        .as_deref()
        .is_none_or(|d| d.trim().is_empty())
    {
        problems.push(format!("{name} has no description in Cargo.toml"));
    }
    let manifest =
        std::fs::read_to_string(package.manifest_dir.join("Cargo.toml")).unwrap_or_default();
    if !uses_workspace_lints(&manifest) {
        problems.push(format!(
            "{name} does not set `[lints] workspace = true` (missing_docs is not enforced)"
        ));
    }
    problems
}

/// The one file that may allow `unsafe` code: a tool's future held with
/// the tool it borrows, with its SAFETY argument and Miri-run tests.
const UNSAFE_ALLOWED: &str = "crates/agentkit-tools-core/src/owned_call.rs";

/// `true` when `source` lifts the workspace's denial of `unsafe` code
/// (`allow`, `expect` or `warn` of the lint, in any attribute form).
fn allows_unsafe(source: &str) -> bool {
    let lint = ["unsafe", "_code"].concat();
    source.contains(&lint)
}

/// Every `.rs` file under `dir`, skipping build output and npm fixtures.
fn rust_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && name != "node_modules" && name != ".git" {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn uses_workspace_lints(manifest: &str) -> bool {
    let mut in_lints = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_lints = line == "[lints]";
        } else if line.replace(' ', "") == "lints.workspace=true"
            || (in_lints && line.replace(' ', "") == "workspace=true")
        {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lifted_unsafe_lint_is_found_in_any_form() {
        let lint = ["unsafe", "_code"].concat();
        for attribute in [
            format!("#![allow({lint})]"),
            format!("#[allow({lint})]"),
            format!("#[expect({lint})]"),
            format!("#![cfg_attr(test, allow({lint}))]"),
            format!("#[allow(missing_docs, {lint})]"),
        ] {
            assert!(allows_unsafe(&attribute), "{attribute}");
        }
        assert!(!allows_unsafe("fn safe() {}"));
    }

    #[test]
    fn workspace_lints_are_recognised_in_both_spellings() {
        assert!(uses_workspace_lints(
            "[package]\nname = \"a\"\n\n[lints]\nworkspace = true\n"
        ));
        assert!(uses_workspace_lints("lints.workspace = true"));
        assert!(!uses_workspace_lints("[package]\nworkspace = true\n"));
        assert!(!uses_workspace_lints("[lints]\nworkspace = false\n"));
    }

    #[test]
    fn a_crate_without_readme_or_description_is_reported() {
        let dir = std::env::temp_dir().join(format!("xtask-meta-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
        let package = Package {
            name: "x".into(),
            manifest_dir: dir.clone(),
            description: None,
            normal_deps: vec![],
        };
        let problems = package_problems(&package);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(problems.len(), 3, "{problems:?}");
    }
}
