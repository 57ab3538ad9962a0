//! The layer rules of ARCHITECTURE.md section 1, read from `cargo metadata`.
//!
//! Each library crate may depend (normally or at build time) only on the
//! agentkit crates listed for it. Dev-dependencies are free: tests may use the
//! testkit. A crate missing from the table fails the check, so a new crate
//! cannot slip in without a rule.

use crate::checks::{Package, workspace_packages};

/// `(crate, the agentkit crates it may depend on)`. `None`: any.
const RULES: &[(&str, Option<&[&str]>)] = &[
    ("agentkit-core", Some(&[])),
    ("agentkit-tools-core", Some(&["agentkit-core"])),
    (
        "agentkit-loop",
        Some(&["agentkit-core", "agentkit-tools-core"]),
    ),
    ("agentkit-http", Some(&["agentkit-core"])),
    (
        "agentkit-provider-openai",
        Some(&[
            "agentkit-core",
            "agentkit-tools-core",
            "agentkit-loop",
            "agentkit-http",
        ]),
    ),
    (
        "agentkit-provider-anthropic",
        Some(&[
            "agentkit-core",
            "agentkit-tools-core",
            "agentkit-loop",
            "agentkit-http",
        ]),
    ),
    (
        "agentkit-provider-gemini",
        Some(&[
            "agentkit-core",
            "agentkit-tools-core",
            "agentkit-loop",
            "agentkit-http",
        ]),
    ),
    (
        "agentkit-provider-bedrock",
        Some(&[
            "agentkit-core",
            "agentkit-tools-core",
            "agentkit-loop",
            "agentkit-http",
        ]),
    ),
    (
        "agentkit-mcp",
        // agentkit-http (layer 3 too, on core only) for the one TLS set-up
        // every reqwest client in the process shares.
        Some(&["agentkit-core", "agentkit-tools-core", "agentkit-http"]),
    ),
    (
        "agentkit-tool-fs",
        Some(&["agentkit-core", "agentkit-tools-core"]),
    ),
    (
        "agentkit-tool-shell",
        Some(&["agentkit-core", "agentkit-tools-core"]),
    ),
    (
        "agentkit-reporting",
        Some(&["agentkit-core", "agentkit-loop"]),
    ),
    (
        "agentkit-compaction",
        Some(&["agentkit-core", "agentkit-loop"]),
    ),
    (
        "agentkit-store",
        Some(&["agentkit-core", "agentkit-tools-core", "agentkit-loop"]),
    ),
    (
        "agentkit-context",
        Some(&["agentkit-core", "agentkit-tools-core"]),
    ),
    (
        "agentkit-acp",
        Some(&[
            "agentkit-core",
            "agentkit-tools-core",
            "agentkit-loop",
            "agentkit-store",
        ]),
    ),
    (
        "agentkit-server",
        Some(&[
            "agentkit-core",
            "agentkit-tools-core",
            "agentkit-loop",
            "agentkit-store",
            // The forwarder's TLS set-up (agentkit-http depends on core only).
            "agentkit-http",
        ]),
    ),
    (
        "agentkit-subagent",
        Some(&["agentkit-core", "agentkit-tools-core", "agentkit-loop"]),
    ),
    (
        "agentkit-testkit",
        // agentkit-http (layer 3 too, but it depends on core only): cassettes
        // replay through the real HTTP client, behind the `cassette` feature.
        Some(&[
            "agentkit-core",
            "agentkit-tools-core",
            "agentkit-loop",
            "agentkit-http",
        ]),
    ),
    ("agentkit", None),
    ("agentkit-book", None),
];

pub fn check() -> Result<(), String> {
    let packages = workspace_packages()?;
    let violations = violations(&packages);
    if violations.is_empty() {
        println!("    layer rules hold for {} packages", packages.len());
        Ok(())
    } else {
        Err(format!(
            "layer rules broken:\n  {}",
            violations.join("\n  ")
        ))
    }
}

fn violations(packages: &[Package]) -> Vec<String> {
    let mut found = Vec::new();
    for package in packages {
        // Examples and xtask sit above every layer.
        if !package.is_library_crate() {
            continue;
        }
        let Some((_, allowed)) = RULES.iter().find(|(name, _)| *name == package.name) else {
            found.push(format!(
                "{} has no layer rule: add it to xtask/src/layers.rs and ARCHITECTURE.md",
                package.name
            ));
            continue;
        };
        let Some(allowed) = allowed else { continue };
        for dep in package.agentkit_deps() {
            if !allowed.contains(&dep.as_str()) {
                found.push(format!("forbidden edge {} -> {dep}", package.name));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(name: &str, deps: &[&str]) -> Package {
        Package {
            name: name.into(),
            manifest_dir: format!("/ws/crates/{name}").into(),
            description: Some("d".into()),
            normal_deps: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn allowed_edges_pass() {
        let packages = [package(
            "agentkit-loop",
            &["agentkit-core", "agentkit-tools-core", "tokio"],
        )];
        assert!(violations(&packages).is_empty());
    }

    #[test]
    fn a_forbidden_edge_is_named() {
        let packages = [package("agentkit-mcp", &["agentkit-loop"])];
        assert_eq!(
            violations(&packages),
            vec!["forbidden edge agentkit-mcp -> agentkit-loop"]
        );
    }

    #[test]
    fn core_may_not_depend_on_anything_of_ours() {
        let packages = [package("agentkit-core", &["agentkit-tools-core"])];
        assert_eq!(violations(&packages).len(), 1);
    }

    #[test]
    fn an_unknown_crate_fails() {
        let packages = [package("agentkit-new", &[])];
        assert!(violations(&packages)[0].contains("no layer rule"));
    }
}
